-- Issue 21: late payments are never dropped, and a refund reserves its amount when it is requested.

-- What a workspace does with a payment its provider confirms after the collection expired (contract §5).
ALTER TABLE workspaces ADD COLUMN late_payment text NOT NULL DEFAULT 'refund' CHECK (late_payment IN ('refund', 'accept'));

-- Why a refund was made: the merchant asked (the API), or a late payment went back to the payer.
ALTER TABLE refunds ADD COLUMN reason text NOT NULL DEFAULT 'merchant_request'
  CHECK (reason IN ('merchant_request', 'late_payment'));

-- A refund's money: reserved out of the available balance when requested, released if it fails, settled with the
-- provider when it succeeds. `refund_successful` stays for the refunds that succeeded before this migration (their
-- one posting took the amount from the available balance directly).
ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_kind_check;
ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_kind_check CHECK (kind IN (
  'collection_successful', 'refund_successful', 'collection_reversed',
  'refund_reserved', 'refund_released', 'refund_settled',
  'deposit_credited', 'autoconvert_source', 'autoconvert_target',
  'payout_reserved', 'payout_released', 'payout_settled', 'payout_converted'));

-- Refunds in flight now are reserved now, so they settle or release like the ones requested from here on.
CREATE TEMPORARY TABLE refund_reservations ON COMMIT DROP AS
  SELECT gen_random_uuid() AS posting_id, id AS refund_id, workspace_id, currency, amount
  FROM refunds WHERE status IN ('requested', 'pending');

INSERT INTO ledger_postings (id, workspace_id, kind, object_type, object_id, currency, created_at)
  SELECT posting_id, workspace_id, 'refund_reserved', 'refund', refund_id, currency, now() FROM refund_reservations;

INSERT INTO ledger_lines (posting_id, workspace_id, account, currency, amount)
  SELECT posting_id, workspace_id, 'workspace_available', currency, amount FROM refund_reservations
  UNION ALL
  SELECT posting_id, workspace_id, 'refunds_in_flight', currency, -amount FROM refund_reservations;

INSERT INTO ledger_balances AS b (workspace_id, account, currency, balance, updated_at)
  SELECT workspace_id, account, currency, sum(amount), now()
  FROM (SELECT workspace_id, 'workspace_available' AS account, currency, amount FROM refund_reservations
        UNION ALL
        SELECT workspace_id, 'refunds_in_flight', currency, -amount FROM refund_reservations) AS d
  GROUP BY workspace_id, account, currency
  ON CONFLICT (workspace_id, account, currency) DO UPDATE SET balance = b.balance + excluded.balance, updated_at = excluded.updated_at;
