// The OpenAPI document: served publicly, valid OpenAPI 3.1, every route documented and every field
// described, security declared truthfully, the committed openapi.json current; and the rendered /docs page.
import { Validator } from '@seriousme/openapi-schema-validator';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES, type ErrorCode } from '../src/platform/errors.js';
import { UUID_PATTERN } from '../src/platform/ids.js';
import { EVENT_TYPES, TEST_EVENT_TYPE } from '../src/modules/webhooks/event-types.js';
import { nonConformance } from './helpers/conformance.js';
import { createCollection, createWorkspace, request, startTestApp, type TestApp } from './helpers/harness.js';

type Json = Record<string, any>;

const COMMITTED = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'openapi.json');
/** scripts/write-openapi.ts writes the document with this base URL (the default of a local run). */
const PUBLIC_BASE_URL = 'http://localhost:8080';

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Every route registered in src/ (the *.routes.ts files), in OpenAPI path syntax. */
const EXPECTED_ROUTES: readonly (readonly [string, string])[] = [
  ['GET', '/healthz'],
  ['GET', '/readyz'],
  ['GET', '/metrics'],
  ['GET', '/v1/openapi.json'],
  ['GET', '/docs'],
  ['GET', '/v1/workspace'],
  ['GET', '/v1/credentials'],
  ['POST', '/v1/credentials'],
  ['POST', '/v1/credentials/{id}/rotate'],
  ['DELETE', '/v1/credentials/{id}'],
  ['GET', '/v1/admin/workspaces'],
  ['POST', '/v1/admin/workspaces'],
  ['POST', '/v1/admin/workspaces/{id}/credentials'],
  ['GET', '/v1/admin/workspaces/{id}/configuration'],
  ['PUT', '/v1/admin/workspaces/{id}/configuration'],
  ['GET', '/v1/workspace/configuration'],
  ['GET', '/v1/admin/operator-float'],
  ['POST', '/v1/collections/{market}/rails/{rail}'],
  ['GET', '/v1/collections'],
  ['GET', '/v1/collections/{id}'],
  ['POST', '/v1/collections/{id}/refund'],
  ['GET', '/v1/collections/{id}/refunds'],
  ['GET', '/v1/refunds'],
  ['GET', '/v1/refunds/{id}'],
  ['GET', '/v1/balances'],
  ['GET', '/v1/audit-events'],
  ['POST', '/v1/providers/{provider}/callbacks'],
  ['POST', '/v1/sandbox/collections/{id}/simulate'],
  ['POST', '/v1/sandbox/refunds/{id}/simulate'],
  // Webhook endpoints and the events API.
  ['POST', '/v1/webhooks/endpoints'],
  ['GET', '/v1/webhooks/endpoints'],
  ['GET', '/v1/webhooks/endpoints/{id}'],
  ['PATCH', '/v1/webhooks/endpoints/{id}'],
  ['DELETE', '/v1/webhooks/endpoints/{id}'],
  ['POST', '/v1/webhooks/endpoints/{id}/rotate-secret'],
  ['POST', '/v1/webhooks/endpoints/{id}/test'],
  ['GET', '/v1/webhooks/endpoints/{id}/deliveries'],
  ['GET', '/v1/events'],
  ['GET', '/v1/events/{id}'],
  ['GET', '/v1/events/{id}/deliveries'],
  ['POST', '/v1/events/{id}/resend'],
  ['POST', '/v1/api/beneficiaries'],
  ['GET', '/v1/api/beneficiaries'],
  ['GET', '/v1/api/beneficiaries/{beneficiaryId}'],
  ['DELETE', '/v1/api/beneficiaries/{beneficiaryId}'],
  ['GET', '/v1/api/markets/sources'],
  ['POST', '/v1/api/markets/sources'],
  ['PATCH', '/v1/api/markets/sources/{sourceId}'],
  ['GET', '/v1/api/markets/rates'],
  ['POST', '/v1/api/markets/rates'],
  ['POST', '/v1/api/deposit-addresses'],
  ['GET', '/v1/api/deposit-addresses'],
  ['GET', '/v1/api/deposit-addresses/{addressId}'],
  ['POST', '/v1/api/deposit-addresses/pool'],
  ['GET', '/v1/api/deposits'],
  ['GET', '/v1/api/deposits/{depositId}'],
  ['POST', '/v1/api/deposits'],
  ['GET', '/v1/api/autoconvert/credits/{creditId}'],
  ['POST', '/v1/sandbox/deposits'],
  ['POST', '/v1/sandbox/deposits/{depositId}/simulate'],
  ['GET', '/v1/api/routes'],
  ['GET', '/v1/api/routes/{routeId}'],
  ['POST', '/v1/api/routes'],
  ['PATCH', '/v1/api/routes/{routeId}'],
  ['POST', '/api/transactions/commit'],
  ['POST', '/v1/payouts/bulk'],
  ['GET', '/v1/api/transactions'],
  ['GET', '/v1/api/transactions/{transactionId}'],
  ['POST', '/v1/sandbox/payouts/{transactionId}/simulate'],
  ['GET', '/v1/sandbox/clock'],
  ['POST', '/v1/sandbox/clock/advance'],
  ['GET', '/v1/api/risk/signals/open'],
  ['GET', '/v1/api/risk/signals/{signalId}'],
  ['POST', '/v1/api/risk/signals'],
  ['PATCH', '/v1/api/risk/signals/{signalId}'],
  // Hosted checkout (sessions, the by-token endpoints) and the page.
  ['POST', '/v1/checkout/sessions'],
  ['GET', '/v1/checkout/sessions'],
  ['GET', '/v1/checkout/sessions/{id}'],
  ['GET', '/v1/checkout/by-token/{token}'],
  ['POST', '/v1/checkout/by-token/{token}/pay'],
  ['POST', '/v1/checkout/by-token/{token}/predict-provider'],
  ['GET', '/checkout/{token}'],
  ['POST', '/v1/predict-provider'],
  // Rail availability and the admin's planned maintenance.
  ['GET', '/v1/availability'],
  ['PUT', '/v1/admin/maintenance/{market}/{rail}'],
  ['DELETE', '/v1/admin/maintenance/{market}/{rail}'],
];

/** The operations that need no token. */
const PUBLIC_PATHS = new Set([
  '/healthz',
  '/readyz',
  '/metrics',
  '/v1/openapi.json',
  '/docs',
  '/v1/providers/{provider}/callbacks',
  '/v1/providers/{provider}/callbacks/{token}',
  '/v1/providers/{provider}/callbacks/{token}/{kind}',
  '/v1/providers/{provider}/callbacks/{token}/{kind}/{ref}',
  '/v1/checkout/by-token/{token}',
  '/v1/checkout/by-token/{token}/pay',
  '/v1/checkout/by-token/{token}/predict-provider',
  '/checkout/{token}',
]);

let t: TestApp;
let doc: Json;
before(async () => {
  t = await startTestApp({ PUBLIC_BASE_URL });
  const res = await request(t, 'GET', '/v1/openapi.json');
  assert.equal(res.status, 200, res.text);
  doc = res.body as Json;
});
after(async () => t.close());

interface Operation {
  method: string;
  path: string;
  op: Json;
}

function operations(document: Json): Operation[] {
  const out: Operation[] = [];
  for (const [p, item] of Object.entries((document.paths ?? {}) as Record<string, Json>)) {
    for (const method of HTTP_METHODS) {
      if (item[method]) out.push({ method: method.toUpperCase(), path: p, op: item[method] as Json });
    }
  }
  return out;
}

const toFastifyPath = (p: string): string => p.replace(/\{([^}]+)\}/g, ':$1');
const toOpenApiPath = (p: string): string => p.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
/** `/a/:x|:y/b` → `/a/:x/b`, `/a/:y/b`. */
function variants(route: string): string[] {
  const m = /:[A-Za-z0-9_]+(?:\|:[A-Za-z0-9_]+)+/.exec(route);
  if (!m) return [route];
  return m[0].split('|').flatMap((alt) => variants(route.slice(0, m.index) + alt + route.slice(m.index + m[0].length)));
}
const nonEmpty = (v: unknown): boolean => typeof v === 'string' && v.trim().length > 0;

/** Every route fastify knows for a method, read from its route tree (HEAD routes are fastify's own copies of GET). */
function fastifyRoutes(method: string): string[] {
  const tree = t.app.printRoutes({ commonPrefix: false, method } as Parameters<TestApp['app']['printRoutes']>[0]);
  if (tree.trim() === '(empty tree)') return [];
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    if (!line.trim()) continue;
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?$/.exec(line);
    assert.ok(m, `cannot read the route tree line ${JSON.stringify(line)}:\n${tree}`);
    const depth = (m[1] as string).length / 4;
    stack.length = depth;
    stack.push(m[2] as string);
    const methods = (m[3] ?? '').split(',').map((s) => s.trim());
    if (methods.includes(method)) out.push(stack.join(''));
  }
  return out;
}

function resolveRef(schema: Json, document: Json): Json {
  let s = schema;
  const seen = new Set<string>();
  while (typeof s.$ref === 'string') {
    const ref = s.$ref as string;
    assert.ok(ref.startsWith('#/'), `external $ref ${ref}`);
    assert.ok(!seen.has(ref), `circular $ref ${ref}`);
    seen.add(ref);
    let target: any = document;
    for (const part of ref.slice(2).split('/')) target = target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    assert.ok(target && typeof target === 'object', `unresolved $ref ${ref}`);
    s = target as Json;
  }
  return s;
}

/** Collects the path of every property (recursively: nested objects, array items, union branches) without a description. */
function missingDescriptions(schema: unknown, where: string, document: Json, out: string[], stack: Json[] = []): void {
  if (!schema || typeof schema !== 'object') return;
  const s = resolveRef(schema as Json, document);
  if (stack.includes(s)) return;
  const next = [...stack, s];
  for (const [name, prop] of Object.entries((s.properties ?? {}) as Record<string, Json>)) {
    const resolved = prop && typeof prop === 'object' ? resolveRef(prop, document) : prop;
    if (!nonEmpty(prop?.description) && !nonEmpty(resolved?.description)) out.push(`${where}.${name}`);
    missingDescriptions(prop, `${where}.${name}`, document, out, next);
  }
  if (s.items && typeof s.items === 'object') {
    const items = Array.isArray(s.items) ? s.items : [s.items];
    items.forEach((item: unknown, i: number) =>
      missingDescriptions(item, `${where}[${Array.isArray(s.items) ? i : ''}]`, document, out, next),
    );
  }
  for (const [i, item] of ((s.prefixItems ?? []) as Json[]).entries())
    missingDescriptions(item, `${where}[${i}]`, document, out, next);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    for (const [i, branch] of ((s[key] ?? []) as Json[]).entries())
      missingDescriptions(branch, `${where}<${key}[${i}]>`, document, out, next);
  }
  if (s.additionalProperties && typeof s.additionalProperties === 'object') {
    missingDescriptions(s.additionalProperties, `${where}.*`, document, out, next);
  }
  for (const [pattern, sub] of Object.entries((s.patternProperties ?? {}) as Record<string, Json>)) {
    missingDescriptions(sub, `${where}.<${pattern}>`, document, out, next);
  }
  if (s.not) missingDescriptions(s.not, `${where}<not>`, document, out, next);
}

/** JSON pointers where two JSON values differ (the first few). */
function differences(a: unknown, b: unknown, at = '', out: string[] = []): string[] {
  if (out.length >= 10) return out;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys)
      differences((a as Json)[k], (b as Json)[k], `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, out);
    if (Array.isArray(a) && a.length !== (b as unknown[]).length) out.push(`${at} (length)`);
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push(at || '/');
  }
  return out;
}

describe('GET /v1/openapi.json', () => {
  it('is public: 200 JSON without a token', async () => {
    const res = await request(t, 'GET', '/v1/openapi.json');
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(typeof res.body, 'object');
    assert.ok(res.body.paths, 'no paths in the document');
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, '3.1');
  });

  it('documents every route registered in src/, with its method and {param} path syntax', async () => {
    const documented = new Set(operations(doc).map((o) => `${o.method} ${o.path}`));
    const missing = EXPECTED_ROUTES.filter(([m, p]) => !documented.has(`${m} ${p}`)).map(([m, p]) => `${m} ${p}`);
    assert.deepEqual(missing, [], `routes missing from the document:\n${missing.join('\n')}`);
    for (const [method, p] of EXPECTED_ROUTES) {
      assert.ok(
        t.app.hasRoute({ method: method as 'GET', url: toFastifyPath(p) }),
        `fastify has no route ${method} ${p}`,
      );
    }
    for (const p of Object.keys(doc.paths as Json)) {
      assert.ok(!p.includes(':'), `path ${p} uses :param syntax`);
      assert.ok(!p.includes('*'), `path ${p} uses a wildcard`);
    }
  });

  it('documents every route fastify knows, and documents no route fastify does not have', async () => {
    const documented = new Set(operations(doc).map((o) => `${o.method} ${o.path}`));
    // The tree shows one node for parameters of different names at the same place (`:market|:id`): each such
    // line stands for one route per name, and at least one of them must be documented.
    const known: string[][] = [];
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      for (const route of fastifyRoutes(method))
        known.push(variants(route).map((v) => `${method} ${toOpenApiPath(v)}`));
    }
    for (const [m, p] of EXPECTED_ROUTES)
      assert.ok(
        known.some((k) => k.includes(`${m} ${p}`)),
        `the route tree does not show ${m} ${p}`,
      );
    // The dashboard's pages (/dashboard/…) are the service's own client of the API, not part of it
    // (docs/guides/dashboard.md); everything else must be in the document.
    const undocumented = known
      .filter((k) => !k.some((v) => documented.has(v) || v.split(' ')[1]?.startsWith('/dashboard')))
      .map((k) => k.join(' or '));
    assert.deepEqual(
      undocumented,
      [],
      `routes fastify serves but the document leaves out:\n${undocumented.join('\n')}`,
    );
    for (const o of operations(doc)) {
      assert.ok(
        t.app.hasRoute({ method: o.method as 'GET', url: toFastifyPath(o.path) }),
        `documented ${o.method} ${o.path} is not a route`,
      );
    }
  });

  it('every operation has a unique operationId and a summary; path parameters are declared', async () => {
    const problems: string[] = [];
    const seen = new Map<string, string>();
    for (const { method, path: p, op } of operations(doc)) {
      const label = `${method} ${p}`;
      if (!nonEmpty(op.operationId)) problems.push(`${label}: no operationId`);
      else if (seen.has(op.operationId))
        problems.push(`${label}: operationId ${op.operationId} also used by ${seen.get(op.operationId)}`);
      else seen.set(op.operationId, label);
      if (!nonEmpty(op.summary)) problems.push(`${label}: no summary`);
      const declared = new Set(
        ((op.parameters ?? []) as Json[]).filter((x) => x.in === 'path' && x.required === true).map((x) => x.name),
      );
      for (const name of [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])) {
        if (!declared.has(name))
          problems.push(`${label}: path parameter {${name}} is not declared as a required path parameter`);
      }
    }
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('every parameter and every property of every request and response schema has a description', async () => {
    const missing: string[] = [];
    for (const { method, path: p, op } of operations(doc)) {
      const label = `${method} ${p}`;
      for (const param of (op.parameters ?? []) as Json[]) {
        const resolved = resolveRef(param, doc);
        const where = `${label} ${resolved.in} parameter ${resolved.name}`;
        if (!nonEmpty(resolved.description) && !nonEmpty(resolved.schema?.description)) missing.push(where);
        missingDescriptions(resolved.schema, where, doc, missing);
      }
      const requestBody = op.requestBody ? resolveRef(op.requestBody, doc) : undefined;
      for (const [type, media] of Object.entries((requestBody?.content ?? {}) as Record<string, Json>)) {
        missingDescriptions(media.schema, `${label} request body (${type})`, doc, missing);
      }
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
        const r = resolveRef(response, doc);
        if (!nonEmpty(r.description)) missing.push(`${label} response ${status}`);
        for (const [type, media] of Object.entries((r.content ?? {}) as Record<string, Json>)) {
          missingDescriptions(media.schema, `${label} response ${status} (${type})`, doc, missing);
        }
        for (const [name, header] of Object.entries((r.headers ?? {}) as Record<string, Json>)) {
          const h = resolveRef(header, doc);
          if (!nonEmpty(h.description) && !nonEmpty(h.schema?.description))
            missing.push(`${label} response ${status} header ${name}`);
        }
      }
    }
    assert.deepEqual(missing, [], `${missing.length} without a description:\n${missing.join('\n')}`);
  });

  it('the description walker finds missing descriptions (checked on a sample)', () => {
    const sample = {
      type: 'object',
      properties: {
        a: { type: 'string', description: 'described' },
        b: { type: 'string' },
        c: { type: 'object', description: 'x', properties: { d: { type: 'integer' } } },
        e: { type: 'array', description: 'x', items: { type: 'object', properties: { f: { type: 'string' } } } },
        g: {
          anyOf: [{ type: 'object', properties: { h: { type: 'string', description: ' ' } } }, { type: 'null' }],
          description: 'x',
        },
      },
    };
    const out: string[] = [];
    missingDescriptions(sample, 'sample', {}, out);
    assert.deepEqual(out, ['sample.b', 'sample.c.d', 'sample.e[].f', 'sample.g<anyOf[0]>.h']);
  });

  it('protected operations declare bearerAuth security; public ones declare none', async () => {
    const scheme = doc.components?.securitySchemes?.bearerAuth;
    assert.equal(scheme?.type, 'http');
    assert.equal(scheme?.scheme, 'bearer');
    const problems: string[] = [];
    for (const { method, path: p, op } of operations(doc)) {
      const label = `${method} ${p}`;
      const security = (op.security ?? doc.security ?? []) as Json[];
      const bearer = security.some((req) => Object.keys(req).includes('bearerAuth'));
      if (PUBLIC_PATHS.has(p)) {
        if (security.length > 0) problems.push(`${label} is public but declares security ${JSON.stringify(security)}`);
      } else if (!bearer) {
        problems.push(`${label} needs a token but does not declare bearerAuth`);
      }
    }
    for (const p of PUBLIC_PATHS)
      assert.ok(doc.paths[p]?.get ?? doc.paths[p]?.post, `public route ${p} is not documented`);
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('the declared security matches the service: without a token, exactly the bearerAuth operations answer 401', async () => {
    const problems: string[] = [];
    for (const { method, path: p, op } of operations(doc)) {
      const url = p.replace(/\{[^}]+\}/g, '01890a5d-ac96-774b-bcce-b302099a8057');
      const res = await request(t, method, url, method === 'GET' || method === 'DELETE' ? {} : { body: {} });
      const declared = ((op.security ?? []) as Json[]).length > 0;
      if (declared && res.status !== 401)
        problems.push(`${method} ${p} declares bearerAuth but answered ${res.status} without a token`);
      if (!declared && res.status === 401)
        problems.push(`${method} ${p} declares no security but answered 401 without a token`);
    }
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  it('names once what many operations share, and stays under the size it was given', () => {
    // 210 KB until the instruction's variants were named and declared WWW-Authenticate and Idempotency-Key, 220 KB
    // until it typed the events (a named variant per type, and the webhooks), 245 KB until each operation's problems
    // named their codes (one shared response per status and set of codes), 272 KB until the audit log (its list and
    // its event, 5 KB), 278 KB until the redirect instruction and the codes Wave and Orange Money brought
    // (operation_not_supported, invalid_signature on operator callbacks) with the members' audit actor, 285 KB until
    // predict-provider and a credential's member_role; then issue 33's resources, each with its named schemas and
    // problem sets: the workspace configuration (7.3 KB), the sandbox clock (its two routes, the clock and what a
    // move moved: 6 KB), bulk payouts (its request and result, 4 KB), operator float (its route, its named account
    // and list, and the two operator.float_* events and webhooks: 6 KB), rail availability (its three routes, their
    // schemas and the rail.availability_changed event, 8 KB). The document grows with what it declares; what this
    // guards against is parts repeated inline (checked below).
    const size = JSON.stringify(doc).length;
    assert.ok(size < 317_000, `the document is ${size} bytes compact: name repeated parts once and refer to them`);
    // The list query and the Idempotency-Key header: components, referred to from every operation.
    for (const name of ['Cursor', 'Limit', 'From', 'To', 'IdempotencyKey', 'IdempotencyKeyRequired'])
      assert.ok(doc.components.parameters?.[name], `no components.parameters.${name}`);
    const inline = operations(doc).flatMap(({ method, path: p, op }) =>
      ((op.parameters ?? []) as Json[])
        .filter((x) => ['cursor', 'limit', 'from', 'to', 'idempotency-key'].includes(String(x.name).toLowerCase()))
        .map((x) => `${method} ${p} ${x.name}`),
    );
    assert.deepEqual(inline, [], 'shared parameters declared inline');
    // Identifiers and enums as named schemas (a generated client gets a named type for each).
    for (const name of [
      'Uuid',
      'CollectionStatus',
      'CollectionFailureReason',
      'CheckoutSessionStatus',
      'CheckoutFailureReason',
      'EnabledEventType',
      'Audience',
      'LatePaymentPolicy',
      'NextCursor',
    ])
      assert.ok(doc.components.schemas?.[name], `no components.schemas.${name}`);
    assert.equal(doc.components.schemas.Uuid.pattern, UUID_PATTERN, 'the Uuid component keeps the pattern');
    // The uuid pattern is written once. Only a query parameter (whose schema must stay inline to keep its
    // description) and the operators' callback body (compiled on its own, before the app has its components) repeat it.
    const patterns: string[] = [];
    const walk = (value: unknown, at: string): void => {
      if (!value || typeof value !== 'object') return;
      if ((value as Json).pattern === UUID_PATTERN) patterns.push(at);
      for (const [k, v] of Object.entries(value)) walk(v, `${at}/${k}`);
    };
    walk(doc, '');
    assert.deepEqual(
      patterns.filter(
        (at) =>
          at !== '/components/schemas/Uuid' &&
          !/\/parameters\/\d+\/schema$/.test(at) &&
          !at.startsWith('/paths//v1/providers/{provider}/callbacks/'),
      ),
      [],
      'the uuid pattern repeated instead of referring to #/components/schemas/Uuid',
    );
    // A named success response is one that several operations (or webhooks) give.
    const refs = JSON.stringify([doc.paths, doc.webhooks]);
    for (const name of Object.keys(doc.components.responses).filter((n) => !n.startsWith('Problem'))) {
      const uses = refs.split(`"#/components/responses/${name}"`).length - 1;
      assert.ok(uses >= 2, `components.responses.${name} is used by ${uses} operation(s)`);
    }
    const undescribed = operations(doc).flatMap(({ method, path: p, op }) =>
      Object.entries((op.responses ?? {}) as Record<string, Json>)
        .filter(([, r]) => resolveRef(r, doc).description === 'Default Response')
        .map(([status]) => `${method} ${p} ${status}`),
    );
    assert.deepEqual(undescribed, [], 'responses described only as "Default Response"');
  });

  it('every union of objects is of named variants with a discriminator on their type', () => {
    const schemas = doc.components.schemas as Record<string, Json>;
    const resolve = (x: Json): Json | undefined =>
      typeof x.$ref === 'string' ? schemas[String(x.$ref).replace('#/components/schemas/', '')] : x;
    const unions: string[] = [];
    const walk = (node: unknown, where: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${where}/${i}`));
      if (node === null || typeof node !== 'object') return;
      const o = node as Json;
      for (const key of ['anyOf', 'oneOf']) {
        const variants = (o[key] ?? []) as Json[];
        if (variants.filter((v) => resolve(v)?.type === 'object').length >= 2) unions.push(where);
        const objects = variants.filter((v) => resolve(v)?.type === 'object');
        if (objects.length < 2) continue;
        assert.ok(
          objects.every((v) => typeof v.$ref === 'string'),
          `${where}: every variant is a named component`,
        );
        const discriminator = o.discriminator as { propertyName: string; mapping: Record<string, string> } | undefined;
        assert.ok(discriminator, `${where}: a discriminator`);
        assert.deepEqual(
          Object.values(discriminator.mapping).sort(),
          objects.map((v) => String(v.$ref)).sort(),
          `${where}: the mapping names each variant`,
        );
        for (const [value, ref] of Object.entries(discriminator.mapping)) {
          const variant = resolve({ $ref: ref }) as { properties: Record<string, Json>; required: string[] };
          const tag = variant.properties[discriminator.propertyName] as Json;
          assert.deepEqual(tag.enum ?? [tag.const], [value], `${ref}: its ${discriminator.propertyName} is ${value}`);
          assert.ok(variant.required.includes(discriminator.propertyName));
        }
      }
      for (const [k, v] of Object.entries(o)) walk(v, `${where}/${k}`);
    };
    walk(doc, '#');
    // PaymentInstruction is one (a generator once merged its variants into one type, typing CI/orange_money's wrong).
    assert.ok(unions.includes('#/components/schemas/PaymentInstruction'), `unions found: ${unions.join(', ')}`);
  });

  it('Event is one named variant per event type, each with its object as data', () => {
    const schemas = doc.components.schemas as Record<string, Json>;
    const event = schemas.Event as Json;
    assert.ok(Array.isArray(event.oneOf), 'Event is a oneOf');
    assert.equal(event.discriminator?.propertyName, 'type');
    const mapping = event.discriminator.mapping as Record<string, string>;
    // Every type the service emits, and the test event: none is left untyped, none is invented.
    assert.deepEqual(Object.keys(mapping).sort(), [...EVENT_TYPES, TEST_EVENT_TYPE].sort());
    const expectedData = (type: string): string =>
      type.startsWith('collection.')
        ? 'Collection'
        : type.startsWith('refund.')
          ? 'Refund'
          : type.startsWith('payout.')
            ? 'Payout'
            : type.startsWith('deposit.')
              ? 'Deposit'
              : type.startsWith('checkout.session.')
                ? 'CheckoutSession'
                : ({
                    'risk_signal.created': 'RiskSignal',
                    'reconciliation.mismatch': 'ReconciliationMismatch',
                    'webhook.test': 'WebhookEndpoint',
                    'operator.float_low': 'OperatorFloatAccount',
                    'operator.float_restored': 'OperatorFloatAccount',
                    'rail.availability_changed': 'RailAvailability',
                  }[type] ?? '(none)');
    for (const [type, ref] of Object.entries(mapping)) {
      const variant = schemas[ref.replace('#/components/schemas/', '')] as Json;
      assert.deepEqual(variant.required, ['id', 'type', 'timestamp', 'data'], `${ref}: required fields`);
      assert.deepEqual(
        variant.properties.data,
        { $ref: `#/components/schemas/${expectedData(type)}` },
        `${type}: its data is a ${expectedData(type)}`,
      );
    }
    // The events API answers with the union, not a loose object.
    assert.deepEqual(doc.paths['/v1/events/{id}'].get.responses['200'].content['application/json'].schema, {
      $ref: '#/components/schemas/Event',
    });
  });

  it('declares each delivery as an OpenAPI 3.1 webhook whose body is its event type', () => {
    const webhooks = doc.webhooks as Record<string, Json>;
    assert.deepEqual(Object.keys(webhooks).sort(), [...EVENT_TYPES, TEST_EVENT_TYPE].sort());
    const mapping = doc.components.schemas.Event.discriminator.mapping as Record<string, string>;
    for (const [type, item] of Object.entries(webhooks)) {
      const post = item.post as Json;
      assert.deepEqual(post.requestBody.content['application/json'].schema, { $ref: mapping[type] }, type);
      const headers = (post.parameters as Json[]).map((p) => resolveRef(p, doc).name);
      assert.deepEqual(headers, ['webhook-id', 'webhook-timestamp', 'webhook-signature'], `${type}: signature headers`);
    }
  });

  it('a real event is checked against its type: data of another object does not conform', async () => {
    const ws = await createWorkspace(t, 'typed-events');
    const created = await createCollection(t, ws.token);
    assert.equal(created.status, 201, created.text);
    // request() checks the answer against the document: the recorded collection.created conforms to its variant.
    const list = await request(t, 'GET', `/v1/events?object_id=${created.body.collection_id}`, { token: ws.token });
    assert.equal(list.status, 200, list.text);
    const event = (list.body.data as Json[]).find((e) => e.type === 'collection.created');
    assert.ok(event, list.text);
    const answer = (body: unknown): string | undefined =>
      nonConformance('GET', `/v1/events/${event.id}`, 200, list.headers, JSON.stringify(body));
    assert.equal(answer(event), undefined);
    // The same event typed as a refund, or its collection missing a field, is refused by the document.
    assert.ok(answer({ ...event, type: 'refund.requested' }), 'a collection as a refund event is refused');
    const withoutAmount = { ...(event.data as Json), amount: undefined };
    assert.ok(answer({ ...event, data: withoutAmount }), 'a collection without its amount is refused');
    assert.ok(answer({ ...event, type: 'collection.unheard_of' }), 'an unknown type is refused');
  });

  it('the operator float list conforms: its accounts, and an integrator token refused with 403', async () => {
    // request() checks each answer against the document: the list (no connector here: empty) and the problem.
    const list = await request(t, 'GET', '/v1/admin/operator-float', { token: t.adminToken });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body, { data: [] });
    const ws = await createWorkspace(t, 'float-reader');
    const refused = await request(t, 'GET', '/v1/admin/operator-float', { token: ws.token });
    assert.equal(refused.status, 403, refused.text);
    const account = {
      connector: 'mtn',
      account: 'disbursement',
      currency: 'GHS',
      balance: 50000,
      read_at: '2026-11-28T12:00:00.000Z',
      threshold: 100000,
      status: 'low',
      error: null,
      error_at: null,
    };
    const answer = (body: unknown) =>
      nonConformance('GET', '/v1/admin/operator-float', 200, list.headers, JSON.stringify(body));
    assert.equal(answer({ data: [account] }), undefined);
    assert.ok(answer({ data: [{ ...account, status: 'empty' }] }), 'a status outside ok, low, unknown is refused');
    assert.ok(answer({ data: [{ ...account, balance: 500.5 }] }), 'a balance that is not minor units is refused');
  });

  /** The codes an operation's response of `status` declares (its problem schema's enum), or undefined. */
  const declaredCodes = (op: Json, status: string): string[] | undefined => {
    const response = op.responses?.[status] ? resolveRef(op.responses[status], doc) : undefined;
    const schema = response?.content?.['application/problem+json']?.schema as Json | undefined;
    return schema?.allOf?.[1]?.properties?.code?.enum as string[] | undefined;
  };

  it("every problem response names its operation's codes, each of its status, on the shared Problem", () => {
    const wrong: string[] = [];
    for (const { method, path: p, op } of operations(doc)) {
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
        if (Number(status) < 400) continue;
        const schema = resolveRef(response, doc).content?.['application/problem+json']?.schema as Json | undefined;
        if (!schema) continue; // a page's own error page (text/html)
        assert.deepEqual(schema.allOf?.[0], { $ref: '#/components/schemas/Problem' }, `${method} ${p} ${status}`);
        const codes = declaredCodes(op, status) ?? [];
        if (codes.length === 0) wrong.push(`${method} ${p} ${status}: no codes`);
        for (const code of codes)
          if (ERROR_CODES[code as ErrorCode]?.status !== Number(status))
            wrong.push(`${method} ${p} ${status}: ${code}`);
      }
      // A bearer route's 401 is a refused token, never a provider's signature; the codes its description names are declared.
      if (op.security?.length) assert.deepEqual(declaredCodes(op, '401'), ['unauthorized'], `${method} ${p} 401`);
      for (const [, code] of String(op.description ?? '').matchAll(/`([a-z_]+)`/g)) {
        const status = ERROR_CODES[code as ErrorCode]?.status;
        if (status !== undefined && !declaredCodes(op, String(status))?.includes(code!))
          wrong.push(`${method} ${p}: its description names ${code}, which its ${status} does not declare`);
      }
    }
    assert.deepEqual(wrong, [], wrong.join('\n'));
    // Narrowed, not the whole table: a 401 no longer admits invalid_market.
    const refund = doc.paths['/v1/collections/{id}/refund'].post;
    assert.deepEqual(declaredCodes(refund, '409'), [
      'idempotency_key_in_use',
      'collection_not_refundable',
      'refund_in_progress',
    ]);
  });

  it('an answer whose code its operation does not declare fails the conformance check', async () => {
    const ws = await createWorkspace(t, 'typed-problems');
    const endpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: 'http://127.0.0.1:9/hook' },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    const url = `/v1/webhooks/endpoints/${endpoint.body.id}/test`;
    const disabled = await request(t, 'PATCH', `/v1/webhooks/endpoints/${endpoint.body.id}`, {
      token: ws.token,
      body: { status: 'disabled' },
    });
    assert.equal(disabled.status, 200, disabled.text);
    // A real 409 webhook_endpoint_disabled: request() found it conforming, and so does the check on its own.
    const real = await request(t, 'POST', url, { token: ws.token });
    assert.equal(real.status, 409, real.text);
    assert.equal(real.body.code, 'webhook_endpoint_disabled');
    const check = (code: string): string | undefined =>
      nonConformance('POST', url, 409, real.headers, JSON.stringify({ ...real.body, code }));
    assert.equal(check('webhook_endpoint_disabled'), undefined);
    // A 409 this operation never answers (a refund's), and a code of another status, are refused.
    assert.match(check('refund_in_progress') ?? '', /does not match its schema/);
    assert.match(check('invalid_market') ?? '', /does not match its schema/);
    // The same body is fine where that code is declared: the enums are per operation.
    assert.equal(
      nonConformance(
        'POST',
        '/v1/collections/0196a000-0000-7000-8000-000000000000/refund',
        409,
        real.headers,
        JSON.stringify({ ...real.body, code: 'refund_in_progress' }),
      ),
      undefined,
    );
  });

  it('the committed openapi.json equals the served document', async () => {
    let committed: unknown;
    try {
      committed = JSON.parse(await readFile(COMMITTED, 'utf8'));
    } catch (err) {
      assert.fail(`openapi.json is stale: run \`npm run openapi\` and commit it (${(err as Error).message})`);
    }
    const served = (await request(t, 'GET', '/v1/openapi.json')).body;
    const diff = differences(committed, served);
    assert.deepEqual(
      committed,
      served,
      `openapi.json is stale: run \`npm run openapi\` and commit it (differs at ${diff.join(', ')})`,
    );
  });
});

describe('GET /docs', () => {
  let res: Awaited<ReturnType<typeof request>>;
  before(async () => {
    res = await request(t, 'GET', '/docs');
  });

  it('is public: 200 text/html without a token', () => {
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(res.text, /^<!doctype html>/i);
  });

  it('has a Content-Security-Policy without unsafe-inline and without any http(s) source', () => {
    const csp = res.headers.get('content-security-policy');
    assert.ok(csp, 'no Content-Security-Policy header');
    assert.doesNotMatch(csp, /unsafe-inline/i);
    assert.doesNotMatch(csp, /https?:\/\//i);
    assert.doesNotMatch(csp, /(^|[\s;])(https?:|\*)(?=[\s;]|$)/i, 'a scheme or wildcard source allows any host');
    assert.match(csp, /default-src 'none'/);
    // The inline stylesheet is allowed by its hash, not by unsafe-inline.
    for (const [, style] of res.text.matchAll(/<style>([\s\S]*?)<\/style>/g)) {
      const hash = createHash('sha256')
        .update(style as string)
        .digest('base64');
      assert.ok(csp.includes(`'sha256-${hash}'`), "the CSP does not allow the page's own stylesheet");
    }
  });

  it('contains every documented path', () => {
    const escape = (s: string): string =>
      s
        .replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&quot;')
        .replace(/'/g, '&#39;');
    const missing = Object.keys(doc.paths as Json).filter((p) => !res.text.includes(escape(p)));
    assert.deepEqual(missing, [], `paths not shown on /docs: ${missing.join(', ')}`);
    for (const { op } of operations(doc))
      assert.ok(
        res.text.includes(escape(op.summary as string).replace(/`([^`]+)`/g, '<code>$1</code>')),
        `summary missing: ${op.summary}`,
      );
  });

  it('shows the shared parameters and responses, which the document refers to, by their content', () => {
    assert.ok(res.text.includes('<code>cursor</code> (query)'), 'the list parameters are not shown');
    assert.ok(res.text.includes('<code>Idempotency-Key</code> (header)'), 'the Idempotency-Key header is not shown');
    assert.ok(res.text.includes('<code>401</code> Problem document;'), 'the problem responses are not described');
  });

  it('references no external URL in src= or href= attributes', () => {
    const refs = [...res.text.matchAll(/\s(?:src|href)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi)].map(
      (m) => m[1] ?? m[2] ?? m[3] ?? '',
    );
    assert.ok(refs.length > 0, 'expected in-page links at least');
    const external = refs.filter((v) => /^\s*(?:[a-z][a-z0-9+.-]*:|\/\/|\\\\)/i.test(v));
    assert.deepEqual(external, [], `external references: ${external.join(', ')}`);
    assert.doesNotMatch(res.text, /<script\b/i);
  });
});
