// SQL of the shared rate-limit buckets: one row per credential, charged with what each node used since its last
// report. Maintenance-like: one statement spans the workspaces of every credential a node has served lately.
import type { Db, Queryable } from '../db/pool.js';
import type { BucketUsage, RateLimitOptions, SharedBucketStore } from './rate-limit.js';

/** The shared buckets in PostgreSQL (when REDIS_URL is unset): each report is one statement, `reportBucketUsage`. */
export function postgresBucketStore(db: Db): SharedBucketStore {
  return { report: (usage, options) => reportBucketUsage(db, usage, options), close: async () => undefined };
}

/**
 * Refills each credential's bucket for the time since its last report (PostgreSQL's clock, so the nodes' clocks do not
 * matter), takes off what was used, never below -burst, and answers the levels. A credential seen for the first time
 * starts from a full bucket. `usage` must be sorted the same way by every caller (rows are locked in its order).
 */
export async function reportBucketUsage(
  db: Queryable,
  usage: BucketUsage[],
  { burst, perSecond }: RateLimitOptions,
): Promise<Map<string, number>> {
  // The inserted row is a full bucket less what was used, so in the update `$4 - excluded.tokens` is what was used. (Its
  // floor at -burst changes nothing there: a charge of 2 × burst or more takes any bucket down to the floor anyway.)
  const { rows } = await db.query<{ credential_id: string; tokens: number }>(
    `INSERT INTO rate_limit_buckets AS b (workspace_id, credential_id, tokens, updated_at)
     SELECT u.workspace_id, u.credential_id, greatest(-$4::float8, $4::float8 - u.used), now()
     FROM unnest($1::uuid[], $2::uuid[], $3::float8[]) AS u(workspace_id, credential_id, used)
     ON CONFLICT (workspace_id, credential_id) DO UPDATE
     SET tokens = greatest(-$4::float8,
                         least($4::float8, b.tokens + $5::float8 * greatest(0, extract(epoch FROM excluded.updated_at - b.updated_at)))
                           - ($4::float8 - excluded.tokens)),
         updated_at = greatest(b.updated_at, excluded.updated_at)
     RETURNING credential_id, tokens`,
    [usage.map((u) => u.workspaceId), usage.map((u) => u.credentialId), usage.map((u) => u.used), burst, perSecond],
  );
  return new Map(rows.map((r) => [r.credential_id, r.tokens]));
}
