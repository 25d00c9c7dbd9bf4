-- The sandbox test clock (src/modules/sandbox/clock.service.ts, docs/guides/sandbox-clock.md): how far a sandbox
-- workspace has moved its own clock forward, and when it last did. Moving it pulls the workspace's pending deadlines
-- earlier in the same transaction, so no sweep, claim or create reads these columns: a workspace that never moves its
-- clock (every production one) pays nothing for them. Adding a NOT NULL column with a constant default rewrites no
-- rows (PostgreSQL 11 and later).
ALTER TABLE workspaces
  ADD COLUMN clock_offset_seconds bigint NOT NULL DEFAULT 0 CHECK (clock_offset_seconds >= 0),
  ADD COLUMN clock_advanced_at    timestamptz;
