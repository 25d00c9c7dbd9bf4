// The collection lifecycle end to end (contract §5, §6, §7): the sandbox's magic numbers, expiry by the
// sweeper alone, every row of the transition table driven by signed provider callbacks and the simulate
// endpoint, refused and repeated notices, callback signatures, and the ledger behind GET /v1/balances.
// One app with the background workers on, simulator steps of 50 ms, and a catalogue whose KE mpesa rail
// expires after 2 s (KE airtel_money keeps 600 s: tests that must not expire use it).
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { listObjectEvents } from '../src/modules/events/events.repository.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { signCallback, type CallbackBody } from '../src/modules/providers/callback-protocol.js';
import { loadServiceKeys } from '../src/platform/secrets.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  request,
  requestRefund,
  startTestApp,
  type ApiResponse,
  type TestApp,
  waitFor,
} from './helpers/harness.js';

const SHORT_EXPIRY_SECONDS = 2;
const CALLBACKS = '/v1/providers/sandbox/callbacks';

let t: TestApp;
let secret: string;

before(async () => {
  t = await startTestApp(FAST_LIFECYCLE, { workers: true, expirySeconds: { 'KE/mpesa': SHORT_EXPIRY_SECONDS } });
  secret = (await loadServiceKeys(t.db, t.box)).sandboxProviderSecret;
});

after(async () => t?.close());

// ---------------------------------------------------------------------------------------------------------
// Helpers

interface Row {
  status: string;
  failure_reason: string | null;
  provider_reference: string | null;
  expires_at: Date;
  /** The simulator's next step time: null when it has nothing more to send (or never ran this collection). */
  next_at: Date | null;
  has_operation: boolean;
}

async function row(id: string): Promise<Row> {
  const { rows } = await t.db.query<Row>(
    `SELECT c.status, c.failure_reason, c.provider_reference, c.expires_at, o.next_at, o.object_id IS NOT NULL AS has_operation
     FROM collections c LEFT JOIN sandbox_operations o ON o.object_id = c.id WHERE c.id = $1`,
    [id],
  );
  const found = rows[0];
  assert.ok(found, `collection ${id} exists`);
  return found;
}

/** Waits (on the database) until the collection is in `status` and the simulator has nothing more to send about it. */
function atRest(id: string, status: string, timeoutMs?: number): Promise<Row> {
  return waitFor(
    `collection ${id} at rest in ${status}`,
    async () => {
      const r = await row(id);
      return r.status === status && r.next_at === null ? r : undefined;
    },
    timeoutMs,
  );
}

const phone = (lastFour: string): string => `+25471234${lastFour}`;

interface Made {
  id: string;
  metadata: Record<string, unknown>;
  amount: number;
  token: string;
  workspaceId: string;
}

async function make(
  lastFour: string | undefined,
  options: {
    rail?: string;
    token?: string;
    workspaceId?: string;
    amount?: number;
    market?: string;
    phoneNumber?: string;
    currency?: string;
  } = {},
): Promise<Made> {
  const token = options.token ?? t.demoToken;
  const metadata = {
    order_id: randomBytes(4).toString('hex'),
    digits: lastFour ?? 'default',
    cart: { items: [1, 2], note: 'ü' },
  };
  const amount = options.amount ?? 1500;
  const overrides: Record<string, unknown> = {
    amount,
    metadata,
    customer: { phone_number: options.phoneNumber ?? (lastFour === undefined ? '+254712345678' : phone(lastFour)) },
  };
  if (options.currency) overrides.currency = options.currency;
  const res = await createCollection(
    t,
    token,
    overrides,
    `/v1/collections/${options.market ?? 'KE'}/rails/${options.rail ?? 'airtel_money'}`,
  );
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.status, 'created');
  return { id: res.body.collection_id, metadata, amount, token, workspaceId: options.workspaceId ?? t.demoWorkspaceId };
}

/**
 * A collection that stays `created`: made while the submitter's kick is unhooked, so nothing hands it to the
 * simulator until the initiation sweep's 5 s grace has passed. The only way to reach the `created → …` rows.
 */
async function makeHeld(options: { rail?: string } = {}): Promise<Made> {
  const restore = t.services.afterCommit.listen(undefined);
  try {
    return await make('0005', options);
  } finally {
    restore();
  }
}

/** A 0005 collection resting in processing; `successful` drives it there with a signed callback first. */
async function makeProcessing(options: { successful?: boolean } = {}): Promise<Made> {
  const c = await make('0005');
  await atRest(c.id, 'processing');
  if (options.successful) {
    const res = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
  }
  return c;
}

/** A 0003 collection resting in pending (airtel_money: it does not expire during the test). */
async function makePending(): Promise<Made> {
  const c = await make('0003');
  await atRest(c.id, 'pending');
  return c;
}

/** A provider notice about a collection, with the provider reference we know of it (any value while it has none). */
async function notice(
  id: string,
  status: CallbackBody['status'],
  extra: Partial<CallbackBody> = {},
): Promise<CallbackBody> {
  const { provider_reference } = await row(id);
  return {
    notice_id: `test-${randomBytes(8).toString('hex')}`,
    object_type: 'collection',
    merchant_reference: id,
    reference: provider_reference ?? `ref-${randomBytes(6).toString('hex')}`,
    status,
    reason: null,
    occurred_at: new Date().toISOString(),
    ...extra,
  };
}

/** Posts a notice signed with the sandbox secret (or as told: other headers, a body changed after signing…). */
function callback(
  body: CallbackBody,
  options: { headers?: Record<string, string>; rawBody?: string; provider?: string } = {},
): Promise<ApiResponse> {
  const raw = JSON.stringify(body);
  const headers = options.headers ?? signCallback(secret, raw);
  return request(t, 'POST', options.provider ? `/v1/providers/${options.provider}/callbacks` : CALLBACKS, {
    rawBody: options.rawBody ?? raw,
    headers,
  });
}

function simulate(c: Made, outcome: string, reason?: string): Promise<ApiResponse> {
  return request(t, 'POST', `/v1/sandbox/collections/${c.id}/simulate`, {
    token: c.token,
    body: reason ? { outcome, reason } : { outcome },
  });
}

async function get(c: Made): Promise<any> {
  const res = await request(t, 'GET', `/v1/collections/${c.id}`, { token: c.token });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Asserts the collection, read through the API, has the status and the failure_reason. */
async function assertStatus(c: Made, status: string, failureReason: string | null): Promise<void> {
  const api = await get(c);
  assert.equal(api.status, status);
  assert.equal(api.failure_reason, failureReason);
}

/**
 * The collection's events are exactly `collection.<s>` for each s, in strictly increasing created_at, each
 * carrying the collection as the API shows it: its status at that step and the metadata it was created with.
 */
async function assertEvents(c: Made, statuses: string[]): Promise<void> {
  const events = await listObjectEvents(t.db, c.workspaceId, c.id);
  assert.deepEqual(
    events.map((e) => e.type),
    statuses.map((s) => `collection.${s}`),
  );
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as (typeof events)[number];
    const data = e.data as { status: string; metadata: unknown; collection_id: string };
    assert.equal(e.object_type, 'collection');
    assert.equal(data.collection_id, c.id);
    assert.equal(data.status, statuses[i], `event ${e.type} carries status ${data.status}`);
    assert.deepEqual(data.metadata, c.metadata, `event ${e.type} carries the collection's metadata`);
    if (i > 0) {
      const previous = events[i - 1] as (typeof events)[number];
      assert.ok(e.created_at.getTime() > previous.created_at.getTime(), `${e.type} is not after ${previous.type}`);
    }
  }
}

async function postings(objectId: string): Promise<string[]> {
  const { rows } = await t.db.query<{ kind: string }>(
    'SELECT kind FROM ledger_postings WHERE object_id = $1 ORDER BY created_at, id',
    [objectId],
  );
  return rows.map((r) => r.kind);
}

/**
 * Everything a notice or a simulation could change about one collection, and the workspace's balances. Leaves out
 * `reconciliation.mismatch` events: a refused notice that contradicts us about money records one (see `mismatches`).
 */
async function snapshot(c: Made): Promise<unknown> {
  const q = async (sql: string, params: unknown[]): Promise<unknown[]> => (await t.db.query(sql, params)).rows;
  return {
    collection: await q(
      'SELECT status, failure_reason, provider_reference, updated_at, submitted_at FROM collections WHERE id = $1',
      [c.id],
    ),
    events: await q(
      "SELECT id, type, created_at FROM events WHERE object_id = $1 AND type <> 'reconciliation.mismatch' ORDER BY created_at, id",
      [c.id],
    ),
    outbox: await q(
      "SELECT count(*)::int AS n FROM outbox o JOIN events e ON e.id = o.event_id WHERE e.object_id = $1 AND e.type <> 'reconciliation.mismatch'",
      [c.id],
    ),
    postings: await q('SELECT id, kind FROM ledger_postings WHERE object_id = $1 ORDER BY id', [c.id]),
    balances: await q(
      'SELECT account, currency, balance FROM ledger_balances WHERE workspace_id = $1 ORDER BY account, currency',
      [c.workspaceId],
    ),
  };
}

/** The `reconciliation.mismatch` events about a collection: [our status, the provider's]. */
async function mismatches(c: Made): Promise<string[][]> {
  const events = await listObjectEvents(t.db, c.workspaceId, c.id);
  return events
    .filter((e) => e.type === 'reconciliation.mismatch')
    .map((e) => {
      const data = e.data as { our_status: string; provider_status: string };
      return [data.our_status, data.provider_status];
    });
}

async function noticeCount(): Promise<number> {
  return (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM provider_notices')).rows[0]?.n ?? -1;
}

// ---------------------------------------------------------------------------------------------------------

describe('sandbox outcomes by the last four digits (contract §6)', () => {
  it('any other number: pending → processing → successful, credited once', async () => {
    const c = await make(undefined);
    await atRest(c.id, 'successful');
    const api = await get(c);
    assert.equal(api.status, 'successful');
    assert.equal(api.failure_reason, null);
    assert.deepEqual(api.metadata, c.metadata);
    await assertEvents(c, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(c.id), ['collection_successful']);
  });

  it('0001: pending, then failed with payer_declined', async () => {
    const c = await make('0001');
    await atRest(c.id, 'failed');
    await assertStatus(c, 'failed', 'payer_declined');
    await assertEvents(c, ['created', 'pending', 'failed']);
    assert.deepEqual(await postings(c.id), []);
  });

  it('0002: failed at once with insufficient_funds', async () => {
    const c = await make('0002');
    await atRest(c.id, 'failed');
    await assertStatus(c, 'failed', 'insufficient_funds');
    await assertEvents(c, ['created', 'failed']);
    assert.deepEqual(await postings(c.id), []);
  });

  it('0003: pending, never authorised, expired at expires_at (2 s mpesa expiry)', async () => {
    const c = await make('0003', { rail: 'mpesa' });
    await atRest(c.id, 'pending');
    const r = await atRest(c.id, 'expired');
    assert.ok(Date.now() >= r.expires_at.getTime(), 'expired before its expires_at');
    const api = await get(c);
    assert.equal(api.status, 'expired');
    assert.equal(api.failure_reason, null);
    assert.ok(
      new Date(api.updated_at).getTime() >= new Date(api.expires_at).getTime(),
      'updated_at of the expiry is before expires_at',
    );
    await assertEvents(c, ['created', 'pending', 'expired']);
    assert.deepEqual(await postings(c.id), []);
  });

  it('0004: successful, then reversed: credited, then debited', async () => {
    const c = await make('0004');
    await atRest(c.id, 'reversed');
    await assertStatus(c, 'reversed', null);
    await assertEvents(c, ['created', 'pending', 'processing', 'successful', 'reversed']);
    assert.deepEqual(await postings(c.id), ['collection_successful', 'collection_reversed']);
  });

  it('0005: pending → processing, and stays there', async () => {
    const c = await make('0005');
    await atRest(c.id, 'processing');
    await assertStatus(c, 'processing', null);
    await assertEvents(c, ['created', 'pending', 'processing']);
    assert.deepEqual(await postings(c.id), []);
  });
});

describe('expiry needs no request', () => {
  it('past expires_at, a pending (0003) and a created collection expire by themselves; a processing (0005) one does not', async () => {
    // In this order, so the processing one is due first: the sweep that expires the pending one has seen it too.
    const processing = await make('0005', { rail: 'mpesa' });
    const held = await makeHeld({ rail: 'mpesa' });
    const pending = await make('0003', { rail: 'mpesa' });
    await atRest(processing.id, 'processing');
    // From here on, no request reaches the app until the expiry has happened: only the database is read.
    const expired = await atRest(pending.id, 'expired');
    await atRest(held.id, 'expired');
    const stillProcessing = await row(processing.id);
    assert.ok(stillProcessing.expires_at.getTime() <= expired.expires_at.getTime());
    assert.ok(Date.now() > stillProcessing.expires_at.getTime());
    assert.equal(stillProcessing.status, 'processing', 'an authorised (processing) collection must not expire');

    assert.equal((await get(pending)).status, 'expired');
    assert.equal((await get(held)).status, 'expired');
    assert.equal((await get(processing)).status, 'processing');
    await assertEvents(pending, ['created', 'pending', 'expired']);
    await assertEvents(held, ['created', 'expired']);
    await assertEvents(processing, ['created', 'pending', 'processing']);
  });
});

describe('every row of the transition table, through the service (contract §5)', () => {
  it('created → pending (provider callback)', async () => {
    const c = await makeHeld();
    const res = await callback(await notice(c.id, 'pending'));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    assert.equal((await get(c)).status, 'pending');
    await assertEvents(c, ['created', 'pending']);
  });

  it('created → processing (provider callback)', async () => {
    const c = await makeHeld();
    const res = await callback(await notice(c.id, 'processing'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    assert.equal((await get(c)).status, 'processing');
    await assertEvents(c, ['created', 'processing']);
  });

  it('created → failed (provider callback, reason kept)', async () => {
    const c = await makeHeld();
    const res = await callback(await notice(c.id, 'failed', { reason: 'payer_declined' }));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    await assertStatus(c, 'failed', 'payer_declined');
    await assertEvents(c, ['created', 'failed']);
  });

  it('created → expired (simulate)', async () => {
    const c = await makeHeld();
    const res = await simulate(c, 'expired');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'expired');
    assert.equal(res.body.failure_reason, null);
    assert.equal((await get(c)).status, 'expired');
    await assertEvents(c, ['created', 'expired']);
  });

  it('pending → processing (provider callback)', async () => {
    const c = await makePending();
    const res = await callback(await notice(c.id, 'processing'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    assert.equal((await get(c)).status, 'processing');
    await assertEvents(c, ['created', 'pending', 'processing']);
  });

  it('pending → failed (provider callback)', async () => {
    const c = await makePending();
    const res = await callback(await notice(c.id, 'failed', { reason: 'insufficient_funds' }));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    await assertStatus(c, 'failed', 'insufficient_funds');
    await assertEvents(c, ['created', 'pending', 'failed']);
  });

  it('pending → failed (simulate, default reason provider_error)', async () => {
    const c = await makePending();
    const res = await simulate(c, 'failed');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'failed');
    assert.equal(res.body.failure_reason, 'provider_error');
    await assertEvents(c, ['created', 'pending', 'failed']);
  });

  it('pending → expired (simulate)', async () => {
    const c = await makePending();
    const res = await simulate(c, 'expired');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'expired');
    await assertEvents(c, ['created', 'pending', 'expired']);
    assert.deepEqual(await postings(c.id), []);
  });

  it('processing → failed (provider callback; an unknown reason becomes provider_error)', async () => {
    const c = await makeProcessing();
    const res = await callback(await notice(c.id, 'failed', { reason: 'gateway exploded' }));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    await assertStatus(c, 'failed', 'provider_error');
    await assertEvents(c, ['created', 'pending', 'processing', 'failed']);
    assert.deepEqual(await postings(c.id), []);
  });

  it('processing → successful (provider callback): credited once', async () => {
    const c = await makeProcessing();
    const res = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    await assertStatus(c, 'successful', null);
    await assertEvents(c, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(c.id), ['collection_successful']);
  });

  it('processing → successful (simulate)', async () => {
    const c = await makeProcessing();
    const res = await simulate(c, 'successful');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'successful');
    await assertEvents(c, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(c.id), ['collection_successful']);
  });

  it('successful → refunded (a refund that succeeds): the refund is debited, the collection refunded', async () => {
    const c = await makeProcessing({ successful: true });
    const res = await requestRefund(t, c.token, c.id, c.amount);
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.status, 'requested');
    const refundId: string = res.body.refund_id;
    await atRest(c.id, 'refunded');
    const refund = await request(t, 'GET', `/v1/refunds/${refundId}`, { token: c.token });
    assert.equal(refund.body.status, 'successful');
    assert.equal((await get(c)).status, 'refunded');
    await assertEvents(c, ['created', 'pending', 'processing', 'successful', 'refunded']);
    const refundEvents = await listObjectEvents(t.db, c.workspaceId, refundId);
    assert.deepEqual(
      refundEvents.map((e) => e.type),
      ['refund.requested', 'refund.pending', 'refund.successful'],
    );
    for (const e of refundEvents) {
      const data = e.data as { status: string; metadata: unknown };
      assert.equal(`refund.${data.status}`, e.type);
      assert.deepEqual(data.metadata, c.metadata);
    }
    assert.deepEqual(await postings(c.id), ['collection_successful']);
    assert.deepEqual(await postings(refundId), ['refund_reserved', 'refund_settled']);
  });

  it('successful → reversed (provider callback): credited, then debited', async () => {
    const c = await makeProcessing({ successful: true });
    const res = await callback(await notice(c.id, 'reversed'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    assert.equal((await get(c)).status, 'reversed');
    await assertEvents(c, ['created', 'pending', 'processing', 'successful', 'reversed']);
    assert.deepEqual(await postings(c.id), ['collection_successful', 'collection_reversed']);
  });

  it('successful → reversed (simulate)', async () => {
    const c = await makeProcessing({ successful: true });
    const res = await simulate(c, 'reversed');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'reversed');
    await assertEvents(c, ['created', 'pending', 'processing', 'successful', 'reversed']);
    assert.deepEqual(await postings(c.id), ['collection_successful', 'collection_reversed']);
  });

  it('an outcome reported from further back is walked through the statuses between, each with its event', async () => {
    const viaCallback = await makePending();
    const res = await callback(await notice(viaCallback.id, 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    await assertEvents(viaCallback, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(viaCallback.id), ['collection_successful']);

    const viaSimulate = await makePending();
    const sim = await simulate(viaSimulate, 'successful');
    assert.equal(sim.status, 200, sim.text);
    assert.equal(sim.body.status, 'successful');
    await assertEvents(viaSimulate, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(viaSimulate.id), ['collection_successful']);
  });
});

describe('refused transitions change nothing', () => {
  it('after failed, a signed successful callback answers refused and changes nothing', async () => {
    const c = await make('0002');
    await atRest(c.id, 'failed');
    const before = await snapshot(c);
    const res = await callback(await notice(c.id, 'successful'));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { received: true, outcome: 'refused' });
    assert.deepEqual(await snapshot(c), before);
    assert.deepEqual(
      await mismatches(c),
      [['failed', 'successful']],
      'a person is told: the provider says it was paid',
    );
    await assertStatus(c, 'failed', 'insufficient_funds');
  });

  it('an expired collection receiving processing answers refused and changes nothing', async () => {
    const c = await makePending();
    assert.equal((await simulate(c, 'expired')).status, 200);
    const before = await snapshot(c);
    const res = await callback(await notice(c.id, 'processing'));
    assert.deepEqual(res.body, { received: true, outcome: 'refused' });
    assert.deepEqual(await snapshot(c), before);
    assert.equal((await get(c)).status, 'expired');
  });

  it('a stale pending after processing, and failed after successful, are refused', async () => {
    const processing = await makeProcessing();
    let before = await snapshot(processing);
    let res = await callback(await notice(processing.id, 'pending'));
    assert.deepEqual(res.body, { received: true, outcome: 'refused' });
    assert.deepEqual(await snapshot(processing), before);

    const successful = await makeProcessing({ successful: true });
    before = await snapshot(successful);
    res = await callback(await notice(successful.id, 'failed', { reason: 'payer_declined' }));
    assert.deepEqual(res.body, { received: true, outcome: 'refused' });
    assert.deepEqual(await snapshot(successful), before);
    assert.deepEqual(await mismatches(successful), [['successful', 'failed']]);
    assert.deepEqual(await mismatches(processing), [], 'a stale pending is no disagreement about money');
    assert.equal((await get(successful)).status, 'successful');
  });

  it("a notice whose provider reference is not the collection's is refused", async () => {
    const c = await makeProcessing();
    const before = await snapshot(c);
    const res = await callback(await notice(c.id, 'successful', { reference: 'sbx_someone_else' }));
    assert.deepEqual(res.body, { received: true, outcome: 'refused' });
    assert.deepEqual(await snapshot(c), before);
  });

  it('simulate to an outcome the table cannot reach is 409 transition_not_allowed and changes nothing', async () => {
    const failed = await make('0002');
    await atRest(failed.id, 'failed');
    const expired = await makePending();
    assert.equal((await simulate(expired, 'expired')).status, 200);
    const processing = await makeProcessing();
    const successful = await makeProcessing({ successful: true });
    const reversed = await makeProcessing({ successful: true });
    assert.equal((await simulate(reversed, 'reversed')).status, 200);

    const cases: [Made, string][] = [
      [failed, 'successful'],
      [failed, 'expired'],
      [expired, 'failed'],
      [expired, 'reversed'],
      [processing, 'expired'],
      [successful, 'failed'],
      [successful, 'expired'],
      [reversed, 'successful'],
      [reversed, 'failed'],
      [reversed, 'expired'],
    ];
    for (const [c, outcome] of cases) {
      const before = await snapshot(c);
      const res = await simulate(c, outcome);
      assertProblem(res, 409, 'transition_not_allowed');
      assert.deepEqual(await snapshot(c), before, `simulate ${outcome} changed something`);
    }
  });
});

describe('late payments (contract §5, issue 21)', () => {
  const types = async (c: Made): Promise<string[]> =>
    (await listObjectEvents(t.db, c.workspaceId, c.id)).map((e) => e.type);

  async function balance(token: string): Promise<number> {
    const res = await request(t, 'GET', '/v1/balances', { token });
    return res.body.data.find((b: { currency: string }) => b.currency === 'KES')?.available ?? 0;
  }

  /** A pending collection of a fresh workspace (with `policy`, when given), expired by the simulate endpoint. */
  async function expiredCollection(name: string, policy?: 'refund' | 'accept'): Promise<Made> {
    const ws = await createWorkspace(t, `late-${name}-${randomBytes(3).toString('hex')}`);
    if (policy) {
      const set = await request(t, 'PATCH', '/v1/workspace', { token: ws.token, body: { late_payment: policy } });
      assert.equal(set.status, 200, set.text);
      assert.equal(set.body.late_payment, policy);
    }
    const c = await make('0003', { token: ws.token, workspaceId: ws.id });
    await atRest(c.id, 'pending');
    assert.equal((await simulate(c, 'expired')).status, 200);
    return c;
  }

  it('refund (the default): a success reported after expiry is applied, told first as collection.late_payment, and sent back by a system refund', async () => {
    const c = await expiredCollection('refund');
    const res = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });

    await atRest(c.id, 'refunded');
    const events = await listObjectEvents(t.db, c.workspaceId, c.id);
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'collection.created',
        'collection.pending',
        'collection.expired',
        'collection.late_payment',
        'collection.successful',
        'collection.refunded',
      ],
    );
    assert.equal((events[3]?.data as { status: string }).status, 'successful');
    const refunds = await request(t, 'GET', `/v1/collections/${c.id}/refunds`, { token: c.token });
    assert.equal(refunds.body.data.length, 1);
    const refund = refunds.body.data[0];
    assert.equal(refund.reason, 'late_payment');
    assert.equal(refund.status, 'successful');
    assert.equal(refund.amount, c.amount);
    assert.deepEqual(
      (await listObjectEvents(t.db, c.workspaceId, refund.refund_id)).map((e) => e.type),
      ['refund.requested', 'refund.pending', 'refund.successful'],
    );
    assert.deepEqual(await postings(c.id), ['collection_successful']);
    assert.deepEqual(await postings(refund.refund_id), ['refund_reserved', 'refund_settled']);
    assert.equal(await balance(c.token), 0);
    assert.deepEqual(await verifyLedger(t.db), []);

    // The same success again changes nothing: no second credit, no second refund.
    const again = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(again.body, { received: true, outcome: 'refused' });
    assert.deepEqual(
      await types(c),
      events.map((e) => e.type),
    );
  });

  it('accept: the late payment is credited and stays successful; the merchant is told all the same', async () => {
    const c = await expiredCollection('accept', 'accept');
    const res = await simulate(c, 'successful');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'successful');
    assert.deepEqual(await types(c), [
      'collection.created',
      'collection.pending',
      'collection.expired',
      'collection.late_payment',
      'collection.successful',
    ]);
    const refunds = await request(t, 'GET', `/v1/collections/${c.id}/refunds`, { token: c.token });
    assert.deepEqual(refunds.body.data, []);
    assert.equal(await balance(c.token), c.amount);
    assert.deepEqual(await verifyLedger(t.db), []);
  });

  it('an expired collection still refuses failed and reversed, and a refund request', async () => {
    const c = await expiredCollection('refusals');
    for (const outcome of ['failed', 'reversed'])
      assertProblem(await simulate(c, outcome), 409, 'transition_not_allowed');
    const refund = await requestRefund(t, c.token, c.id, c.amount);
    assertProblem(refund, 409, 'collection_not_refundable');
    assert.equal((await get(c)).status, 'expired');
  });
});

describe('the late payment policy (PATCH /v1/workspace)', () => {
  it('defaults to refund; an integrator sets it; anything else is 400 validation_failed and changes nothing', async () => {
    const ws = await createWorkspace(t, `late-policy-${randomBytes(3).toString('hex')}`);
    const read = await request(t, 'GET', '/v1/workspace', { token: ws.token });
    assert.equal(read.body.late_payment, 'refund');
    for (const body of [{ late_payment: 'keep' }, {}, { late_payment: 'accept', name: 'x' }, { late_payment: null }]) {
      const res = await request(t, 'PATCH', '/v1/workspace', { token: ws.token, body });
      assertProblem(res, 400, 'validation_failed');
    }
    assert.equal((await request(t, 'GET', '/v1/workspace', { token: ws.token })).body.late_payment, 'refund');
    const set = await request(t, 'PATCH', '/v1/workspace', { token: ws.token, body: { late_payment: 'accept' } });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.late_payment, 'accept');
    assert.equal((await request(t, 'GET', '/v1/workspace', { token: ws.token })).body.late_payment, 'accept');
    assertProblem(
      await request(t, 'PATCH', '/v1/workspace', { body: { late_payment: 'refund' } }),
      401,
      'unauthorized',
    );
  });
});

describe('a repeated notice is applied once', () => {
  it('the same signed callback twice: applied, then duplicate; one event, one posting', async () => {
    const c = await makeProcessing();
    const body = await notice(c.id, 'successful');
    const raw = JSON.stringify(body);
    const headers = signCallback(secret, raw);
    const first = await request(t, 'POST', CALLBACKS, { rawBody: raw, headers });
    assert.deepEqual(first.body, { received: true, outcome: 'applied' });
    const after = await snapshot(c);
    const second = await request(t, 'POST', CALLBACKS, { rawBody: raw, headers });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body, { received: true, outcome: 'duplicate' });
    assert.deepEqual(await snapshot(c), after);
    await assertEvents(c, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(c.id), ['collection_successful']);
  });

  it('the same signed callback 5 times at once: applied exactly once', async () => {
    const c = await makeProcessing();
    const body = await notice(c.id, 'successful');
    const raw = JSON.stringify(body);
    const headers = signCallback(secret, raw);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => request(t, 'POST', CALLBACKS, { rawBody: raw, headers })),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
    assert.deepEqual(answers.map((a) => a.body.outcome).sort(), [
      'applied',
      'duplicate',
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    await assertEvents(c, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(c.id), ['collection_successful']);
    const later = await request(t, 'POST', CALLBACKS, { rawBody: raw, headers });
    assert.deepEqual(later.body, { received: true, outcome: 'duplicate' });
    assert.deepEqual(await postings(c.id), ['collection_successful']);

    // Known by its notice id, not by the status: after the collection has moved on, the old notice is still a duplicate.
    const reversal = await callback(await notice(c.id, 'reversed'));
    assert.deepEqual(reversal.body, { received: true, outcome: 'applied' });
    const replay = await request(t, 'POST', CALLBACKS, { rawBody: raw, headers });
    assert.deepEqual(replay.body, { received: true, outcome: 'duplicate' });
    await assertEvents(c, ['created', 'pending', 'processing', 'successful', 'reversed']);
    assert.deepEqual(await postings(c.id), ['collection_successful', 'collection_reversed']);
  });

  it('another notice reporting the status the collection already has changes nothing', async () => {
    const c = await makeProcessing({ successful: true });
    const before = await snapshot(c);
    const res = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'duplicate' });
    assert.deepEqual(await snapshot(c), before);
  });
});

describe('callback security', () => {
  let c: Made;
  let body: CallbackBody;
  let raw: string;

  before(async () => {
    c = await makeProcessing();
    body = await notice(c.id, 'successful');
    raw = JSON.stringify(body);
  });

  /** Sends, expects `check`, and verifies that neither the collection nor the notice log moved. */
  async function refusedWithoutChange(
    send: () => Promise<ApiResponse>,
    check: (res: ApiResponse) => void,
  ): Promise<void> {
    const before = await snapshot(c);
    const notices = await noticeCount();
    const res = await send();
    check(res);
    assert.deepEqual(await snapshot(c), before);
    assert.equal(await noticeCount(), notices);
  }

  it('a signature made with another secret is 401 invalid_signature', async () => {
    await refusedWithoutChange(
      () => callback(body, { headers: signCallback(randomBytes(32).toString('hex'), raw) }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('a missing Provider-Signature header is 401 invalid_signature', async () => {
    await refusedWithoutChange(
      () => callback(body, { headers: { 'content-type': 'application/json' } }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('a malformed Provider-Signature header is 401 invalid_signature', async () => {
    await refusedWithoutChange(
      () => callback(body, { headers: { 'content-type': 'application/json', 'provider-signature': 'nonsense' } }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('a signature older than 5 minutes is 401 invalid_signature', async () => {
    await refusedWithoutChange(
      () => callback(body, { headers: signCallback(secret, raw, Date.now() - 301_000) }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('a body altered after signing is 401 invalid_signature', async () => {
    const altered = JSON.stringify({ ...body, reason: 'x' });
    await refusedWithoutChange(
      () => callback(body, { headers: signCallback(secret, raw), rawBody: altered }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('an unknown provider name is 404', async () => {
    await refusedWithoutChange(
      () => callback(body, { provider: 'acme' }),
      (res) => assertProblem(res, 404, 'not_found'),
    );
  });

  it('a notice for a collection that does not exist is 404', async () => {
    await refusedWithoutChange(
      () => callback({ ...body, merchant_reference: randomUUID() }),
      (res) => assertProblem(res, 404, 'not_found'),
    );
  });

  it('after all that, the genuine notice still applies', async () => {
    const res = await callback(body);
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    assert.equal((await get(c)).status, 'successful');
  });
});

describe('ledger and balances', () => {
  /** Waits until nothing is in flight: no simulator step due, no refund unresolved, no collection unsent. */
  async function quiescent(): Promise<void> {
    await waitFor('the simulator and refunds to settle', async () => {
      const { rows } = await t.db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM sandbox_operations WHERE next_at IS NOT NULL)
              + (SELECT count(*) FROM refunds WHERE status IN ('requested', 'pending'))
              + (SELECT count(*) FROM collections WHERE status = 'created') AS n`,
      );
      return Number(rows[0]?.n) === 0 ? true : undefined;
    });
  }

  async function successfulSums(workspaceId: string): Promise<Record<string, number>> {
    const { rows } = await t.db.query<{ currency: string; total: string }>(
      `SELECT currency, sum(amount) AS total FROM collections WHERE workspace_id = $1 AND status = 'successful' GROUP BY currency`,
      [workspaceId],
    );
    return Object.fromEntries(rows.map((r) => [r.currency, Number(r.total)]));
  }

  async function balances(token: string): Promise<Record<string, number>> {
    const res = await request(t, 'GET', '/v1/balances', { token });
    assert.equal(res.status, 200, res.text);
    const data = res.body.data as { currency: string; available: number }[];
    // Only currencies with money in them: a currency that was credited and debited back to zero shows 0.
    return Object.fromEntries(data.filter((b) => b.available !== 0).map((b) => [b.currency, b.available]));
  }

  it('another workspace sees only its own balances, each the sum of its successful collections', async () => {
    const other = await createWorkspace(t, `lifecycle-${randomBytes(3).toString('hex')}`);
    const opts = { token: other.token, workspaceId: other.id };
    const kept = await make(undefined, { ...opts, amount: 2000 });
    const reversed = await make('0004', { ...opts, amount: 3000 });
    const driven = await make('0005', { ...opts, amount: 2500 });
    const ghana = await make(undefined, {
      ...opts,
      market: 'GH',
      rail: 'mtn_momo',
      currency: 'GHS',
      phoneNumber: '+233241234567',
      amount: 700,
    });
    await atRest(kept.id, 'successful');
    await atRest(reversed.id, 'reversed');
    await atRest(ghana.id, 'successful');
    await atRest(driven.id, 'processing');
    const demoBefore = await balances(t.demoToken);
    assert.equal((await simulate(driven, 'successful')).status, 200);

    assert.deepEqual(await balances(other.token), { KES: 4500, GHS: 700 });
    assert.deepEqual(await successfulSums(other.id), { KES: 4500, GHS: 700 });
    assert.deepEqual(
      await balances(t.demoToken),
      demoBefore,
      "another workspace's collections moved the demo balances",
    );
    assert.equal((await balances(t.demoToken)).GHS, undefined);
  });

  it('the demo balance is exactly the sum of its successful (not reversed, not refunded) collections, and the ledger invariants hold', async () => {
    await quiescent();
    const expected = await successfulSums(t.demoWorkspaceId);
    assert.ok((expected.KES ?? 0) > 0, 'earlier tests left successful collections');
    assert.deepEqual(await balances(t.demoToken), expected);
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});
