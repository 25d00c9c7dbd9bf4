// What HTTP's RFCs ask of the API and the document declares (issue 34, items 4-6): the Idempotency-Key header by its
// name and rule, the WWW-Authenticate challenge of every 401 (RFC 9110 §11.6.1, RFC 6750 §3), body-less writes that
// refuse a body with 415, and the checkout page whose every error is its HTML page. request() checks each answer
// against openapi.json as well (test/helpers/conformance.ts), so what is asserted here is also what is declared.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { idempotencyOf } from '../src/platform/idempotency.js';
import {
  assertProblem,
  createWorkspace,
  newKey,
  request,
  startTestApp,
  validCollection,
  type ApiResponse,
  type TestApp,
} from './helpers/harness.js';

type Json = Record<string, any>;

const doc = JSON.parse(readFileSync(new URL('../openapi.json', import.meta.url), 'utf8')) as Json;
const WRITES = ['post', 'put', 'patch', 'delete'];

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

describe('401: a WWW-Authenticate challenge (RFC 9110 §11.6.1), in the Bearer form of RFC 6750 §3', () => {
  const challenge = (res: ApiResponse): string => {
    assertProblem(res, 401, 'unauthorized');
    return res.headers.get('www-authenticate') ?? '(none)';
  };

  it('no token: the bare challenge, with no error code (RFC 6750 §3.1)', async () => {
    const res = await request(t, 'GET', '/v1/collections');
    assert.equal(challenge(res), 'Bearer realm="payments"');
  });

  it('another scheme than Bearer is a request with no bearer token: the bare challenge', async () => {
    const res = await request(t, 'GET', '/v1/collections', { headers: { authorization: 'Basic ZGVtbzpzZWNyZXQ=' } });
    assert.equal(challenge(res), 'Bearer realm="payments"');
  });

  it('a token given and refused (forged, then rotated out): error="invalid_token" with the detail as its description', async () => {
    const forged = await request(t, 'GET', '/v1/collections', { token: 'not.a.token' });
    assert.equal(
      challenge(forged),
      `Bearer realm="payments", error="invalid_token", error_description="${forged.body.detail}"`,
    );
    const ws = await createWorkspace(t, 'rfc-rotated');
    const credentials = await request(t, 'GET', '/v1/credentials', { token: ws.token });
    const id = (credentials.body.data as Json[])[0]!.id as string;
    const rotated = await request(t, 'POST', `/v1/credentials/${id}/rotate`, { token: ws.token });
    assert.equal(rotated.status, 200, rotated.text);
    const old = await request(t, 'GET', '/v1/collections', { token: ws.token });
    assert.match(challenge(old), /^Bearer realm="payments", error="invalid_token", error_description="[^"]+"$/);
  });

  it('a provider callback whose signature is refused: 401 with the Provider-Signature challenge', async () => {
    const res = await request(t, 'POST', '/v1/providers/sandbox/callbacks', {
      body: {
        notice_id: `n-${randomUUID()}`,
        object_type: 'collection',
        merchant_reference: randomUUID(),
        reference: 'ref-1',
        status: 'successful',
        occurred_at: new Date().toISOString(),
      },
    });
    assertProblem(res, 401, 'invalid_signature');
    assert.equal(res.headers.get('www-authenticate'), 'Provider-Signature realm="provider-callbacks"');
  });

  it('the document declares the header, required, on every 401 it has', () => {
    const missing: string[] = [];
    for (const [p, methods] of Object.entries(doc.paths as Json))
      for (const [method, op] of Object.entries(methods as Json)) {
        const declared = (op as Json).responses?.['401'] as Json | undefined;
        if (!declared) continue;
        const response = resolve(declared);
        const header = response.headers?.['WWW-Authenticate'] as Json | undefined;
        if (!header || resolve(header).required !== true) missing.push(`${method.toUpperCase()} ${p}`);
      }
    assert.ok(Object.keys(doc.paths as Json).length > 0);
    assert.deepEqual(missing, [], `401 without a required WWW-Authenticate: ${missing.join(', ')}`);
  });
});

describe('Idempotency-Key: declared by its name and rule wherever it is honoured', () => {
  const rule = doc.components.parameters.IdempotencyKey as Json;

  it('the shared parameters are named Idempotency-Key and carry the rule: 1-255 visible ASCII', () => {
    for (const name of ['IdempotencyKey', 'IdempotencyKeyRequired']) {
      const p = doc.components.parameters[name] as Json;
      assert.equal(p.name, 'Idempotency-Key', name);
      assert.equal(p.in, 'header');
      assert.deepEqual(
        { ...p.schema, description: undefined },
        {
          type: 'string',
          minLength: 1,
          maxLength: 255,
          pattern: '^[\\x21-\\x7e]{1,255}$',
          description: undefined,
        },
      );
    }
    const pattern = new RegExp(rule.schema.pattern as string, 'u');
    for (const good of ['a', '!~', 'x'.repeat(255), randomUUID()]) assert.ok(pattern.test(good), good);
    for (const bad of ['', 'a b', 'tab\t', 'é', 'x'.repeat(256)]) assert.ok(!pattern.test(bad), JSON.stringify(bad));
  });

  it('the operations that honour one declare it, and none declares it in lower case', () => {
    const byId = new Map<string, Json>();
    for (const methods of Object.values(doc.paths as Json))
      for (const op of Object.values(methods as Json)) byId.set((op as Json).operationId as string, op as Json);
    for (const id of ['createBeneficiary', 'createRiskSignal', 'createDepositAddress', 'testWebhookEndpoint']) {
      const refs = ((byId.get(id)?.parameters ?? []) as Json[]).map((p) => p.$ref ?? p.name);
      assert.ok(refs.includes('#/components/parameters/IdempotencyKey'), `${id}: ${refs.join(', ')}`);
    }
    const lower = [...byId].filter(([, op]) =>
      ((op.parameters ?? []) as Json[]).some((p) => p.name === 'idempotency-key'),
    );
    assert.deepEqual(lower, []);
  });

  it('a key not of the rule is 422 idempotency_key_invalid on those operations; absent where required, 422 idempotency_key_missing', async () => {
    const ws = await createWorkspace(t, 'rfc-keys');
    const writes: [string, string, unknown][] = [
      [
        'POST',
        '/v1/api/beneficiaries',
        { name: 'Wanjiru Kamau', market: 'KE', rail: 'mpesa', phone_number: '+254712345678' },
      ],
      [
        'POST',
        '/v1/api/risk/signals',
        {
          type: 'fraud_suspected',
          severity: 'high',
          subject: { type: 'phone_number', id: '+254712345678' },
          description: 'x',
        },
      ],
      ['POST', '/v1/api/deposit-addresses', { asset: 'USDT', network: 'tron' }],
      ['POST', `/v1/webhooks/endpoints/${randomUUID()}/test`, undefined],
    ];
    for (const [method, url, body] of writes) {
      for (const key of ['has space', 'x'.repeat(256), 'caf\u00e9']) {
        const res = await request(t, method, url, { token: ws.token, body, headers: { 'Idempotency-Key': key } });
        assertProblem(res, 422, 'idempotency_key_invalid');
      }
    }
    // And nothing was made by the refused requests.
    const listed = await request(t, 'GET', '/v1/api/beneficiaries', { token: ws.token });
    assert.equal(listed.status, 200, listed.text);
    assert.equal((listed.body.data as unknown[]).length, 0);
    const missing = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: ws.token,
      body: validCollection(),
    });
    assertProblem(missing, 422, 'idempotency_key_missing');
    const invalid = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: ws.token,
      body: validCollection(),
      idempotencyKey: 'has space',
    });
    assertProblem(invalid, 422, 'idempotency_key_invalid');
  });

  it('a route that honours a key it does not declare fails at its first request, not silently', () => {
    const fake = (headers: unknown) =>
      ({
        method: 'POST',
        url: '/v1/things',
        headers: { 'idempotency-key': 'k-1' },
        body: null,
        routeOptions: { url: '/v1/things', schema: headers === undefined ? {} : { headers } },
      }) as unknown as FastifyRequest;
    assert.throws(() => idempotencyOf(fake(undefined), false), /does not declare/);
    const declared = fake({ type: 'object', properties: { 'Idempotency-Key': { type: 'string' } } });
    assert.equal(idempotencyOf(declared, false).key, 'k-1');
  });
});

describe('body-less writes refuse a body: 415, as declared', () => {
  const bodyless = Object.entries(doc.paths as Json).flatMap(([p, methods]) =>
    Object.entries(methods as Json)
      .filter(([method, op]) => WRITES.includes(method) && !(op as Json).requestBody)
      .map(([method, op]) => ({ method: method.toUpperCase(), path: p, op: op as Json })),
  );

  it('the document has them, each declaring 415 and 413', () => {
    const ids = bodyless.map((o) => o.op.operationId as string);
    for (const id of ['revokeCredential', 'deactivateBeneficiary', 'rotateWebhookSecret', 'testWebhookEndpoint'])
      assert.ok(ids.includes(id), `${id} is not a body-less write: ${ids.join(', ')}`);
    for (const { method, path: p, op } of bodyless)
      assert.ok(op.responses['415'] && op.responses['413'], `${method} ${p} declares no 415 or 413`);
  });

  it('each answers a JSON body, or a body of another type, 415 unsupported_media_type "takes no request body", and changes nothing', async () => {
    const ws = await createWorkspace(t, 'rfc-bodyless');
    const endpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: 'https://example.com/hooks' },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    const id = endpoint.body.id as string;
    for (const { method, path: p } of bodyless) {
      // A real endpoint where the path names one, so a 415 is not a 404 in disguise.
      const url = p.replace(/\{[^}]+\}/g, p.startsWith('/v1/webhooks/endpoints/') ? id : randomUUID());
      // The operator's routes take the admin token: the body is refused once the caller is known.
      const token = p.startsWith('/v1/admin/') ? t.adminToken : ws.token;
      const json = await request(t, method, url, { token, body: { note: 'not taken' } });
      assertProblem(json, 415, 'unsupported_media_type');
      assert.match(json.body.detail, /takes no request body/, `${method} ${p}`);
      const text = await request(t, method, url, {
        token,
        rawBody: 'hello',
        headers: { 'content-type': 'text/plain' },
      });
      assertProblem(text, 415, 'unsupported_media_type');
      assert.match(text.body.detail, /takes no request body/, `${method} ${p}`);
    }
    const still = await request(t, 'GET', `/v1/webhooks/endpoints/${id}`, { token: ws.token });
    assert.equal(still.status, 200, 'the endpoint was deleted by a refused request');
  });

  it('an empty body with Content-Type: application/json is no body, and is served', async () => {
    const ws = await createWorkspace(t, 'rfc-empty-body');
    const endpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: 'https://example.com/hooks' },
    });
    const res = await request(t, 'POST', `/v1/webhooks/endpoints/${endpoint.body.id}/rotate-secret`, {
      token: ws.token,
      rawBody: '',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 200, res.text);
    // A route that takes a body still takes one (the refusal is only where the schema has none).
    const made = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: ws.token,
      body: validCollection(),
      idempotencyKey: newKey(),
    });
    assert.equal(made.status, 201, made.text);
  });
});

describe('the checkout page: every error is its HTML page', () => {
  const assertNotFoundPage = (res: ApiResponse): void => {
    assert.equal(res.status, 404, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(res.text, /^<!doctype html>/i);
    assert.ok(res.headers.get('content-security-policy'), 'the page has its CSP');
    assert.ok(res.headers.get('x-request-id'));
  };

  it('an unknown token, one over the length the router takes (100 characters), and bad percent-encoding: the 404 page', async () => {
    for (const token of ['A'.repeat(43), 'A'.repeat(101), 'A'.repeat(129), 'A'.repeat(600), '%E0%A4%A'])
      assertNotFoundPage(await request(t, 'GET', `/checkout/${token}`));
  });

  it('the document declares only pages for it (and 503 while draining): no problem document', () => {
    const responses = doc.paths['/checkout/{token}'].get.responses as Json;
    assert.deepEqual(Object.keys(responses).sort(), ['200', '404', '429', '503']);
    for (const status of ['200', '404', '429']) assert.deepEqual(Object.keys(responses[status].content), ['text/html']);
  });
});

describe('validation details read as English', () => {
  it('"The query parameters have a problem", "The request body has problems"', async () => {
    const query = await request(t, 'GET', '/v1/collections?limit=0', { token: t.demoToken });
    assertProblem(query, 400, 'validation_failed');
    assert.match(query.body.detail, /^The query parameters have a problem: limit /);
    const body = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: t.demoToken,
      body: { amount: 'ten' },
      idempotencyKey: newKey(),
    });
    assert.equal(body.status, 400, body.text);
    assert.match(body.body.detail, /^The request body has problems: /);
  });
});

/** A `$ref` of the document resolved. */
function resolve(value: Json): Json {
  if (typeof value.$ref !== 'string') return value;
  let at: any = doc;
  for (const part of value.$ref.slice(2).split('/')) at = at?.[part];
  return at as Json;
}
