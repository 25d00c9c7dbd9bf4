-- The per-credential rate-limit buckets every node shares (src/platform/rate-limit.ts): each node reports what it took
-- every 250 ms and reads the level back. Unlogged: the levels are worth seconds, so they are not written to the WAL; a
-- crash or a failover to a standby empties the table, and every bucket starts full again.
CREATE UNLOGGED TABLE rate_limit_buckets (
  workspace_id   uuid NOT NULL,
  credential_id  uuid NOT NULL,
  -- Below 0 when nodes together spent more than the bucket held (never below -burst).
  tokens         double precision NOT NULL,
  updated_at     timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, credential_id)
);
