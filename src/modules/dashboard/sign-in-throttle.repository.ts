// SQL for failed dashboard sign-ins (migrations/027_dashboard_sign_in_failures.sql). Rows are keyed by a hash, before
// anyone is signed in: these statements name no workspace. Times are the database's clock, shared by every node.
import type { Queryable } from '../../db/pool.js';

/** The latest time any of `keyHashes` is blocked until, if later than now: the seconds left, else 0. */
export async function secondsBlocked(db: Queryable, keyHashes: Buffer[]): Promise<number> {
  const { rows } = await db.query<{ seconds: number | null }>(
    `SELECT ceil(extract(epoch FROM max(blocked_until) - now()))::int AS seconds
       FROM dashboard_sign_in_failures WHERE key_hash = ANY($1) AND blocked_until > now()`,
    [keyHashes],
  );
  return Math.max(0, rows[0]?.seconds ?? 0);
}

/**
 * Counts one failure against a key: its count starts over when its last failure is older than `resetSeconds`; past
 * `free` failures it is blocked for 2^(count − free − 1) seconds (1, 2, 4 …), at most `maxSeconds`. Deletes up to
 * `purgeLimit` rows whose last failure and block are both over `resetSeconds` old, in the same statement.
 */
export async function countFailure(
  db: Queryable,
  keyHash: Buffer,
  rule: { free: number; maxSeconds: number; resetSeconds: number; purgeLimit: number },
): Promise<void> {
  await db.query(
    `WITH stale AS (
       DELETE FROM dashboard_sign_in_failures WHERE key_hash = ANY(ARRAY(
         SELECT key_hash FROM dashboard_sign_in_failures
          WHERE last_failed_at < now() - make_interval(secs => $4)
            AND blocked_until < now() - make_interval(secs => $4) AND key_hash <> $1
          ORDER BY last_failed_at LIMIT $5 FOR UPDATE SKIP LOCKED)))
     INSERT INTO dashboard_sign_in_failures AS f (key_hash, failures, last_failed_at, blocked_until)
     VALUES ($1, 1, now(), CASE WHEN 1 > $2 THEN now() + make_interval(secs => 1) ELSE now() END)
     ON CONFLICT (key_hash) DO UPDATE SET
       failures = (CASE WHEN f.last_failed_at < now() - make_interval(secs => $4) THEN 1 ELSE f.failures + 1 END),
       last_failed_at = now(),
       blocked_until = CASE WHEN (CASE WHEN f.last_failed_at < now() - make_interval(secs => $4) THEN 1 ELSE f.failures + 1 END) > $2
         THEN now() + make_interval(secs => least($3::float8, power(2, (CASE WHEN f.last_failed_at < now() - make_interval(secs => $4) THEN 1 ELSE f.failures + 1 END) - $2 - 1)))
         ELSE now() END`,
    [keyHash, rule.free, rule.maxSeconds, rule.resetSeconds, rule.purgeLimit],
  );
}

export async function forgetFailures(db: Queryable, keyHash: Buffer): Promise<void> {
  await db.query('DELETE FROM dashboard_sign_in_failures WHERE key_hash = $1', [keyHash]);
}
