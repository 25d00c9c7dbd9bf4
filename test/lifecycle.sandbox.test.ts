// The collection lifecycle in the sandbox (the last four digits of the phone number pick the outcome): the outcome each
// magic number's script plays out on its own, expiry by the sweeper alone, and the ledger behind GET /v1/balances once
// they have run. The rows of the transition table driven one by one are in states.collections.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { createWorkspace, request, waitFor } from './helpers/harness.js';
import {
  assertEvents,
  assertStatus,
  atRest,
  get,
  make,
  makeHeld,
  postings,
  row,
  simulate,
  startLifecycleApp,
  t,
} from './helpers/lifecycle.js';

startLifecycleApp();

describe('sandbox outcomes by the last four digits', () => {
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
    // The demo balances before the other workspace has any collection: each of its four must leave them as they are
    // (read once every credit is made, this would miss a credit made to both workspaces).
    await quiescent();
    const demoBefore = await balances(t.demoToken);
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
