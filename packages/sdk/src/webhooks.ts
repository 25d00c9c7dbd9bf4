// Webhook deliveries: Standard Webhooks signatures (webhook-id, webhook-timestamp, webhook-signature), checked with
// the reference library, and the event typed by its `type`.
import { Webhook } from 'standardwebhooks';
import type { components } from './generated/openapi.js';

type Schemas = components['schemas'];

/** What a `reconciliation.mismatch` event carries: the provider and we disagree about whether money moved. */
export type ReconciliationMismatch = Schemas['ReconciliationMismatch'];

/**
 * Every event the service sends, its `data` typed by its `type`: the document's `Event` union (one named variant per
 * type, e.g. `components['schemas']['CollectionSuccessfulEvent']`), so a `switch (event.type)` narrows `data`.
 */
export type WebhookEvent = Schemas['Event'];

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
