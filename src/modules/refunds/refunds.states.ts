// The refund state machine: requested → pending → successful | failed.
import { plan, type Plan, type TransitionTable } from '../../platform/state-machine.js';

export const REFUND_STATUSES = ['requested', 'pending', 'successful', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

/** requested → failed too: a provider that refuses the refund at once. */
export const REFUND_TRANSITIONS: TransitionTable<RefundStatus> = {
  requested: ['pending', 'failed'],
  pending: ['successful', 'failed'],
  successful: [],
  failed: [],
};

export const planRefund = (from: RefundStatus, to: RefundStatus): Plan<RefundStatus> =>
  plan(REFUND_TRANSITIONS, from, to);
