-- Dashboard sign-in sessions (src/modules/dashboard): a pasted API token exchanged for a cookie. The cookie holds a
-- random session id; only its SHA-256 is stored. The token itself is kept sealed (AES-256-GCM under the secrets key)
-- because the dashboard's pages call the public API with it, so every page has exactly the access the token has.
-- Rotating or revoking the credential ends the session at its next request: the row names the token's id, and the
-- credential must still hold it.
CREATE TABLE dashboard_sessions (
  id_hash        bytea PRIMARY KEY,
  workspace_id   uuid NOT NULL REFERENCES workspaces (id),
  credential_id  uuid NOT NULL REFERENCES credentials (id),
  -- The token's id (jti): when the credential is rotated its token_id changes, and the session ends.
  token_id       uuid NOT NULL,
  sealed_token   text NOT NULL,
  -- The synchronizer token every form of this session carries (CSRF).
  csrf_token     text NOT NULL,
  created_at     timestamptz NOT NULL,
  last_seen_at   timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_credential ON dashboard_sessions (workspace_id, credential_id);
CREATE INDEX dashboard_sessions_last_seen ON dashboard_sessions (last_seen_at);
