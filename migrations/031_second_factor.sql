-- Dashboard members' second factor (src/modules/members/second-factor.service.ts, docs/guides/dashboard.md "Second
-- factor"): a TOTP secret (RFC 6238) per member, sealed under the secrets key like the sessions' tokens; one-time
-- recovery codes kept only as hashes; the sign-in's second step between a right password and a session; and the
-- workspace's choice to require a second factor of every member (owners and admins always need one).

-- One row per member with a secret. confirmed_at is null while the member has seen the secret but not yet proved it
-- with a code (an enrolment begun, not finished): such a row is no second factor. last_step is the RFC 6238 time step
-- of the last code accepted: a code of that step or an earlier one is refused, so a code seen over a shoulder or
-- replayed within its 30 seconds does not work twice.
CREATE TABLE member_second_factors (
  workspace_id   uuid NOT NULL,
  member_id      uuid NOT NULL,
  sealed_secret  text NOT NULL CHECK (sealed_secret LIKE 'sealed:%'),
  created_at     timestamptz NOT NULL,
  confirmed_at   timestamptz,
  last_step      bigint,
  PRIMARY KEY (workspace_id, member_id),
  FOREIGN KEY (workspace_id, member_id) REFERENCES members (workspace_id, id) ON DELETE CASCADE
);

-- Recovery codes: ten random codes shown once at enrolment; only each code's SHA-256 is stored (the codes are random,
-- 50 bits each, so a fast hash is enough). A code is used by deleting its row: it works once.
CREATE TABLE member_recovery_codes (
  workspace_id  uuid NOT NULL,
  member_id     uuid NOT NULL,
  code_hash     bytea NOT NULL,
  created_at    timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, member_id, code_hash),
  FOREIGN KEY (workspace_id, member_id) REFERENCES members (workspace_id, id) ON DELETE CASCADE
);

-- The sign-in's second step: after a right password, a member with a second factor gets a short-lived record, named
-- by a random value held in a SameSite=Strict cookie (only its SHA-256 is stored). Taken (deleted) by the post that
-- uses it, so it completes one sign-in at most. Expired rows are deleted a few at a time as new ones are made.
CREATE TABLE dashboard_second_steps (
  id_hash       bytea PRIMARY KEY,
  workspace_id  uuid NOT NULL,
  member_id     uuid NOT NULL,
  expires_at    timestamptz NOT NULL,
  FOREIGN KEY (workspace_id, member_id) REFERENCES members (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX dashboard_second_steps_expires ON dashboard_second_steps (expires_at);

-- A workspace's owners may require a second factor of every member (not only of owners and admins).
ALTER TABLE workspaces ADD COLUMN require_second_factor boolean NOT NULL DEFAULT false;
