-- Orange Money Web Payment sessions (src/modules/providers/orange-money/): what Orange answered each webpayment call
-- we made for a collection. Orange's transaction status call needs the order_id, the amount and the pay_token
-- together, and its notification names none of our ids: it carries only the notif_token Orange gave in answer, so
-- that token (kept as its SHA-256, never in clear) is what tells a real notification from a forged one.
CREATE TABLE orange_webpayments (
  provider          text NOT NULL,
  workspace_id      uuid NOT NULL REFERENCES workspaces (id),
  collection_id     uuid NOT NULL,
  -- What we sent as order_id (at most 30 characters): our id in base 36, then a part of its own per attempt.
  order_id          text NOT NULL,
  -- The amount as Orange was sent it: whole units of the currency.
  amount            bigint NOT NULL,
  pay_token         text NOT NULL,
  -- The payment page Orange gave for the payer (the collection's payment_instruction).
  payment_url       text NOT NULL,
  notif_token_hash  bytea NOT NULL,
  created_at        timestamptz NOT NULL,
  -- Keyed with the workspace first, so the table distributes by it (docs/operations.md, "The schema on Citus").
  PRIMARY KEY (workspace_id, provider, pay_token)
);
CREATE INDEX orange_webpayments_collection ON orange_webpayments (provider, collection_id, created_at);
-- The purge's range scan (sessions are kept ORANGE_WEBPAYMENT_RETENTION_SECONDS).
CREATE INDEX orange_webpayments_created ON orange_webpayments (created_at);
