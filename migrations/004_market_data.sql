-- Market data: rate sources (kept by the admin) and the rate records liquidity providers post.
-- Shared reference data of the platform, like the catalogue: not owned by one workspace.
CREATE TABLE rate_sources (
  id          uuid PRIMARY KEY,
  name        text NOT NULL UNIQUE,
  kind        text NOT NULL CHECK (kind IN ('exchange', 'liquidity_provider', 'aggregator', 'central_bank')),
  url         text,
  status      text NOT NULL CHECK (status IN ('active', 'inactive')),
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE INDEX rate_sources_list ON rate_sources (status, created_at DESC, id DESC);

CREATE TABLE rate_records (
  id           uuid PRIMARY KEY,
  source_id    uuid NOT NULL REFERENCES rate_sources (id),
  base         text NOT NULL,
  quote        text NOT NULL,
  -- Units of `quote` for one unit of `base`, exact.
  rate         numeric(32, 12) NOT NULL CHECK (rate > 0),
  observed_at  timestamptz NOT NULL,
  created_at   timestamptz NOT NULL,
  -- The credential that posted it.
  posted_by    uuid NOT NULL REFERENCES credentials (id),
  CHECK (base <> quote)
);
CREATE INDEX rate_records_list ON rate_records (created_at DESC, id DESC);
CREATE INDEX rate_records_pair ON rate_records (base, quote, created_at DESC, id DESC);
CREATE INDEX rate_records_current ON rate_records (base, quote, observed_at DESC);
