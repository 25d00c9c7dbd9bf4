-- The relay's next due deliveries, oldest first, read off webhook_deliveries_due in index order so that a claim
-- costs the same whatever the backlog. Pending rows are usually a tiny share of the table, so the planner expects a
-- handful and, left alone, picks a bitmap scan that reads and sorts every due delivery instead: 5 ms a claim at a
-- backlog of 3,500, growing with it, against 0.4 ms for the index walk (EXPLAIN ANALYZE, both plans).
-- The SET clauses hold only while the function runs.
CREATE FUNCTION webhook_due_deliveries(excluded_endpoints uuid[], window_size integer)
RETURNS TABLE (id uuid, endpoint_id uuid, next_attempt_at timestamptz)
LANGUAGE sql STABLE
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
  SELECT d.id, d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
  WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
    AND d.endpoint_id <> ALL(excluded_endpoints)
  ORDER BY d.next_attempt_at
  LIMIT window_size
$$;
