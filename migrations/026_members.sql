-- Dashboard members (src/modules/members, docs/guides/dashboard.md): the people of a workspace's team, each signing in
-- to the dashboard with an email and a password. Scoped by workspace like every table: workspace_id first in the
-- primary key.
--
-- An email is one member of one workspace across the service (members_email_key): sign-in asks only for the email and
-- the password, so the email alone must name the member. Emails are kept as typed but compared lower-cased.
-- The password is kept only as an argon2id hash in its PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash), so the
-- parameters can be raised later and old hashes still verify.
-- A member acts on the public API through a credential of its own (credential_id), made with the member: the pages
-- call the API with a token for it, so what a member does is done with that credential's access, and the audit log
-- names the member. The role is stored now; what each role may do is enforced by a later change.
CREATE TABLE members (
  workspace_id   uuid NOT NULL REFERENCES workspaces (id),
  id             uuid NOT NULL,
  email          text NOT NULL CHECK (length(email) BETWEEN 3 AND 254 AND email LIKE '%_@_%'),
  password_hash  text NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
  role           text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'finance', 'support', 'viewer')),
  credential_id  uuid NOT NULL REFERENCES credentials (id),
  created_at     timestamptz NOT NULL,
  password_changed_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, id)
);
CREATE UNIQUE INDEX members_email_key ON members (lower(email));
CREATE INDEX members_list ON members (workspace_id, created_at, id);

-- A session opened by a member's sign-in names the member; a session opened by pasting a token (the break-glass path)
-- names none. Removing a member deletes its sessions with it.
ALTER TABLE dashboard_sessions ADD COLUMN member_id uuid;
ALTER TABLE dashboard_sessions
  ADD CONSTRAINT dashboard_sessions_member FOREIGN KEY (workspace_id, member_id)
  REFERENCES members (workspace_id, id) ON DELETE CASCADE;
CREATE INDEX dashboard_sessions_member ON dashboard_sessions (workspace_id, member_id) WHERE member_id IS NOT NULL;
