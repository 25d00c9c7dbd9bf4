-- Rail availability (src/modules/availability, docs/guides/availability.md): what the service judges of each market,
-- rail and direction from the attempts it saw over a sliding window, and the operator's planned maintenance. Both
-- are reference tables (one row per market, rail and direction; one per market and rail), not a workspace's data.

-- The current judgement. `since` is when `status` last changed; `reason` and the figures are those of the last run.
-- The id names the row in `rail.availability_changed` events (their object_id).
CREATE TABLE rail_availability (
  market       text NOT NULL,
  rail         text NOT NULL,
  direction    text NOT NULL CHECK (direction IN ('collections', 'payouts', 'refunds')),
  id           uuid NOT NULL UNIQUE,
  status       text NOT NULL CHECK (status IN ('operational', 'degraded', 'down')),
  reason       text NOT NULL,
  detail       text NOT NULL,
  since        timestamptz NOT NULL,
  attempts     integer NOT NULL,
  failures     integer NOT NULL,
  median_ms    integer,
  computed_at  timestamptz NOT NULL,
  PRIMARY KEY (market, rail, direction)
);

-- Planned maintenance of a rail (every direction), set by an admin: the rail is down from starts_at to ends_at.
CREATE TABLE rail_maintenance (
  market      text NOT NULL,
  rail        text NOT NULL,
  starts_at   timestamptz NOT NULL,
  ends_at     timestamptz NOT NULL CHECK (ends_at > starts_at),
  note        text NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (market, rail)
);

-- The window's aggregate reads the attempts created in the last minutes across workspaces. Rows are inserted in
-- created_at order (UUIDv7 ids, times taken at insert), so a BRIN index finds them in a few block ranges, and costs an
-- insert almost nothing (no B-tree to keep, on the create path's table).
CREATE INDEX collections_created_brin ON collections USING brin (created_at);
CREATE INDEX payouts_created_brin ON payouts USING brin (created_at);
CREATE INDEX refunds_requested_brin ON refunds USING brin (requested_at);
