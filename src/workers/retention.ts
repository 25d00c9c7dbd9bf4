// Retention: what the service keeps only for a while, and the purges that delete it on a schedule (docs/operations.md,
// "What is kept and for how long"). Every purge deletes in batches, each batch one short statement found by an index
// range scan (src/platform/purge.ts); the SQL is in each module's repository. Maintenance: they span workspaces.
import type { Config } from '../config.js';
import type { Db } from '../db/pool.js';
import { purgeAuditEventsOfAllWorkspaces } from '../modules/audit/audit.repository.js';
import { purgeIdleSessions } from '../modules/dashboard/dashboard.repository.js';
import { IDLE_LIMIT_MS } from '../modules/dashboard/sessions.js';
import { purgeNotices } from '../modules/lifecycle/notices.repository.js';
import { purgeOldQueries } from '../modules/providers/mpesa-daraja/daraja.repository.js';
import { purgeOldWebpayments } from '../modules/providers/orange-money/orange.repository.js';
import { purgeFinishedDeliveries, purgePublishedOutbox } from '../modules/webhooks/relay.repository.js';
import type { IdempotencyEngine } from '../platform/idempotency.js';
import { deleteInBatches, type PurgeResult } from '../platform/purge.js';

const DAY_SECONDS = 86_400;

/** A published outbox row is the relay's finished to-do: the events table keeps the history. */
export const OUTBOX_RETENTION_SECONDS = DAY_SECONDS;
/** Daraja status queries never answered (it repeats no callback) are forgotten after a day; the sweeps ask again. */
export const CONNECTOR_QUERY_RETENTION_SECONDS = DAY_SECONDS;
/**
 * Orange Money sessions are asked about while their collection is open, and after its expiry for a late payment: kept
 * 30 days, past the longest expiry a rail may have (7 days).
 */
export const ORANGE_WEBPAYMENT_RETENTION_SECONDS = 30 * DAY_SECONDS;

/** Finished deliveries (succeeded or failed) older than the retention, with their attempts; never pending ones. */
export async function purgeWebhookDeliveries(
  db: Db,
  retentionDays: number,
  batchSize: number,
): Promise<PurgeResult & { attempts: number }> {
  let attempts = 0;
  const result = await deleteInBatches(batchSize, async (limit) => {
    const gone = await purgeFinishedDeliveries(db, retentionDays * DAY_SECONDS, limit);
    attempts += gone.attempts;
    return gone.deliveries;
  });
  return { ...result, attempts };
}

/** Provider notices received longer ago than the retention. */
export function purgeProviderNotices(db: Db, retentionDays: number, batchSize: number): Promise<PurgeResult> {
  return deleteInBatches(batchSize, (limit) => purgeNotices(db, retentionDays * DAY_SECONDS, limit));
}

export function purgeOutbox(db: Db, batchSize: number): Promise<PurgeResult> {
  return deleteInBatches(batchSize, (limit) => purgePublishedOutbox(db, OUTBOX_RETENTION_SECONDS, limit));
}

export function purgeConnectorQueries(db: Db, batchSize: number): Promise<PurgeResult> {
  return deleteInBatches(batchSize, (limit) => purgeOldQueries(db, CONNECTOR_QUERY_RETENTION_SECONDS, limit));
}

export function purgeOrangeWebpayments(db: Db, batchSize: number): Promise<PurgeResult> {
  return deleteInBatches(batchSize, (limit) => purgeOldWebpayments(db, ORANGE_WEBPAYMENT_RETENTION_SECONDS, limit));
}

/** Dashboard sessions past their idle limit: they can no longer be used. */
export function purgeDashboardSessions(db: Db, batchSize: number): Promise<PurgeResult> {
  return deleteInBatches(batchSize, (limit) => purgeIdleSessions(db, IDLE_LIMIT_MS / 1000, limit));
}

/** Audit events older than the retention (the table refuses to delete any younger than 30 days). */
export function purgeAuditEvents(db: Db, retentionDays: number, batchSize: number): Promise<PurgeResult> {
  return deleteInBatches(batchSize, (limit) => purgeAuditEventsOfAllWorkspaces(db, retentionDays * DAY_SECONDS, limit));
}

export interface Purge {
  /** The job's name in logs. */
  name: string;
  run(): Promise<PurgeResult>;
}

/** Every purge, with the retention and batch size configured; the workers run each every PURGE_INTERVAL_MS. */
export function retentionPurges(
  db: Db,
  idempotency: IdempotencyEngine,
  config: Pick<
    Config,
    'purgeBatchSize' | 'webhookDeliveryRetentionDays' | 'providerNoticeRetentionDays' | 'auditRetentionDays'
  >,
): Purge[] {
  const batch = config.purgeBatchSize;
  return [
    // Outcomes past IDEMPOTENCY_RETENTION_SECONDS: each row carries its own expiry.
    { name: 'idempotency-purge', run: () => idempotency.purgeExpired(batch) },
    { name: 'outbox-purge', run: () => purgeOutbox(db, batch) },
    { name: 'connector-queries-purge', run: () => purgeConnectorQueries(db, batch) },
    { name: 'orange-webpayments-purge', run: () => purgeOrangeWebpayments(db, batch) },
    { name: 'dashboard-sessions-purge', run: () => purgeDashboardSessions(db, batch) },
    {
      name: 'webhook-deliveries-purge',
      run: () => purgeWebhookDeliveries(db, config.webhookDeliveryRetentionDays, batch),
    },
    {
      name: 'provider-notices-purge',
      run: () => purgeProviderNotices(db, config.providerNoticeRetentionDays, batch),
    },
    { name: 'audit-events-purge', run: () => purgeAuditEvents(db, config.auditRetentionDays, batch) },
  ];
}
