// Full refunds (POST /v1/collections/{id}/refund, GET /v1/refunds/{id}, GET /v1/collections/{id}/refunds, the sandbox
// refund simulator) through HTTP, on three apps: `t` (refunds succeed by themselves within ~100 ms), `slow` (simulator
// steps of 10 minutes: a refund stays `pending` until simulated) and `held` (no workers: nothing moves by itself).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  newKey,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
  waitFor,
} from './helpers/harness.js';
import { listObjectEvents } from '../src/modules/events/events.repository.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';

const METADATA = { order_id: '42', cart: { items: 2 } };
const AMOUNT = 1500;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const REFUND_FIELDS = [
  'amount',
  'collection_id',
  'currency',
  'failure_reason',
  'metadata',
  'provider_receipt',
  'reason',
  'refund_id',
  'requested_at',
  'resolved_at',
  'status',
];

type Api = { baseUrl: string };

let t: TestApp;
before(async () => {
  t = await startTestApp(FAST_LIFECYCLE, { workers: true });
});
after(async () => t?.close());

const getCollection = (app: Api, token: string, id: string): Promise<ApiResponse> =>
  request(app, 'GET', `/v1/collections/${id}`, { token });
const getRefund = (app: Api, token: string, id: string): Promise<ApiResponse> =>
  request(app, 'GET', `/v1/refunds/${id}`, { token });
const listRefunds = (app: Api, token: string, collectionId: string, query = ''): Promise<ApiResponse> =>
  request(app, 'GET', `/v1/collections/${collectionId}/refunds${query ? `?${query}` : ''}`, { token });
/** `key: null` sends no Idempotency-Key. */
const postRefund = (
  app: Api,
  token: string,
  collectionId: string,
  body: unknown = { amount: AMOUNT },
  key: string | null = newKey(),
): Promise<ApiResponse> =>
  request(app, 'POST', `/v1/collections/${collectionId}/refund`, {
    token,
    body,
    ...(key === null ? {} : { idempotencyKey: key }),
  });
const simulateRefund = (app: Api, token: string, id: string, body: Record<string, unknown>): Promise<ApiResponse> =>
  request(app, 'POST', `/v1/sandbox/refunds/${id}/simulate`, { token, body });
const simulateCollection = (app: Api, token: string, id: string, body: Record<string, unknown>): Promise<ApiResponse> =>
  request(app, 'POST', `/v1/sandbox/collections/${id}/simulate`, { token, body });

async function waitCollection(app: Api, token: string, id: string, status: string): Promise<any> {
  let last = '';
  try {
    return await waitFor(`collection ${id} to become ${status}`, async () => {
      const res = await getCollection(app, token, id);
      assert.equal(res.status, 200, res.text);
      last = res.body.status;
      return res.body.status === status ? res.body : undefined;
    });
  } catch (err) {
    throw new Error(`${(err as Error).message} (last seen: ${last})`, { cause: err });
  }
}

async function waitRefund(app: Api, token: string, id: string, status: string): Promise<any> {
  let last = '';
  try {
    return await waitFor(`refund ${id} to become ${status}`, async () => {
      const res = await getRefund(app, token, id);
      assert.equal(res.status, 200, res.text);
      last = res.body.status;
      return res.body.status === status ? res.body : undefined;
    });
  } catch (err) {
    throw new Error(`${(err as Error).message} (last seen: ${last})`, { cause: err });
  }
}

/** A new collection with the given phone number; its id. */
async function newCollection(app: Api, token: string, phone = '+254712345678'): Promise<string> {
  const res = await createCollection(app, token, { customer: { phone_number: phone } });
  assert.equal(res.status, 201, res.text);
  return res.body.collection_id as string;
}

/** A collection driven to successful by the sandbox simulate endpoint; its id. */
async function successfulCollection(app: Api, token: string): Promise<string> {
  const id = await newCollection(app, token);
  const res = await simulateCollection(app, token, id, { outcome: 'successful' });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.status, 'successful');
  return id;
}

async function refundCount(app: TestApp, collectionId: string): Promise<number> {
  return (await app.db.query('SELECT count(*)::int AS n FROM refunds WHERE collection_id = $1', [collectionId])).rows[0]
    .n;
}

async function availableKes(app: Api, token: string): Promise<number> {
  const res = await request(app, 'GET', '/v1/balances', { token });
  assert.equal(res.status, 200, res.text);
  const entry = (res.body.data as { currency: string; available: number }[]).find((b) => b.currency === 'KES');
  return entry?.available ?? 0;
}

/**
 * A 201 refund record of `collectionId` in status `requested` with `resolved_at` an empty object, as the contract
 * describes it.
 */
function assertRequestedRefund(res: ApiResponse, collectionId: string): void {
  assert.equal(res.status, 201, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(res.body).sort(), REFUND_FIELDS);
  assert.match(res.body.refund_id, UUID);
  assert.equal(res.body.collection_id, collectionId);
  assert.equal(res.body.amount, AMOUNT);
  assert.equal(res.body.currency, 'KES');
  assert.equal(res.body.status, 'requested');
  assert.equal(res.body.reason, 'merchant_request');
  assert.equal(res.body.failure_reason, null);
  assert.deepEqual(res.body.metadata, METADATA);
  assert.match(res.body.requested_at, ISO_MS);
  assert.deepEqual(res.body.resolved_at, {});
}

describe('refund a successful collection', () => {
  it('201 with the refund record and Location; it goes requested → pending → successful and the collection becomes refunded, with events', async () => {
    const collectionId = await newCollection(t, t.demoToken);
    await waitCollection(t, t.demoToken, collectionId, 'successful');
    const startedAt = Date.now();
    const res = await postRefund(t, t.demoToken, collectionId);
    assertRequestedRefund(res, collectionId);
    const refundId: string = res.body.refund_id;
    assert.equal(res.headers.get('location'), `/v1/refunds/${refundId}`);
    const requestedAt = Date.parse(res.body.requested_at);
    assert.ok(Math.abs(requestedAt - startedAt) < 5000, `requested_at ${res.body.requested_at} is not now`);

    const done = await waitRefund(t, t.demoToken, refundId, 'successful');
    assert.deepEqual(Object.keys(done).sort(), REFUND_FIELDS);
    assert.equal(done.refund_id, refundId);
    assert.equal(done.collection_id, collectionId);
    assert.equal(done.amount, AMOUNT);
    assert.equal(done.currency, 'KES');
    assert.equal(done.failure_reason, null);
    assert.deepEqual(done.metadata, METADATA);
    assert.equal(done.requested_at, res.body.requested_at);
    assert.equal(
      typeof done.resolved_at,
      'string',
      `resolved_at is not a date-time: ${JSON.stringify(done.resolved_at)}`,
    );
    assert.match(done.resolved_at, ISO_MS);
    assert.ok(
      Date.parse(done.resolved_at) >= requestedAt,
      `resolved_at ${done.resolved_at} is before requested_at ${done.requested_at}`,
    );

    const collection = await waitCollection(t, t.demoToken, collectionId, 'refunded');
    assert.deepEqual(collection.metadata, METADATA);

    const refundEvents = await listObjectEvents(t.db, t.demoWorkspaceId, refundId);
    assert.deepEqual(
      refundEvents.map((e) => e.type),
      ['refund.requested', 'refund.pending', 'refund.successful'],
    );
    for (const e of refundEvents) {
      const data = e.data as any;
      assert.equal(e.object_type, 'refund');
      assert.equal(data.refund_id, refundId);
      assert.equal(data.status, e.type.slice('refund.'.length));
      assert.deepEqual(data.metadata, METADATA, `${e.type} lacks the metadata`);
    }
    const successful = refundEvents[2]?.data as any;
    assert.equal(successful.resolved_at, done.resolved_at);
    assert.deepEqual((refundEvents[0]?.data as any).resolved_at, {});

    const collectionEvents = await listObjectEvents(t.db, t.demoWorkspaceId, collectionId);
    const types = collectionEvents.map((e) => e.type);
    assert.equal(types.filter((x) => x === 'collection.refunded').length, 1, `collection events: ${types.join(', ')}`);
    assert.equal(types.at(-1), 'collection.refunded');
    const refunded = collectionEvents.at(-1)?.data as any;
    assert.equal(refunded.status, 'refunded');
    assert.deepEqual(refunded.metadata, METADATA);
  });

  it('GET /v1/refunds/{id} and the collection list answer the same record', async () => {
    const collectionId = await successfulCollection(t, t.demoToken);
    const created = await postRefund(t, t.demoToken, collectionId);
    assert.equal(created.status, 201, created.text);
    const done = await waitRefund(t, t.demoToken, created.body.refund_id, 'successful');
    const list = await listRefunds(t, t.demoToken, collectionId);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body, { data: [done], has_more: false, next_cursor: null });
  });
});

describe('only a successful collection is refundable', () => {
  let held: TestApp;
  before(async () => {
    held = await startTestApp();
  });
  after(async () => held?.close());

  const cases: { status: string; app: () => TestApp; make: (app: TestApp) => Promise<string> }[] = [
    { status: 'created', app: () => held, make: async (app) => newCollection(app, app.demoToken) },
    {
      status: 'pending',
      app: () => t,
      make: async (app) => {
        const id = await newCollection(app, app.demoToken, '+254712340003');
        await waitCollection(app, app.demoToken, id, 'pending');
        return id;
      },
    },
    {
      status: 'processing',
      app: () => t,
      make: async (app) => {
        const id = await newCollection(app, app.demoToken, '+254712340005');
        await waitCollection(app, app.demoToken, id, 'processing');
        return id;
      },
    },
    {
      status: 'failed',
      app: () => t,
      make: async (app) => {
        const id = await newCollection(app, app.demoToken, '+254712340002');
        await waitCollection(app, app.demoToken, id, 'failed');
        return id;
      },
    },
    {
      status: 'expired',
      app: () => t,
      make: async (app) => {
        const id = await newCollection(app, app.demoToken, '+254712340003');
        await waitCollection(app, app.demoToken, id, 'pending');
        const res = await simulateCollection(app, app.demoToken, id, { outcome: 'expired' });
        assert.equal(res.status, 200, res.text);
        return id;
      },
    },
    {
      status: 'refunded',
      app: () => t,
      make: async (app) => {
        const id = await successfulCollection(app, app.demoToken);
        const res = await postRefund(app, app.demoToken, id);
        assert.equal(res.status, 201, res.text);
        await waitRefund(app, app.demoToken, res.body.refund_id, 'successful');
        return id;
      },
    },
    {
      status: 'reversed',
      app: () => t,
      make: async (app) => {
        const id = await newCollection(app, app.demoToken, '+254712340004');
        await waitCollection(app, app.demoToken, id, 'reversed');
        return id;
      },
    },
  ];

  for (const c of cases) {
    it(`409 collection_not_refundable for a ${c.status} collection, and no refund is made`, async () => {
      const app = c.app();
      const id = await c.make(app);
      assert.equal((await getCollection(app, app.demoToken, id)).body.status, c.status);
      const refundsBefore = await refundCount(app, id);
      const res = await postRefund(app, app.demoToken, id);
      assertProblem(res, 409, 'collection_not_refundable');
      assert.equal(await refundCount(app, id), refundsBefore);
      assert.equal((await getCollection(app, app.demoToken, id)).body.status, c.status);
    });
  }
});

describe('request validation', () => {
  let collectionId: string;
  before(async () => {
    collectionId = await successfulCollection(t, t.demoToken);
  });

  for (const amount of [AMOUNT - 1, AMOUNT + 1, 1]) {
    it(`422 refund_amount_mismatch with a field error on amount for ${amount} (the collection is ${AMOUNT})`, async () => {
      const res = await postRefund(t, t.demoToken, collectionId, { amount });
      assertProblem(res, 422, 'refund_amount_mismatch');
      assert.ok(Array.isArray(res.body.errors), res.text);
      assert.ok(
        res.body.errors.some((e: { field: string }) => e.field === 'amount'),
        res.text,
      );
      assert.equal(await refundCount(t, collectionId), 0);
    });
  }

  const invalid: [string, unknown][] = [
    ['a string amount', { amount: '1500' }],
    ['a float amount', { amount: 1500.5 }],
    ['a missing amount', {}],
    ['a null amount', { amount: null }],
    ['an unknown field', { amount: AMOUNT, reason: 'customer asked' }],
  ];
  for (const [what, body] of invalid) {
    it(`400 validation_failed for ${what}, and no refund is made`, async () => {
      const res = await postRefund(t, t.demoToken, collectionId, body);
      assertProblem(res, 400, 'validation_failed');
      assert.equal(await refundCount(t, collectionId), 0);
    });
  }

  it('422 idempotency_key_missing without an Idempotency-Key, and no refund is made', async () => {
    const res = await postRefund(t, t.demoToken, collectionId, { amount: AMOUNT }, null);
    assertProblem(res, 422, 'idempotency_key_missing');
    assert.equal(await refundCount(t, collectionId), 0);
  });

  it('the rejected requests stored nothing: the collection is still refundable, and a key used by a rejected request works', async () => {
    const key = newKey();
    assertProblem(await postRefund(t, t.demoToken, collectionId, { amount: '1500' }, key), 400, 'validation_failed');
    const res = await postRefund(t, t.demoToken, collectionId, { amount: AMOUNT }, key);
    assertRequestedRefund(res, collectionId);
    assert.equal(res.headers.get('idempotent-replayed'), null);
  });
});

describe('idempotent retries', () => {
  it('same key and body: the same status and byte-identical body with Idempotent-Replayed: true, and one refund', async () => {
    const collectionId = await successfulCollection(t, t.demoToken);
    const key = newKey();
    const first = await postRefund(t, t.demoToken, collectionId, { amount: AMOUNT }, key);
    assertRequestedRefund(first, collectionId);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const second = await postRefund(t, t.demoToken, collectionId, { amount: AMOUNT }, key);
    assert.equal(second.status, 201, second.text);
    assert.equal(second.text, first.text);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.headers.get('location'), first.headers.get('location'));

    // Once the refund is done and the collection refunded, a retry still answers the stored 201, executing nothing.
    await waitCollection(t, t.demoToken, collectionId, 'refunded');
    const third = await postRefund(t, t.demoToken, collectionId, { amount: AMOUNT }, key);
    assert.equal(third.status, 201, third.text);
    assert.equal(third.text, first.text);
    assert.equal(third.headers.get('idempotent-replayed'), 'true');

    assert.equal(await refundCount(t, collectionId), 1);
    const list = await listRefunds(t, t.demoToken, collectionId);
    assert.equal(list.body.data.length, 1);
    assert.equal(list.body.data[0].refund_id, first.body.refund_id);
  });

  it('same key, another body: 422 idempotency_key_reused, and nothing more is made', async () => {
    const collectionId = await successfulCollection(t, t.demoToken);
    const key = newKey();
    const first = await postRefund(t, t.demoToken, collectionId, { amount: AMOUNT }, key);
    assert.equal(first.status, 201, first.text);
    assertProblem(
      await postRefund(t, t.demoToken, collectionId, { amount: AMOUNT - 1 }, key),
      422,
      'idempotency_key_reused',
    );
    assert.equal(await refundCount(t, collectionId), 1);
  });

  it('same key and body on another collection: 422 idempotency_key_reused, and that collection is not refunded', async () => {
    const a = await successfulCollection(t, t.demoToken);
    const b = await successfulCollection(t, t.demoToken);
    const key = newKey();
    assert.equal((await postRefund(t, t.demoToken, a, { amount: AMOUNT }, key)).status, 201);
    assertProblem(await postRefund(t, t.demoToken, b, { amount: AMOUNT }, key), 422, 'idempotency_key_reused');
    assert.equal(await refundCount(t, b), 0);
    assert.equal((await getCollection(t, t.demoToken, b)).body.status, 'successful');
  });
});

describe('concurrent refunds of one collection', () => {
  for (const n of [2, 10]) {
    it(`${n} at once with different keys make exactly one refund: one 201, the rest 409`, async () => {
      const collectionId = await successfulCollection(t, t.demoToken);
      const responses = await Promise.all(Array.from({ length: n }, () => postRefund(t, t.demoToken, collectionId)));
      const created = responses.filter((r) => r.status === 201);
      assert.equal(
        created.length,
        1,
        `statuses: ${responses.map((r) => `${r.status} ${r.body?.code ?? ''}`).join(', ')}`,
      );
      for (const r of responses) {
        if (r.status === 201) continue;
        assert.equal(r.status, 409, r.text);
        assert.ok(['refund_in_progress', 'collection_not_refundable'].includes(r.body.code), r.text);
        assertProblem(r, 409, r.body.code);
      }
      const list = await listRefunds(t, t.demoToken, collectionId);
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.data.length, 1);
      assert.equal(list.body.data[0].refund_id, created[0]?.body.refund_id);
      assert.equal(await refundCount(t, collectionId), 1);

      await waitCollection(t, t.demoToken, collectionId, 'refunded');
      assert.deepEqual(await verifyLedger(t.db), []);
    });
  }
});

describe('a refund still requested (no workers)', () => {
  let held: TestApp;
  before(async () => {
    held = await startTestApp();
  });
  after(async () => held?.close());

  it('stays requested; a second refund is 409 refund_in_progress', async () => {
    const collectionId = await successfulCollection(held, held.demoToken);
    const first = await postRefund(held, held.demoToken, collectionId);
    assertRequestedRefund(first, collectionId);
    assert.equal((await getRefund(held, held.demoToken, first.body.refund_id)).body.status, 'requested');
    const second = await postRefund(held, held.demoToken, collectionId);
    assertProblem(second, 409, 'refund_in_progress');
    assert.equal(await refundCount(held, collectionId), 1);
    assert.equal((await getCollection(held, held.demoToken, collectionId)).body.status, 'successful');
  });

  it("lists a collection's refunds newest first, paged by limit and cursor, filtered by status", async () => {
    const collectionId = await successfulCollection(held, held.demoToken);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await postRefund(held, held.demoToken, collectionId);
      assert.equal(res.status, 201, res.text);
      ids.push(res.body.refund_id);
      const failed = await simulateRefund(held, held.demoToken, res.body.refund_id, { outcome: 'failed' });
      assert.equal(failed.status, 200, failed.text);
    }
    const last = await postRefund(held, held.demoToken, collectionId);
    assert.equal(last.status, 201, last.text);
    ids.push(last.body.refund_id);
    const newestFirst = [...ids].reverse();

    const all = await listRefunds(held, held.demoToken, collectionId);
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(Object.keys(all.body).sort(), ['data', 'has_more', 'next_cursor']);
    assert.deepEqual(
      all.body.data.map((r: any) => r.refund_id),
      newestFirst,
    );
    assert.equal(all.body.has_more, false);
    assert.equal(all.body.next_cursor, null);
    for (const r of all.body.data) assert.deepEqual(Object.keys(r).sort(), REFUND_FIELDS);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await listRefunds(held, held.demoToken, collectionId, query);
      assert.equal(page.status, 200, page.text);
      assert.ok(page.body.data.length <= 2);
      seen.push(...page.body.data.map((r: any) => r.refund_id));
      assert.equal(page.body.has_more, page.body.next_cursor !== null);
      cursor = page.body.next_cursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    assert.deepEqual(seen, newestFirst);
    assert.equal(pages, 3);

    const failed = await listRefunds(held, held.demoToken, collectionId, 'status=failed');
    assert.deepEqual(
      failed.body.data.map((r: any) => r.refund_id),
      newestFirst.slice(1),
    );
    for (const r of failed.body.data) {
      assert.equal(r.status, 'failed');
      assert.equal(r.failure_reason, 'provider_error');
      assert.match(r.resolved_at, ISO_MS);
    }
    const requested = await listRefunds(held, held.demoToken, collectionId, 'status=requested');
    assert.deepEqual(
      requested.body.data.map((r: any) => r.refund_id),
      [last.body.refund_id],
    );
    const successful = await listRefunds(held, held.demoToken, collectionId, 'status=successful');
    assert.deepEqual(successful.body, { data: [], has_more: false, next_cursor: null });

    assertProblem(await listRefunds(held, held.demoToken, collectionId, 'status=refunded'), 400, 'validation_failed');
    assertProblem(await listRefunds(held, held.demoToken, collectionId, 'limit=0'), 400, 'validation_failed');
    assertProblem(await listRefunds(held, held.demoToken, collectionId, 'limit=101'), 400, 'validation_failed');
  });
});

describe('a refund still pending (simulator steps of 10 minutes)', () => {
  let slow: TestApp;
  before(async () => {
    slow = await startTestApp({ ...FAST_LIFECYCLE, SANDBOX_STEP_MS: '600000' }, { workers: true });
  });
  after(async () => slow?.close());

  it('a second refund while the first is pending is 409 refund_in_progress; once it succeeds, 409 collection_not_refundable', async () => {
    const collectionId = await successfulCollection(slow, slow.demoToken);
    const first = await postRefund(slow, slow.demoToken, collectionId);
    assertRequestedRefund(first, collectionId);
    const pending = await waitRefund(slow, slow.demoToken, first.body.refund_id, 'pending');
    assert.deepEqual(pending.resolved_at, {});
    assertProblem(await postRefund(slow, slow.demoToken, collectionId), 409, 'refund_in_progress');
    assert.equal(await refundCount(slow, collectionId), 1);

    const done = await simulateRefund(slow, slow.demoToken, first.body.refund_id, { outcome: 'successful' });
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.status, 'successful');
    await waitCollection(slow, slow.demoToken, collectionId, 'refunded');
    assertProblem(await postRefund(slow, slow.demoToken, collectionId), 409, 'collection_not_refundable');
    assert.equal(await refundCount(slow, collectionId), 1);
  });

  it('after a failed refund the collection stays successful and a new refund may be requested, and succeeds', async () => {
    const collectionId = await successfulCollection(slow, slow.demoToken);
    const first = await postRefund(slow, slow.demoToken, collectionId);
    assert.equal(first.status, 201, first.text);
    const firstId: string = first.body.refund_id;
    await waitRefund(slow, slow.demoToken, firstId, 'pending');

    const sim = await simulateRefund(slow, slow.demoToken, firstId, { outcome: 'failed', reason: 'provider_refused' });
    assert.equal(sim.status, 200, sim.text);
    const failed = await getRefund(slow, slow.demoToken, firstId);
    assert.equal(failed.status, 200, failed.text);
    assert.deepEqual(Object.keys(failed.body).sort(), REFUND_FIELDS);
    assert.equal(failed.body.status, 'failed');
    assert.equal(failed.body.failure_reason, 'provider_refused');
    assert.equal(typeof failed.body.resolved_at, 'string', JSON.stringify(failed.body.resolved_at));
    assert.match(failed.body.resolved_at, ISO_MS);
    assert.ok(Date.parse(failed.body.resolved_at) >= Date.parse(failed.body.requested_at));
    assert.deepEqual(failed.body.metadata, METADATA);
    assert.deepEqual(
      (await listObjectEvents(slow.db, slow.demoWorkspaceId, firstId)).map((e) => e.type),
      ['refund.requested', 'refund.pending', 'refund.failed'],
    );
    assert.equal((await getCollection(slow, slow.demoToken, collectionId)).body.status, 'successful');
    assert.equal(await availableKes(slow, slow.demoToken), AMOUNT, 'a failed refund moved money');

    const second = await postRefund(slow, slow.demoToken, collectionId);
    assertRequestedRefund(second, collectionId);
    const secondId: string = second.body.refund_id;
    assert.notEqual(secondId, firstId);
    await waitRefund(slow, slow.demoToken, secondId, 'pending');
    const ok = await simulateRefund(slow, slow.demoToken, secondId, { outcome: 'successful' });
    assert.equal(ok.status, 200, ok.text);
    const done = await getRefund(slow, slow.demoToken, secondId);
    assert.equal(done.body.status, 'successful');
    assert.equal(done.body.failure_reason, null);
    assert.match(done.body.resolved_at, ISO_MS);
    await waitCollection(slow, slow.demoToken, collectionId, 'refunded');

    // The failed refund is unchanged, and the list holds both, newest first.
    assert.deepEqual((await getRefund(slow, slow.demoToken, firstId)).body, failed.body);
    const list = await listRefunds(slow, slow.demoToken, collectionId);
    assert.deepEqual(
      list.body.data.map((r: any) => [r.refund_id, r.status]),
      [
        [secondId, 'successful'],
        [firstId, 'failed'],
      ],
    );
    assert.equal(await availableKes(slow, slow.demoToken), 0);
    assert.deepEqual(await verifyLedger(slow.db), []);
  });

  it('a resolved refund cannot be simulated again: 409 transition_not_allowed', async () => {
    const collectionId = await successfulCollection(slow, slow.demoToken);
    const res = await postRefund(slow, slow.demoToken, collectionId);
    assert.equal(res.status, 201, res.text);
    await waitRefund(slow, slow.demoToken, res.body.refund_id, 'pending');
    assert.equal((await simulateRefund(slow, slow.demoToken, res.body.refund_id, { outcome: 'failed' })).status, 200);
    assertProblem(
      await simulateRefund(slow, slow.demoToken, res.body.refund_id, { outcome: 'successful' }),
      409,
      'transition_not_allowed',
    );
    assert.equal((await getRefund(slow, slow.demoToken, res.body.refund_id)).body.status, 'failed');
    assert.equal((await getCollection(slow, slow.demoToken, collectionId)).body.status, 'successful');
  });
});

describe('workspace isolation and unknown ids', () => {
  let other: { id: string; token: string };
  let collectionId: string;
  let refundId: string;
  before(async () => {
    other = await createWorkspace(t, 'refunds-other');
    collectionId = await successfulCollection(t, t.demoToken);
    const res = await postRefund(t, t.demoToken, collectionId);
    assert.equal(res.status, 201, res.text);
    refundId = res.body.refund_id;
    await waitRefund(t, t.demoToken, refundId, 'successful');
  });

  it("another workspace's collection or refund id is 404 not_found on every refund route, as an unknown id is", async () => {
    const unknown = '01890000-0000-7000-8000-000000000000';
    const routes = (collection: string, refund: string): [string, () => Promise<ApiResponse>][] => [
      ['POST refund', () => postRefund(t, other.token, collection)],
      ['GET refund', () => getRefund(t, other.token, refund)],
      ['GET list', () => listRefunds(t, other.token, collection)],
      ['POST simulate', () => simulateRefund(t, other.token, refund, { outcome: 'failed' })],
    ];
    const foreign = routes(collectionId, refundId);
    const missing = routes(unknown, unknown);
    for (let i = 0; i < foreign.length; i++) {
      const [name, call] = foreign[i] as [string, () => Promise<ApiResponse>];
      const res = await call();
      assertProblem(res, 404, 'not_found');
      const miss = await (missing[i] as [string, () => Promise<ApiResponse>])[1]();
      assertProblem(miss, 404, 'not_found');
      assert.equal(
        res.body.detail,
        miss.body.detail,
        `${name}: another workspace's id is told apart from a missing one`,
      );
      assert.equal(res.body.title, miss.body.title);
    }
    // Nothing happened to the owner's objects.
    assert.equal((await getRefund(t, t.demoToken, refundId)).body.status, 'successful');
    assert.equal(await refundCount(t, collectionId), 1);
    assert.equal((await listRefunds(t, t.demoToken, collectionId)).body.data.length, 1);
  });

  it('a malformed id is 404 not_found on every refund route', async () => {
    for (const bad of ['not-a-uuid', '12345', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz']) {
      assertProblem(await postRefund(t, t.demoToken, bad), 404, 'not_found');
      assertProblem(await getRefund(t, t.demoToken, bad), 404, 'not_found');
      assertProblem(await listRefunds(t, t.demoToken, bad), 404, 'not_found');
      assertProblem(await simulateRefund(t, t.demoToken, bad, { outcome: 'successful' }), 404, 'not_found');
    }
  });

  it('a collection id is not a refund id, nor the reverse', async () => {
    assertProblem(await getRefund(t, t.demoToken, collectionId), 404, 'not_found');
    assertProblem(await listRefunds(t, t.demoToken, refundId), 404, 'not_found');
    assertProblem(await postRefund(t, t.demoToken, refundId), 404, 'not_found');
  });

  it('without a token every refund route is 401', async () => {
    assertProblem(
      await request(t, 'POST', `/v1/collections/${collectionId}/refund`, {
        body: { amount: AMOUNT },
        idempotencyKey: newKey(),
      }),
      401,
      'unauthorized',
    );
    assertProblem(await request(t, 'GET', `/v1/refunds/${refundId}`), 401, 'unauthorized');
    assertProblem(await request(t, 'GET', `/v1/collections/${collectionId}/refunds`), 401, 'unauthorized');
  });
});

describe('the ledger', () => {
  it('a refund reserves its amount when requested and settles it when it succeeds; the books balance', async () => {
    const ws = await createWorkspace(t, 'refunds-ledger');
    const collectionId = await newCollection(t, ws.token);
    await waitCollection(t, ws.token, collectionId, 'successful');
    const balanceBefore = await availableKes(t, ws.token);
    assert.equal(balanceBefore, AMOUNT);

    const res = await postRefund(t, ws.token, collectionId);
    assert.equal(res.status, 201, res.text);
    // Taken out of available at once, before the provider has done anything.
    assert.equal(await availableKes(t, ws.token), balanceBefore - AMOUNT);
    await waitRefund(t, ws.token, res.body.refund_id, 'successful');
    await waitCollection(t, ws.token, collectionId, 'refunded');
    assert.equal(await availableKes(t, ws.token), balanceBefore - AMOUNT);
    assert.deepEqual(await verifyLedger(t.db), []);

    const { rows } = await t.db.query<{ kind: string }>(
      'SELECT kind FROM ledger_postings WHERE object_id = $1 ORDER BY created_at, kind',
      [res.body.refund_id],
    );
    assert.deepEqual(
      rows.map((r) => r.kind),
      ['refund_reserved', 'refund_settled'],
    );
  });
});

describe('a refund that fails (no workers: it stays requested until simulated)', () => {
  let held: TestApp;
  before(async () => {
    held = await startTestApp();
  });
  after(async () => held?.close());

  it('gives its reservation back to the available balance; the books balance', async () => {
    const ws = await createWorkspace(held, 'refunds-release');
    const collectionId = await successfulCollection(held, ws.token);
    assert.equal(await availableKes(held, ws.token), AMOUNT);
    const refund = await postRefund(held, ws.token, collectionId);
    assert.equal(refund.status, 201, refund.text);
    assert.equal(await availableKes(held, ws.token), 0);
    const failed = await simulateRefund(held, ws.token, refund.body.refund_id, { outcome: 'failed' });
    assert.equal(failed.status, 200, failed.text);
    assert.equal(await availableKes(held, ws.token), AMOUNT);
    assert.deepEqual(await verifyLedger(held.db), []);
  });
});

describe("GET /v1/refunds: the workspace's refunds of every collection (no workers: statuses set by hand)", () => {
  let held: TestApp;
  before(async () => {
    held = await startTestApp();
  });
  after(async () => held?.close());

  /** A successful collection of `token`'s workspace with metadata `{ n }`; its id. */
  async function paidCollection(token: string, n: number): Promise<string> {
    const res = await createCollection(held, token, { metadata: { n } });
    assert.equal(res.status, 201, res.text);
    const paid = await simulateCollection(held, token, res.body.collection_id, { outcome: 'successful' });
    assert.equal(paid.status, 200, paid.text);
    return res.body.collection_id as string;
  }
  const list = (token: string, query = '') => request(held, 'GET', `/v1/refunds${query ? `?${query}` : ''}`, { token });
  const refundIds = (res: ApiResponse) => res.body.data.map((r: { refund_id: string }) => r.refund_id);

  it('newest first, with each collection’s metadata, filtered by status and time, paged; never another workspace’s', async () => {
    const ws = await createWorkspace(held, 'refunds-list');
    const [c1, c2, c3] = [
      await paidCollection(ws.token, 1),
      await paidCollection(ws.token, 2),
      await paidCollection(ws.token, 3),
    ];
    const refund = async (collectionId: string): Promise<string> => {
      const res = await postRefund(held, ws.token, collectionId);
      assert.equal(res.status, 201, res.text);
      return res.body.refund_id as string;
    };
    const failedId = await refund(c1 ?? '');
    assert.equal((await simulateRefund(held, ws.token, failedId, { outcome: 'failed' })).status, 200);
    const againId = await refund(c1 ?? '');
    const secondId = await refund(c2 ?? '');
    const successfulId = await refund(c3 ?? '');
    assert.equal((await simulateRefund(held, ws.token, successfulId, { outcome: 'successful' })).status, 200);
    // Another workspace's refund, made while these were.
    const theirs = await postRefund(held, held.demoToken, await paidCollection(held.demoToken, 9));
    assert.equal(theirs.status, 201, theirs.text);

    const all = await list(ws.token);
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(refundIds(all), [successfulId, secondId, againId, failedId]);
    for (const r of all.body.data) assert.deepEqual(Object.keys(r).sort(), REFUND_FIELDS);
    assert.deepEqual(
      all.body.data.map((r: { metadata: unknown }) => r.metadata),
      [{ n: 3 }, { n: 2 }, { n: 1 }, { n: 1 }],
    );
    assert.deepEqual(refundIds(await list(held.demoToken)), [theirs.body.refund_id]);

    assert.deepEqual(refundIds(await list(ws.token, 'status=failed')), [failedId]);
    assert.deepEqual(refundIds(await list(ws.token, 'status=requested')), [secondId, againId]);
    assert.deepEqual(refundIds(await list(ws.token, 'status=successful')), [successfulId]);

    const seen: string[] = [];
    let query = 'limit=1';
    for (let pages = 0; pages < 10; pages++) {
      const page = await list(ws.token, query);
      assert.equal(page.status, 200, page.text);
      seen.push(...refundIds(page));
      if (page.body.next_cursor === null) break;
      query = `limit=1&cursor=${encodeURIComponent(page.body.next_cursor)}`;
    }
    assert.deepEqual(seen, [successfulId, secondId, againId, failedId]);

    const second = await getRefund(held, ws.token, secondId);
    const at = encodeURIComponent(second.body.requested_at);
    assert.deepEqual(refundIds(await list(ws.token, `from=${at}`)), [successfulId, secondId]);
    assert.deepEqual(refundIds(await list(ws.token, `to=${at}`)), [secondId, againId, failedId]);
    assert.deepEqual(refundIds(await list(ws.token, 'from=2999-01-01')), []);

    assertProblem(await list(ws.token, 'status=refunded'), 400, 'validation_failed');
    assertProblem(await list(ws.token, 'from=yesterday'), 400, 'validation_failed');
    assertProblem(await request(held, 'GET', '/v1/refunds'), 401, 'unauthorized');
  });
});
