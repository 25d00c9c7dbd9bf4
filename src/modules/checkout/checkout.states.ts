// The checkout session state machine: open → processing (an attempt runs) → complete; back to open
// when the attempt fails; expired at expires_at (a session processing at that moment ends with its attempt).
import { allows, type TransitionTable } from '../../platform/state-machine.js';
import type { SessionStatus } from './checkout.schemas.js';

export const SESSION_TRANSITIONS: TransitionTable<SessionStatus> = {
  // open → complete, expired → complete: a late payment of the latest attempt, accepted by the workspace's policy.
  open: ['processing', 'expired', 'complete'],
  processing: ['complete', 'open', 'expired'],
  complete: [],
  expired: ['complete'],
};

/** Refuses a move the table does not allow: a bug, never a payer's doing. */
export function checkSessionMove(from: SessionStatus, to: SessionStatus): void {
  if (!allows(SESSION_TRANSITIONS, from, to)) throw new Error(`a checkout session cannot move from ${from} to ${to}`);
}
