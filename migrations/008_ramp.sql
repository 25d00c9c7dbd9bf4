-- The on/off-ramp: deposit addresses and the deposits arriving on them, autoconvert credits, offramp routes
-- and payouts. Money moves through the ledger; a posting may now be a reservation, a release, a settlement
-- or one half of a conversion (each posting stays in one currency and sums to zero).

-- Addresses per asset and network. The liquidity provider (or the admin) stocks a pool; an integrator's
-- request assigns one from it (workspace_id is null while the address is in the pool).
CREATE TABLE deposit_addresses (
  id                    uuid PRIMARY KEY,
  workspace_id          uuid REFERENCES workspaces (id),
  asset                 text NOT NULL,
  network               text NOT NULL,
  -- EVM addresses are stored in lowercase: one account, one spelling.
  address               text NOT NULL,
  status                text NOT NULL CHECK (status IN ('available', 'assigned')),
  -- The fiat currency confirmed deposits are converted to; null keeps them in the asset.
  autoconvert_currency  text,
  label                 text,
  metadata              jsonb NOT NULL DEFAULT '{}',
  pooled_at             timestamptz NOT NULL,
  -- When it became the workspace's (the pool time while it is available): lists are ordered by it.
  created_at            timestamptz NOT NULL,
  UNIQUE (network, address),
  CHECK ((status = 'assigned') = (workspace_id IS NOT NULL))
);
CREATE INDEX deposit_addresses_list ON deposit_addresses (workspace_id, created_at DESC, id DESC) WHERE workspace_id IS NOT NULL;
CREATE INDEX deposit_addresses_pool ON deposit_addresses (asset, network, pooled_at) WHERE status = 'available';

CREATE TABLE deposits (
  id                  uuid PRIMARY KEY,
  workspace_id        uuid NOT NULL REFERENCES workspaces (id),
  deposit_address_id  uuid NOT NULL REFERENCES deposit_addresses (id),
  asset               text NOT NULL,
  network             text NOT NULL,
  amount              bigint NOT NULL CHECK (amount > 0),
  -- Normalised per network (EVM and TRON hashes: lowercase hex without 0x), so one transfer has one spelling.
  tx_hash             text NOT NULL,
  -- Which transfer of the transaction (its log or instruction index): one transaction may pay an address twice.
  log_index           integer NOT NULL DEFAULT 0,
  status              text NOT NULL CHECK (status IN ('pending', 'confirmed', 'credited', 'failed')),
  confirmations       integer NOT NULL DEFAULT 0,
  failure_reason      text,
  -- Set once credited: what the workspace's balance received (the asset itself, or the converted currency)
  -- and, for a conversion, its autoconvert credit.
  credited_currency   text,
  credited_amount     bigint,
  credit_id           uuid,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  confirmed_at        timestamptz,
  credited_at         timestamptz,
  -- When the credit worker last tried a confirmed deposit (it tries the least recently tried first).
  credit_checked_at   timestamptz,
  -- One transfer to one address is one deposit, however often it is reported.
  UNIQUE (network, tx_hash, log_index, deposit_address_id),
  CHECK ((status = 'credited') = (credited_at IS NOT NULL))
);
CREATE INDEX deposits_list ON deposits (workspace_id, created_at DESC, id DESC);
CREATE INDEX deposits_list_status ON deposits (workspace_id, status, created_at DESC, id DESC);
-- Confirmed deposits still waiting for their credit (a conversion waits for a fresh rate).
CREATE INDEX deposits_uncredited ON deposits (credit_checked_at NULLS FIRST) WHERE status = 'confirmed';

CREATE TABLE autoconvert_credits (
  id                uuid PRIMARY KEY,
  workspace_id      uuid NOT NULL REFERENCES workspaces (id),
  deposit_id        uuid NOT NULL UNIQUE REFERENCES deposits (id),
  source_asset      text NOT NULL,
  source_amount     bigint NOT NULL CHECK (source_amount > 0),
  target_currency   text NOT NULL,
  gross_amount      bigint NOT NULL CHECK (gross_amount >= 0),
  fee               bigint NOT NULL CHECK (fee >= 0),
  amount            bigint NOT NULL CHECK (amount >= 0),
  fee_bps           integer NOT NULL,
  rate              numeric(32, 12) NOT NULL,
  rate_id           uuid NOT NULL REFERENCES rate_records (id),
  rate_source_id    uuid NOT NULL REFERENCES rate_sources (id),
  rate_source_name  text NOT NULL,
  rate_observed_at  timestamptz NOT NULL,
  created_at        timestamptz NOT NULL,
  CHECK (gross_amount = amount + fee)
);
CREATE INDEX autoconvert_credits_list ON autoconvert_credits (workspace_id, created_at DESC, id DESC);

-- Offramp routes: shared reference data kept by liquidity providers and the admin.
CREATE TABLE offramp_routes (
  id          uuid PRIMARY KEY,
  -- What is paid from: an asset (USDT) or the currency itself (a fiat balance).
  source      text NOT NULL,
  market      text NOT NULL,
  rail        text NOT NULL,
  currency    text NOT NULL,
  -- Limits on the source amount, in the source's minor units.
  min_amount  bigint NOT NULL CHECK (min_amount > 0),
  max_amount  bigint NOT NULL,
  -- The fee, in the payout currency's minor units: fixed plus basis points of the converted amount.
  fee_fixed   bigint NOT NULL CHECK (fee_fixed >= 0),
  fee_bps     integer NOT NULL CHECK (fee_bps BETWEEN 0 AND 10000),
  status      text NOT NULL CHECK (status IN ('active', 'inactive')),
  created_by  uuid NOT NULL REFERENCES credentials (id),
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  CHECK (min_amount <= max_amount)
);
CREATE INDEX offramp_routes_list ON offramp_routes (status, created_at DESC, id DESC);

CREATE TABLE payouts (
  id                  uuid PRIMARY KEY,
  workspace_id        uuid NOT NULL REFERENCES workspaces (id),
  route_id            uuid NOT NULL REFERENCES offramp_routes (id),
  beneficiary_id      uuid NOT NULL REFERENCES beneficiaries (id),
  market              text NOT NULL,
  rail                text NOT NULL,
  source_currency     text NOT NULL,
  source_amount       bigint NOT NULL CHECK (source_amount > 0),
  currency            text NOT NULL,
  gross_amount        bigint NOT NULL CHECK (gross_amount > 0),
  fee                 bigint NOT NULL CHECK (fee >= 0),
  amount              bigint NOT NULL CHECK (amount > 0),
  -- Null when nothing is converted (the source is the payout currency).
  rate                numeric(32, 12),
  rate_id             uuid REFERENCES rate_records (id),
  rate_source_name    text,
  reference           text NOT NULL,
  metadata            jsonb NOT NULL,
  status              text NOT NULL CHECK (status IN ('created', 'pending', 'successful', 'failed')),
  failure_reason      text,
  provider            text NOT NULL,
  provider_reference  text,
  submitted_at        timestamptz,
  submit_attempts     integer NOT NULL DEFAULT 0,
  submit_after        timestamptz NOT NULL,
  checked_at          timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  completed_at        timestamptz,
  CHECK (gross_amount = amount + fee),
  CHECK ((status IN ('successful', 'failed')) = (completed_at IS NOT NULL))
);
CREATE INDEX payouts_list ON payouts (workspace_id, created_at DESC, id DESC);
CREATE INDEX payouts_list_status ON payouts (workspace_id, status, created_at DESC, id DESC);
CREATE INDEX payouts_unsent ON payouts (submit_after) WHERE status = 'created' AND submitted_at IS NULL;
CREATE INDEX payouts_in_flight ON payouts (greatest(updated_at, checked_at)) WHERE status IN ('created', 'pending');
-- The large-payout rule reads a beneficiary's recent payouts.
CREATE INDEX payouts_beneficiary ON payouts (workspace_id, beneficiary_id, created_at);

ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_kind_check;
ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_kind_check CHECK (kind IN (
  'collection_successful', 'refund_successful', 'collection_reversed',
  'deposit_credited', 'autoconvert_source', 'autoconvert_target',
  'payout_reserved', 'payout_released', 'payout_settled', 'payout_converted'));

ALTER TABLE sandbox_operations DROP CONSTRAINT sandbox_operations_object_type_check;
ALTER TABLE sandbox_operations ADD CONSTRAINT sandbox_operations_object_type_check CHECK (object_type IN ('collection', 'refund', 'payout'));
