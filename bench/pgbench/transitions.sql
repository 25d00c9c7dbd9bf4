-- pgbench baseline: the durable SQL of a collection's moves after its create (run after create.sql, in the same
-- script: :ws and :cid are the workspace and collection it made). Each move is one statement, so one round trip and
-- one transaction: the row's new status, its event and the event's outbox row, as the service writes them; the move
-- to successful also writes the ledger posting, its two lines and the two balances of the workspace it moves
-- (`workspace_available` first, the service's lock order, each on a bucket as the service chooses it), the rows the
-- service's ledger writes (the service in three statements).
WITH c AS (
  UPDATE collections SET status = 'pending', updated_at = now(), provider_reference = 'sbx_' || id, submitted_at = now()
  WHERE workspace_id = lpad(to_hex(:ws::int), 32, '0')::uuid AND id = :cid
  RETURNING id, workspace_id, updated_at),
e AS (
  INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
  SELECT gen_random_uuid(), workspace_id, 'collection.pending', 'collection', id,
         '{"collection_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd","integrator_id":"0192f3a4-0000-7d8e-9f01-23456789abcd","market":"KE","rail":"mpesa","amount":1500,"currency":"KES","reference":"bench-order-42","status":"pending","customer":{"phone_number":"+254712345678"},"metadata":{"order_id":"42","cart":{"items":2}},"payment_instruction":{"type":"push_prompt","message":"Approve the M-Pesa prompt for KES 15.00 sent to +2547••••5678 with your PIN."},"failure_reason": null,"provider_receipt": null,"created_at":"2026-11-24T10:00:00.000Z","updated_at":"2026-11-24T10:00:00.001Z","expires_at":"2026-11-24T10:10:00.000Z"}',
         updated_at
  FROM c
  RETURNING id, workspace_id, created_at)
INSERT INTO outbox (workspace_id, event_id, created_at)
SELECT workspace_id, id, created_at FROM e;

WITH c AS (
  UPDATE collections SET status = 'processing', updated_at = now()
  WHERE workspace_id = lpad(to_hex(:ws::int), 32, '0')::uuid AND id = :cid
  RETURNING id, workspace_id, updated_at),
e AS (
  INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
  SELECT gen_random_uuid(), workspace_id, 'collection.processing', 'collection', id,
         '{"collection_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd","integrator_id":"0192f3a4-0000-7d8e-9f01-23456789abcd","market":"KE","rail":"mpesa","amount":1500,"currency":"KES","reference":"bench-order-42","status":"processing","customer":{"phone_number":"+254712345678"},"metadata":{"order_id":"42","cart":{"items":2}},"payment_instruction":{"type":"push_prompt","message":"Approve the M-Pesa prompt for KES 15.00 sent to +2547••••5678 with your PIN."},"failure_reason": null,"provider_receipt": null,"created_at":"2026-11-24T10:00:00.000Z","updated_at":"2026-11-24T10:00:00.002Z","expires_at":"2026-11-24T10:10:00.000Z"}',
         updated_at
  FROM c
  RETURNING id, workspace_id, created_at)
INSERT INTO outbox (workspace_id, event_id, created_at)
SELECT workspace_id, id, created_at FROM e;

WITH c AS (
  UPDATE collections SET status = 'successful', updated_at = now()
  WHERE workspace_id = lpad(to_hex(:ws::int), 32, '0')::uuid AND id = :cid
  RETURNING id, workspace_id, currency, amount, updated_at),
e AS (
  INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
  SELECT gen_random_uuid(), workspace_id, 'collection.successful', 'collection', id,
         '{"collection_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd","integrator_id":"0192f3a4-0000-7d8e-9f01-23456789abcd","market":"KE","rail":"mpesa","amount":1500,"currency":"KES","reference":"bench-order-42","status":"successful","customer":{"phone_number":"+254712345678"},"metadata":{"order_id":"42","cart":{"items":2}},"payment_instruction":{"type":"push_prompt","message":"Approve the M-Pesa prompt for KES 15.00 sent to +2547••••5678 with your PIN."},"failure_reason": null,"provider_receipt": null,"created_at":"2026-11-24T10:00:00.000Z","updated_at":"2026-11-24T10:00:00.003Z","expires_at":"2026-11-24T10:10:00.000Z"}',
         updated_at
  FROM c
  RETURNING id, workspace_id, created_at),
o AS (
  INSERT INTO outbox (workspace_id, event_id, created_at)
  SELECT workspace_id, id, created_at FROM e),
p AS (
  INSERT INTO ledger_postings (id, workspace_id, kind, object_type, object_id, currency, created_at)
  SELECT gen_random_uuid(), workspace_id, 'collection_successful', 'collection', id, currency, updated_at FROM c
  RETURNING id, workspace_id, currency),
l AS (
  INSERT INTO ledger_lines (posting_id, workspace_id, account, currency, amount)
  SELECT p.id, p.workspace_id, v.account, p.currency, v.sign * c.amount
  FROM p, c, (VALUES ('provider_receivable', 1), ('workspace_available', -1)) AS v(account, sign))
INSERT INTO ledger_balances AS b (workspace_id, account, currency, bucket, balance, updated_at)
SELECT c.workspace_id, v.account, c.currency,
       -- The service's bucket (src/modules/ledger/ledger.repository.ts): the lowest no other transaction holds, else
       -- one the account has not got yet, else any but the check row.
       coalesce((SELECT x.bucket FROM ledger_balances x
                 WHERE x.workspace_id = c.workspace_id AND x.account = v.account AND x.currency = c.currency
                 ORDER BY x.bucket LIMIT 1 FOR UPDATE SKIP LOCKED),
                (SELECT k FROM generate_series(0, 15) AS k
                 WHERE NOT EXISTS (SELECT 1 FROM ledger_balances x WHERE x.workspace_id = c.workspace_id
                                   AND x.account = v.account AND x.currency = c.currency AND x.bucket = k)
                 ORDER BY k > 0, random() LIMIT 1),
                1 + floor(random() * 15)::int),
       v.sign * c.amount, c.updated_at
FROM c, (VALUES (1, 'workspace_available', -1), (2, 'provider_receivable', 1)) AS v(n, account, sign)
ORDER BY v.n
ON CONFLICT (workspace_id, account, currency, bucket)
DO UPDATE SET balance = b.balance + excluded.balance, updated_at = excluded.updated_at;
