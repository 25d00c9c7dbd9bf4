// The collection state machine: its transition table, and how a reported status is reached.
import { isFinal, plan, type Plan, type TransitionTable } from '../../platform/state-machine.js';
import type { CollectionStatus } from './collections.schemas.js';

export const COLLECTION_TRANSITIONS: TransitionTable<CollectionStatus> = {
  created: ['pending', 'processing', 'failed', 'expired'],
  pending: ['processing', 'failed', 'expired'],
  processing: ['failed', 'successful'],
  successful: ['refunded', 'reversed'],
  failed: [],
  // A late payment: the provider confirms a payment authorised after we expired the collection.
  expired: ['successful'],
  refunded: [],
  reversed: [],
};

/**
 * Statuses a collection is never walked through: "reversed" while we know "pending" must not invent the
 * successful payment (and its credit) that the provider never reported.
 */
export const COLLECTION_NOT_WALKED: readonly CollectionStatus[] = ['successful'];

/** What became of a late payment (the workspace's `late_payment` policy): sent back by a system refund, or credited. */
export type LatePaymentAction = 'refund' | 'accept';

export const planCollection = (from: CollectionStatus, to: CollectionStatus): Plan<CollectionStatus> =>
  plan(COLLECTION_TRANSITIONS, from, to, COLLECTION_NOT_WALKED);

export function isFinalCollectionStatus(status: CollectionStatus): boolean {
  return isFinal(COLLECTION_TRANSITIONS, status);
}
