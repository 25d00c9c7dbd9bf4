// The transition tables of contract §5 (collections) and §7 (refunds), in one place. Pure data and
// functions: the lifecycle service applies them inside transactions.
import type { CollectionStatus } from '../collections/collections.schemas.js';
import type { PayoutStatus } from '../payouts/payouts.schemas.js';

export const COLLECTION_TRANSITIONS: Readonly<Record<CollectionStatus, readonly CollectionStatus[]>> = {
  created: ['pending', 'processing', 'failed', 'expired'],
  pending: ['processing', 'failed', 'expired'],
  processing: ['failed', 'successful'],
  successful: ['refunded', 'reversed'],
  failed: [],
  expired: [],
  refunded: [],
  reversed: [],
};

export const REFUND_STATUSES = ['requested', 'pending', 'successful', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export const REFUND_TRANSITIONS: Readonly<Record<RefundStatus, readonly RefundStatus[]>> = {
  requested: ['pending', 'failed'],
  pending: ['successful', 'failed'],
  successful: [],
  failed: [],
};

export type Plan<S extends string> =
  /** Already in that status: a repeated notice, nothing to do. */
  | { kind: 'duplicate' }
  /** No way from the current status to the target under the table. */
  | { kind: 'refused' }
  /** The statuses to pass through, in order, ending with the target. */
  | { kind: 'steps'; steps: S[] };

/**
 * How to reach `to` from `from`: the shortest path through the table. A provider that reports only the
 * final outcome ("successful" while we know "pending") is walked through the statuses between, each
 * recorded as its own event; a target the table cannot reach (failed → successful, a stale "pending"
 * after "processing") is refused. A path never passes *through* a status in `notThrough`: a status that
 * moves money must be reported, never inferred.
 */
export function plan<S extends string>(table: Readonly<Record<S, readonly S[]>>, from: S, to: S, notThrough: readonly S[] = []): Plan<S> {
  if (from === to) return { kind: 'duplicate' };
  const previous = new Map<S, S>();
  const queue: S[] = [from];
  while (queue.length > 0) {
    const at = queue.shift() as S;
    for (const next of table[at]) {
      if (next === from || previous.has(next)) continue;
      previous.set(next, at);
      if (next === to) {
        const steps: S[] = [to];
        for (let s = at; s !== from; s = previous.get(s) as S) steps.unshift(s);
        return { kind: 'steps', steps };
      }
      if (!notThrough.includes(next)) queue.push(next);
    }
  }
  return { kind: 'refused' };
}

/**
 * Statuses a collection is never walked through: "reversed" while we know "pending" must not invent the
 * successful payment (and its credit) that the provider never reported.
 */
export const COLLECTION_NOT_WALKED: readonly CollectionStatus[] = ['successful'];

export const planCollection = (from: CollectionStatus, to: CollectionStatus): Plan<CollectionStatus> =>
  plan(COLLECTION_TRANSITIONS, from, to, COLLECTION_NOT_WALKED);

export const planRefund = (from: RefundStatus, to: RefundStatus): Plan<RefundStatus> => plan(REFUND_TRANSITIONS, from, to);

export function isFinalCollectionStatus(status: CollectionStatus): boolean {
  return COLLECTION_TRANSITIONS[status].length === 0;
}

/** Payouts: created (reserved) → pending (the provider accepted it) → successful | failed. */
export const PAYOUT_TRANSITIONS: Readonly<Record<PayoutStatus, readonly PayoutStatus[]>> = {
  created: ['pending', 'failed'],
  pending: ['successful', 'failed'],
  successful: [],
  failed: [],
};

export const planPayout = (from: PayoutStatus, to: PayoutStatus): Plan<PayoutStatus> => plan(PAYOUT_TRANSITIONS, from, to);
