// SQL for dashboard members (migrations/026_members.sql). The workspace id is the first argument of every query but
// the sign-in's lookup by email, which is how a member is found before anyone is signed in (the email names one
// member across the service).
import type { Queryable } from '../../db/pool.js';

export const ROLES = ['owner', 'admin', 'developer', 'finance', 'support', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export interface MemberRow {
  workspace_id: string;
  id: string;
  email: string;
  role: Role;
  credential_id: string;
  created_at: Date;
  password_changed_at: Date;
}

/** A member with its password hash: only the sign-in and the password change read it. */
export interface MemberSecretRow extends MemberRow {
  password_hash: string;
}

const COLUMNS = 'workspace_id, id, email, role, credential_id, created_at, password_changed_at';

export async function insertMember(
  db: Queryable,
  workspaceId: string,
  m: { id: string; email: string; passwordHash: string; role: Role; credentialId: string; now: Date },
): Promise<MemberRow | undefined> {
  const { rows } = await db.query<MemberRow>(
    `INSERT INTO members (workspace_id, id, email, password_hash, role, credential_id, created_at, password_changed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
     ON CONFLICT ((lower(email))) DO NOTHING
     RETURNING ${COLUMNS}`,
    [workspaceId, m.id, m.email, m.passwordHash, m.role, m.credentialId, m.now],
  );
  return rows[0];
}

/** The member an email names, in any workspace (sign-in), with its password hash. */
export async function findMemberByEmail(db: Queryable, email: string): Promise<MemberSecretRow | undefined> {
  const { rows } = await db.query<MemberSecretRow>(
    `SELECT ${COLUMNS}, password_hash FROM members WHERE lower(email) = lower($1)`,
    [email],
  );
  return rows[0];
}

export async function findMember(db: Queryable, workspaceId: string, id: string): Promise<MemberRow | undefined> {
  const { rows } = await db.query<MemberRow>(`SELECT ${COLUMNS} FROM members WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    id,
  ]);
  return rows[0];
}

export async function listMembers(db: Queryable, workspaceId: string): Promise<MemberRow[]> {
  const { rows } = await db.query<MemberRow>(
    `SELECT ${COLUMNS} FROM members WHERE workspace_id = $1 ORDER BY created_at, id`,
    [workspaceId],
  );
  return rows;
}

export type LinkPurpose = 'invitation' | 'password_reset';

export interface MemberLinkRow {
  workspace_id: string;
  purpose: LinkPurpose;
  email: string;
  role: Role | null;
  member_id: string | null;
  expires_at: Date;
}

export async function insertMemberLink(
  db: Queryable,
  workspaceId: string,
  l: {
    tokenHash: Buffer;
    purpose: LinkPurpose;
    email: string;
    role: Role | null;
    memberId: string | null;
    ttlSeconds: number;
  },
): Promise<Date> {
  // Up to 10 of the workspace's expired links are deleted by the same statement: links never used do not pile up.
  const { rows } = await db.query<{ expires_at: Date }>(
    `WITH expired AS (
       DELETE FROM member_links WHERE workspace_id = $1 AND token_hash = ANY(ARRAY(
         SELECT token_hash FROM member_links WHERE workspace_id = $1 AND expires_at < now()
         ORDER BY expires_at LIMIT 10 FOR UPDATE SKIP LOCKED)))
     INSERT INTO member_links (workspace_id, token_hash, purpose, email, role, member_id, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, now(), now() + make_interval(secs => $7)) RETURNING expires_at`,
    [workspaceId, l.tokenHash, l.purpose, l.email, l.role, l.memberId, l.ttlSeconds],
  );
  return (rows[0] as { expires_at: Date }).expires_at;
}

/** The link, if it exists and has not expired (read only: the form that uses it is drawn from this). */
export async function findMemberLink(
  db: Queryable,
  workspaceId: string,
  tokenHash: Buffer,
): Promise<MemberLinkRow | undefined> {
  const { rows } = await db.query<MemberLinkRow>(
    `SELECT workspace_id, purpose, email, role, member_id, expires_at FROM member_links
      WHERE workspace_id = $1 AND token_hash = $2 AND expires_at > now()`,
    [workspaceId, tokenHash],
  );
  return rows[0];
}

/** Deletes the link and answers it when it was unexpired: of two uses at once, one gets it. */
export async function takeMemberLink(
  db: Queryable,
  workspaceId: string,
  tokenHash: Buffer,
  purpose: LinkPurpose,
): Promise<MemberLinkRow | undefined> {
  const { rows } = await db.query<MemberLinkRow & { live: boolean }>(
    `DELETE FROM member_links WHERE workspace_id = $1 AND token_hash = $2 AND purpose = $3
     RETURNING workspace_id, purpose, email, role, member_id, expires_at, expires_at > now() AS live`,
    [workspaceId, tokenHash, purpose],
  );
  const row = rows[0];
  return row?.live ? row : undefined;
}

export async function updatePassword(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  passwordHash: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE members SET password_hash = $3, password_changed_at = now() WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, memberId, passwordHash],
  );
  return rowCount === 1;
}

export async function findMemberSecret(
  db: Queryable,
  workspaceId: string,
  id: string,
): Promise<MemberSecretRow | undefined> {
  const { rows } = await db.query<MemberSecretRow>(
    `SELECT ${COLUMNS}, password_hash FROM members WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}

/** Ends every dashboard session of a member but `keep` (the session changing its own password). */
export async function endMemberSessions(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  keep?: Buffer,
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM dashboard_sessions WHERE workspace_id = $1 AND member_id = $2 AND ($3::bytea IS NULL OR id_hash <> $3)`,
    [workspaceId, memberId, keep ?? null],
  );
  return rowCount ?? 0;
}

/** Whether the workspace has an owner who is a member: after that, a pasted token no longer opens a session. */
export async function hasOwnerMember(db: Queryable, workspaceId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM members WHERE workspace_id = $1 AND role = 'owner' LIMIT 1`, [
    workspaceId,
  ]);
  return rows.length > 0;
}

/**
 * Locks the workspace's owners (FOR UPDATE) and answers their ids: a demotion or removal of an owner takes this lock
 * first, so two at once are serialised and the second sees the first's outcome (the last owner cannot be lost to a
 * race between two owners demoting each other).
 */
export async function lockOwners(db: Queryable, workspaceId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM members WHERE workspace_id = $1 AND role = 'owner' ORDER BY id FOR UPDATE`,
    [workspaceId],
  );
  return rows.map((r) => r.id);
}

/** The member, locked for the change being made to it. */
export async function findMemberForUpdate(
  db: Queryable,
  workspaceId: string,
  id: string,
): Promise<MemberRow | undefined> {
  const { rows } = await db.query<MemberRow>(
    `SELECT ${COLUMNS} FROM members WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    [workspaceId, id],
  );
  return rows[0];
}

export async function updateRole(db: Queryable, workspaceId: string, id: string, role: Role): Promise<MemberRow> {
  const { rows } = await db.query<MemberRow>(
    `UPDATE members SET role = $3 WHERE workspace_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [workspaceId, id, role],
  );
  return rows[0] as MemberRow;
}

/** Deletes the member; its sessions and links go with it (their foreign keys cascade). */
export async function deleteMember(db: Queryable, workspaceId: string, id: string): Promise<void> {
  await db.query(`DELETE FROM members WHERE workspace_id = $1 AND id = $2`, [workspaceId, id]);
}
