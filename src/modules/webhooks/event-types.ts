// The event catalogue: every type the service emits, and what an endpoint may subscribe to.
import { COLLECTION_STATUSES } from '../collections/collections.schemas.js';
import { DEPOSIT_STATUSES } from '../deposits/deposits.schemas.js';
import { REFUND_STATUSES } from '../refunds/refunds.states.js';
import { PAYOUT_STATUSES } from '../payouts/payouts.schemas.js';

export const EVENT_TYPES: readonly string[] = [
  ...COLLECTION_STATUSES.map((s) => `collection.${s}`),
  // A payment confirmed after its collection expired: sent just before `collection.successful`.
  'collection.late_payment',
  ...REFUND_STATUSES.map((s) => `refund.${s}`),
  'checkout.session.completed',
  'checkout.session.expired',
  'risk_signal.created',
  // A provider's final word that contradicts ours about money (see notices.service.ts): for a person to look at.
  'reconciliation.mismatch',
  ...DEPOSIT_STATUSES.map((s) => `deposit.${s}`),
  ...PAYOUT_STATUSES.map((s) => `payout.${s}`),
  // Operator float crossing its threshold, down and back up (float.service.ts): in the operator workspace only.
  'operator.float_low',
  'operator.float_restored',
  // A rail's availability changed (src/modules/availability): sent to the workspaces that use the rail.
  'rail.availability_changed',
];

/**
 * The type of a test event (POST /v1/webhooks/endpoints/{id}/test): sent to the one endpoint asked for, never fanned
 * out, so it is not a type an endpoint subscribes to.
 */
export const TEST_EVENT_TYPE = 'webhook.test';

/** Subscribes to every type, including ones added later. */
export const ALL_EVENTS = '*';

export function subscribes(enabledEvents: readonly string[], type: string): boolean {
  return enabledEvents.includes(ALL_EVENTS) || enabledEvents.includes(type);
}
