// SQL for the sign-in form's one-time values (migrations/021_dashboard_signin_nonces.sql). A value is stored by its
// SHA-256 and taken by it; there is no workspace yet (nobody is signed in), so these statements name none.
import type { Queryable } from '../../db/pool.js';

/**
 * Stores a new value that expires `ttlSeconds` from now (the database's clock, shared by every node), and deletes up
 * to `purgeLimit` expired ones in the same statement: every form drawn clears more than it adds, so forms never posted
 * do not pile up.
 */
export async function insertSignInNonce(
  db: Queryable,
  nonceHash: Buffer,
  ttlSeconds: number,
  purgeLimit: number,
): Promise<void> {
  await db.query(
    `WITH expired AS (
       DELETE FROM dashboard_signin_nonces WHERE nonce_hash = ANY(ARRAY(
         SELECT nonce_hash FROM dashboard_signin_nonces WHERE expires_at < now()
         ORDER BY expires_at LIMIT $3 FOR UPDATE SKIP LOCKED)))
     INSERT INTO dashboard_signin_nonces (nonce_hash, expires_at) VALUES ($1, now() + make_interval(secs => $2))`,
    [nonceHash, ttlSeconds, purgeLimit],
  );
}

/**
 * Deletes the value and says whether it was there and unexpired. One statement: of two posts of the same value at
 * once, only one gets the row back.
 */
export async function takeSignInNonce(db: Queryable, nonceHash: Buffer): Promise<boolean> {
  const { rows } = await db.query<{ live: boolean }>(
    'DELETE FROM dashboard_signin_nonces WHERE nonce_hash = $1 RETURNING expires_at > now() AS live',
    [nonceHash],
  );
  return rows[0]?.live === true;
}
