-- pgbench baseline: the durable SQL of one create collection, at its minimum. One statement, so one round trip and
-- one transaction (PostgreSQL commits it by itself): the collection, its idempotency row (the stored answer), its
-- `collection.created` event and the event's outbox row, the same rows and columns the service writes. Values are
-- literals of the service's sizes (a 600-byte answer and event); ids are fresh per transaction.
-- :workspaces (set with -D) workspaces were made beforehand with ids lpad(to_hex(n), 32, '0'); each transaction picks
-- one at random: 1 makes every transaction use the same workspace.
\set ws random(1, :workspaces)
WITH c AS (
  INSERT INTO collections (id, workspace_id, market, rail, amount, currency, reference, status, customer, metadata,
                           payment_instruction, created_at, updated_at, expires_at, provider, submit_after)
  VALUES (gen_random_uuid(), lpad(to_hex(:ws::int), 32, '0')::uuid, 'KE', 'mpesa', 1500, 'KES', 'bench-order-42',
          'created', '{"phone_number": "+254712345678"}', '{"order_id": "42", "cart": {"items": 2}}',
          '{"type": "push_prompt", "message": "Approve the M-Pesa prompt for KES 15.00 sent to +2547••••5678 with your PIN."}',
          now(), now(), now() + interval '10 minutes', 'sandbox', now() + interval '5 seconds')
  RETURNING id, workspace_id, created_at),
k AS (
  INSERT INTO idempotency_keys (workspace_id, key, fingerprint, response_status, response_headers, response_body,
                                created_at, expires_at)
  SELECT workspace_id, gen_random_uuid()::text, '9f2c1e4b7a3d8f6e0c5b2a9d4e7f1c3b8a6d0e2f5c9b7a4d1e3f6c8b0a2d5e7f', 201,
         '{"location": "/v1/collections/0192f3a4-5b6c-7d8e-9f01-23456789abcd"}',
         '{"collection_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd","integrator_id":"0192f3a4-0000-7d8e-9f01-23456789abcd","market":"KE","rail":"mpesa","amount":1500,"currency":"KES","reference":"bench-order-42","status":"created","customer":{"phone_number":"+254712345678"},"metadata":{"order_id":"42","cart":{"items":2}},"payment_instruction":{"type":"push_prompt","message":"Approve the M-Pesa prompt for KES 15.00 sent to +2547••••5678 with your PIN."},"failure_reason": null,"provider_receipt": null,"created_at":"2026-11-24T10:00:00.000Z","updated_at":"2026-11-24T10:00:00.000Z","expires_at":"2026-11-24T10:10:00.000Z"}',
         created_at, created_at + interval '24 hours'
  FROM c),
e AS (
  INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
  SELECT gen_random_uuid(), workspace_id, 'collection.created', 'collection', id,
         '{"collection_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd","integrator_id":"0192f3a4-0000-7d8e-9f01-23456789abcd","market":"KE","rail":"mpesa","amount":1500,"currency":"KES","reference":"bench-order-42","status":"created","customer":{"phone_number":"+254712345678"},"metadata":{"order_id":"42","cart":{"items":2}},"payment_instruction":{"type":"push_prompt","message":"Approve the M-Pesa prompt for KES 15.00 sent to +2547••••5678 with your PIN."},"failure_reason": null,"provider_receipt": null,"created_at":"2026-11-24T10:00:00.000Z","updated_at":"2026-11-24T10:00:00.000Z","expires_at":"2026-11-24T10:10:00.000Z"}',
         created_at
  FROM c
  RETURNING id, workspace_id, created_at)
INSERT INTO outbox (workspace_id, event_id, created_at)
SELECT workspace_id, id, created_at FROM e
RETURNING (SELECT id FROM c) AS cid \gset
