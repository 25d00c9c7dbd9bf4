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
