// The periodic sweeps of the lifecycle: expiry (created or pending past expires_at), and reconciliation
// (asking the provider about anything in flight that has gone quiet, in case a callback was lost).
// Maintenance: these queries span workspaces; each change they cause is scoped to its own workspace.
import type { FastifyBaseLogger } from 'fastify';
import type { TransactionBatcher } from '../../db/batcher.js';
import type { Db } from '../../db/pool.js';
import { queryNoticeId, type ProviderNotices } from './notices.service.js';
import { ANSWER_BY_CALLBACK } from '../providers/provider.js';
import type { ProviderRegistry } from '../providers/providers.registry.js';
import { MOVEMENTS, type Lifecycle } from './lifecycle.service.js';
import type { MovementType } from './movement.js';
import * as repo from './movements.repository.js';

/**
 * Expires collections still created or pending past their expires_at. One the provider has already been
 * given is asked about first: if the payer authorised at the last moment, the provider's answer is applied
 * instead (a provider that cannot be reached does not hold expiry up). The expiries share transactions (the batcher's),
 * and one that fails neither holds up nor loses the rest. Returns how many were looked at (at most `batch`).
 */
export async function expireDue(
  db: Db,
  batcher: TransactionBatcher,
  lifecycle: Lifecycle,
  providers: ProviderRegistry,
  notices: ProviderNotices,
  log: FastifyBaseLogger,
  batch = 200,
): Promise<number> {
  // One batch per run: a row that keeps failing is tried again next run, never in a loop.
  const rows = await repo.dueForExpiry(db, batch);
  for (let i = 0; i < rows.length; i += PARALLEL) {
    await Promise.all(
      rows.slice(i, i + PARALLEL).map(async (row) => {
        try {
          const provider = providers.get(row.provider);
          if (provider && row.provider_reference !== null) {
            const answer = await provider
              .queryStatus('collection', row.id, row.provider_reference)
              .catch((err: unknown) => {
                log.warn(
                  { err, collection_id: row.id },
                  'provider status query before expiry failed; expiring by the clock',
                );
                return undefined;
              });
            if (answer && answer !== ANSWER_BY_CALLBACK && answer.status !== 'pending') {
              const outcome = await notices.apply(provider.name, {
                ...answer,
                noticeId: queryNoticeId('collection', row.id, answer.status),
              });
              if (outcome === 'applied') return;
            }
          }
          await batcher.run((tx) =>
            lifecycle.move(tx, 'collection', row.workspace_id, row.id, 'expired', { cause: 'expiry' }),
          );
        } catch (err) {
          log.error({ err, collection_id: row.id }, 'expiry failed for this collection; the next sweep tries again');
        }
      }),
    );
  }
  return rows.length;
}

/** Collections looked at at once (each may wait on its provider's status query). */
const PARALLEL = 32;

/**
 * Asks providers about collections, refunds and payouts in flight with no news for `afterSeconds` (of the providers
 * named in `only`, or all); returns how many were asked.
 */
export async function reconcile(
  db: Db,
  providers: ProviderRegistry,
  notices: ProviderNotices,
  log: FastifyBaseLogger,
  afterSeconds: number,
  only?: string[],
  batch = 100,
): Promise<number> {
  const rows = await repo.claimQuiet(db, Object.values(MOVEMENTS), afterSeconds, batch, only);
  await askAbout(rows, providers, notices, log);
  return rows.length;
}

/**
 * As `reconcile`, for one workspace's operations with no news for `afterSeconds` (0: all in flight): the status
 * queries the sandbox test clock's move made due (src/modules/sandbox/clock.service.ts). Returns how many were asked.
 */
export async function reconcileWorkspace(
  db: Db,
  providers: ProviderRegistry,
  notices: ProviderNotices,
  log: FastifyBaseLogger,
  workspaceId: string,
  afterSeconds: number,
  batch = 100,
): Promise<number> {
  const rows = await repo.claimQuietOfWorkspace(db, workspaceId, Object.values(MOVEMENTS), afterSeconds, batch);
  await askAbout(rows, providers, notices, log);
  return rows.length;
}

/** Asks each operation's provider about it and applies a changed answer as a notice. */
async function askAbout(
  rows: readonly { kind: MovementType; id: string; provider: string; reference: string }[],
  providers: ProviderRegistry,
  notices: ProviderNotices,
  log: FastifyBaseLogger,
): Promise<void> {
  for (const row of rows) {
    const provider = providers.get(row.provider);
    if (!provider) continue;
    try {
      const answer = await provider.queryStatus(row.kind, row.id, row.reference);
      if (!answer || answer === ANSWER_BY_CALLBACK) continue;
      // The same answer twice is one notice: asking again about a quiet operation changes nothing.
      await notices.apply(provider.name, { ...answer, noticeId: queryNoticeId(row.kind, row.id, answer.status) });
    } catch (err) {
      log.warn({ err, kind: row.kind, id: row.id, provider: row.provider }, 'provider status query failed');
    }
  }
}
