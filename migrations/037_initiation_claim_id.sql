-- Which sender's claim last marked an initiation `sent_at`, and the mark it had before that claim
-- (src/modules/lifecycle/movements.repository.ts, claimInitiations and releaseClaim).
--
-- A claim marks the row `sent_at` (about to be sent) in the statement that takes it. When that statement's answer is
-- lost (the connection cut as it committed, as in a failover's fast shutdown), the sender does not know it took the
-- row, sends nothing, and the row is left marked as maybe sent: after the lease, the next sender would not send it
-- again (an STK push cannot be asked about by our id) and the payer would never be prompted. The sender knows it sent
-- nothing, so once the database answers it puts the mark back, on the rows its claim (by this id) still holds.
ALTER TABLE collections ADD COLUMN claim_id uuid, ADD COLUMN sent_before_claim timestamptz;
ALTER TABLE refunds ADD COLUMN claim_id uuid, ADD COLUMN sent_before_claim timestamptz;
ALTER TABLE payouts ADD COLUMN claim_id uuid, ADD COLUMN sent_before_claim timestamptz;
