// Workspaces never see each other's objects. Another workspace's id answers 404 exactly as a
// missing id does, lists are scoped to the caller, and Idempotency-Keys are scoped per workspace.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  createCollection,
  createWorkspace,
  newKey,
  request,
  startTestApp,
  validCollection,
  type ApiResponse,
  type TestApp,
} from './helpers/harness.js';

let t: TestApp;
let a: { id: string; token: string };
let b: { id: string; token: string };
const aIds: string[] = [];
const bIds: string[] = [];

before(async () => {
  t = await startTestApp();
  a = await createWorkspace(t, 'isolation-a');
  b = await createWorkspace(t, 'isolation-b');
  for (let i = 0; i < 3; i++) {
    const res = await createCollection(t, a.token);
    assert.equal(res.status, 201, res.text);
    aIds.push(res.body.collection_id);
  }
  const res = await createCollection(t, b.token);
  assert.equal(res.status, 201, res.text);
  bIds.push(res.body.collection_id);
});
after(async () => t.close());

function assertNotFound(res: ApiResponse): void {
  assert.equal(res.status, 404, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.code, 'not_found');
  assert.equal(res.body.status, 404);
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
}

/** The body without the per-request id: what must be identical between the 404 cases. */
function shape(res: ApiResponse): Record<string, unknown> {
  const rest = { ...(res.body as Record<string, unknown>) };
  delete rest.request_id;
  return rest;
}

/** Every collection id the token's list shows, paging through with the given page size. */
async function listAll(token: string, query: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 50; page++) {
    const url: string = `/v1/collections?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await request(t, 'GET', url, { token });
    assert.equal(res.status, 200, res.text);
    ids.push(...res.body.data.map((c: any) => c.collection_id));
    if (!res.body.has_more) return ids;
    cursor = res.body.next_cursor;
  }
  throw new Error('the list did not end');
}

describe('reading one collection across workspaces', () => {
  it("another workspace's collection id is 404 not_found with the same body as a missing UUID and a non-UUID id", async () => {
    const aId = aIds[0] as string;
    // Control: the owner reads it.
    const own = await request(t, 'GET', `/v1/collections/${aId}`, { token: a.token });
    assert.equal(own.status, 200, own.text);
    assert.equal(own.body.collection_id, aId);

    const foreign = await request(t, 'GET', `/v1/collections/${aId}`, { token: b.token });
    const missing = await request(t, 'GET', `/v1/collections/${randomUUID()}`, { token: b.token });
    const notUuid = await request(t, 'GET', '/v1/collections/not-a-uuid', { token: b.token });
    const upper = await request(t, 'GET', `/v1/collections/${aId.toUpperCase()}`, { token: b.token });
    for (const res of [foreign, missing, notUuid, upper]) assertNotFound(res);
    assert.deepEqual(shape(foreign), shape(missing));
    assert.deepEqual(shape(notUuid), shape(missing));
    assert.deepEqual(shape(upper), shape(missing));
    assert.equal(foreign.text.includes(aId), false, 'the 404 does not echo the foreign id');
    assert.equal(foreign.text.includes(a.id), false, 'the 404 does not name the owning workspace');
  });
});

describe('listing across workspaces', () => {
  it("B's GET /v1/collections never contains A's collections: default page, limit=100, status filter, paged one by one", async () => {
    for (const [query, limit] of [
      ['', 20],
      ['', 100],
      ['&status=created', 100],
      ['', 1],
      ['&status=created', 1],
    ] as const) {
      const seen = await listAll(b.token, query, limit);
      assert.deepEqual(seen, [...bIds].reverse(), `B sees only its own (query '${query}', limit ${limit})`);
      for (const id of aIds) assert.equal(seen.includes(id), false);
    }
    const defaultPage = await request(t, 'GET', '/v1/collections', { token: b.token });
    assert.equal(defaultPage.status, 200);
    for (const c of defaultPage.body.data) assert.equal(c.integrator_id, b.id);
  });

  it("A's list shows exactly A's collections, newest first, none of B's (control)", async () => {
    const seen = await listAll(a.token, '', 100);
    assert.deepEqual(seen, [...aIds].reverse());
    const paged = await listAll(a.token, '&status=created', 1);
    assert.deepEqual(paged, [...aIds].reverse());
    for (const id of bIds) assert.equal(seen.includes(id), false);
  });

  it("a cursor issued to A, used by B, never yields A's collections", async () => {
    const first = await request(t, 'GET', '/v1/collections?limit=1', { token: a.token });
    assert.equal(first.status, 200);
    assert.equal(first.body.has_more, true);
    const res = await request(
      t,
      'GET',
      `/v1/collections?limit=100&cursor=${encodeURIComponent(first.body.next_cursor)}`,
      { token: b.token },
    );
    if (res.status === 200) {
      for (const c of res.body.data) {
        assert.equal(c.integrator_id, b.id);
        assert.equal(aIds.includes(c.collection_id), false);
      }
    } else {
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.code, 'invalid_cursor');
    }
  });

  it('status and date filters do not widen the scope to other workspaces', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const res = await request(t, 'GET', `/v1/collections?limit=100&status=created&from=2000-01-01&to=${today}`, {
      token: b.token,
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.body.data.map((c: any) => c.collection_id),
      [...bIds].reverse(),
    );
  });
});

describe('integrator_id', () => {
  it("collections report integrator_id = the creating workspace's id, on create, read and list", async () => {
    const created = await createCollection(t, a.token);
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.integrator_id, a.id);
    aIds.push(created.body.collection_id);
    const read = await request(t, 'GET', `/v1/collections/${created.body.collection_id}`, { token: a.token });
    assert.equal(read.body.integrator_id, a.id);
    const listA = await request(t, 'GET', '/v1/collections?limit=100', { token: a.token });
    assert.ok(listA.body.data.length >= 4);
    for (const c of listA.body.data) assert.equal(c.integrator_id, a.id);
    const listB = await request(t, 'GET', '/v1/collections?limit=100', { token: b.token });
    for (const c of listB.body.data) assert.equal(c.integrator_id, b.id);
    assert.notEqual(a.id, b.id);
  });
});

describe('idempotency keys are scoped per workspace', () => {
  it('the same Idempotency-Key and body used by A and by B creates two different collections', async () => {
    const key = newKey();
    const body = validCollection();
    const send = (token: string) =>
      request(t, 'POST', '/v1/collections/KE/rails/mpesa', { token, body, idempotencyKey: key });

    const fromA = await send(a.token);
    assert.equal(fromA.status, 201, fromA.text);
    assert.equal(fromA.headers.get('idempotent-replayed'), null);
    const fromB = await send(b.token);
    assert.equal(fromB.status, 201, fromB.text);
    assert.equal(fromB.headers.get('idempotent-replayed'), null, "B's request is not a replay of A's");
    assert.notEqual(fromB.body.collection_id, fromA.body.collection_id);
    assert.equal(fromA.body.integrator_id, a.id);
    assert.equal(fromB.body.integrator_id, b.id);
    aIds.push(fromA.body.collection_id);
    bIds.push(fromB.body.collection_id);

    // Control: within one workspace the key does deduplicate.
    const replayA = await send(a.token);
    assert.equal(replayA.status, 201, replayA.text);
    assert.equal(replayA.headers.get('idempotent-replayed'), 'true');
    assert.equal(replayA.body.collection_id, fromA.body.collection_id);
    const replayB = await send(b.token);
    assert.equal(replayB.headers.get('idempotent-replayed'), 'true');
    assert.equal(replayB.body.collection_id, fromB.body.collection_id);

    // Each is readable only by its owner.
    assert.equal(
      (await request(t, 'GET', `/v1/collections/${fromB.body.collection_id}`, { token: b.token })).status,
      200,
    );
    assertNotFound(await request(t, 'GET', `/v1/collections/${fromB.body.collection_id}`, { token: a.token }));
    assertNotFound(await request(t, 'GET', `/v1/collections/${fromA.body.collection_id}`, { token: b.token }));
  });

  it("a key A used with one body does not make B's different body a key reuse (422)", async () => {
    const key = newKey();
    const fromA = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: a.token,
      body: validCollection({ amount: 1000 }),
      idempotencyKey: key,
    });
    assert.equal(fromA.status, 201, fromA.text);
    const fromB = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: b.token,
      body: validCollection({ amount: 2000 }),
      idempotencyKey: key,
    });
    assert.equal(fromB.status, 201, fromB.text);
    assert.equal(fromB.body.amount, 2000);
    assert.equal(fromB.body.integrator_id, b.id);
    aIds.push(fromA.body.collection_id);
    bIds.push(fromB.body.collection_id);
    // Within A the same key with another body is a reuse: the scoping above is per workspace, not absent.
    const reuse = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: a.token,
      body: validCollection({ amount: 3000 }),
      idempotencyKey: key,
    });
    assert.equal(reuse.status, 422, reuse.text);
    assert.equal(reuse.body.code, 'idempotency_key_reused');
  });
});
