-- Failed dashboard sign-ins, counted per account (the email typed, known or not) and per client address (its /64 for
-- IPv6), so sign-in can be refused for a growing time after repeated failures (src/modules/dashboard/sign-in-throttle.ts,
-- docs/guides/dashboard.md "Failed sign-ins"). Shared by every node through this table. A row is keyed by the SHA-256
-- of 'account:<lower-cased email>' or 'address:<client>', so no email or address is stored; no workspace: an email
-- typed may name no member. A count starts over after an hour without a failure; an account's row is deleted when it
-- signs in. Rows an hour past their last failure and block are deleted a few at a time as failures are recorded.
CREATE TABLE dashboard_sign_in_failures (
  key_hash        bytea PRIMARY KEY,
  failures        integer NOT NULL CHECK (failures > 0),
  last_failed_at  timestamptz NOT NULL,
  blocked_until   timestamptz NOT NULL
);
CREATE INDEX dashboard_sign_in_failures_age ON dashboard_sign_in_failures (last_failed_at);
