// The refund transition table (the contract's: requested → pending → successful | failed) checked against the code's
// table and `plan()`: pure, no database. The contract's table is written out here on its own, so the code's copy is
// checked against the document rather than against itself (plus the one departure the README documents).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REFUND_STATUSES, REFUND_TRANSITIONS, type RefundStatus } from '../src/modules/refunds/refunds.states.js';
import { plan } from '../src/platform/state-machine.js';
import { checkTable, type Edge } from './helpers/transition-table.js';

/** The contract's refund transitions: requested → pending → successful | failed. */
const CONTRACT_REFUND_EDGES: readonly Edge<RefundStatus>[] = [
  ['requested', 'pending'],
  ['pending', 'successful'],
  ['pending', 'failed'],
];
/**
 * The README's "Where this departs from the contract": a refund the provider refuses at initiation goes
 * requested → failed directly (no refund.pending event). Kept apart so the departure stays a deliberate one.
 */
const DOCUMENTED_REFUND_DEPARTURES: readonly Edge<RefundStatus>[] = [['requested', 'failed']];
const REFUND_FINALS: readonly RefundStatus[] = ['successful', 'failed'];

describe("refund transitions (the contract's table)", () => {
  checkTable(
    'refund',
    REFUND_STATUSES,
    REFUND_TRANSITIONS,
    [...CONTRACT_REFUND_EDGES, ...DOCUMENTED_REFUND_DEPARTURES],
    REFUND_FINALS,
  );

  it("a refund fails directly from requested (the README's documented departure) and from pending", () => {
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'requested', 'failed'), { kind: 'steps', steps: ['failed'] });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'pending', 'failed'), { kind: 'steps', steps: ['failed'] });
  });

  it('refuses successful → failed, failed → successful, and going back to pending or requested', () => {
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'successful', 'failed'), { kind: 'refused' });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'failed', 'successful'), { kind: 'refused' });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'pending', 'requested'), { kind: 'refused' });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'successful', 'pending'), { kind: 'refused' });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'failed', 'pending'), { kind: 'refused' });
  });

  it('a refund reported successful while requested passes through pending', () => {
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'requested', 'successful'), {
      kind: 'steps',
      steps: ['pending', 'successful'],
    });
  });
});
