-- Operator connectors (M-Pesa Daraja, MTN MoMo, Airtel Money).

-- The operator's own receipt of each money movement (an M-Pesa receipt number, MTN's financialTransactionId, an
-- Airtel Money id), recorded once the operator confirms it. A refund by reversal names the collection's receipt.
ALTER TABLE collections ADD COLUMN provider_receipt text, ADD COLUMN claimed_reference text;
ALTER TABLE refunds ADD COLUMN provider_receipt text, ADD COLUMN claimed_reference text;
ALTER TABLE payouts ADD COLUMN provider_receipt text, ADD COLUMN claimed_reference text;
-- claimed_reference: the operator's reference an unsigned callback named for an operation whose own answer was lost
-- (a Daraja STK push that timed out). Never believed: only asked about, by the sweeps, until a confirmed answer
-- records provider_reference.

-- One operator payment is one collection: a callback naming a reference another collection already holds cannot
-- make a second collection successful with it.
CREATE UNIQUE INDEX collections_provider_reference ON collections (provider, provider_reference) WHERE provider_reference IS NOT NULL;

-- Status queries whose answer the operator sends later, by callback (Daraja's Transaction Status): the id the
-- operator gave us for the query when we made it, so that only an answer quoting it is believed.
CREATE TABLE connector_queries (
  provider      text NOT NULL,
  query_id      text NOT NULL,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  object_type   text NOT NULL CHECK (object_type IN ('collection', 'refund', 'payout')),
  object_id     uuid NOT NULL,
  -- What the callback that led to the query said, if one did: an answer that disagrees changes nothing.
  claimed_status   text,
  claimed_reason   text,
  claimed_receipt  text,
  created_at    timestamptz NOT NULL,
  PRIMARY KEY (provider, query_id)
);
CREATE INDEX connector_queries_created ON connector_queries (created_at);
