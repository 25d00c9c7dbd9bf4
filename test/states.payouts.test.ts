// The payout state machine (created (reserved) → pending → successful | failed) checked against its rules as
// documented. Pure: no database.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PAYOUT_TRANSITIONS, planPayout } from '../src/modules/payouts/payouts.states.js';
import { PAYOUT_STATUSES, type PayoutStatus } from '../src/modules/payouts/payouts.schemas.js';
import { isFinal } from '../src/platform/state-machine.js';
import { edges } from './helpers/transition-table.js';

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
