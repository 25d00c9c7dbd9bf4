-- Webhook test events and an endpoint's delivery log (POST /v1/webhooks/endpoints/{id}/test and
-- GET /v1/webhooks/endpoints/{id}/deliveries).
--
-- 'test': one attempt of a `webhook.test` event to the endpoint asked for, whatever event types it subscribes to.
-- Replacing the CHECK reads the table once, holding off writes to it meanwhile; finished deliveries are purged 30
-- days after they finish, so it stays small.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_kind_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_kind_check CHECK (kind IN ('event', 'resend', 'test'));

-- One endpoint's deliveries, newest first, paged by (created_at, id): its delivery log. As in 016: on a large table,
-- build it beforehand with CREATE INDEX CONCURRENTLY under the same name, and IF NOT EXISTS leaves it be.
CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint_log
  ON webhook_deliveries (workspace_id, endpoint_id, created_at DESC, id DESC);
