-- The dashboard sign-in form's one-time values (login CSRF, src/modules/dashboard/sign-in-nonces.ts). Drawing the form
-- stores one row; posting the form deletes it (DELETE ... RETURNING, so a value is accepted at most once, on any node)
-- and the post is accepted only if the row existed, had not expired, and the browser sent the same value in both its
-- cookie and the form. Only the value's SHA-256 is stored. No workspace: nobody is signed in yet. Expired rows are
-- deleted a few at a time as new forms are drawn.
CREATE TABLE dashboard_signin_nonces (
  nonce_hash  bytea PRIMARY KEY,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX dashboard_signin_nonces_expires ON dashboard_signin_nonces (expires_at);
