-- Retention (src/workers/retention.ts): the purges delete in small batches, each batch's SELECT an index range scan
-- in the order rows age, so no batch reads or locks more than it deletes.
--
-- Finished webhook deliveries by when they finished (their last change). Pending ones are never purged: the relay
-- still sends them.
CREATE INDEX IF NOT EXISTS webhook_deliveries_finished ON webhook_deliveries (updated_at)
  WHERE status IN ('succeeded', 'failed');
-- Provider notices by when they arrived.
CREATE INDEX IF NOT EXISTS provider_notices_received ON provider_notices (received_at);
-- Migrations run in a transaction, so these are built without CONCURRENTLY, holding off writes to the table while
-- they build (0.8 s for 1.1 million provider notices, PostgreSQL 15 on 2 cores). On a much larger table, build them
-- beforehand with CREATE INDEX CONCURRENTLY under the same names: IF NOT EXISTS then leaves them be.
