// What the ledger property test (test/ledger.property.test.ts) checks after every operation (the database holds
// exactly the model's objects) and at the end of each run (the ledger, the balances, the statuses read over HTTP and
// every object's events).
import assert from 'node:assert/strict';
import { listObjectEvents } from '../../src/modules/events/events.repository.js';
import { verifyLedger } from '../../src/modules/ledger/ledger.verify.js';
import { request } from './harness.js';
import type { Run } from './ledger-model.js';
import { t } from './ledger-operations.js';

/** After every operation: the database holds exactly the model's objects, statuses and provider references. */
export async function checkpoint(run: Run): Promise<void> {
  await assertRowsAreModel(run, 'collections', run.collections);
  await assertRowsAreModel(run, 'refunds', run.refunds);
}

async function assertRowsAreModel(
  run: Run,
  table: 'collections' | 'refunds',
  model: readonly { id: string; status: string; reference: string | null }[],
): Promise<void> {
  const { rows } = await t.db.query<{ id: string; status: string; provider_reference: string | null }>(
    `SELECT id, status, provider_reference FROM ${table} WHERE workspace_id = $1 ORDER BY id`,
    [run.workspace.id],
  );
  assert.deepEqual(
    rows.map((r) => `${r.id} ${r.status} ${r.provider_reference}`),
    [...model].sort((a, b) => (a.id < b.id ? -1 : 1)).map((m) => `${m.id} ${m.status} ${m.reference}`),
    `${table} (id, status, provider reference) differ from the model`,
  );
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function assertIncreasing(events: { type: string; created_at: Date }[], what: string): void {
  for (let i = 1; i < events.length; i++) {
    const a = events[i - 1];
    const b = events[i];
    assert.ok(
      a && b && a.created_at.getTime() < b.created_at.getTime(),
      `${what}: event ${i} (${b?.type}) is not after event ${i - 1} (${a?.type})`,
    );
  }
}

/** The end of a run: the ledger, the balances, the statuses read over HTTP and every object's events. */
export async function finalChecks(run: Run): Promise<void> {
  const token = run.workspace.token;
  assert.deepEqual(await verifyLedger(t.db), [], 'verifyLedger reports broken invariants');

  const expected = new Map<string, number>();
  for (const c of run.collections) {
    if (!c.credited) continue;
    if (c.status !== 'successful')
      assert.ok(c.status === 'refunded' || c.status === 'reversed', `a credited collection is ${c.status}`);
    expected.set(c.currency, run.available(c.currency));
  }
  const balances = await request(t, 'GET', '/v1/balances', { token });
  assert.equal(balances.status, 200, balances.text);
  assert.deepEqual(
    balances.body.data.map((b: { currency: string; available: number }) => ({
      currency: b.currency,
      available: b.available,
    })),
    [...expected.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([currency, available]) => ({ currency, available })),
    'GET /v1/balances differs from what the final statuses imply',
  );

  // Postings: one of each kind per object at most, and exactly where the model says money moved.
  const postings = await t.db.query<{ kind: string; object_id: string; n: number }>(
    'SELECT kind, object_id, count(*)::int AS n FROM ledger_postings WHERE workspace_id = $1 GROUP BY kind, object_id ORDER BY kind, object_id',
    [run.workspace.id],
  );
  for (const p of postings.rows) assert.equal(p.n, 1, `${p.kind} posted ${p.n} times for ${p.object_id}`);
  const twice = await t.db.query(
    "SELECT object_id FROM ledger_postings WHERE kind = 'collection_successful' GROUP BY object_id HAVING count(*) > 1",
  );
  assert.deepEqual(twice.rows, [], 'a collection has two collection_successful postings');
  const expectedPostings = [
    ...run.collections.filter((c) => c.credited).map((c) => `collection_successful ${c.id}`),
    ...run.collections.filter((c) => c.status === 'reversed').map((c) => `collection_reversed ${c.id}`),
    ...run.refunds.map((r) => `refund_reserved ${r.id}`),
    ...run.refunds.filter((r) => r.status === 'failed').map((r) => `refund_released ${r.id}`),
    ...run.refunds.filter((r) => r.status === 'successful').map((r) => `refund_settled ${r.id}`),
  ].sort();
  assert.deepEqual(
    postings.rows.map((p) => `${p.kind} ${p.object_id}`).sort(),
    expectedPostings,
    'ledger postings differ from the model',
  );

  await inParallel(run.collections, 6, async (c) => {
    const res = await request(t, 'GET', `/v1/collections/${c.id}`, { token });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, c.status, `collection ${c.id} status`);
    assert.equal(
      res.body.failure_reason,
      c.status === 'failed' ? c.failureReason : null,
      `collection ${c.id} failure_reason`,
    );
    const events = await listObjectEvents(t.db, run.workspace.id, c.id);
    assert.equal(events[0]?.type, 'collection.created', `collection ${c.id}: the first event`);
    assertIncreasing(events, `collection ${c.id}`);
    assert.deepEqual(
      events.map((e) => e.type),
      c.events,
      `collection ${c.id}: events`,
    );
  });
  await inParallel(run.refunds, 6, async (r) => {
    const res = await request(t, 'GET', `/v1/refunds/${r.id}`, { token });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, r.status, `refund ${r.id} status`);
    assert.equal(
      res.body.failure_reason,
      r.status === 'failed' ? r.failureReason : null,
      `refund ${r.id} failure_reason`,
    );
    if (r.status === 'successful' || r.status === 'failed') assert.equal(typeof res.body.resolved_at, 'string');
    else assert.deepEqual(res.body.resolved_at, {});
    const events = await listObjectEvents(t.db, run.workspace.id, r.id);
    assertIncreasing(events, `refund ${r.id}`);
    assert.deepEqual(
      events.map((e) => e.type),
      r.events,
      `refund ${r.id}: events`,
    );
  });
}
