-- Webhooks (contract §10): endpoints with their signing secrets, one delivery per event and subscribed
-- endpoint (fanned out from the outbox), and the log of every attempt.

CREATE TABLE webhook_endpoints (
  id               uuid PRIMARY KEY,
  workspace_id     uuid NOT NULL REFERENCES workspaces (id),
  url              text NOT NULL,
  description      text,
  -- Event types this endpoint receives; '*' is every type.
  enabled_events   text[] NOT NULL,
  status           text NOT NULL CHECK (status IN ('enabled', 'disabled')),
  disabled_reason  text CHECK (disabled_reason IN ('disabled_by_user', 'endpoint_gone')),
  -- The current signing secret (whsec_…), and earlier ones still signing until their expiry after a rotation:
  -- [{"secret": "whsec_…", "expires_at": "…"}].
  secret           text NOT NULL,
  previous_secrets jsonb NOT NULL DEFAULT '[]',
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  deleted_at       timestamptz,
  CHECK ((status = 'disabled') = (disabled_reason IS NOT NULL))
);
CREATE INDEX webhook_endpoints_list ON webhook_endpoints (workspace_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;

CREATE TABLE webhook_deliveries (
  id              uuid PRIMARY KEY,
  workspace_id    uuid NOT NULL REFERENCES workspaces (id),
  event_id        uuid NOT NULL REFERENCES events (id),
  endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id),
  -- 'event': fanned out from the outbox, retried on the schedule; 'resend': asked for by the integrator, one attempt.
  kind            text NOT NULL CHECK (kind IN ('event', 'resend')),
  status          text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  max_attempts    integer NOT NULL,
  next_attempt_at timestamptz,
  -- A worker holds a delivery while it sends it; a lease that runs out (the worker died) frees it again.
  lease_until     timestamptz,
  lease_token     uuid,
  last_error      text,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);
-- The outbox fans each event out to an endpoint once, however often the relay runs.
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (event_id, endpoint_id) WHERE kind = 'event';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (workspace_id, event_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_endpoint_pending ON webhook_deliveries (endpoint_id) WHERE status = 'pending';

CREATE TABLE webhook_attempts (
  id              uuid PRIMARY KEY,
  workspace_id    uuid NOT NULL REFERENCES workspaces (id),
  delivery_id     uuid NOT NULL REFERENCES webhook_deliveries (id),
  attempt         integer NOT NULL,
  url             text NOT NULL,
  status_code     integer,
  duration_ms     integer NOT NULL,
  -- The first 4 KB of the response body, as text.
  response_body   text,
  error           text,
  succeeded       boolean NOT NULL,
  created_at      timestamptz NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt);

-- The relay marks outbox rows published; the hourly purge removes published rows after a day.
CREATE INDEX outbox_published ON outbox (published_at) WHERE published_at IS NOT NULL;
