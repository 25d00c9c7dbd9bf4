// The payout state machine: created (reserved) → pending (the provider accepted it) → successful | failed.
import { plan, type Plan, type TransitionTable } from '../../platform/state-machine.js';
import type { PayoutStatus } from './payouts.schemas.js';

export const PAYOUT_TRANSITIONS: TransitionTable<PayoutStatus> = {
  created: ['pending', 'failed'],
  pending: ['successful', 'failed'],
  successful: [],
  failed: [],
};

export const planPayout = (from: PayoutStatus, to: PayoutStatus): Plan<PayoutStatus> =>
  plan(PAYOUT_TRANSITIONS, from, to);
