-- No hot balance row (issue 30, item 4): the balances every success writes (workspace_available, provider_receivable)
-- are split across up to 16 bucket rows, summed on read; the other accounts keep bucket 0 alone. A posting adds to
-- the account's lowest bucket no other transaction holds, so concurrent successes of one workspace land on different
-- rows instead of queuing on one. Bucket 0 is the check row: a debit that needs a check (a refund's reserve, a
-- payout's commit) locks the available balance's bucket 0, then sums every bucket. The rows there are become bucket 0.
ALTER TABLE ledger_balances ADD COLUMN bucket smallint NOT NULL DEFAULT 0 CHECK (bucket BETWEEN 0 AND 15);
ALTER TABLE ledger_balances DROP CONSTRAINT ledger_balances_pkey;
ALTER TABLE ledger_balances ADD PRIMARY KEY (workspace_id, account, currency, bucket);
