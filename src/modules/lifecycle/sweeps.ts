// The periodic sweeps of the lifecycle: expiry (created or pending past expires_at), and reconciliation
// (asking the provider about anything in flight that has gone quiet, in case a callback was lost).
// Maintenance: these queries span workspaces; each change they cause is scoped to its own workspace.
import type { FastifyBaseLogger } from 'fastify';
import { withTransaction, type Db } from '../../db/pool.js';
import type { ProviderNotices } from '../providers/notices.service.js';
import type { NoticeObjectType } from '../providers/provider.js';
import type { ProviderRegistry } from '../providers/providers.registry.js';
import type { Lifecycle } from './lifecycle.service.js';

/** Expires every collection past its expires_at that was never authorised; returns how many. */
export async function expireDue(db: Db, lifecycle: Lifecycle, batch = 200): Promise<number> {
  let total = 0;
  for (;;) {
    const expired = await withTransaction(db, async (tx) => {
      const { rows } = await tx.query<{ workspace_id: string; id: string }>(
        `SELECT workspace_id, id FROM collections WHERE status IN ('created', 'pending') AND expires_at <= now()
         ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [batch],
      );
      for (const row of rows) await lifecycle.moveCollection(tx, row.workspace_id, row.id, 'expired', { cause: 'expiry' });
      return rows.length;
    });
    total += expired;
    if (expired < batch) return total;
  }
}

/** Asks providers about collections and refunds in flight with no news for `afterSeconds`; returns how many were asked. */
export async function reconcile(
  db: Db,
  providers: ProviderRegistry,
  notices: ProviderNotices,
  log: FastifyBaseLogger,
  afterSeconds: number,
  batch = 100,
): Promise<number> {
  const { rows } = await db.query<{ kind: NoticeObjectType; id: string; provider: string; reference: string }>(
    `WITH c AS (
       UPDATE collections SET checked_at = now() WHERE id IN (
         SELECT id FROM collections
         WHERE status IN ('pending', 'processing') AND provider_reference IS NOT NULL
           AND greatest(updated_at, checked_at) < now() - make_interval(secs => $1)
         ORDER BY coalesce(checked_at, updated_at) LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, provider, provider_reference),
     r AS (
       UPDATE refunds SET checked_at = now() WHERE id IN (
         SELECT id FROM refunds
         WHERE status IN ('requested', 'pending') AND provider_reference IS NOT NULL
           AND greatest(updated_at, checked_at) < now() - make_interval(secs => $1)
         ORDER BY coalesce(checked_at, updated_at) LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, provider, provider_reference)
     SELECT 'collection' AS kind, id, provider, provider_reference AS reference FROM c
     UNION ALL SELECT 'refund', id, provider, provider_reference FROM r`,
    [afterSeconds, batch],
  );
  for (const row of rows) {
    const provider = providers.get(row.provider);
    if (!provider) continue;
    try {
      const answer = await provider.queryStatus(row.kind, row.id, row.reference);
      if (!answer) continue;
      // The same answer twice is one notice: asking again about a quiet operation changes nothing.
      await notices.apply(provider.name, { ...answer, noticeId: `query:${answer.reference}:${answer.status}` });
    } catch (err) {
      log.warn({ err, kind: row.kind, id: row.id, provider: row.provider }, 'provider status query failed');
    }
  }
  return rows.length;
}
