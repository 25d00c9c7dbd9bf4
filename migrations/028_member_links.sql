-- One-time links for dashboard members (src/modules/members, docs/guides/dashboard.md "Invitations and passwords"):
-- an invitation (the invitee sets a password and becomes a member with the role given) or a password reset issued by
-- an owner. The link carries the workspace id and a random value; only the value's SHA-256 is stored. A link is taken
-- (deleted) by the one request that uses it, and is refused once expires_at has passed.
CREATE TABLE member_links (
  workspace_id  uuid NOT NULL REFERENCES workspaces (id),
  token_hash    bytea NOT NULL,
  purpose       text NOT NULL CHECK (purpose IN ('invitation', 'password_reset')),
  email         text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  -- The role an invitation gives; null for a reset.
  role          text CHECK (role IN ('owner', 'admin', 'developer', 'finance', 'support', 'viewer')),
  -- The member a reset is for; null for an invitation. Removing the member removes its links.
  member_id     uuid,
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, token_hash),
  FOREIGN KEY (workspace_id, member_id) REFERENCES members (workspace_id, id) ON DELETE CASCADE,
  CHECK ((purpose = 'invitation') = (role IS NOT NULL AND member_id IS NULL))
);
CREATE INDEX member_links_expires ON member_links (expires_at);
