// What the collection lifecycle tests share (test/lifecycle.*.test.ts, test/states.collections.test.ts): one app with
// the background workers on, simulator steps of 50 ms, and a catalogue whose KE mpesa rail expires after 2 s (KE
// airtel_money keeps 600 s: tests that must not expire use it); collections made to rest in a given status, provider
// notices signed with the sandbox secret, and what a notice or a simulation could change about a collection.
// `startLifecycleApp()` registers the app's start and stop on the calling file; `t` and `secret` are then its own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { listObjectEvents } from '../../src/modules/events/events.repository.js';
import { signCallback, type CallbackBody } from '../../src/modules/providers/callback-protocol.js';
import { loadServiceKeys } from '../../src/platform/secrets.js';
import {
  createCollection,
  FAST_LIFECYCLE,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
  waitFor,
} from './harness.js';

const SHORT_EXPIRY_SECONDS = 2;
export const CALLBACKS = '/v1/providers/sandbox/callbacks';

/** The calling file's app, once `startLifecycleApp()`'s `before` has run. */
export let t: TestApp;
/** The sandbox provider's callback secret of that app. */
export let secret: string;

/** Starts the app before the calling file's tests and closes it after them. */
export function startLifecycleApp(): void {
  before(async () => {
    t = await startTestApp(FAST_LIFECYCLE, { workers: true, expirySeconds: { 'KE/mpesa': SHORT_EXPIRY_SECONDS } });
    secret = (await loadServiceKeys(t.db, t.box)).sandboxProviderSecret;
  });

  after(async () => t?.close());
}

export interface Row {
  status: string;
  failure_reason: string | null;
  provider_reference: string | null;
  expires_at: Date;
  /** The simulator's next step time: null when it has nothing more to send (or never ran this collection). */
  next_at: Date | null;
  has_operation: boolean;
}

export async function row(id: string): Promise<Row> {
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
export function atRest(id: string, status: string, timeoutMs?: number): Promise<Row> {
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

export interface Made {
  id: string;
  metadata: Record<string, unknown>;
  amount: number;
  token: string;
  workspaceId: string;
}

export async function make(
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
export async function makeHeld(options: { rail?: string } = {}): Promise<Made> {
  const restore = t.services.afterCommit.listen(undefined);
  try {
    return await make('0005', options);
  } finally {
    restore();
  }
}

/** A 0005 collection resting in processing; `successful` drives it there with a signed callback first. */
export async function makeProcessing(options: { successful?: boolean } = {}): Promise<Made> {
  const c = await make('0005');
  await atRest(c.id, 'processing');
  if (options.successful) {
    const res = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
  }
  return c;
}

/** A 0003 collection resting in pending (airtel_money: it does not expire during the test). */
export async function makePending(): Promise<Made> {
  const c = await make('0003');
  await atRest(c.id, 'pending');
  return c;
}

/** A provider notice about a collection, with the provider reference we know of it (any value while it has none). */
export async function notice(
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
export function callback(
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

export function simulate(c: Made, outcome: string, reason?: string): Promise<ApiResponse> {
  return request(t, 'POST', `/v1/sandbox/collections/${c.id}/simulate`, {
    token: c.token,
    body: reason ? { outcome, reason } : { outcome },
  });
}

export async function get(c: Made): Promise<any> {
  const res = await request(t, 'GET', `/v1/collections/${c.id}`, { token: c.token });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Asserts the collection, read through the API, has the status and the failure_reason. */
export async function assertStatus(c: Made, status: string, failureReason: string | null): Promise<void> {
  const api = await get(c);
  assert.equal(api.status, status);
  assert.equal(api.failure_reason, failureReason);
}

/**
 * The collection's events are exactly `collection.<s>` for each s, in strictly increasing created_at, each
 * carrying the collection as the API shows it: its status at that step and the metadata it was created with.
 */
export async function assertEvents(c: Made, statuses: string[]): Promise<void> {
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

export async function postings(objectId: string): Promise<string[]> {
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
export async function snapshot(c: Made): Promise<unknown> {
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
export async function mismatches(c: Made): Promise<string[][]> {
  const events = await listObjectEvents(t.db, c.workspaceId, c.id);
  return events
    .filter((e) => e.type === 'reconciliation.mismatch')
    .map((e) => {
      const data = e.data as { our_status: string; provider_status: string };
      return [data.our_status, data.provider_status];
    });
}

export async function noticeCount(): Promise<number> {
  return (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM provider_notices')).rows[0]?.n ?? -1;
}
