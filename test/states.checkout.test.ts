// The checkout session state machine (open → processing → complete; back to open; expired) checked against its rules as
// documented. Pure: no database.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkSessionMove, SESSION_TRANSITIONS } from '../src/modules/checkout/checkout.states.js';
import { SESSION_STATUSES } from '../src/modules/checkout/checkout.schemas.js';
import { isFinal } from '../src/platform/state-machine.js';
import { edges } from './helpers/transition-table.js';

describe('checkout sessions', () => {
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
