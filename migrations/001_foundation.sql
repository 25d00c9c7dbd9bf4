-- Foundation: service secrets, workspaces, credentials, idempotency, collections, events and the outbox.
-- Every tenant table carries workspace_id, and its primary access paths start with it.

CREATE TABLE service_secrets (
  name        text PRIMARY KEY,
  value       jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workspaces (
  id            uuid PRIMARY KEY,
  name          text NOT NULL,
  display_name  text NOT NULL,
  environment   text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  kind          text NOT NULL CHECK (kind IN ('integrator', 'operator')),
  created_at    timestamptz NOT NULL
);
CREATE INDEX workspaces_created ON workspaces (created_at DESC, id DESC);

CREATE TABLE credentials (
  id            uuid PRIMARY KEY,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  audience      text NOT NULL CHECK (audience IN ('integrator', 'admin', 'liquidity_provider')),
  environment   text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  name          text NOT NULL,
  status        text NOT NULL CHECK (status IN ('active', 'revoked')),
  -- jti of the one token that is valid now; rotation replaces it, so older tokens fail at once.
  token_id      uuid NOT NULL,
  created_at    timestamptz NOT NULL,
  rotated_at    timestamptz,
  revoked_at    timestamptz
);
CREATE INDEX credentials_workspace ON credentials (workspace_id, created_at DESC, id DESC);

CREATE TABLE idempotency_keys (
  workspace_id      uuid NOT NULL REFERENCES workspaces (id),
  key               text NOT NULL,
  fingerprint       text NOT NULL,
  response_status   integer NOT NULL,
  response_headers  jsonb NOT NULL,
  response_body     text NOT NULL,
  created_at        timestamptz NOT NULL,
  expires_at        timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE TABLE collections (
  id                   uuid PRIMARY KEY,
  workspace_id         uuid NOT NULL REFERENCES workspaces (id),
  market               text NOT NULL,
  rail                 text NOT NULL,
  amount               bigint NOT NULL CHECK (amount > 0),
  currency             text NOT NULL,
  reference            text NOT NULL,
  status               text NOT NULL CHECK (status IN ('created', 'pending', 'processing', 'successful', 'failed', 'expired', 'refunded', 'reversed')),
  customer             jsonb NOT NULL,
  metadata             jsonb NOT NULL,
  payment_instruction  jsonb,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  expires_at           timestamptz NOT NULL
);
CREATE INDEX collections_list ON collections (workspace_id, created_at DESC, id DESC);
CREATE INDEX collections_list_status ON collections (workspace_id, status, created_at DESC, id DESC);

CREATE TABLE events (
  id            uuid PRIMARY KEY,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  type          text NOT NULL,
  object_type   text NOT NULL,
  object_id     uuid NOT NULL,
  data          jsonb NOT NULL,
  created_at    timestamptz NOT NULL
);
CREATE INDEX events_object ON events (workspace_id, object_id, created_at, id);
CREATE INDEX events_list ON events (workspace_id, created_at DESC, id DESC);

-- Written in the same transaction as the change it announces; the webhook relay drains it.
CREATE TABLE outbox (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  event_id      uuid NOT NULL REFERENCES events (id),
  created_at    timestamptz NOT NULL,
  published_at  timestamptz
);
CREATE INDEX outbox_pending ON outbox (id) WHERE published_at IS NULL;
