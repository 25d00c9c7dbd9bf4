// The state machines of payouts, deposits and checkout sessions, each checked against its rules as documented (the
// collection and refund tables, against the contract, are in transitions.test.ts). Pure: no database.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkSessionMove, SESSION_TRANSITIONS } from '../src/modules/checkout/checkout.states.js';
import { SESSION_STATUSES } from '../src/modules/checkout/checkout.schemas.js';
import { DEPOSIT_TRANSITIONS } from '../src/modules/deposits/deposits.states.js';
import { DEPOSIT_STATUSES, type DepositStatus } from '../src/modules/deposits/deposits.schemas.js';
import { PAYOUT_TRANSITIONS, planPayout } from '../src/modules/payouts/payouts.states.js';
import { PAYOUT_STATUSES, type PayoutStatus } from '../src/modules/payouts/payouts.schemas.js';
import { allows, isFinal, type TransitionTable } from '../src/platform/state-machine.js';

/** Every edge of a table, as "from → to". */
function edges<S extends string>(table: TransitionTable<S>): string[] {
  return (Object.keys(table) as S[]).flatMap((from) => table[from].map((to) => `${from} → ${to}`)).sort();
}

describe('payouts: created (reserved) → pending → successful | failed', () => {
  it('has exactly the documented moves, over every status', () => {
    assert.deepEqual(Object.keys(PAYOUT_TRANSITIONS).sort(), [...PAYOUT_STATUSES].sort());
    assert.deepEqual(edges(PAYOUT_TRANSITIONS), [
      'created → failed',
      'created → pending',
      'pending → failed',
      'pending → successful',
    ]);
    for (const s of ['successful', 'failed'] as PayoutStatus[]) assert.ok(isFinal(PAYOUT_TRANSITIONS, s), s);
  });

  it('a success reported while created walks through pending; nothing leaves a final status', () => {
    assert.deepEqual(planPayout('created', 'successful'), { kind: 'steps', steps: ['pending', 'successful'] });
    assert.deepEqual(planPayout('successful', 'failed'), { kind: 'refused' });
    assert.deepEqual(planPayout('failed', 'pending'), { kind: 'refused' });
    assert.deepEqual(planPayout('pending', 'pending'), { kind: 'duplicate' });
  });
});

describe('deposits: pending → confirmed → credited, or failed', () => {
  it('has exactly the documented moves; a credited deposit never moves again', () => {
    assert.deepEqual(Object.keys(DEPOSIT_TRANSITIONS).sort(), [...DEPOSIT_STATUSES].sort());
    assert.deepEqual(edges(DEPOSIT_TRANSITIONS), ['confirmed → credited', 'pending → confirmed', 'pending → failed']);
    for (const s of ['credited', 'failed'] as DepositStatus[]) assert.ok(isFinal(DEPOSIT_TRANSITIONS, s), s);
    assert.equal(allows(DEPOSIT_TRANSITIONS, 'credited', 'failed'), false);
  });
});

describe('checkout sessions (contract §9)', () => {
  it('open → processing → complete; back to open after a failed attempt; expired from open or processing; complete from open or expired by an accepted late payment', () => {
    assert.deepEqual(Object.keys(SESSION_TRANSITIONS).sort(), [...SESSION_STATUSES].sort());
    assert.deepEqual(edges(SESSION_TRANSITIONS), [
      'expired → complete',
      'open → complete',
      'open → expired',
      'open → processing',
      'processing → complete',
      'processing → expired',
      'processing → open',
    ]);
    assert.ok(isFinal(SESSION_TRANSITIONS, 'complete'));
  });

  it('a move the table does not allow is refused, never saved', () => {
    assert.doesNotThrow(() => checkSessionMove('open', 'processing'));
    assert.throws(() => checkSessionMove('complete', 'open'), /cannot move from complete to open/);
    assert.throws(() => checkSessionMove('expired', 'open'), /cannot move from expired to open/);
    assert.throws(() => checkSessionMove('complete', 'expired'), /cannot move from complete to expired/);
  });
});
