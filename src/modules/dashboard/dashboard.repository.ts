// SQL for dashboard sessions (migrations/017_dashboard_sessions.sql). A session is found by the hash of its cookie;
// it is live only while its credential is active and still holds the token it was opened with, and (a member's) while
// the member exists: removing a member deletes its sessions (the foreign key cascades).
import type { Queryable } from '../../db/pool.js';
import type { PaymentsEnv } from '../../config.js';
import type { Audience } from '../../platform/tokens.js';

export interface SessionRow {
  workspace_id: string;
  credential_id: string;
  sealed_token: string;
  csrf_token: string;
  /** The id the session is shown and revoked by (never the cookie's). */
  id: string;
  last_seen_at: Date;
  audience: Audience;
  environment: PaymentsEnv;
  credential_name: string;
  workspace_name: string;
  /** The member who signed in; null for a session opened by pasting a token (the break-glass path). */
  member_id: string | null;
  member_email: string | null;
  member_role: string | null;
  /** Whether the member has a confirmed second factor, and whether the workspace requires one of every member. */
  member_second_factor: boolean;
  require_second_factor: boolean;
}

export async function insertSession(
  db: Queryable,
  s: {
    idHash: Buffer;
    workspaceId: string;
    credentialId: string;
    tokenId: string;
    sealedToken: string;
    csrfToken: string;
    memberId: string | null;
    now: Date;
    client: SessionClient;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO dashboard_sessions (id_hash, workspace_id, credential_id, token_id, sealed_token, csrf_token,
       created_at, last_seen_at, member_id, client_address, user_agent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10)`,
    [
      s.idHash,
      s.workspaceId,
      s.credentialId,
      s.tokenId,
      s.sealedToken,
      s.csrfToken,
      s.now,
      s.memberId,
      s.client.address,
      s.client.userAgent?.slice(0, 512) ?? null,
    ],
  );
}

/** Where a session was opened from, as the member is shown it to recognise it. */
export interface SessionClient {
  address: string | null;
  userAgent: string | null;
}

/** A session as its member (or an owner) is shown it: never its cookie, token or CSRF value. */
export interface SessionListing {
  id: string;
  created_at: Date;
  last_seen_at: Date;
  client_address: string | null;
  user_agent: string | null;
}

/**
 * A member's sessions still usable: not idle past `idleSeconds` (those are refused anyway and purged later), newest
 * first.
 */
export async function listMemberSessions(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  idleSeconds: number,
): Promise<SessionListing[]> {
  const { rows } = await db.query<SessionListing>(
    `SELECT id, created_at, last_seen_at, client_address, user_agent FROM dashboard_sessions
     WHERE workspace_id = $1 AND member_id = $2 AND last_seen_at >= now() - make_interval(secs => $3)
     ORDER BY last_seen_at DESC, id`,
    [workspaceId, memberId, idleSeconds],
  );
  return rows;
}

/** Ends one session of a member, named by its shown id; answers whether there was one. */
export async function deleteMemberSession(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  id: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM dashboard_sessions WHERE workspace_id = $1 AND member_id = $2 AND id = $3`,
    [workspaceId, memberId, id],
  );
  return rowCount === 1;
}

/** The session with its credential and workspace, or undefined when it is unknown or its credential moved on. */
export async function findLiveSession(db: Queryable, idHash: Buffer): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>(
    `SELECT s.workspace_id, s.credential_id, s.sealed_token, s.csrf_token, s.id, s.last_seen_at,
            c.audience, c.environment, c.name AS credential_name, w.display_name AS workspace_name,
            s.member_id, m.email AS member_email, m.role AS member_role,
            EXISTS (SELECT 1 FROM member_second_factors f WHERE f.workspace_id = s.workspace_id
                       AND f.member_id = s.member_id AND f.confirmed_at IS NOT NULL) AS member_second_factor,
            w.require_second_factor
     FROM dashboard_sessions s
     JOIN credentials c ON c.workspace_id = s.workspace_id AND c.id = s.credential_id
       AND c.token_id = s.token_id AND c.status = 'active'
     JOIN workspaces w ON w.id = s.workspace_id
     LEFT JOIN members m ON m.workspace_id = s.workspace_id AND m.id = s.member_id
     WHERE s.id_hash = $1`,
    [idHash],
  );
  return rows[0];
}

export async function touchSession(db: Queryable, idHash: Buffer, now: Date): Promise<void> {
  await db.query('UPDATE dashboard_sessions SET last_seen_at = $2 WHERE id_hash = $1', [idHash, now]);
}

export async function deleteSession(db: Queryable, idHash: Buffer): Promise<void> {
  await db.query('DELETE FROM dashboard_sessions WHERE id_hash = $1', [idHash]);
}

/**
 * Deletes up to `limit` sessions unused for more than `olderThanSeconds` (they can no longer be used: see
 * IDLE_LIMIT_MS), oldest first by `dashboard_sessions_last_seen`. Maintenance: spans workspaces.
 */
export async function purgeIdleSessions(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM dashboard_sessions WHERE id_hash = ANY(ARRAY(
       SELECT id_hash FROM dashboard_sessions WHERE last_seen_at < now() - make_interval(secs => $1)
       ORDER BY last_seen_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}
