-- The audit log (src/modules/audit, docs/guides/audit-log.md): who did what to which object, when, from which address,
-- with the request id. One row per audited request, written by the hook of src/platform/audit.ts right after the
-- route answers. Scoped by workspace like every table: workspace_id first in the primary key and in every list index.
--
-- The actor is a pair: actor_type says what kind ('api_key', 'dashboard', 'admin', 'anonymous' for a failed sign-in
-- whose token names no credential), actor_id which one (today a credential id; a dashboard member later, with no
-- change here). A failed sign-in whose token names no workspace is kept under the nil workspace
-- 00000000-0000-0000-0000-000000000000 (no foreign key: the log also outlives what it names).
CREATE TABLE audit_events (
  workspace_id    uuid NOT NULL,
  id              uuid NOT NULL,
  occurred_at     timestamptz NOT NULL,
  actor_type      text NOT NULL CHECK (actor_type ~ '^[a-z][a-z_]{0,31}$'),
  actor_id        uuid,
  -- A stable dotted name: refund.create, credential.rotate, dashboard.sign_in_failed.
  action          text NOT NULL CHECK (action ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$' AND length(action) <= 64),
  object_type     text CHECK (length(object_type) <= 64),
  object_id       text CHECK (length(object_id) <= 200),
  -- The HTTP status the request was answered with.
  status          smallint NOT NULL CHECK (status BETWEEN 100 AND 599),
  client_address  inet,
  request_id      text NOT NULL CHECK (length(request_id) <= 128),
  PRIMARY KEY (workspace_id, id)
);
-- The list (newest first) and its filters, each with the list's order after its equality columns.
CREATE INDEX audit_events_list ON audit_events (workspace_id, occurred_at DESC, id DESC);
CREATE INDEX audit_events_list_action ON audit_events (workspace_id, action, occurred_at DESC, id DESC);
CREATE INDEX audit_events_list_actor ON audit_events (workspace_id, actor_id, occurred_at DESC, id DESC);
CREATE INDEX audit_events_list_object ON audit_events (workspace_id, object_id, occurred_at DESC, id DESC);
-- The retention purge (src/workers/retention.ts) by age across workspaces, like the purge indexes of migration 016.
CREATE INDEX audit_events_age ON audit_events (occurred_at);

-- Append-only, enforced here: no UPDATE ever, no TRUNCATE, and DELETE only of rows older than 30 days (the least
-- AUDIT_RETENTION_DAYS accepts), which is what the retention purge deletes. The owner of the table can still drop
-- these triggers: they guard against the service's own mistakes and a stray statement, not against the DBA.
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF OLD.occurred_at < now() - interval '30 days' THEN
      RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: only rows older than 30 days may be deleted (the retention purge)'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RAISE EXCEPTION 'audit_events is append-only: % is refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_delete_only_old BEFORE DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
