// No hot balance row: a workspace's successes post to different bucket rows of its balances, so
// they do not wait on one another; every reader sums the buckets and sees the exact balance; debits that need a check
// (refund reserves, payout commits) still pass one at a time on the check row, bucket 0, and never overdraw.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { uuidv7 } from '../src/platform/ids.js';
import type { Tx } from '../src/db/pool.js';
import { lockAvailable, post, WORKSPACE_AVAILABLE } from '../src/modules/ledger/ledger.repository.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  liquidityProviderToken,
  newKey,
  request,
  requestRefund,
  startTestApp,
  within,
} from './helpers/harness.js';

// No workers: nothing settles or moves on its own, so every balance below is what the test made.
const t = await startTestApp();
const held: Tx[] = [];
after(async () => {
  for (const tx of held) await tx.query('ROLLBACK').finally(() => tx.release());
  await t.close();
});

/** A new collection of `amount` KES cents, still pending. */
async function pendingCollection(token: string, amount: number): Promise<string> {
  const c = await createCollection(t, token, { amount });
  assert.equal(c.status, 201, c.text);
  return c.body.collection_id as string;
}

/** Drives a collection to successful through the sandbox API: its ledger posting is written on the way. */
async function succeed(token: string, id: string): Promise<void> {
  const s = await request(t, 'POST', `/v1/sandbox/collections/${id}/simulate`, {
    token,
    body: { outcome: 'successful' },
  });
  assert.equal(s.status, 200, s.text);
}

/**
 * A transaction left open in the middle of a success of the workspace: its posting written (so it holds the bucket
 * rows it wrote), not committed. It posts for an object that is not a collection, and is rolled back.
 */
async function holdPosting(workspaceId: string, amount: number): Promise<Tx> {
  const tx = await t.db.connect();
  held.push(tx);
  await tx.query('BEGIN');
  await within(
    'a posting while other postings of the workspace are held open',
    post(tx, workspaceId, {
      kind: 'collection_successful',
      objectType: 'collection',
      objectId: uuidv7(),
      currency: 'KES',
      amount,
      at: new Date(),
    }),
    3_000,
  );
  return tx;
}

async function release(tx: Tx): Promise<void> {
  await tx.query('ROLLBACK');
  held.splice(held.indexOf(tx), 1);
  tx.release();
}

async function available(token: string): Promise<number> {
  const res = await request(t, 'GET', '/v1/balances', { token });
  assert.equal(res.status, 200, res.text);
  return res.body.data.find((b: { currency: string }) => b.currency === 'KES')?.available ?? 0;
}

/** The available balance's bucket rows, [bucket, balance] by bucket. */
async function buckets(workspaceId: string): Promise<[number, number][]> {
  const { rows } = await t.db.query<{ bucket: number; balance: number }>(
    `SELECT bucket, balance FROM ledger_balances WHERE workspace_id = $1 AND account = $2 AND currency = 'KES'
     ORDER BY bucket`,
    [workspaceId, WORKSPACE_AVAILABLE],
  );
  return rows.map((r) => [r.bucket, Number(r.balance)]);
}

/** What the workspace's lines say is available: the negated sum of its available-balance lines. */
async function sumOfLines(workspaceId: string): Promise<number> {
  const { rows } = await t.db.query<{ total: string }>(
    `SELECT coalesce(sum(amount), 0) AS total FROM ledger_lines
     WHERE workspace_id = $1 AND account = $2 AND currency = 'KES'`,
    [workspaceId, WORKSPACE_AVAILABLE],
  );
  return -Number(rows[0]?.total);
}

/** Backends of this test's database waiting for a row lock (another transaction's id, or a tuple lock). */
async function rowLockWaiters(): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`,
  );
  return rows[0]?.n ?? 0;
}

describe('successes of one workspace do not wait on one another', () => {
  it('while postings of the workspace are held open mid-transaction, its other successes still commit, each on a bucket of its own, and every reader sees the exact balance', async () => {
    const ws = await createWorkspace(t, 'buckets-no-wait');
    const first = await pendingCollection(ws.token, 1_000);
    await succeed(ws.token, first);
    assert.deepEqual(await buckets(ws.id), [[0, -1_000]], 'one writer at a time keeps to one row');

    // Four successes in flight at once, each stopped after writing its posting, none committed: with one balance row
    // per account the second would wait for the first to end. Between them a success of the workspace commits.
    const amounts = [100, 200, 300, 400];
    for (const [i, amount] of amounts.entries()) {
      await holdPosting(ws.id, 7);
      const id = await pendingCollection(ws.token, amount);
      await within(`success ${i + 1} while ${held.length} postings are held open`, succeed(ws.token, id), 5_000);
    }
    assert.equal(held.length, 4);
    assert.equal(await rowLockWaiters(), 0, 'no transaction waits for a balance row');
    // Readers see the committed successes, exactly, and nothing of the held ones.
    const expected = 1_000 + 100 + 200 + 300 + 400;
    assert.equal(await available(ws.token), expected);
    assert.equal(await sumOfLines(ws.id), expected);
    const rows = await buckets(ws.id);
    assert.equal(rows.length, 5, `each committed success on a bucket of its own: ${JSON.stringify(rows)}`);
    assert.equal(-rows.reduce((sum, [, balance]) => sum + balance, 0), expected);
    assert.deepEqual(await verifyLedger(t.db), []);

    for (const tx of [...held]) await release(tx);
    assert.equal(await available(ws.token), expected, 'the rolled-back postings left nothing');
    assert.deepEqual(await verifyLedger(t.db), []);
  });

  it('24 concurrent successes of one workspace all commit, and the balance is the sum of their lines', async () => {
    const ws = await createWorkspace(t, 'buckets-concurrent');
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) ids.push(await pendingCollection(ws.token, 100 + i));
    await Promise.all(ids.map((id) => succeed(ws.token, id)));
    const expected = ids.reduce((sum, _, i) => sum + 100 + i, 0);
    assert.equal(await available(ws.token), expected);
    assert.equal(await sumOfLines(ws.id), expected);
    const rows = await buckets(ws.id);
    assert.ok(rows.length <= 16, `at most 16 buckets: ${rows.length}`);
    assert.equal(-rows.reduce((sum, [, balance]) => sum + balance, 0), expected);
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('debits that need a check stay serialised', () => {
  it('a checked debit holds the check row: a second one waits for it, a success does not, and the second sees both', async () => {
    const ws = await createWorkspace(t, 'buckets-check-row');
    await succeed(ws.token, await pendingCollection(ws.token, 5_000));

    const checking = await t.db.connect();
    held.push(checking);
    await checking.query('BEGIN');
    assert.equal(await lockAvailable(checking, ws.id, 'KES'), 5_000);

    // A success commits meanwhile, on another bucket.
    await within(
      'a success while a checked debit holds the check row',
      succeed(ws.token, await pendingCollection(ws.token, 700)),
      5_000,
    );
    assert.equal(await available(ws.token), 5_700);

    // A second checked debit waits for the first.
    const second = await t.db.connect();
    held.push(second);
    await second.query('BEGIN');
    let settled = false;
    const waiting = lockAvailable(second, ws.id, 'KES').finally(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(settled, false, 'the second checked debit waits for the check row');
    assert.equal(await rowLockWaiters(), 1);

    // The first takes 4,000 on the check row and commits; the second then sees it, and the success.
    await post(checking, ws.id, {
      kind: 'refund_reserved',
      objectType: 'refund',
      objectId: uuidv7(),
      currency: 'KES',
      amount: 4_000,
      at: new Date(),
    });
    assert.deepEqual((await buckets(ws.id))[0], [0, -5_000], 'the first checked debit is not committed yet');
    await checking.query('ROLLBACK');
    held.splice(held.indexOf(checking), 1);
    checking.release();
    assert.equal(await within('the second checked debit', waiting, 3_000), 5_700);
    await release(second);
  });

  it('refunds and payouts at once, with successes landing on many buckets meanwhile: exactly what the balance covers goes through, and it never goes negative', async () => {
    const ws = await createWorkspace(t, 'buckets-race');
    const lpToken = await liquidityProviderToken(t);
    const route = await request(t, 'POST', '/v1/api/routes', {
      token: lpToken,
      body: { source: 'KES', market: 'KE', rail: 'mpesa', min_amount: 100, max_amount: 20_000_000 },
    });
    assert.equal(route.status, 201, route.text);
    const beneficiary = await request(t, 'POST', '/v1/api/beneficiaries', {
      token: ws.token,
      body: { name: 'Wanjiru Kamau', market: 'KE', rail: 'mpesa', phone_number: '+254712340005' },
    });
    assert.equal(beneficiary.status, 201, beneficiary.text);

    // Ten collections of 1,000 succeed at once (so the balance is spread over buckets): 10,000 available.
    const collections: string[] = [];
    for (let i = 0; i < 10; i++) collections.push(await pendingCollection(ws.token, 1_000));
    await Promise.all(collections.map((id) => succeed(ws.token, id)));
    assert.equal(await available(ws.token), 10_000);
    // A payout of 3,500 leaves 6,500: six of the ten refunds and five payouts of 1,000 below fit.
    const commit = (amount: number, reference: string) =>
      request(t, 'POST', '/api/transactions/commit', {
        token: ws.token,
        body: { route_id: route.body.route_id, beneficiary_id: beneficiary.body.beneficiary_id, amount, reference },
        idempotencyKey: newKey(),
      });
    assert.equal((await commit(3_500, 'first')).status, 201);
    assert.equal(await available(ws.token), 6_500);

    // Meanwhile four more collections of 100 succeed: a refund or payout may count them or not, and a seventh would
    // still not fit.
    const late: string[] = [];
    for (let i = 0; i < 4; i++) late.push(await pendingCollection(ws.token, 100));
    const [debits] = await Promise.all([
      Promise.all([
        ...collections.map((id) => requestRefund(t, ws.token, id, 1_000)),
        ...Array.from({ length: 5 }, (_, i) => commit(1_000, `race-${i}`)),
      ]),
      Promise.all(late.map((id) => succeed(ws.token, id))),
    ]);
    const statuses = debits.map((x) => x.status);
    assert.equal(statuses.filter((s) => s === 201).length, 6, statuses.join(','));
    for (const res of debits.filter((x) => x.status !== 201)) assertProblem(res, 422, 'insufficient_balance');
    assert.equal(await available(ws.token), 500 + 4 * 100);
    assert.equal(await sumOfLines(ws.id), 500 + 4 * 100);
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});
