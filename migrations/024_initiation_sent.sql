-- When the sender that last claimed an initiation was about to call its provider (set by the claim, in the same
-- statement, before the call). It is cleared when the provider answered with a refusal (nothing was taken). An
-- initiation claimed again while it is set may have reached the operator already (its sender crashed, or could not
-- record the answer before its lease ran out): the operator is asked about it by our id instead of being asked again,
-- or, when it cannot be asked that way (Daraja's STK push), the initiation waits for its callback or its expiry.
ALTER TABLE collections ADD COLUMN sent_at timestamptz;
ALTER TABLE refunds ADD COLUMN sent_at timestamptz;
ALTER TABLE payouts ADD COLUMN sent_at timestamptz;
