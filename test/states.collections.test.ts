// The collection transition table, every way it is tested: the code's table and `plan()` against the
// contract's table, written out here on its own so the code's copy is checked against the document rather than
// against itself (pure); then every row of it driven through the service by signed provider callbacks and the
// simulate endpoint, and the moves it refuses, which change nothing. The app (workers on) is the lifecycle tests'
// (test/helpers/lifecycle.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COLLECTION_STATUSES, type CollectionStatus } from '../src/modules/collections/collections.schemas.js';
import {
  COLLECTION_TRANSITIONS,
  isFinalCollectionStatus,
  planCollection,
} from '../src/modules/collections/collections.states.js';
import { listObjectEvents } from '../src/modules/events/events.repository.js';
import { plan } from '../src/platform/state-machine.js';
import { assertProblem, request, requestRefund } from './helpers/harness.js';
import {
  assertEvents,
  assertStatus,
  atRest,
  callback,
  get,
  make,
  makeHeld,
  makePending,
  makeProcessing,
  mismatches,
  notice,
  postings,
  simulate,
  snapshot,
  startLifecycleApp,
  t,
  type Made,
} from './helpers/lifecycle.js';
import { checkTable, key, pairs, type Edge } from './helpers/transition-table.js';

startLifecycleApp();

/** The contract's collection transition table, one entry per line: "from (one or several) → to". */
const CONTRACT_COLLECTION_ROWS: readonly { from: readonly CollectionStatus[]; to: CollectionStatus }[] = [
  { from: ['created'], to: 'pending' },
  { from: ['created', 'pending'], to: 'processing' },
  { from: ['created', 'pending', 'processing'], to: 'failed' },
  { from: ['created', 'pending'], to: 'expired' },
  { from: ['processing'], to: 'successful' },
  { from: ['successful'], to: 'refunded' },
  { from: ['successful'], to: 'reversed' },
  { from: ['expired'], to: 'successful' },
];
const CONTRACT_COLLECTION_EDGES: readonly Edge<CollectionStatus>[] = CONTRACT_COLLECTION_ROWS.flatMap((row) =>
  row.from.map((from) => [from, row.to] as const),
);
/** Expired is final except for a provider-confirmed late payment (expired → successful). */
const COLLECTION_FINALS: readonly CollectionStatus[] = ['failed', 'refunded', 'reversed'];

describe("collection transitions (the contract's table)", () => {
  checkTable('collection', COLLECTION_STATUSES, COLLECTION_TRANSITIONS, CONTRACT_COLLECTION_EDGES, COLLECTION_FINALS);

  it('refuses failed → successful, expired → processing, a stale processing → pending, and successful → failed', () => {
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'failed', 'successful'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'expired', 'processing'), { kind: 'refused' });
    assert.deepEqual(planCollection('expired', 'failed'), { kind: 'refused' });
    assert.deepEqual(planCollection('expired', 'refunded'), { kind: 'refused' });
    assert.deepEqual(planCollection('expired', 'reversed'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'processing', 'pending'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'successful', 'failed'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'processing', 'expired'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'successful', 'processing'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'reversed', 'refunded'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'refunded', 'reversed'), { kind: 'refused' });
  });

  it('a provider reporting only the outcome is walked through the statuses between', () => {
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'pending', 'successful'), {
      kind: 'steps',
      steps: ['processing', 'successful'],
    });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'created', 'successful'), {
      kind: 'steps',
      steps: ['processing', 'successful'],
    });
  });

  it('planCollection is the table walk, except that a walk through successful is refused', () => {
    for (const [from, to] of pairs(COLLECTION_STATUSES)) {
      const raw = plan(COLLECTION_TRANSITIONS, from, to);
      const throughSuccess = raw.kind === 'steps' && raw.steps.slice(0, -1).includes('successful');
      assert.deepEqual(planCollection(from, to), throughSuccess ? { kind: 'refused' } : raw, key(from, to));
    }
  });

  it('never walks through successful: a reversal reported before any success is refused, not a success invented', () => {
    assert.deepEqual(planCollection('processing', 'reversed'), { kind: 'refused' });
    assert.deepEqual(planCollection('pending', 'reversed'), { kind: 'refused' });
    assert.deepEqual(planCollection('created', 'reversed'), { kind: 'refused' });
    assert.deepEqual(planCollection('processing', 'refunded'), { kind: 'refused' });
    assert.deepEqual(planCollection('successful', 'reversed'), { kind: 'steps', steps: ['reversed'] });
    assert.deepEqual(planCollection('expired', 'successful'), { kind: 'steps', steps: ['successful'] });
    assert.deepEqual(planCollection('pending', 'successful'), { kind: 'steps', steps: ['processing', 'successful'] });
    // The raw table would walk it; the rule is what refuses.
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'processing', 'reversed'), {
      kind: 'steps',
      steps: ['successful', 'reversed'],
    });
  });

  it('isFinalCollectionStatus names exactly failed, refunded and reversed (an expired collection may still be paid late)', () => {
    assert.deepEqual(COLLECTION_STATUSES.filter(isFinalCollectionStatus).sort(), [...COLLECTION_FINALS].sort());
  });
});

describe('every row of the transition table, through the service', () => {
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
