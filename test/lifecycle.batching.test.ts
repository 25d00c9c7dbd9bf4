// A burst of collections through the service with its workers: the providers' answers and the simulator's notices
// are recorded many to a commit (the batcher's), each collection still moves exactly once per step, with its events.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  createCollectionsAtOnce,
  FAST_LIFECYCLE,
  request,
  startTestApp,
  waitFor,
  type TestApp,
} from './helpers/harness.js';

let t: TestApp;

before(async () => {
  t = await startTestApp(FAST_LIFECYCLE, { workers: true });
});

after(async () => {
  await t.close();
});

/** Waits (at most 30 s) until every one of the collections is in `status`. */
function allIn(ids: string[], status: string): Promise<true> {
  return waitFor(
    `all ${ids.length} ${status}`,
    async () => {
      const { rows } = await t.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM collections WHERE id = ANY($1::uuid[]) AND status = $2',
        [ids, status],
      );
      return rows[0]?.n === ids.length ? true : undefined;
    },
    30_000,
  );
}

test('60 collections created at once reach successful with their moves batched: fewer commits than moves, none lost', async () => {
  const before = { ...t.services.batcher.stats };
  const ids = await createCollectionsAtOnce(t, t.demoToken, 60, '+254712340000');
  await allIn(ids, 'successful');
  // Each collection: created, pending, processing, successful, and one ledger posting; no step twice.
  const { rows } = await t.db.query<{ type: string; n: string }>(
    'SELECT type, count(*) AS n FROM events WHERE object_id = ANY($1::uuid[]) GROUP BY type ORDER BY type',
    [ids],
  );
  assert.deepEqual(Object.fromEntries(rows.map((r) => [r.type, Number(r.n)])), {
    'collection.created': 60,
    'collection.pending': 60,
    'collection.processing': 60,
    'collection.successful': 60,
  });
  const postings = await t.db.query<{ n: string }>(
    "SELECT count(*) AS n FROM ledger_postings WHERE object_id = ANY($1::uuid[]) AND kind = 'collection_successful'",
    [ids],
  );
  assert.equal(Number(postings.rows[0]?.n), 60);
  // The mechanism: the 180 moves (to pending, processing and successful) went through the batcher in fewer commits.
  const applied = t.services.batcher.stats.applied - before.applied;
  const commits = t.services.batcher.stats.commits - before.commits;
  assert.ok(applied >= 180, `the batcher applied ${applied} pieces of work`);
  assert.ok(commits <= applied / 2, `${applied} moves took ${commits} commits`);
  const one = await request(t, 'GET', `/v1/collections/${ids[0]}`, { token: t.demoToken });
  assert.equal((one.body as { status: string }).status, 'successful');
});

test('the initiations of a burst are claimed together: two claims in flight at most, the jobs queued meanwhile in the next', async () => {
  const ids = await createCollectionsAtOnce(t, t.demoToken, 60, '+254712340003');
  await allIn(ids, 'pending');
  // Each sent to the simulator once: one operation and one pending event each.
  const { rows } = await t.db.query<{ claims: number; operations: number; pending: number }>(
    `SELECT count(DISTINCT c.claim_id)::int AS claims,
            (SELECT count(*)::int FROM sandbox_operations o WHERE o.object_id = ANY($1::uuid[])) AS operations,
            (SELECT count(*)::int FROM events e WHERE e.object_id = ANY($1::uuid[]) AND e.type = 'collection.pending') AS pending
     FROM collections c WHERE c.id = ANY($1::uuid[])`,
    [ids],
  );
  const found = rows[0];
  assert.equal(found?.operations, 60);
  assert.equal(found?.pending, 60);
  // The mechanism: the 60 claims (each a durable commit before its provider call) were far fewer statements.
  assert.ok((found?.claims ?? 60) <= 30, `60 initiations took ${found?.claims} claims`);
});
