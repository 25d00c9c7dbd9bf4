// SQL for the sign-in's second step (migrations/031_second_factor.sql, dashboard_second_steps). A record is found by
// the SHA-256 of its cookie's value, before anyone is signed in, so the lookup names no workspace; the record names
// the member's workspace and every statement that makes one writes it.
import type { Queryable } from '../../db/pool.js';

/**
 * Stores a record for the member that expires at `expiresAt`, or `ttlSeconds` from now (the database's clock), and
 * deletes up to `purgeLimit` expired records in the same statement.
 */
export async function insertSecondStep(
  db: Queryable,
  workspaceId: string,
  s: { idHash: Buffer; memberId: string; ttlSeconds: number; expiresAt: Date | null; purgeLimit: number },
): Promise<void> {
  await db.query(
    `WITH expired AS (
       DELETE FROM dashboard_second_steps WHERE id_hash = ANY(ARRAY(
         SELECT id_hash FROM dashboard_second_steps WHERE expires_at < now()
         ORDER BY expires_at LIMIT $6 FOR UPDATE SKIP LOCKED)))
     INSERT INTO dashboard_second_steps (id_hash, workspace_id, member_id, expires_at)
     VALUES ($2, $1, $3, coalesce($5, now() + make_interval(secs => $4)))`,
    [workspaceId, s.idHash, s.memberId, s.ttlSeconds, s.expiresAt, s.purgeLimit],
  );
}

/** Deletes the record and answers it when it was unexpired: of two posts with the same cookie, one gets it. */
export async function takeSecondStep(
  db: Queryable,
  idHash: Buffer,
): Promise<{ workspace_id: string; member_id: string; expires_at: Date } | undefined> {
  const { rows } = await db.query<{ workspace_id: string; member_id: string; expires_at: Date; live: boolean }>(
    `DELETE FROM dashboard_second_steps WHERE id_hash = $1
     RETURNING workspace_id, member_id, expires_at, expires_at > now() AS live`,
    [idHash],
  );
  const row = rows[0];
  return row?.live
    ? { workspace_id: row.workspace_id, member_id: row.member_id, expires_at: row.expires_at }
    : undefined;
}
