-- The relay's claims are plain statements in src/modules/webhooks/webhooks.repository.ts now (prepared by the pool,
-- so their plans are kept per connection as the function's were); the PL/pgSQL function goes.
DROP FUNCTION claim_webhook_deliveries(jsonb, integer, integer, double precision, uuid, uuid[], uuid);
