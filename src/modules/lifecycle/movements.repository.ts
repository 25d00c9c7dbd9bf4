// SQL of the lifecycle's sweeps: initiations due (never sent, or their last attempt failed), collections due to
// expire, and operations in flight that have gone quiet. Maintenance: these span workspaces; each change they lead
// to is made in its own workspace.
import type { Queryable } from '../../db/pool.js';
import type { NoticeObjectType } from '../providers/provider.js';

export type SubmissionKind = 'collection' | 'refund' | 'payout';

/**
 * Claims up to 100 due initiations of each kind (a collection `created`, a refund `requested`, a payout `created`,
 * none yet with its provider), pushing each one's `submit_after` on by a backoff of 2^attempts seconds (at most 60):
 * a lease and a persisted backoff in one.
 */
export async function claimDueInitiations(
  db: Queryable,
): Promise<{ kind: SubmissionKind; workspace_id: string; id: string; submit_attempts: number }[]> {
  const { rows } = await db.query<{ kind: SubmissionKind; workspace_id: string; id: string; submit_attempts: number }>(
    `WITH collection AS (
       UPDATE collections SET submit_attempts = submit_attempts + 1,
              submit_after = now() + make_interval(secs => least(60, 2 ^ (submit_attempts + 1)))
       WHERE id IN (SELECT id FROM collections WHERE status = 'created' AND submitted_at IS NULL AND submit_after <= now()
                    ORDER BY submit_after LIMIT 100 FOR UPDATE SKIP LOCKED)
       RETURNING workspace_id, id, submit_attempts),
     refund AS (
       UPDATE refunds SET submit_attempts = submit_attempts + 1,
              submit_after = now() + make_interval(secs => least(60, 2 ^ (submit_attempts + 1)))
       WHERE id IN (SELECT id FROM refunds WHERE status = 'requested' AND submitted_at IS NULL AND submit_after <= now()
                    ORDER BY submit_after LIMIT 100 FOR UPDATE SKIP LOCKED)
       RETURNING workspace_id, id, submit_attempts),
     payout AS (
       UPDATE payouts SET submit_attempts = submit_attempts + 1,
              submit_after = now() + make_interval(secs => least(60, 2 ^ (submit_attempts + 1)))
       WHERE id IN (SELECT id FROM payouts WHERE status = 'created' AND submitted_at IS NULL AND submit_after <= now()
                    ORDER BY submit_after LIMIT 100 FOR UPDATE SKIP LOCKED)
       RETURNING workspace_id, id, submit_attempts)
     SELECT 'collection' AS kind, workspace_id, id, submit_attempts FROM collection
     UNION ALL SELECT 'refund', workspace_id, id, submit_attempts FROM refund
     UNION ALL SELECT 'payout', workspace_id, id, submit_attempts FROM payout`,
  );
  return rows;
}

/** After a call the provider refused to take (an error answer, a refused connection): the next try after the backoff. */
const RETRY: Record<SubmissionKind, string> = {
  collection: `UPDATE collections SET submit_after = now() + make_interval(secs => least(60, 2 ^ (submit_attempts + 1)))
               WHERE workspace_id = $1 AND id = $2 AND status = 'created' AND submitted_at IS NULL`,
  refund: `UPDATE refunds SET submit_after = now() + make_interval(secs => least(60, 2 ^ (submit_attempts + 1)))
           WHERE workspace_id = $1 AND id = $2 AND status = 'requested' AND submitted_at IS NULL`,
  payout: `UPDATE payouts SET submit_after = now() + make_interval(secs => least(60, 2 ^ (submit_attempts + 1)))
           WHERE workspace_id = $1 AND id = $2 AND status = 'created' AND submitted_at IS NULL`,
};

export async function scheduleRetry(
  db: Queryable,
  kind: SubmissionKind,
  workspaceId: string,
  id: string,
): Promise<void> {
  await db.query(RETRY[kind], [workspaceId, id]);
}

/**
 * Collections still created or pending past their expires_at, oldest first. A reference only claimed by a callback
 * (the push's own answer was lost) comes back as the reference to ask about: never believed, only asked.
 */
export async function dueForExpiry(
  db: Queryable,
  batch: number,
): Promise<{ workspace_id: string; id: string; provider: string; provider_reference: string | null }[]> {
  const { rows } = await db.query<{
    workspace_id: string;
    id: string;
    provider: string;
    provider_reference: string | null;
  }>(
    `SELECT workspace_id, id, provider, coalesce(provider_reference, claimed_reference) AS provider_reference FROM collections
     WHERE status IN ('created', 'pending') AND expires_at <= now() ORDER BY expires_at LIMIT $1`,
    [batch],
  );
  return rows;
}

/**
 * Claims, per kind, the longest-quiet operations in flight at a provider (collections pending or processing, refunds
 * requested or pending, payouts created or pending) with no news for `afterSeconds`, of the providers in `only` (or
 * all), at most `batch` per kind, and marks them asked.
 */
export async function claimQuiet(
  db: Queryable,
  afterSeconds: number,
  batch: number,
  only: string[] | undefined,
): Promise<{ kind: NoticeObjectType; id: string; provider: string; reference: string }[]> {
  const { rows } = await db.query<{ kind: NoticeObjectType; id: string; provider: string; reference: string }>(
    `WITH collection AS (
       UPDATE collections SET checked_at = now() WHERE id IN (
         SELECT id FROM collections
         WHERE status IN ('pending', 'processing') AND coalesce(provider_reference, claimed_reference) IS NOT NULL
           AND greatest(updated_at, checked_at) < now() - make_interval(secs => $1)
           AND ($3::text[] IS NULL OR provider = ANY($3))
         ORDER BY greatest(updated_at, checked_at) LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, provider, coalesce(provider_reference, claimed_reference) AS reference),
     refund AS (
       UPDATE refunds SET checked_at = now() WHERE id IN (
         SELECT id FROM refunds
         WHERE status IN ('requested', 'pending') AND coalesce(provider_reference, claimed_reference) IS NOT NULL
           AND greatest(updated_at, checked_at) < now() - make_interval(secs => $1)
           AND ($3::text[] IS NULL OR provider = ANY($3))
         ORDER BY greatest(updated_at, checked_at) LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, provider, coalesce(provider_reference, claimed_reference) AS reference),
     payout AS (
       UPDATE payouts SET checked_at = now() WHERE id IN (
         SELECT id FROM payouts
         WHERE status IN ('created', 'pending') AND coalesce(provider_reference, claimed_reference) IS NOT NULL
           AND greatest(updated_at, checked_at) < now() - make_interval(secs => $1)
           AND ($3::text[] IS NULL OR provider = ANY($3))
         ORDER BY greatest(updated_at, checked_at) LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, provider, coalesce(provider_reference, claimed_reference) AS reference)
     SELECT 'collection' AS kind, id, provider, reference FROM collection
     UNION ALL SELECT 'refund', id, provider, reference FROM refund
     UNION ALL SELECT 'payout', id, provider, reference FROM payout`,
    [afterSeconds, batch, only ?? null],
  );
  return rows;
}
