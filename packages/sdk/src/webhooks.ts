// Webhook deliveries: Standard Webhooks signatures (webhook-id, webhook-timestamp, webhook-signature), checked with
// the reference library, and the event typed by its `type`.
import { Webhook } from 'standardwebhooks';
import type { components } from './generated/openapi.js';

type Schemas = components['schemas'];

/** What a `reconciliation.mismatch` event carries: the provider and we disagree about whether money moved. */
export interface ReconciliationMismatch {
  object_type: 'collection' | 'refund' | 'payout';
  object_id: string;
  our_status: string;
  provider_status: string;
  provider: string;
  provider_reference: string | null;
  notice_id: string;
}

interface Delivered<Type extends string, Data> {
  id: string;
  type: Type;
  timestamp: string;
  data: Data;
}

/** Every event the service sends, its `data` typed by its `type`. */
export type WebhookEvent =
  | Delivered<`collection.${Schemas['Collection']['status'] | 'late_payment'}`, Schemas['Collection']>
  | Delivered<`refund.${Schemas['Refund']['status']}`, Schemas['Refund']>
  | Delivered<`payout.${Schemas['Payout']['status']}`, Schemas['Payout']>
  | Delivered<`deposit.${Schemas['Deposit']['status']}`, Schemas['Deposit']>
  | Delivered<'checkout.session.completed' | 'checkout.session.expired', Schemas['CheckoutSession']>
  | Delivered<'risk_signal.created', Schemas['RiskSignal']>
  | Delivered<'reconciliation.mismatch', ReconciliationMismatch>
  // Sent by `webhookEndpoints.test` to that endpoint only.
  | Delivered<'webhook.test', Schemas['WebhookEndpoint']>;

/** The event of a delivery whose signature `secret` (whsec_…) verifies; throws on a forged, altered or stale one. */
export function verifyWebhook(
  body: string,
  headers: Record<string, string | string[] | undefined> | Headers,
  secret: string,
): WebhookEvent {
  const plain: Record<string, string> = {};
  if (headers instanceof Headers) headers.forEach((value, name) => (plain[name] = value));
  else {
    for (const [name, value] of Object.entries(headers)) {
      if (value !== undefined) plain[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
  }
  return new Webhook(secret).verify(body, plain) as WebhookEvent;
}
