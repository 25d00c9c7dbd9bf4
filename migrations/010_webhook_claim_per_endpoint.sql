-- The relay's claim, reworked after measuring it (PostgreSQL 15, one endpoint with 3,600 deliveries due):
--
-- 1. PL/pgSQL instead of SQL. A LANGUAGE sql function with SET clauses is planned again on every call: 0.7 ms of the
--    1.3 ms a claim of one delivery took. PL/pgSQL keeps each statement's plan for the session, and
--    plan_cache_mode = force_generic_plan keeps it from planning again for each call's parameters (the plan is the
--    index walk whatever they are, as 009 pins it): 0.5 ms.
-- 2. A claim for one endpoint (`only_endpoint`): when a slot of an endpoint frees, the relay refills that endpoint
--    from its own due deliveries, oldest first, by the new (endpoint_id, next_attempt_at) index. Before, it claimed
--    from the oldest due deliveries of all endpoints, leaving out those at their share, and that walk reads every
--    due delivery of the endpoints it leaves out (3-4 ms at 3,600 due, growing with the backlog), nearly once per
--    delivery to a busy endpoint. The walk across endpoints (`only_endpoint` null) is unchanged, for the relay's
--    poll and for slots freed across the process.
--
-- `only_endpoint` defaults to null, so a process still running the code before this migration (a rolling deploy)
-- calls the same function with its six arguments and claims across endpoints as it did.
--
-- Either way the rows are locked with SKIP LOCKED and leased in the same statement, so two workers never send the
-- same attempt at once. The new index also serves what the one it replaces served (an endpoint's pending deliveries).
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
DROP INDEX webhook_deliveries_endpoint_pending;

DROP FUNCTION claim_webhook_deliveries(jsonb, integer, integer, double precision, uuid, uuid[]);
CREATE FUNCTION claim_webhook_deliveries(busy jsonb, endpoint_share integer, slots integer, lease_ms double precision,
                                         token uuid, excluded_endpoints uuid[], only_endpoint uuid DEFAULT NULL)
RETURNS TABLE (id uuid, workspace_id uuid, event_id uuid, endpoint_id uuid, kind text, attempts integer,
               max_attempts integer, lease_token uuid, type text, data jsonb, event_created_at timestamptz, url text,
               secret text, previous_secrets jsonb, endpoint_live boolean)
LANGUAGE plpgsql VOLATILE
ROWS 32
SET enable_seqscan = off
SET enable_bitmapscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  IF only_endpoint IS NOT NULL THEN
    -- Up to `slots` of this endpoint's due deliveries (the caller passes the room its share leaves).
    RETURN QUERY
      WITH pick AS (
        SELECT d.id FROM webhook_deliveries d
        WHERE d.endpoint_id = only_endpoint AND d.status = 'pending' AND d.next_attempt_at <= now()
          AND (d.lease_until IS NULL OR d.lease_until < now())
        ORDER BY d.next_attempt_at
        LIMIT slots
        FOR UPDATE SKIP LOCKED
      )
      UPDATE webhook_deliveries d
      SET lease_until = now() + make_interval(secs => lease_ms / 1000), lease_token = token,
          attempts = d.attempts + 1, updated_at = now()
      FROM pick, events e, webhook_endpoints w
      WHERE d.id = pick.id AND e.id = d.event_id AND w.id = d.endpoint_id
      RETURNING d.id, d.workspace_id, d.event_id, d.endpoint_id, d.kind, d.attempts, d.max_attempts, d.lease_token,
                e.type, e.data, e.created_at, w.url, w.secret, w.previous_secrets,
                w.status = 'enabled' AND w.deleted_at IS NULL;
  ELSE
    -- As migration 009.
    RETURN QUERY
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
                w.status = 'enabled' AND w.deleted_at IS NULL;
  END IF;
END
$$;
