-- Lifecycle: rail providers, refunds, provider notices, the sandbox simulator's own state, and the ledger.

-- Which provider runs a collection, its reference there, and why it failed (when it did).
ALTER TABLE collections
  ADD COLUMN provider            text,
  ADD COLUMN provider_reference  text,
  ADD COLUMN submitted_at        timestamptz,
  -- Initiation attempts by the sweep, and when the next may be made (persisted backoff).
  ADD COLUMN submit_attempts     integer NOT NULL DEFAULT 0,
  ADD COLUMN submit_after        timestamptz,
  ADD COLUMN failure_reason      text,
  -- When the reconciler last asked the provider about it (it asks the longest-unasked first).
  ADD COLUMN checked_at          timestamptz;
-- Collections made before providers existed ran nowhere; they belong to the simulator.
UPDATE collections SET provider = 'sandbox', submit_after = created_at WHERE provider IS NULL;
ALTER TABLE collections ALTER COLUMN provider SET NOT NULL, ALTER COLUMN submit_after SET NOT NULL;
-- The expiry sweeper reads open collections; the initiation sweep unsent ones; the reconciler those in flight.
CREATE INDEX collections_open ON collections (expires_at) WHERE status IN ('created', 'pending');
CREATE INDEX collections_unsent ON collections (submit_after) WHERE status = 'created' AND submitted_at IS NULL;
CREATE INDEX collections_in_flight ON collections (greatest(updated_at, checked_at)) WHERE status IN ('pending', 'processing');

CREATE TABLE refunds (
  id                  uuid PRIMARY KEY,
  workspace_id        uuid NOT NULL REFERENCES workspaces (id),
  collection_id       uuid NOT NULL REFERENCES collections (id),
  amount              bigint NOT NULL CHECK (amount > 0),
  currency            text NOT NULL,
  status              text NOT NULL CHECK (status IN ('requested', 'pending', 'successful', 'failed')),
  failure_reason      text,
  provider            text NOT NULL,
  provider_reference  text,
  submitted_at        timestamptz,
  submit_attempts     integer NOT NULL DEFAULT 0,
  submit_after        timestamptz NOT NULL,
  requested_at        timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  resolved_at         timestamptz,
  checked_at          timestamptz,
  CHECK ((status IN ('successful', 'failed')) = (resolved_at IS NOT NULL))
);
CREATE INDEX refunds_collection ON refunds (workspace_id, collection_id, requested_at DESC, id DESC);
-- At most one refund in progress, and at most one successful refund, per collection.
CREATE UNIQUE INDEX refunds_one_in_progress ON refunds (collection_id) WHERE status IN ('requested', 'pending');
CREATE UNIQUE INDEX refunds_one_successful ON refunds (collection_id) WHERE status = 'successful';
CREATE INDEX refunds_unsent ON refunds (submit_after) WHERE status = 'requested' AND submitted_at IS NULL;
CREATE INDEX refunds_in_flight ON refunds (greatest(updated_at, checked_at)) WHERE status IN ('requested', 'pending');

-- Every provider notice applied, by the provider's own notice id: a notice received twice changes nothing.
CREATE TABLE provider_notices (
  provider      text NOT NULL,
  notice_id     text NOT NULL,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  object_type   text NOT NULL,
  object_id     uuid NOT NULL,
  status        text NOT NULL,
  outcome       text NOT NULL,
  received_at   timestamptz NOT NULL,
  PRIMARY KEY (provider, notice_id)
);

-- The sandbox simulator's side of the world: what it will report next about each operation, and when.
CREATE TABLE sandbox_operations (
  object_id     uuid PRIMARY KEY,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  object_type   text NOT NULL CHECK (object_type IN ('collection', 'refund')),
  reference     text NOT NULL UNIQUE,
  -- Statuses still to report, in order, each 'status' or 'status:reason'; next_step indexes into it.
  script        text[] NOT NULL,
  next_step     integer NOT NULL DEFAULT 0,
  -- When the next step is due (or, while a worker holds it, when its lease runs out); null once done.
  next_at       timestamptz,
  created_at    timestamptz NOT NULL
);
CREATE INDEX sandbox_operations_due ON sandbox_operations (next_at) WHERE next_at IS NOT NULL;

-- Double-entry ledger. A posting is one money movement; its lines sum to zero (debits positive).
CREATE TABLE ledger_postings (
  id            uuid PRIMARY KEY,
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  kind          text NOT NULL CHECK (kind IN ('collection_successful', 'refund_successful', 'collection_reversed')),
  object_type   text NOT NULL,
  object_id     uuid NOT NULL,
  currency      text NOT NULL,
  created_at    timestamptz NOT NULL,
  -- One posting of a kind per object: no collection is credited twice.
  UNIQUE (workspace_id, kind, object_id)
);

CREATE TABLE ledger_lines (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  posting_id    uuid NOT NULL REFERENCES ledger_postings (id),
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  account       text NOT NULL,
  currency      text NOT NULL,
  amount        bigint NOT NULL CHECK (amount <> 0)
);
CREATE INDEX ledger_lines_posting ON ledger_lines (posting_id);
CREATE INDEX ledger_lines_account ON ledger_lines (workspace_id, account, currency);

-- Running balance per account, updated in the posting's transaction.
CREATE TABLE ledger_balances (
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  account       text NOT NULL,
  currency      text NOT NULL,
  balance       bigint NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, account, currency)
);
