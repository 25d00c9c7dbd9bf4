// SQL for members' second factor (migrations/031_second_factor.sql): the sealed TOTP secret, its last accepted time
// step, the recovery codes' hashes, and the workspace's requirement. The workspace id is the first argument of every
// query but the rotate-key re-seal, which spans workspaces.
import type { Queryable } from '../../db/pool.js';

export interface SecondFactorRow {
  sealed_secret: string;
  confirmed_at: Date | null;
  last_step: string | null;
}

export async function findSecondFactor(
  db: Queryable,
  workspaceId: string,
  memberId: string,
): Promise<SecondFactorRow | undefined> {
  const { rows } = await db.query<SecondFactorRow>(
    `SELECT sealed_secret, confirmed_at, last_step::text FROM member_second_factors
      WHERE workspace_id = $1 AND member_id = $2`,
    [workspaceId, memberId],
  );
  return rows[0];
}

/** Begins (or begins again) an enrolment: an unconfirmed secret. A confirmed factor is left alone (false). */
export async function beginSecondFactor(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  sealedSecret: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO member_second_factors AS f (workspace_id, member_id, sealed_secret, created_at)
     VALUES ($1, $2, $3, now())
     ON CONFLICT (workspace_id, member_id) DO UPDATE SET sealed_secret = $3, created_at = now(), last_step = NULL
       WHERE f.confirmed_at IS NULL`,
    [workspaceId, memberId, sealedSecret],
  );
  return rowCount === 1;
}

/**
 * Records `step` as used when it is later than the last one used: of two posts of the same code, one wins. With
 * `confirm`, the factor also becomes confirmed (the end of an enrolment, which must still be unconfirmed).
 */
export async function useStep(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  step: number,
  confirm: boolean,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE member_second_factors SET last_step = $3, confirmed_at = CASE WHEN $4 THEN now() ELSE confirmed_at END
      WHERE workspace_id = $1 AND member_id = $2 AND (last_step IS NULL OR last_step < $3)
        AND (confirmed_at IS NULL) = $4`,
    [workspaceId, memberId, step, confirm],
  );
  return rowCount === 1;
}

/** Removes the member's secret and recovery codes; true when there was a secret. */
export async function deleteSecondFactor(db: Queryable, workspaceId: string, memberId: string): Promise<boolean> {
  await db.query('DELETE FROM member_recovery_codes WHERE workspace_id = $1 AND member_id = $2', [
    workspaceId,
    memberId,
  ]);
  const { rowCount } = await db.query('DELETE FROM member_second_factors WHERE workspace_id = $1 AND member_id = $2', [
    workspaceId,
    memberId,
  ]);
  return rowCount === 1;
}

export async function replaceRecoveryCodes(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  codeHashes: Buffer[],
): Promise<void> {
  await db.query('DELETE FROM member_recovery_codes WHERE workspace_id = $1 AND member_id = $2', [
    workspaceId,
    memberId,
  ]);
  await db.query(
    `INSERT INTO member_recovery_codes (workspace_id, member_id, code_hash, created_at)
     SELECT $1, $2, h, now() FROM unnest($3::bytea[]) AS h`,
    [workspaceId, memberId, codeHashes],
  );
}

/** Deletes the code and answers whether it was there: a code works once, even for two posts at once. */
export async function takeRecoveryCode(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  codeHash: Buffer,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM member_recovery_codes WHERE workspace_id = $1 AND member_id = $2 AND code_hash = $3
        AND EXISTS (SELECT 1 FROM member_second_factors f
                     WHERE f.workspace_id = $1 AND f.member_id = $2 AND f.confirmed_at IS NOT NULL)`,
    [workspaceId, memberId, codeHash],
  );
  return rowCount === 1;
}

export async function countRecoveryCodes(db: Queryable, workspaceId: string, memberId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM member_recovery_codes WHERE workspace_id = $1 AND member_id = $2',
    [workspaceId, memberId],
  );
  return rows[0]?.n ?? 0;
}

/** The members of a workspace with a confirmed second factor. */
export async function membersWithSecondFactor(db: Queryable, workspaceId: string): Promise<Set<string>> {
  const { rows } = await db.query<{ member_id: string }>(
    'SELECT member_id FROM member_second_factors WHERE workspace_id = $1 AND confirmed_at IS NOT NULL',
    [workspaceId],
  );
  return new Set(rows.map((r) => r.member_id));
}

export async function workspaceRequiresSecondFactor(db: Queryable, workspaceId: string): Promise<boolean> {
  const { rows } = await db.query<{ require_second_factor: boolean }>(
    'SELECT require_second_factor FROM workspaces WHERE id = $1',
    [workspaceId],
  );
  return rows[0]?.require_second_factor === true;
}

export async function setWorkspaceRequiresSecondFactor(
  db: Queryable,
  workspaceId: string,
  required: boolean,
): Promise<void> {
  await db.query('UPDATE workspaces SET require_second_factor = $2 WHERE id = $1', [workspaceId, required]);
}

/** `rotate-key`: every secret, locked for the caller's transaction (maintenance: spans workspaces). */
export async function lockAllSecondFactorSecrets(
  db: Queryable,
): Promise<{ workspace_id: string; member_id: string; sealed_secret: string }[]> {
  const { rows } = await db.query<{ workspace_id: string; member_id: string; sealed_secret: string }>(
    'SELECT workspace_id, member_id, sealed_secret FROM member_second_factors ORDER BY workspace_id, member_id FOR UPDATE',
  );
  return rows;
}

export async function updateSecondFactorSecret(
  db: Queryable,
  workspaceId: string,
  memberId: string,
  sealedSecret: string,
): Promise<void> {
  await db.query('UPDATE member_second_factors SET sealed_secret = $3 WHERE workspace_id = $1 AND member_id = $2', [
    workspaceId,
    memberId,
    sealedSecret,
  ]);
}
