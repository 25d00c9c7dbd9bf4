// The deposit state machine (pending → confirmed → credited, or failed) checked against its rules as documented.
// Pure: no database.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEPOSIT_TRANSITIONS } from '../src/modules/deposits/deposits.states.js';
import { DEPOSIT_STATUSES, type DepositStatus } from '../src/modules/deposits/deposits.schemas.js';
import { allows, isFinal } from '../src/platform/state-machine.js';
import { edges } from './helpers/transition-table.js';

describe('deposits: pending → confirmed → credited, or failed', () => {
  it('has exactly the documented moves; a credited deposit never moves again', () => {
    assert.deepEqual(Object.keys(DEPOSIT_TRANSITIONS).sort(), [...DEPOSIT_STATUSES].sort());
    assert.deepEqual(edges(DEPOSIT_TRANSITIONS), ['confirmed → credited', 'pending → confirmed', 'pending → failed']);
    for (const s of ['credited', 'failed'] as DepositStatus[]) assert.ok(isFinal(DEPOSIT_TRANSITIONS, s), s);
    assert.equal(allows(DEPOSIT_TRANSITIONS, 'credited', 'failed'), false);
  });
});
