// Contract §10: webhook endpoints (create, list, read, change, delete, rotate the secret) and the events API
// (list, read, deliveries, resend), through HTTP on a real database with the background workers running, and a
// local receiver on 127.0.0.1 that records every delivery. Each group works in a workspace of its own, so the
// relay only ever sends to the local receiver (workspaces without collections have no events to deliver).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  newKey,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
  waitFor,
} from './helpers/harness.js';
import { startReceiver, type Receiver, type ReceivedRequest } from './helpers/receiver.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** whsec_ and 32 random bytes in base64. */
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const ENDPOINT_FIELDS = [
  'created_at',
  'description',
  'disabled_reason',
  'enabled_events',
  'id',
  'previous_secret_expires_at',
  'status',
  'updated_at',
  'url',
];
const DELIVERY_FIELDS = [
  'attempts',
  'created_at',
  'endpoint_id',
  'event_id',
  'id',
  'kind',
  'last_error',
  'next_attempt_at',
  'status',
  'updated_at',
];
const WAIT_MS = 15_000;
/** A phone number the sandbox takes through pending → processing → successful. */
const SUCCEEDS = { customer: { phone_number: '+254712340000' } };

let t: TestApp;
let receiver: Receiver;
let receiverBase = '';
let received: ReceivedRequest[] = [];

before(async () => {
  receiver = await startReceiver(() => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' }));
  receiverBase = `http://127.0.0.1:${receiver.port}`;
  received = receiver.requests;
  t = await startTestApp({ ...FAST_LIFECYCLE, WEBHOOK_POLL_MS: '20' }, { workers: true });
});
after(async () => {
  await t?.close();
  await receiver?.close();
});

// Helpers

const createEndpoint = (token: string, body: unknown, key?: string): Promise<ApiResponse> =>
  request(t, 'POST', '/v1/webhooks/endpoints', { token, body, ...(key === undefined ? {} : { idempotencyKey: key }) });
const getEndpoint = (token: string, id: string): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/webhooks/endpoints/${id}`, { token });
const listEndpoints = (token: string, query = ''): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/webhooks/endpoints${query ? `?${query}` : ''}`, { token });
const patchEndpoint = (token: string, id: string, body: unknown): Promise<ApiResponse> =>
  request(t, 'PATCH', `/v1/webhooks/endpoints/${id}`, { token, body });
const deleteEndpoint = (token: string, id: string): Promise<ApiResponse> =>
  request(t, 'DELETE', `/v1/webhooks/endpoints/${id}`, { token });
const rotate = (token: string, id: string, key?: string): Promise<ApiResponse> =>
  request(t, 'POST', `/v1/webhooks/endpoints/${id}/rotate-secret`, {
    token,
    ...(key === undefined ? {} : { idempotencyKey: key }),
  });
const listEvents = (token: string, query = ''): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/events${query ? `?${query}` : ''}`, { token });
const getEvent = (token: string, id: string): Promise<ApiResponse> => request(t, 'GET', `/v1/events/${id}`, { token });
const deliveries = (token: string, id: string, query = ''): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/events/${id}/deliveries${query ? `?${query}` : ''}`, { token });
/** `body: undefined` sends no body at all. */
const resend = (token: string, id: string, body?: unknown): Promise<ApiResponse> =>
  request(t, 'POST', `/v1/events/${id}/resend`, { token, ...(body === undefined ? {} : { body }) });

/** Every endpoint of the workspace (all pages). */
async function allEndpoints(token: string): Promise<any[]> {
  const res = await listEndpoints(token, 'limit=100');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.has_more, false);
  return res.body.data;
}

async function newEndpoint(token: string, body: Record<string, unknown>): Promise<any> {
  const res = await createEndpoint(token, body);
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function successfulCollection(token: string): Promise<string> {
  const c = await createCollection(t, token, SUCCEEDS);
  assert.equal(c.status, 201, c.text);
  const id: string = c.body.collection_id;
  await waitFor(
    `collection ${id} to become successful`,
    async () => {
      const res = await request(t, 'GET', `/v1/collections/${id}`, { token });
      assert.equal(res.status, 200, res.text);
      return res.body.status === 'successful' ? true : undefined;
    },
    WAIT_MS,
  );
  return id;
}

/** The events of one object, newest first (every page). */
async function eventsOf(token: string, objectId: string): Promise<any[]> {
  const res = await listEvents(token, `object_id=${objectId}&limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

/** 404 not_found, and the same problem (less the request id) as for a missing id. */
function assertSameAsMissing(res: ApiResponse, missing: ApiResponse): void {
  assertProblem(res, 404, 'not_found');
  const strip = (r: ApiResponse): Record<string, unknown> => {
    const rest = { ...(r.body as Record<string, unknown>) };
    delete rest.request_id;
    return rest;
  };
  assert.deepEqual(strip(res), strip(missing));
}

/** The endpoint as GET shows it: the create or rotate answer less its secret. */
function withoutSecret(e: Record<string, unknown>): Record<string, unknown> {
  const rest = { ...e };
  delete rest.secret;
  return rest;
}

function hasFieldError(res: ApiResponse, field: string): boolean {
  return (
    Array.isArray(res.body?.errors) &&
    res.body.errors.some((e: { field: string; message: string }) => e.field === field && typeof e.message === 'string')
  );
}

// 1. Happy paths

describe('endpoints: create, list, read, change, delete', () => {
  let ws: { id: string; token: string };
  before(async () => {
    ws = await createWorkspace(t, 'webhooks-crud');
  });

  it('create: 201 with every field, the secret once, Location; defaults to every event type and no description', async () => {
    const before = Date.now();
    const res = await createEndpoint(ws.token, {
      url: 'https://example.com/hooks?source=payments',
      enabled_events: ['collection.successful', 'refund.successful'],
      description: 'primary receiver',
    });
    assert.equal(res.status, 201, res.text);
    const e = res.body;
    assert.deepEqual(Object.keys(e).sort(), [...ENDPOINT_FIELDS, 'secret'].sort());
    assert.match(e.id, UUID);
    assert.equal(e.url, 'https://example.com/hooks?source=payments');
    assert.deepEqual(e.enabled_events, ['collection.successful', 'refund.successful']);
    assert.equal(e.description, 'primary receiver');
    assert.equal(e.status, 'enabled');
    assert.equal(e.disabled_reason, null);
    assert.equal(e.previous_secret_expires_at, null);
    assert.match(e.secret, SECRET);
    assert.match(e.created_at, ISO_MS);
    assert.equal(e.updated_at, e.created_at);
    assert.ok(Math.abs(Date.parse(e.created_at) - before) < 60_000);
    assert.equal(res.headers.get('location'), `/v1/webhooks/endpoints/${e.id}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(res.headers.get('idempotent-replayed'), null);

    const plain = await newEndpoint(ws.token, { url: 'http://127.0.0.1:9/plain' });
    assert.deepEqual(plain.enabled_events, ['*']);
    assert.equal(plain.description, null);
    assert.match(plain.secret, SECRET);
    assert.notEqual(plain.secret, e.secret, 'every endpoint has a secret of its own');
  });

  it('GET and the list show exactly the created endpoint without its secret, newest first', async () => {
    const first = await newEndpoint(ws.token, { url: 'https://example.com/first', description: 'one' });
    const second = await newEndpoint(ws.token, {
      url: 'https://example.com/second',
      enabled_events: ['collection.failed'],
    });

    const got = await getEndpoint(ws.token, first.id);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, withoutSecret(first));
    assert.ok(!got.text.includes('whsec_'), 'GET shows no secret');

    const list = await listEndpoints(ws.token);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(Object.keys(list.body).sort(), ['data', 'has_more', 'next_cursor']);
    assert.ok(!list.text.includes('whsec_'), 'the list shows no secret');
    const ids = list.body.data.map((e: { id: string }) => e.id);
    assert.ok(ids.indexOf(second.id) < ids.indexOf(first.id) && ids.indexOf(second.id) >= 0, 'newest first');
    assert.deepEqual(list.body.data[ids.indexOf(second.id)], withoutSecret(second));
    for (const e of list.body.data) assert.deepEqual(Object.keys(e).sort(), ENDPOINT_FIELDS);
    assert.equal(list.body.has_more, false);
    assert.equal(list.body.next_cursor, null);
  });

  it('the list pages with limit and cursor, without repeats', async () => {
    const all = (await allEndpoints(ws.token)).map((e) => e.id);
    assert.ok(all.length >= 3);
    const walked: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 50; i++) {
      const page: ApiResponse = await listEndpoints(
        ws.token,
        `limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(page.status, 200, page.text);
      assert.equal(page.body.data.length, 1);
      walked.push(page.body.data[0].id);
      cursor = page.body.next_cursor;
      assert.equal(page.body.has_more, cursor !== null);
      if (!page.body.has_more) break;
    }
    assert.deepEqual(walked, all);
  });

  it('PATCH changes url, events and description; description null removes it; GET agrees', async () => {
    const e = await newEndpoint(ws.token, { url: 'https://example.com/old', description: 'old note' });
    await new Promise((r) => setTimeout(r, 5));
    const res = await patchEndpoint(ws.token, e.id, {
      url: 'https://example.org/new',
      enabled_events: ['refund.failed', 'collection.expired'],
      description: 'new note',
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ENDPOINT_FIELDS);
    assert.ok(!res.text.includes('whsec_'));
    assert.equal(res.body.id, e.id);
    assert.equal(res.body.url, 'https://example.org/new');
    assert.deepEqual(res.body.enabled_events, ['refund.failed', 'collection.expired']);
    assert.equal(res.body.description, 'new note');
    assert.equal(res.body.status, 'enabled');
    assert.equal(res.body.created_at, e.created_at);
    assert.ok(Date.parse(res.body.updated_at) > Date.parse(e.updated_at), 'updated_at moves');
    assert.deepEqual((await getEndpoint(ws.token, e.id)).body, res.body);

    const cleared = await patchEndpoint(ws.token, e.id, { description: null });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.description, null);
    assert.equal(cleared.body.url, 'https://example.org/new', 'fields not named stay as they were');
    assert.deepEqual(cleared.body.enabled_events, ['refund.failed', 'collection.expired']);
    assert.equal((await getEndpoint(ws.token, e.id)).body.description, null);
  });

  it('PATCH status: disabled sets disabled_by_user, enabled clears it; the list filters by status', async () => {
    const e = await newEndpoint(ws.token, { url: 'https://example.com/toggle' });
    const off = await patchEndpoint(ws.token, e.id, { status: 'disabled' });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.status, 'disabled');
    assert.equal(off.body.disabled_reason, 'disabled_by_user');
    assert.deepEqual((await getEndpoint(ws.token, e.id)).body, off.body);

    const disabled = await listEndpoints(ws.token, 'status=disabled&limit=100');
    assert.equal(disabled.status, 200, disabled.text);
    assert.deepEqual(
      disabled.body.data.map((x: { id: string }) => x.id),
      [e.id],
    );
    const enabled = await listEndpoints(ws.token, 'status=enabled&limit=100');
    assert.ok(enabled.body.data.length > 0);
    assert.ok(enabled.body.data.every((x: { id: string; status: string }) => x.id !== e.id && x.status === 'enabled'));
    assertProblem(await listEndpoints(ws.token, 'status=paused'), 400, 'validation_failed');

    const on = await patchEndpoint(ws.token, e.id, { status: 'enabled' });
    assert.equal(on.status, 200, on.text);
    assert.equal(on.body.status, 'enabled');
    assert.equal(on.body.disabled_reason, null);
    assert.deepEqual((await listEndpoints(ws.token, 'status=disabled')).body.data, []);
  });

  it('DELETE: 204 with no body, then GET, PATCH, rotate and DELETE are 404 and the list leaves it out', async () => {
    const e = await newEndpoint(ws.token, { url: 'https://example.com/doomed' });
    const del = await deleteEndpoint(ws.token, e.id);
    assert.equal(del.status, 204, del.text);
    assert.equal(del.text, '');
    assertProblem(await getEndpoint(ws.token, e.id), 404, 'not_found');
    assertProblem(await deleteEndpoint(ws.token, e.id), 404, 'not_found');
    assertProblem(await patchEndpoint(ws.token, e.id, { description: 'x' }), 404, 'not_found');
    assertProblem(await rotate(ws.token, e.id), 404, 'not_found');
    assert.ok(!(await allEndpoints(ws.token)).some((x) => x.id === e.id));
  });

  it('rotate-secret: 200 with a new secret and previous_secret_expires_at 24 h ahead; GET and list show the date, never a secret', async () => {
    const e = await newEndpoint(ws.token, { url: 'https://example.com/rotating' });
    const before = Date.now();
    const res = await rotate(ws.token, e.id);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), [...ENDPOINT_FIELDS, 'secret'].sort());
    assert.equal(res.body.id, e.id);
    assert.match(res.body.secret, SECRET);
    assert.notEqual(res.body.secret, e.secret);
    assert.match(res.body.previous_secret_expires_at, ISO_MS);
    const ahead = Date.parse(res.body.previous_secret_expires_at) - before;
    assert.ok(ahead > 24 * 3600_000 - 60_000 && ahead < 24 * 3600_000 + 60_000, `expires ${ahead} ms ahead`);
    assert.equal(res.body.url, e.url);
    assert.equal(res.body.status, 'enabled');

    const got = await getEndpoint(ws.token, e.id);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.previous_secret_expires_at, res.body.previous_secret_expires_at);
    assert.ok(!got.text.includes('whsec_'));
    const list = await listEndpoints(ws.token, 'limit=100');
    assert.ok(!list.text.includes('whsec_'));
    assert.equal(
      list.body.data.find((x: { id: string }) => x.id === e.id).previous_secret_expires_at,
      res.body.previous_secret_expires_at,
    );

    // Under an Idempotency-Key a retried rotation answers the same secret and rotates once.
    const key = newKey();
    const r1 = await rotate(ws.token, e.id, key);
    const r2 = await rotate(ws.token, e.id, key);
    assert.equal(r1.status, 200, r1.text);
    assert.equal(r2.status, 200, r2.text);
    assert.equal(r2.text, r1.text);
    assert.equal(r2.headers.get('idempotent-replayed'), 'true');
    assert.notEqual(r1.body.secret, res.body.secret);
  });

  it('an id that is not a UUID is 404 on every route that takes one', async () => {
    for (const id of ['nope', '123', 'not-a-uuid-at-all']) {
      assertProblem(await getEndpoint(ws.token, id), 404, 'not_found');
      assertProblem(await patchEndpoint(ws.token, id, { description: 'x' }), 404, 'not_found');
      assertProblem(await deleteEndpoint(ws.token, id), 404, 'not_found');
      assertProblem(await rotate(ws.token, id), 404, 'not_found');
      assertProblem(await getEvent(ws.token, id), 404, 'not_found');
      assertProblem(await deliveries(ws.token, id), 404, 'not_found');
      assertProblem(await resend(ws.token, id), 404, 'not_found');
    }
    const missing = randomUUID();
    assertProblem(await getEndpoint(ws.token, missing), 404, 'not_found');
    assertProblem(await getEvent(ws.token, missing), 404, 'not_found');
    assertProblem(await deliveries(ws.token, missing), 404, 'not_found');
    assertProblem(await resend(ws.token, missing), 404, 'not_found');
  });
});

// 2. Validation

describe('endpoints: validation', () => {
  let ws: { id: string; token: string };
  let existing: any;
  before(async () => {
    ws = await createWorkspace(t, 'webhooks-validation');
    existing = await newEndpoint(ws.token, { url: 'https://example.com/ok', description: 'kept' });
  });

  it('unusable URLs are 400 invalid_webhook_url with a url field error, and nothing is created', async () => {
    const before = await allEndpoints(ws.token);
    for (const url of [
      'not a url',
      'example.com/hooks',
      'ftp://example.com/hooks',
      'javascript:alert(1)',
      'https://user:pass@example.com/hooks',
      'https://user@example.com/hooks',
      'https://example.com/hooks#fragment',
    ]) {
      const res = await createEndpoint(ws.token, { url });
      assertProblem(res, 400, 'invalid_webhook_url');
      assert.ok(hasFieldError(res, 'url'), `${url}: ${res.text}`);
    }
    assert.deepEqual(await allEndpoints(ws.token), before);
  });

  it('a URL over 2048 characters or an empty one is 400 invalid_webhook_url with a url field error, and nothing is created', async () => {
    const before = await allEndpoints(ws.token);
    const long = `https://example.com/${'a'.repeat(2049 - 'https://example.com/'.length)}`;
    assert.equal(long.length, 2049);
    for (const url of [long, '']) {
      const res = await createEndpoint(ws.token, { url });
      assertProblem(res, 400, 'invalid_webhook_url');
      assert.ok(hasFieldError(res, 'url'), res.text);
    }
    // Exactly 2048 characters is still accepted.
    const ok = await createEndpoint(ws.token, { url: long.slice(0, 2048) });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.url.length, 2048);
    assert.equal((await deleteEndpoint(ws.token, ok.body.id)).status, 204);
    assert.deepEqual(await allEndpoints(ws.token), before);
  });

  it('bad bodies are 400 validation_failed naming the field, and nothing is created', async () => {
    const before = await allEndpoints(ws.token);
    const url = 'https://example.com/hooks';
    const cases: [unknown, string][] = [
      [{ url, enabled_events: ['collection.nope'] }, 'enabled_events.0'],
      [{ url, enabled_events: ['collection.successful', 'payout.sent'] }, 'enabled_events.1'],
      [{ url, enabled_events: ['collection.successful', 'collection.successful'] }, 'enabled_events'],
      [{ url, enabled_events: ['*', '*'] }, 'enabled_events'],
      [{ url, enabled_events: [] }, 'enabled_events'],
      [{ url, enabled_events: 'collection.successful' }, 'enabled_events'],
      [{ url, secret: 'whsec_mine' }, 'secret'],
      [{ url, events: ['*'] }, 'events'],
      [{ url, description: 'x'.repeat(501) }, 'description'],
      [{ url, description: 7 }, 'description'],
      [{ url: 42 }, 'url'],
      [{ enabled_events: ['*'] }, 'url'],
    ];
    for (const [body, field] of cases) {
      const res = await createEndpoint(ws.token, body);
      assertProblem(res, 400, 'validation_failed');
      assert.ok(
        hasFieldError(res, field),
        `${JSON.stringify(body).slice(0, 80)} → expected a ${field} error: ${res.text}`,
      );
    }
    assert.deepEqual(await allEndpoints(ws.token), before);
  });

  it('PATCH: {} , unknown fields, bad values and bad URLs are 400 and change nothing', async () => {
    const empty = await patchEndpoint(ws.token, existing.id, {});
    assertProblem(empty, 400, 'validation_failed');
    assert.ok(Array.isArray(empty.body.errors) && empty.body.errors.length > 0, empty.text);

    const cases: [unknown, string, string][] = [
      [{ secret: 'whsec_x' }, 'validation_failed', 'secret'],
      [{ status: 'paused' }, 'validation_failed', 'status'],
      [{ status: null }, 'validation_failed', 'status'],
      [{ enabled_events: [] }, 'validation_failed', 'enabled_events'],
      [{ enabled_events: ['collection.nope'] }, 'validation_failed', 'enabled_events.0'],
      [{ enabled_events: ['*', '*'] }, 'validation_failed', 'enabled_events'],
      [{ url: null }, 'validation_failed', 'url'],
      [{ url: 'ftp://example.com/x' }, 'invalid_webhook_url', 'url'],
      [{ url: 'https://a:b@example.com/x' }, 'invalid_webhook_url', 'url'],
      [{ url: 'https://example.com/x#y' }, 'invalid_webhook_url', 'url'],
    ];
    for (const [body, code, field] of cases) {
      const res = await patchEndpoint(ws.token, existing.id, body);
      assertProblem(res, 400, code);
      assert.ok(hasFieldError(res, field), `${JSON.stringify(body)} → expected a ${field} error: ${res.text}`);
    }
    assert.deepEqual(
      (await getEndpoint(ws.token, existing.id)).body,
      withoutSecret(existing),
      'refused changes leave the endpoint as it was',
    );
  });

  it('list query parameters are checked: limit 1..100, a tampered cursor is 400 invalid_cursor', async () => {
    assertProblem(await listEndpoints(ws.token, 'limit=0'), 400, 'validation_failed');
    assertProblem(await listEndpoints(ws.token, 'limit=101'), 400, 'validation_failed');
    assertProblem(await listEndpoints(ws.token, 'colour=blue'), 400, 'validation_failed');
    await newEndpoint(ws.token, { url: 'https://example.com/second' });
    const page = await listEndpoints(ws.token, 'limit=1');
    assert.equal(page.status, 200, page.text);
    const cursor: string = page.body.next_cursor;
    assert.equal(typeof cursor, 'string');
    const tampered = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BB' : 'AA');
    assertProblem(await listEndpoints(ws.token, `cursor=${encodeURIComponent(tampered)}`), 400, 'invalid_cursor');
    assertProblem(await listEndpoints(ws.token, 'cursor=garbage'), 400, 'invalid_cursor');
  });
});

// 3. Who may call

describe('access: integrator tokens only', () => {
  let lpToken: string;
  let endpoint: any;
  let eventId: string;
  let ws: { id: string; token: string };

  before(async () => {
    ws = await createWorkspace(t, 'webhooks-access');
    lpToken = await liquidityProviderToken(t, ws.id);
    endpoint = await newEndpoint(ws.token, { url: `${receiverBase}/access`, description: 'access' });
    const c = await createCollection(t, ws.token);
    assert.equal(c.status, 201, c.text);
    const events = await eventsOf(ws.token, c.body.collection_id);
    assert.ok(events.length > 0);
    eventId = events[0].id;
  });

  // Real ids of the same workspace, so a wrongly admitted call would succeed rather than 404.
  const routes = (): [string, string, unknown][] => [
    ['POST', '/v1/webhooks/endpoints', { url: 'https://example.com/intruder' }],
    ['GET', '/v1/webhooks/endpoints', undefined],
    ['GET', `/v1/webhooks/endpoints/${endpoint.id}`, undefined],
    ['PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { description: 'changed by an intruder' }],
    ['DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, undefined],
    ['POST', `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`, undefined],
    ['GET', '/v1/events', undefined],
    ['GET', `/v1/events/${eventId}`, undefined],
    ['GET', `/v1/events/${eventId}/deliveries`, undefined],
    ['POST', `/v1/events/${eventId}/resend`, { endpoint_id: endpoint.id }],
  ];

  it('without a token or with a bad one: 401 unauthorized on all 10 routes', async () => {
    assert.equal(routes().length, 10);
    for (const [method, url, body] of routes()) {
      assertProblem(await request(t, method, url, { body }), 401, 'unauthorized');
      assertProblem(await request(t, method, url, { body, token: 'not-a-token' }), 401, 'unauthorized');
    }
  });

  it('with a liquidity_provider or an admin token: 403 forbidden on all 10 routes, and nothing changes', async () => {
    for (const [method, url, body] of routes()) {
      for (const token of [lpToken, t.adminToken]) {
        const res = await request(t, method, url, { body, token });
        assertProblem(res, 403, 'forbidden');
        assert.ok(!res.text.includes('whsec_'));
      }
    }
    assert.deepEqual(
      (await getEndpoint(ws.token, endpoint.id)).body,
      withoutSecret(endpoint),
      'not patched, rotated or deleted',
    );
    assert.deepEqual(
      (await allEndpoints(ws.token)).map((e) => e.id),
      [endpoint.id],
      'nothing created',
    );
    assert.equal(
      (await deliveries(ws.token, eventId)).body.data.filter((d: { kind: string }) => d.kind === 'resend').length,
      0,
      'no resend queued',
    );
  });
});

// 4. Workspaces

describe('workspaces never see each other’s endpoints and events', () => {
  let a: { id: string; token: string };
  let b: { id: string; token: string };
  let aEndpoint: any;
  let aEventId: string;
  let aCollection: string;
  let bEventId: string;
  let bEndpoint: any;

  before(async () => {
    a = await createWorkspace(t, 'webhooks-a');
    b = await createWorkspace(t, 'webhooks-b');
    aEndpoint = await newEndpoint(a.token, { url: `${receiverBase}/ws-a`, description: 'A' });
    bEndpoint = await newEndpoint(b.token, { url: `${receiverBase}/ws-b`, description: 'B' });
    const ca = await createCollection(t, a.token);
    assert.equal(ca.status, 201, ca.text);
    aCollection = ca.body.collection_id;
    aEventId = (await eventsOf(a.token, aCollection))[0].id;
    const cb = await createCollection(t, b.token);
    assert.equal(cb.status, 201, cb.text);
    bEventId = (await eventsOf(b.token, cb.body.collection_id))[0].id;
  });

  it("B's GET, PATCH, DELETE and rotate of A's endpoint answer 404 exactly as a missing id, and change nothing", async () => {
    const missing = randomUUID();
    assertSameAsMissing(await getEndpoint(b.token, aEndpoint.id), await getEndpoint(b.token, missing));
    assertSameAsMissing(
      await patchEndpoint(b.token, aEndpoint.id, { status: 'disabled' }),
      await patchEndpoint(b.token, missing, { status: 'disabled' }),
    );
    assertSameAsMissing(await rotate(b.token, aEndpoint.id), await rotate(b.token, missing));
    assertSameAsMissing(await rotate(b.token, aEndpoint.id, newKey()), await rotate(b.token, missing, newKey()));
    assertSameAsMissing(await deleteEndpoint(b.token, aEndpoint.id), await deleteEndpoint(b.token, missing));
    const got = await getEndpoint(a.token, aEndpoint.id);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, withoutSecret(aEndpoint), 'still enabled, not rotated, not deleted');
  });

  it("B's GET, deliveries and resend of A's event answer 404 exactly as a missing id; resending to A's endpoint is 404", async () => {
    const missing = randomUUID();
    assertSameAsMissing(await getEvent(b.token, aEventId), await getEvent(b.token, missing));
    assertSameAsMissing(await deliveries(b.token, aEventId), await deliveries(b.token, missing));
    assertSameAsMissing(await resend(b.token, aEventId), await resend(b.token, missing));
    assertSameAsMissing(
      await resend(b.token, aEventId, { endpoint_id: bEndpoint.id }),
      await resend(b.token, missing, { endpoint_id: bEndpoint.id }),
    );
    // B's own event, A's endpoint: the endpoint is not B's.
    assertSameAsMissing(
      await resend(b.token, bEventId, { endpoint_id: aEndpoint.id }),
      await resend(b.token, bEventId, { endpoint_id: randomUUID() }),
    );
    const aDeliveries = await deliveries(a.token, aEventId);
    assert.equal(aDeliveries.status, 200, aDeliveries.text);
    assert.ok(
      aDeliveries.body.data.every(
        (d: { kind: string; endpoint_id: string }) => d.kind === 'event' && d.endpoint_id === aEndpoint.id,
      ),
    );
  });

  it("B's lists show none of A's endpoints or events", async () => {
    assert.deepEqual(
      (await allEndpoints(b.token)).map((e) => e.id),
      [bEndpoint.id],
    );
    const bEvents = await listEvents(b.token, 'limit=100');
    assert.equal(bEvents.status, 200, bEvents.text);
    assert.ok(bEvents.body.data.length > 0);
    assert.ok(
      bEvents.body.data.every(
        (e: { id: string; data: { collection_id: string } }) =>
          e.id !== aEventId && e.data.collection_id !== aCollection,
      ),
    );
    assert.deepEqual((await listEvents(b.token, `object_id=${aCollection}`)).body.data, []);
    assert.ok((await eventsOf(a.token, aCollection)).length > 0);
  });
});

// 5. The limit

describe('at most 16 endpoints per workspace', () => {
  it('16 are accepted, the 17th is 409 webhook_endpoint_limit_reached (disabled ones count); after a delete one more fits', async () => {
    const ws = await createWorkspace(t, 'webhooks-limit');
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) ids.push((await newEndpoint(ws.token, { url: `https://example.com/hook/${i}` })).id);
    assert.equal((await allEndpoints(ws.token)).length, 16);
    const over = await createEndpoint(ws.token, { url: 'https://example.com/hook/17' });
    assertProblem(over, 409, 'webhook_endpoint_limit_reached');
    const idempotentOver = await createEndpoint(ws.token, { url: 'https://example.com/hook/17' }, newKey());
    assertProblem(idempotentOver, 409, 'webhook_endpoint_limit_reached');

    assert.equal((await patchEndpoint(ws.token, ids[0] as string, { status: 'disabled' })).status, 200);
    assertProblem(
      await createEndpoint(ws.token, { url: 'https://example.com/hook/17' }),
      409,
      'webhook_endpoint_limit_reached',
    );

    assert.equal((await deleteEndpoint(ws.token, ids[3] as string)).status, 204);
    const again = await createEndpoint(ws.token, { url: 'https://example.com/hook/again' });
    assert.equal(again.status, 201, again.text);
    assertProblem(
      await createEndpoint(ws.token, { url: 'https://example.com/hook/18' }),
      409,
      'webhook_endpoint_limit_reached',
    );
    assert.equal((await allEndpoints(ws.token)).length, 16);

    // The limit is per workspace: another workspace is unaffected.
    const other = await createWorkspace(t, 'webhooks-limit-other');
    assert.equal((await createEndpoint(other.token, { url: 'https://example.com/hook/x' })).status, 201);
  });

  it('20 concurrent creations in a fresh workspace leave exactly 16', async () => {
    const ws = await createWorkspace(t, 'webhooks-limit-race');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => createEndpoint(ws.token, { url: `https://example.com/race/${i}` })),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(
      statuses,
      [...Array(16).fill(201), ...Array(4).fill(409)],
      results.map((r) => `${r.status} ${r.text.slice(0, 80)}`).join('\n'),
    );
    for (const r of results.filter((x) => x.status === 409)) assertProblem(r, 409, 'webhook_endpoint_limit_reached');
    const listed = await allEndpoints(ws.token);
    assert.equal(listed.length, 16);
    assert.deepEqual(
      new Set(listed.map((e) => e.id)),
      new Set(results.filter((r) => r.status === 201).map((r) => r.body.id)),
    );
  });
});

// 6. Idempotency

describe('idempotent creation', () => {
  it('same key and body: the same response (same id and secret) with Idempotent-Replayed, one endpoint; another body: 422', async () => {
    const ws = await createWorkspace(t, 'webhooks-idem');
    const key = newKey();
    const body = { url: 'https://example.com/idem', enabled_events: ['collection.successful'], description: 'once' };
    const first = await createEndpoint(ws.token, body, key);
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null);

    // Same body with its keys in another order: the same fingerprint.
    const second = await createEndpoint(
      ws.token,
      { description: 'once', enabled_events: ['collection.successful'], url: 'https://example.com/idem' },
      key,
    );
    assert.equal(second.status, 201, second.text);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.text, first.text, 'byte-identical body');
    assert.equal(second.body.id, first.body.id);
    assert.equal(second.body.secret, first.body.secret);
    assert.equal(second.headers.get('location'), first.headers.get('location'));

    const reused = await createEndpoint(ws.token, { ...body, description: 'twice' }, key);
    assertProblem(reused, 422, 'idempotency_key_reused');
    // Another route with the same key is also a reuse.
    assertProblem(await rotate(ws.token, first.body.id, key), 422, 'idempotency_key_reused');

    assert.deepEqual(
      (await allEndpoints(ws.token)).map((e) => e.id),
      [first.body.id],
    );

    // A request refused by validation stores nothing: the key is still free for a good request.
    const key2 = newKey();
    assertProblem(await createEndpoint(ws.token, { url: 'ftp://example.com/x' }, key2), 400, 'invalid_webhook_url');
    const later = await createEndpoint(ws.token, { url: 'https://example.com/later' }, key2);
    assert.equal(later.status, 201, later.text);
    assert.equal(later.headers.get('idempotent-replayed'), null);
    assertProblem(await createEndpoint(ws.token, body, 'bad key with spaces'), 422, 'idempotency_key_invalid');
  });
});

// 7. Rotation, end to end

describe('secret rotation end to end', () => {
  it('after a rotation every delivery carries two v1 signatures and verifies with the old and the new secret', async () => {
    const ws = await createWorkspace(t, 'webhooks-rotation');
    const path = `/rotation/${randomUUID()}`;
    const created = await newEndpoint(ws.token, { url: `${receiverBase}${path}` });
    const oldSecret: string = created.secret;
    const rotated = await rotate(ws.token, created.id);
    assert.equal(rotated.status, 200, rotated.text);
    const newSecret: string = rotated.body.secret;
    assert.notEqual(newSecret, oldSecret);

    const collectionId = await successfulCollection(ws.token);
    const mine = await waitFor(
      'the four lifecycle events delivered',
      async () => {
        const got = received.filter((r) => r.path === path);
        return got.length >= 4 ? got : undefined;
      },
      WAIT_MS,
    );
    const types = mine.map((r) => JSON.parse(r.body).type).sort();
    assert.deepEqual(types, [
      'collection.created',
      'collection.pending',
      'collection.processing',
      'collection.successful',
    ]);

    const stranger = new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    for (const r of mine) {
      const headers = r.headers as Record<string, string>;
      const signatures = (headers['webhook-signature'] ?? '').split(' ');
      assert.equal(signatures.length, 2, headers['webhook-signature']);
      for (const s of signatures) assert.match(s, /^v1,[A-Za-z0-9+/]{43}=$/);
      assert.notEqual(signatures[0], signatures[1]);
      const viaOld = new Webhook(oldSecret).verify(r.body, headers);
      const viaNew = new Webhook(newSecret).verify(r.body, headers);
      assert.deepEqual(viaOld, viaNew);
      assert.throws(() => stranger.verify(r.body, headers), /signature/i, 'a third secret must not verify');
      // A tampered body fails with both secrets.
      assert.throws(() => new Webhook(newSecret).verify(r.body.replace('collection.', 'collectioN.'), headers));

      const event = JSON.parse(r.body);
      assert.equal(headers['webhook-id'], event.id);
      assert.equal(headers['content-type'], 'application/json');
      assert.equal(event.data.collection_id, collectionId);
      const stored = await getEvent(ws.token, event.id);
      assert.equal(stored.status, 200, stored.text);
      assert.deepEqual(stored.body, event, 'the delivery carries the event exactly as GET /v1/events/{id} shows it');
    }
  });
});

describe('rotating often', () => {
  it('keeps only the two newest earlier secrets signing, next to the current one', async () => {
    const ws = await createWorkspace(t, 'webhooks-rotate-often');
    const path = `/rotation/${randomUUID()}`;
    const created = await newEndpoint(ws.token, {
      url: `${receiverBase}${path}`,
      enabled_events: ['collection.created'],
    });
    const secrets: string[] = [created.secret];
    for (let i = 0; i < 4; i++) {
      const rotated = await rotate(ws.token, created.id);
      assert.equal(rotated.status, 200, rotated.text);
      secrets.push(rotated.body.secret);
    }
    await createCollection(t, ws.token);
    const [delivery] = await waitFor(
      'the delivery',
      async () => {
        const got = received.filter((r) => r.path === path);
        return got.length >= 1 ? got : undefined;
      },
      WAIT_MS,
    );
    const headers = delivery!.headers as Record<string, string>;
    assert.equal((headers['webhook-signature'] ?? '').split(' ').length, 3, headers['webhook-signature']);
    for (const secret of secrets.slice(2)) new Webhook(secret).verify(delivery!.body, headers);
    for (const secret of secrets.slice(0, 2))
      assert.throws(() => new Webhook(secret).verify(delivery!.body, headers), /signature/i);
  });
});

describe('ids in bodies and queries', () => {
  it('a urn:uuid: id is a 400 naming the field, not a server error', async () => {
    const res = await listEvents(t.demoToken, 'object_id=urn:uuid:00000000-0000-4000-8000-000000000000');
    assertProblem(res, 400, 'validation_failed');
    assert.ok(hasFieldError(res, 'object_id'), res.text);
    const collection = (await createCollection(t, t.demoToken)).body;
    const event = (await listEvents(t.demoToken, `object_id=${collection.collection_id}`)).body.data[0];
    const resent = await resend(t.demoToken, event.id, {
      endpoint_id: 'urn:uuid:00000000-0000-4000-8000-000000000000',
    });
    assertProblem(resent, 400, 'validation_failed');
    assert.ok(hasFieldError(resent, 'endpoint_id'), resent.text);
  });
});

// 8. Events API

describe('events API', () => {
  let ws: { id: string; token: string };
  let collectionId: string;
  let otherId: string;
  let events: any[];

  before(async () => {
    ws = await createWorkspace(t, 'webhooks-events');
    collectionId = await successfulCollection(ws.token);
    // A second collection, which fails at once: its events must not show under the first one's object_id.
    const other = await createCollection(t, ws.token, { customer: { phone_number: '+254712340002' } });
    assert.equal(other.status, 201, other.text);
    otherId = other.body.collection_id;
    await waitFor(
      'the other collection to fail',
      async () => ((await eventsOf(ws.token, otherId)).some((e) => e.type === 'collection.failed') ? true : undefined),
      WAIT_MS,
    );
    events = await eventsOf(ws.token, collectionId);
  });

  it('object_id lists the collection’s events newest first, with the right types and exact shape', async () => {
    assert.deepEqual(
      events.map((e) => e.type),
      ['collection.successful', 'collection.processing', 'collection.pending', 'collection.created'],
    );
    for (const e of events) {
      assert.deepEqual(Object.keys(e).sort(), ['data', 'id', 'timestamp', 'type']);
      assert.match(e.id, UUID);
      assert.match(e.timestamp, ISO_MS);
      assert.equal(e.data.collection_id, collectionId);
      assert.equal(e.data.status, e.type.replace('collection.', ''), 'the collection as it was at that moment');
      assert.deepEqual(e.data.metadata, { order_id: '42', cart: { items: 2 } });
    }
    for (let i = 1; i < events.length; i++) assert.ok(events[i - 1].timestamp >= events[i].timestamp, 'newest first');
    const all = await listEvents(ws.token, 'limit=100');
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(Object.keys(all.body).sort(), ['data', 'has_more', 'next_cursor']);
    const ids = new Set(all.body.data.map((e: { id: string }) => e.id));
    for (const e of events) assert.ok(ids.has(e.id));
    assert.ok(all.body.data.some((e: { data: { collection_id: string } }) => e.data.collection_id === otherId));
    assert.ok(all.body.data.length > events.length);
  });

  it('the type filter keeps only that type', async () => {
    const pending = await listEvents(ws.token, `object_id=${collectionId}&type=collection.pending`);
    assert.equal(pending.status, 200, pending.text);
    assert.deepEqual(pending.body.data, [events.find((e) => e.type === 'collection.pending')]);
    const failed = await listEvents(ws.token, 'type=collection.failed');
    assert.equal(failed.status, 200, failed.text);
    assert.ok(failed.body.data.length >= 1);
    assert.ok(
      failed.body.data.every(
        (e: { type: string; data: { collection_id: string } }) =>
          e.type === 'collection.failed' && e.data.collection_id === otherId,
      ),
    );
    assert.deepEqual((await listEvents(ws.token, `object_id=${collectionId}&type=collection.failed`)).body.data, []);
    assert.deepEqual((await listEvents(ws.token, `object_id=${randomUUID()}`)).body.data, []);
  });

  it('limit=1 and the cursor walk all events once, in order', async () => {
    const walked: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 20; i++) {
      const page: ApiResponse = await listEvents(
        ws.token,
        `object_id=${collectionId}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(page.status, 200, page.text);
      assert.equal(page.body.data.length, 1);
      walked.push(page.body.data[0].id);
      cursor = page.body.next_cursor;
      assert.equal(page.body.has_more, cursor !== null);
      if (cursor === null) break;
    }
    assert.deepEqual(
      walked,
      events.map((e) => e.id),
    );
    assert.equal(new Set(walked).size, walked.length);
  });

  it('from/to filter the event time', async () => {
    const oldest = events[events.length - 1];
    const newest = events[0];
    const fromNewest = await listEvents(
      ws.token,
      `object_id=${collectionId}&from=${encodeURIComponent(newest.timestamp)}`,
    );
    assert.equal(fromNewest.status, 200, fromNewest.text);
    assert.deepEqual(
      fromNewest.body.data.map((e: { id: string }) => e.id),
      events.filter((e) => e.timestamp >= newest.timestamp).map((e) => e.id),
    );
    const toOldest = await listEvents(ws.token, `object_id=${collectionId}&to=${encodeURIComponent(oldest.timestamp)}`);
    assert.equal(toOldest.status, 200, toOldest.text);
    assert.deepEqual(
      toOldest.body.data.map((e: { id: string }) => e.id),
      events.filter((e) => e.timestamp <= oldest.timestamp).map((e) => e.id),
    );
    assertProblem(await listEvents(ws.token, 'from=yesterday'), 400, 'validation_failed');
  });

  it('GET /v1/events/{id} equals the list item: {id, type, timestamp, data} exactly', async () => {
    for (const e of events) {
      const res = await getEvent(ws.token, e.id);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, e);
      assert.deepEqual(Object.keys(res.body).sort(), ['data', 'id', 'timestamp', 'type']);
    }
  });

  it('bad queries: a tampered cursor is 400 invalid_cursor; an unknown type, a bad object_id or limit are 400 validation_failed', async () => {
    const page = await listEvents(ws.token, `object_id=${collectionId}&limit=1`);
    const cursor: string = page.body.next_cursor;
    assert.equal(typeof cursor, 'string');
    const [payload, signature] = cursor.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify([Date.now() + 1000, randomUUID()])).toString('base64url');
    for (const bad of [
      `${forged}.${signature}`,
      `${payload}.${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`,
      `${payload}x.${signature}`,
      'garbage',
    ]) {
      const res = await listEvents(ws.token, `object_id=${collectionId}&cursor=${encodeURIComponent(bad)}`);
      assertProblem(res, 400, 'invalid_cursor');
    }
    const unknownType = await listEvents(ws.token, 'type=collection.exploded');
    assertProblem(unknownType, 400, 'validation_failed');
    assert.ok(hasFieldError(unknownType, 'type'), unknownType.text);
    assertProblem(await listEvents(ws.token, 'type=*'), 400, 'validation_failed');
    assertProblem(await listEvents(ws.token, 'object_id=not-a-uuid'), 400, 'validation_failed');
    assertProblem(await listEvents(ws.token, 'limit=0'), 400, 'validation_failed');
    assertProblem(await listEvents(ws.token, 'limit=101'), 400, 'validation_failed');
    assertProblem(await listEvents(ws.token, 'status=enabled'), 400, 'validation_failed');
  });
});

describe('events stored long ago', () => {
  it("an event whose data no longer matches today's schema is read as stored: 200 from GET and the list, not 500", async () => {
    const ws = await createWorkspace(t, 'webhooks-old-events');
    const created = await createCollection(t, ws.token, SUCCEEDS);
    assert.equal(created.status, 201, created.text);
    // A collection as an older version stored it: no `amount` (today's Collection requires it), and a field it has
    // since dropped. Written with SQL, as the service never writes one like it now.
    const data: Record<string, unknown> = { ...created.body, collection_id: randomUUID(), legacy_note: 'v0' };
    delete data.amount;
    const id = randomUUID();
    const at = new Date(Date.now() - 86_400_000);
    await t.db.query(
      `INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
       VALUES ($1, $2, 'collection.created', 'collection', $3, $4, $5)`,
      [id, ws.id, data.collection_id, JSON.stringify(data), at],
    );
    const stored = { id, type: 'collection.created', timestamp: at.toISOString(), data };
    // fetch, not request(): this answer does not conform to today's document, and that is the point.
    const read = async (url: string): Promise<{ status: number; type: string | null; body: any }> => {
      const res = await fetch(t.baseUrl + url, { headers: { authorization: `Bearer ${ws.token}` } });
      const text = await res.text();
      return { status: res.status, type: res.headers.get('content-type'), body: JSON.parse(text) };
    };
    const one = await read(`/v1/events/${id}`);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.match(one.type ?? '', /^application\/json/);
    assert.deepEqual(one.body, stored);
    const list = await read(`/v1/events?object_id=${String(data.collection_id)}`);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(list.body, { data: [stored], has_more: false, next_cursor: null });
    const all = await read('/v1/events?limit=100');
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.deepEqual(
      all.body.data.find((e: { id: string }) => e.id === id),
      stored,
    );
  });
});

// 9. Deliveries and resend

describe('deliveries and resend', () => {
  let ws: { id: string; token: string };
  let all: any; // subscribes to '*'
  let successOnly: any; // collection.successful only
  let refundsOnly: any; // refund.* only: never subscribed to collection events
  let pendingEvent: any;
  let successfulEvent: any;
  const pathAll = `/resend/all/${randomUUID()}`;
  const pathSuccess = `/resend/success/${randomUUID()}`;
  const pathRefunds = `/resend/refunds/${randomUUID()}`;

  before(async () => {
    ws = await createWorkspace(t, 'webhooks-resend');
    all = await newEndpoint(ws.token, { url: `${receiverBase}${pathAll}` });
    successOnly = await newEndpoint(ws.token, {
      url: `${receiverBase}${pathSuccess}`,
      enabled_events: ['collection.successful'],
    });
    refundsOnly = await newEndpoint(ws.token, {
      url: `${receiverBase}${pathRefunds}`,
      enabled_events: ['refund.successful', 'refund.failed'],
    });
    const collectionId = await successfulCollection(ws.token);
    const events = await eventsOf(ws.token, collectionId);
    pendingEvent = events.find((e) => e.type === 'collection.pending');
    successfulEvent = events.find((e) => e.type === 'collection.successful');
    assert.ok(pendingEvent && successfulEvent);
    // Wait for the normal deliveries, so later counts only see resends.
    await waitFor(
      'the successful event delivered to both subscribers',
      async () => {
        const res = await deliveries(ws.token, successfulEvent.id);
        return res.body.data.length === 2 && res.body.data.every((d: { status: string }) => d.status === 'succeeded')
          ? true
          : undefined;
      },
      WAIT_MS,
    );
  });

  it('deliveries: one per subscribed endpoint, each with its attempt log', async () => {
    const res = await deliveries(ws.token, successfulEvent.id);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['data', 'has_more', 'next_cursor']);
    assert.deepEqual(
      res.body.data.map((d: { endpoint_id: string }) => d.endpoint_id).sort(),
      [all.id, successOnly.id].sort(),
    );
    for (const d of res.body.data) {
      assert.deepEqual(Object.keys(d).sort(), DELIVERY_FIELDS);
      assert.equal(d.event_id, successfulEvent.id);
      assert.equal(d.kind, 'event');
      assert.equal(d.status, 'succeeded');
      assert.equal(d.next_attempt_at, null);
      assert.equal(d.last_error, null);
      assert.equal(d.attempts.length, 1);
      const [a] = d.attempts;
      assert.deepEqual(Object.keys(a).sort(), [
        'attempt',
        'created_at',
        'duration_ms',
        'error',
        'response_body',
        'status_code',
        'succeeded',
        'url',
      ]);
      assert.equal(a.attempt, 1);
      assert.equal(a.status_code, 200);
      assert.equal(a.response_body, 'ok');
      assert.equal(a.error, null);
      assert.equal(a.succeeded, true);
      assert.equal(a.url, d.endpoint_id === all.id ? all.url : successOnly.url);
    }
    // The pending event went to the '*' endpoint only.
    const pending = await waitFor(
      'the pending event delivered',
      async () => {
        const r = await deliveries(ws.token, pendingEvent.id);
        return r.body.data.length === 1 && r.body.data[0].status === 'succeeded' ? r : undefined;
      },
      WAIT_MS,
    );
    assert.equal(pending.body.data[0].endpoint_id, all.id);
    assertProblem(await deliveries(ws.token, successfulEvent.id, 'limit=0'), 400, 'validation_failed');
  });

  // The fan-out stamps deliveries with a millisecond time: a cursor (milliseconds) walks them all.
  it('paging the deliveries of one fan-out with limit=1 walks every delivery exactly once', async () => {
    const full = (await deliveries(ws.token, successfulEvent.id, 'limit=100')).body.data.map(
      (d: { id: string }) => d.id,
    );
    assert.equal(full.length, 2, 'two endpoints subscribe, so two deliveries');
    const walked: string[] = [];
    let cursor: string | null = null;
    let lastPage: ApiResponse | undefined;
    for (let i = 0; i < 5; i++) {
      const page: ApiResponse = await deliveries(
        ws.token,
        successfulEvent.id,
        `limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(page.status, 200, page.text);
      walked.push(...page.body.data.map((d: { id: string }) => d.id));
      lastPage = page;
      cursor = page.body.next_cursor;
      if (cursor === null) break;
    }
    assert.deepEqual(walked, full);
    assert.equal(lastPage?.body.has_more, false);
    assertProblem(await deliveries(ws.token, successfulEvent.id, 'limit=0'), 400, 'validation_failed');
  });

  it('resend to a named endpoint: 202 with one pending resend delivery, which the relay sends with the same webhook-id', async () => {
    const res = await resend(ws.token, successfulEvent.id, { endpoint_id: successOnly.id });
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(Object.keys(res.body), ['data']);
    assert.equal(res.body.data.length, 1);
    const [d] = res.body.data;
    assert.deepEqual(Object.keys(d).sort(), DELIVERY_FIELDS);
    assert.match(d.id, UUID);
    assert.equal(d.event_id, successfulEvent.id);
    assert.equal(d.endpoint_id, successOnly.id);
    assert.equal(d.kind, 'resend');
    assert.equal(d.status, 'pending');
    assert.deepEqual(d.attempts, []);

    const sent = await waitFor(
      'the resend delivery to get an attempt',
      async () => {
        const list = await deliveries(ws.token, successfulEvent.id, 'limit=100');
        const found = list.body.data.find((x: { id: string }) => x.id === d.id);
        return found && found.status !== 'pending' ? found : undefined;
      },
      WAIT_MS,
    );
    assert.equal(sent.kind, 'resend');
    assert.equal(sent.status, 'succeeded');
    assert.equal(sent.attempts.length, 1);
    assert.equal(sent.attempts[0].succeeded, true);
    assert.equal(sent.attempts[0].status_code, 200);

    const copies = received.filter((r) => r.path === pathSuccess && r.headers['webhook-id'] === successfulEvent.id);
    assert.equal(copies.length, 2, 'the original delivery and the resend');
    assert.deepEqual(JSON.parse((copies[1] as ReceivedRequest).body), successfulEvent);
    new Webhook(successOnly.secret).verify(
      (copies[1] as ReceivedRequest).body,
      (copies[1] as ReceivedRequest).headers as Record<string, string>,
    );
  });

  it('resend without an endpoint: 202 to every enabled subscribed endpoint (no body, an empty body or {})', async () => {
    for (const send of [
      () => resend(ws.token, successfulEvent.id),
      () =>
        request(t, 'POST', `/v1/events/${successfulEvent.id}/resend`, {
          token: ws.token,
          rawBody: '',
          headers: { 'content-type': 'application/json' },
        }),
      () => resend(ws.token, successfulEvent.id, {}),
    ]) {
      const res = await send();
      assert.equal(res.status, 202, res.text);
      assert.deepEqual(
        res.body.data.map((d: { endpoint_id: string }) => d.endpoint_id).sort(),
        [all.id, successOnly.id].sort(),
      );
      assert.ok(
        res.body.data.every(
          (d: { kind: string; status: string; event_id: string }) =>
            d.kind === 'resend' && d.status === 'pending' && d.event_id === successfulEvent.id,
        ),
      );
    }
    const pending = await resend(ws.token, pendingEvent.id);
    assert.equal(pending.status, 202, pending.text);
    assert.deepEqual(
      pending.body.data.map((d: { endpoint_id: string }) => d.endpoint_id),
      [all.id],
      'only endpoints subscribed to the type',
    );

    await waitFor(
      'every resend sent',
      async () => {
        const list = await deliveries(ws.token, successfulEvent.id, 'limit=100');
        const resends = list.body.data.filter((d: { kind: string }) => d.kind === 'resend');
        return resends.length === 7 &&
          resends.every(
            (d: { status: string; attempts: unknown[] }) => d.status === 'succeeded' && d.attempts.length === 1,
          )
          ? true
          : undefined;
      },
      WAIT_MS,
    );
    assert.ok(
      !received.some((r) => r.path === pathRefunds),
      'the refund-only endpoint never received a collection event',
    );
  });

  it('resend: 400 for bad bodies, 404 for a deleted or unknown endpoint', async () => {
    assertProblem(await resend(ws.token, successfulEvent.id, { endpoint_id: 'nope' }), 400, 'validation_failed');
    assertProblem(await resend(ws.token, successfulEvent.id, { endpoints: [all.id] }), 400, 'validation_failed');
    assertProblem(await resend(ws.token, successfulEvent.id, { endpoint_id: randomUUID() }), 404, 'not_found');
    const gone = await newEndpoint(ws.token, { url: `${receiverBase}/resend/deleted` });
    assert.equal((await deleteEndpoint(ws.token, gone.id)).status, 204);
    assertProblem(await resend(ws.token, successfulEvent.id, { endpoint_id: gone.id }), 404, 'not_found');
  });

  it('resend: 409 webhook_endpoint_disabled for a disabled endpoint, 409 no_webhook_endpoints when none subscribed is enabled', async () => {
    assert.equal((await patchEndpoint(ws.token, successOnly.id, { status: 'disabled' })).status, 200);
    const before = (await deliveries(ws.token, successfulEvent.id, 'limit=100')).body.data.length;
    assertProblem(
      await resend(ws.token, successfulEvent.id, { endpoint_id: successOnly.id }),
      409,
      'webhook_endpoint_disabled',
    );
    // Without a name only the enabled subscriber is sent to.
    const toEnabled = await resend(ws.token, successfulEvent.id);
    assert.equal(toEnabled.status, 202, toEnabled.text);
    assert.deepEqual(
      toEnabled.body.data.map((d: { endpoint_id: string }) => d.endpoint_id),
      [all.id],
    );

    assert.equal((await patchEndpoint(ws.token, all.id, { status: 'disabled' })).status, 200);
    assertProblem(await resend(ws.token, pendingEvent.id), 409, 'no_webhook_endpoints');
    assertProblem(await resend(ws.token, successfulEvent.id), 409, 'no_webhook_endpoints');
    const after = (await deliveries(ws.token, successfulEvent.id, 'limit=100')).body.data.length;
    assert.equal(after, before + 1, 'the refused resends queued nothing');
    // refundsOnly is enabled but does not subscribe; it can still be named explicitly.
    const named = await resend(ws.token, pendingEvent.id, { endpoint_id: refundsOnly.id });
    assert.equal(named.status, 202, named.text);

    // Enabled again: resending works again.
    assert.equal((await patchEndpoint(ws.token, successOnly.id, { status: 'enabled' })).status, 200);
    const back = await resend(ws.token, successfulEvent.id, { endpoint_id: successOnly.id });
    assert.equal(back.status, 202, back.text);
  });
});

describe('disabling while the relay fans out', () => {
  // The relay reads an event's endpoints FOR SHARE while it inserts their deliveries; disabling or deleting
  // locks the endpoint first and only then fails its pending deliveries. So a delivery the relay is still
  // committing when the endpoint is disabled is failed too, never sent to a disabled endpoint.
  for (const how of ['PATCH status disabled', 'DELETE'] as const) {
    it(`${how} waits for a fan-out in progress and fails the delivery it made`, async () => {
      const ws = await createWorkspace(t, `race-${how.length}`);
      const endpoint = (await createEndpoint(ws.token, { url: `${receiverBase}/race` })).body;
      const event = (await createCollection(t, ws.token)).body;
      const eventId = (await listEvents(ws.token, `object_id=${event.collection_id}&type=collection.created`)).body
        .data[0].id as string;
      const relay = await t.db.connect();
      try {
        await relay.query('BEGIN');
        // What the fan-out does: share-lock the enabled endpoints, then insert a pending delivery.
        const shared = await relay.query(
          "SELECT id FROM webhook_endpoints WHERE id = $1 AND status = 'enabled' FOR SHARE",
          [endpoint.id],
        );
        assert.equal(shared.rowCount, 1);
        const change =
          how === 'DELETE'
            ? deleteEndpoint(ws.token, endpoint.id)
            : patchEndpoint(ws.token, endpoint.id, { status: 'disabled' });
        let settled = false;
        void change.then(() => (settled = true));
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(settled, false, 'the change waits for the fan-out to commit');
        await relay.query(
          `INSERT INTO webhook_deliveries (id, workspace_id, event_id, endpoint_id, kind, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
           VALUES (gen_random_uuid(), $1, $2, $3, 'resend', 'pending', 0, 1, now() + interval '1 hour', now(), now())`,
          [ws.id, eventId, endpoint.id],
        );
        await relay.query('COMMIT');
        assert.ok([200, 204].includes((await change).status));
      } finally {
        relay.release();
      }
      const { rows } = await t.db.query<{ status: string }>(
        'SELECT status FROM webhook_deliveries WHERE endpoint_id = $1',
        [endpoint.id],
      );
      assert.ok(rows.length >= 1);
      assert.deepEqual(
        rows.map((r) => r.status).filter((s) => s === 'pending'),
        [],
        'no delivery is left pending for a disabled endpoint',
      );
    });
  }
});

describe("test events and an endpoint's delivery log", () => {
  let ws: { id: string; token: string };
  let endpoint: any;
  let other: any;
  const path = `/test-event/${randomUUID()}`;
  const otherPath = `/test-event/other/${randomUUID()}`;

  const sendTest = (token: string, id: string, key?: string): Promise<ApiResponse> =>
    request(t, 'POST', `/v1/webhooks/endpoints/${id}/test`, {
      token,
      ...(key === undefined ? {} : { idempotencyKey: key }),
    });
  const endpointDeliveries = (token: string, id: string, query = ''): Promise<ApiResponse> =>
    request(t, 'GET', `/v1/webhooks/endpoints/${id}/deliveries${query ? `?${query}` : ''}`, { token });
  /** The delivery as the endpoint's log shows it once its attempt is recorded. */
  const settled = (id: string, deliveryId: string): Promise<any> =>
    waitFor(
      `test delivery ${deliveryId} to get its attempt`,
      async () => {
        const res = await endpointDeliveries(ws.token, id, 'limit=100');
        assert.equal(res.status, 200, res.text);
        const found = res.body.data.find((d: { id: string }) => d.id === deliveryId);
        return found && found.status !== 'pending' ? found : undefined;
      },
      WAIT_MS,
    );

  before(async () => {
    ws = await createWorkspace(t, 'webhooks-test-events');
    // Subscribes to refunds only: a test reaches it anyway.
    endpoint = await newEndpoint(ws.token, { url: `${receiverBase}${path}`, enabled_events: ['refund.successful'] });
    other = await newEndpoint(ws.token, { url: `${receiverBase}${otherPath}` });
  });

  it('test: 202 with one pending test delivery; the relay sends a signed webhook.test event to that endpoint only', async () => {
    const res = await sendTest(ws.token, endpoint.id);
    assert.equal(res.status, 202, res.text);
    const d = res.body;
    assert.deepEqual(Object.keys(d).sort(), DELIVERY_FIELDS);
    assert.match(d.id, UUID);
    assert.equal(d.endpoint_id, endpoint.id);
    assert.equal(d.kind, 'test');
    assert.equal(d.status, 'pending');
    assert.deepEqual(d.attempts, []);

    const sent = await settled(endpoint.id, d.id);
    assert.equal(sent.status, 'succeeded');
    assert.equal(sent.attempts.length, 1);
    assert.equal(sent.attempts[0].status_code, 200);
    assert.equal(sent.attempts[0].response_body, 'ok');

    // The event: listed, typed webhook.test, its data the endpoint (no secret), delivered as it is stored.
    const event = await getEvent(ws.token, d.event_id);
    assert.equal(event.status, 200, event.text);
    assert.equal(event.body.type, 'webhook.test');
    assert.deepEqual(event.body.data, withoutSecret(endpoint));
    const arrived = received.filter((r) => r.path === path && r.headers['webhook-id'] === d.event_id);
    assert.equal(arrived.length, 1);
    const body = (arrived[0] as ReceivedRequest).body;
    assert.deepEqual(JSON.parse(body), event.body);
    new Webhook(endpoint.secret).verify(body, (arrived[0] as ReceivedRequest).headers as Record<string, string>);
    // webhook-timestamp is the attempt's time in seconds, as the API documents.
    assert.equal(
      (arrived[0] as ReceivedRequest).headers['webhook-timestamp'],
      String(Math.floor(Date.parse(sent.attempts[0].created_at) / 1000)),
    );
    assert.equal(
      received.filter((r) => r.path === otherPath).length,
      0,
      'the other endpoint, subscribed to everything, gets nothing',
    );
    const listed = await listEvents(ws.token, 'type=webhook.test');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.data.map((e: { id: string }) => e.id),
      [d.event_id],
    );
    const byEvent = await deliveries(ws.token, d.event_id);
    assert.deepEqual(
      byEvent.body.data.map((x: { id: string }) => x.id),
      [d.id],
    );
  });

  it('test: an Idempotency-Key replays the same delivery and queues one; a disabled endpoint is 409', async () => {
    const key = newKey();
    const first = await sendTest(ws.token, other.id, key);
    assert.equal(first.status, 202, first.text);
    const again = await sendTest(ws.token, other.id, key);
    assert.equal(again.status, 202, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    await settled(other.id, first.body.id);
    const log = await endpointDeliveries(ws.token, other.id, 'limit=100');
    assert.equal(log.body.data.filter((d: { kind: string }) => d.kind === 'test').length, 1);

    assert.equal((await patchEndpoint(ws.token, other.id, { status: 'disabled' })).status, 200);
    assertProblem(await sendTest(ws.token, other.id), 409, 'webhook_endpoint_disabled');
    assert.equal((await patchEndpoint(ws.token, other.id, { status: 'enabled' })).status, 200);
  });

  it('the delivery log: newest first across events and kinds, paged by cursor, filtered by status', async () => {
    const failing = await newEndpoint(ws.token, { url: `${receiverBase}/test-event/failing/${randomUUID()}` });
    receiver.setHandler((req) =>
      req.path.startsWith('/test-event/failing/') ? { status: 500, body: 'boom' } : { status: 200, body: 'ok' },
    );
    try {
      const made: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await sendTest(ws.token, failing.id);
        assert.equal(res.status, 202, res.text);
        made.push(res.body.id);
        await settled(failing.id, res.body.id);
      }
      // A resend of the first test event to this endpoint joins its log.
      const firstEvent = (await endpointDeliveries(ws.token, failing.id, 'limit=100')).body.data.at(-1).event_id;
      const resent = await resend(ws.token, firstEvent, { endpoint_id: failing.id });
      assert.equal(resent.status, 202, resent.text);
      made.push(resent.body.data[0].id);
      await settled(failing.id, resent.body.data[0].id);

      const all = await endpointDeliveries(ws.token, failing.id, 'limit=100');
      assert.equal(all.status, 200, all.text);
      assert.deepEqual(Object.keys(all.body).sort(), ['data', 'has_more', 'next_cursor']);
      assert.deepEqual(
        all.body.data.map((d: { id: string }) => d.id),
        [...made].reverse(),
      );
      assert.deepEqual(
        all.body.data.map((d: { kind: string }) => d.kind),
        ['resend', 'test', 'test', 'test'],
      );
      for (const d of all.body.data) {
        assert.deepEqual(Object.keys(d).sort(), DELIVERY_FIELDS);
        assert.equal(d.endpoint_id, failing.id);
        assert.equal(d.status, 'failed');
        assert.equal(d.attempts.length, 1, 'a test or a resend is one attempt');
        assert.equal(d.attempts[0].status_code, 500);
        assert.equal(d.attempts[0].response_body, 'boom');
        assert.equal(d.last_error, 'HTTP 500');
      }

      const walked: string[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < 10; i++) {
        const page: ApiResponse = await endpointDeliveries(
          ws.token,
          failing.id,
          `limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        assert.equal(page.status, 200, page.text);
        walked.push(...page.body.data.map((d: { id: string }) => d.id));
        cursor = page.body.next_cursor;
        if (cursor === null) break;
      }
      assert.deepEqual(walked, [...made].reverse());

      assert.deepEqual((await endpointDeliveries(ws.token, failing.id, 'status=succeeded')).body.data, []);
      assert.equal((await endpointDeliveries(ws.token, failing.id, 'status=failed')).body.data.length, 4);
      const ok = await endpointDeliveries(ws.token, endpoint.id, 'status=succeeded');
      assert.ok(ok.body.data.length >= 1);
      assert.ok(ok.body.data.every((d: { status: string }) => d.status === 'succeeded'));

      assertProblem(await endpointDeliveries(ws.token, failing.id, 'status=lost'), 400, 'validation_failed');
      assertProblem(await endpointDeliveries(ws.token, failing.id, 'limit=0'), 400, 'validation_failed');
      assertProblem(await endpointDeliveries(ws.token, failing.id, 'cursor=forged'), 400, 'invalid_cursor');
    } finally {
      receiver.setHandler(() => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' }));
    }
  });

  it("another workspace's endpoint, a deleted one, an unknown id or one that is not a UUID: 404 on both routes", async () => {
    const b = await createWorkspace(t, 'webhooks-test-events-b');
    const missing = randomUUID();
    assertSameAsMissing(await sendTest(b.token, endpoint.id), await sendTest(b.token, missing));
    assertSameAsMissing(await sendTest(b.token, endpoint.id, newKey()), await sendTest(b.token, missing, newKey()));
    assertSameAsMissing(await endpointDeliveries(b.token, endpoint.id), await endpointDeliveries(b.token, missing));
    assertProblem(await sendTest(ws.token, 'not-a-uuid'), 404, 'not_found');
    assertProblem(await endpointDeliveries(ws.token, 'not-a-uuid'), 404, 'not_found');
    const gone = await newEndpoint(ws.token, { url: `${receiverBase}/test-event/deleted` });
    assert.equal((await deleteEndpoint(ws.token, gone.id)).status, 204);
    assertProblem(await sendTest(ws.token, gone.id), 404, 'not_found');
    assertProblem(await endpointDeliveries(ws.token, gone.id), 404, 'not_found');
    // Nothing was queued for A's endpoint by B.
    const log = await endpointDeliveries(ws.token, endpoint.id, 'limit=100');
    assert.equal(log.body.data.length, 1);
  });

  it('integrator tokens only: 401 without a valid token, 403 for liquidity_provider and admin tokens', async () => {
    const lpToken = await liquidityProviderToken(t, ws.id);
    for (const [method, url] of [
      ['POST', `/v1/webhooks/endpoints/${endpoint.id}/test`],
      ['GET', `/v1/webhooks/endpoints/${endpoint.id}/deliveries`],
    ] as const) {
      assertProblem(await request(t, method, url), 401, 'unauthorized');
      assertProblem(await request(t, method, url, { token: 'not-a-token' }), 401, 'unauthorized');
      for (const token of [lpToken, t.adminToken])
        assertProblem(await request(t, method, url, { token }), 403, 'forbidden');
    }
    const log = await endpointDeliveries(ws.token, endpoint.id, 'limit=100');
    assert.equal(log.body.data.length, 1, 'the refused tests queued nothing');
  });
});
