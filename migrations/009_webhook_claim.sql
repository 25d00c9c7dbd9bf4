-- The relay's claim, whole: the oldest due deliveries of endpoints not at their share, locked with SKIP LOCKED (a row
-- another worker holds is passed over, never sent twice, and no two workers wait on each other); of those at most
-- `endpoint_share` per endpoint, less what this worker already sends there (`busy`: endpoint id → attempts in
-- flight), and at most `slots` in all, oldest first, are leased to `token` for `lease_ms` and returned with their
-- event and endpoint. The rest are unlocked when the claim's statement ends.
--
-- It is a function so that its plans can be pinned. Pending rows are normally a tiny share of webhook_deliveries,
-- and a table filled or emptied since its last ANALYZE has statistics that say so wrongly. With them the planner
-- chose, per claim, a bitmap scan that reads and sorts every due delivery (5 ms at a backlog of 3,500, growing
-- with it, against 0.4 ms for the index walk) and, for the lease update, a sequential scan of the whole table
-- joined row by row to the picked ids (5–12 ms at 5,000 deliveries): EXPLAIN ANALYZE and auto_explain, both
-- plans. Without sequential or bitmap scans, each step is the index walk or a lookup by key. The SET clauses
-- hold only while the function runs; ROWS is what a claim returns, not the default guess of 1,000.
CREATE FUNCTION claim_webhook_deliveries(busy jsonb, endpoint_share integer, slots integer, lease_ms double precision,
                                         token uuid, excluded_endpoints uuid[])
RETURNS TABLE (id uuid, workspace_id uuid, event_id uuid, endpoint_id uuid, kind text, attempts integer,
               max_attempts integer, lease_token uuid, type text, data jsonb, event_created_at timestamptz, url text,
               secret text, previous_secrets jsonb, endpoint_live boolean)
LANGUAGE sql VOLATILE
ROWS 32
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
  WITH due AS (
    SELECT d.id, d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
    WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
      AND d.endpoint_id <> ALL(excluded_endpoints)
    ORDER BY d.next_attempt_at
    LIMIT slots * 2
    FOR UPDATE SKIP LOCKED
  ), ranked AS (
    SELECT due.id, due.endpoint_id, due.next_attempt_at,
           row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at, due.id) AS rn
    FROM due
  ), pick AS (
    SELECT r.id FROM ranked r LEFT JOIN jsonb_each_text(busy) b ON b.key = r.endpoint_id::text
    WHERE r.rn <= endpoint_share - coalesce(b.value::int, 0)
    ORDER BY r.next_attempt_at LIMIT slots
  )
  UPDATE webhook_deliveries d
  SET lease_until = now() + make_interval(secs => lease_ms / 1000), lease_token = token,
      attempts = d.attempts + 1, updated_at = now()
  FROM pick, events e, webhook_endpoints w
  WHERE d.id = pick.id AND e.id = d.event_id AND w.id = d.endpoint_id
  RETURNING d.id, d.workspace_id, d.event_id, d.endpoint_id, d.kind, d.attempts, d.max_attempts, d.lease_token,
            e.type, e.data, e.created_at, w.url, w.secret, w.previous_secrets,
            w.status = 'enabled' AND w.deleted_at IS NULL
$$;
