-- Roles enforced and sessions listed (docs/guides/dashboard.md, "Roles" and "Sessions").
--
-- The API's auth hook reads the role of the member a credential belongs to at every request (a role change applies at
-- once, even to a token copied out of a session): that lookup is by credential, so it gets its index. A credential
-- belongs to at most one member.
CREATE UNIQUE INDEX members_credential ON members (workspace_id, credential_id);

-- A session gets an id that can be shown and named in a form (the row's key is the hash of the cookie, which must
-- stay secret), and what a member needs to recognise it: the client's address and user agent at sign-in. Sessions
-- opened before this migration have neither (null).
ALTER TABLE dashboard_sessions ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE dashboard_sessions ADD COLUMN client_address text;
ALTER TABLE dashboard_sessions ADD COLUMN user_agent text CHECK (length(user_agent) <= 512);
CREATE UNIQUE INDEX dashboard_sessions_id ON dashboard_sessions (workspace_id, id);
