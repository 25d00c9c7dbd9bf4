-- Hosted checkout (contract §9): sessions an integrator creates and a payer completes on the hosted page.
-- The payer's link carries a random token, never the session id; a collection runs each payment attempt.

CREATE TABLE checkout_sessions (
  id              uuid PRIMARY KEY,
  workspace_id    uuid NOT NULL REFERENCES workspaces (id),
  -- 256 random bits, base64url: the only thing the payer's link carries.
  token           text NOT NULL UNIQUE,
  status          text NOT NULL CHECK (status IN ('open', 'processing', 'complete', 'expired')),
  amount          bigint NOT NULL CHECK (amount > 0),
  currency        text NOT NULL,
  market          text NOT NULL,
  reference       text,
  redirect_url    text NOT NULL,
  -- Payer details the integrator already knows (a phone number to prefill).
  customer        jsonb NOT NULL,
  metadata        jsonb NOT NULL,
  -- The latest payment attempt: its collection and rail; the reason it failed if it did.
  collection_id   uuid,
  rail            text,
  failure_reason  text,
  attempts        integer NOT NULL DEFAULT 0,
  expires_at      timestamptz NOT NULL,
  completed_at    timestamptz,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX checkout_sessions_list ON checkout_sessions (workspace_id, created_at DESC, id DESC);
-- The expiry sweep's view: open sessions by expiry.
CREATE INDEX checkout_sessions_open_expiry ON checkout_sessions (expires_at) WHERE status = 'open';

-- A collection started from a session names it, so its lifecycle can move the session in the same transaction.
ALTER TABLE collections ADD COLUMN checkout_session_id uuid REFERENCES checkout_sessions (id);
