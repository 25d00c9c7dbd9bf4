// Hands new collections and refunds to their rail provider, outside any transaction (a provider call is
// network I/O), then records the provider's answer in one. A kick right after creation does it at once;
// a periodic sweep catches anything a kick missed (a crash, a provider outage), with backoff.
import type { FastifyBaseLogger } from 'fastify';
import { withTransaction, type Db } from '../../db/pool.js';
import * as collections from '../collections/collections.repository.js';
import { ProviderError } from '../providers/provider.js';
import type { ProviderRegistry } from '../providers/providers.registry.js';
import * as refunds from '../refunds/refunds.repository.js';
import type { Lifecycle } from './lifecycle.service.js';

export type SubmissionKind = 'collection' | 'refund';

interface Job {
  kind: SubmissionKind;
  workspaceId: string;
  id: string;
}

/** A kicked submission normally lands well within this; older unsent ones are the sweep's. */
const SWEEP_GRACE_MS = 5000;
const MAX_QUEUE = 10_000;
const MAX_BACKOFF_MS = 60_000;

export class Submitter {
  private readonly queue: Job[] = [];
  private readonly queued = new Set<string>();
  /** id → when a failed submission may be tried again, and how many times it failed. */
  private readonly backoff = new Map<string, { at: number; failures: number }>();
  private active = 0;
  private stopped = false;
  private idle: (() => void) | undefined;

  constructor(
    private readonly db: Db,
    private readonly providers: ProviderRegistry,
    private readonly lifecycle: Lifecycle,
    private readonly log: FastifyBaseLogger,
    private readonly concurrency = 8,
  ) {}

  kick(kind: SubmissionKind, workspaceId: string, id: string): void {
    if (this.stopped || this.queued.has(id) || this.queue.length >= MAX_QUEUE) return;
    const wait = this.backoff.get(id);
    if (wait && wait.at > Date.now()) return;
    this.queued.add(id);
    this.queue.push({ kind, workspaceId, id });
    this.pump();
  }

  /** Finds initiations that were never sent (or whose sending failed) and sends them. Maintenance: spans workspaces. */
  async sweep(): Promise<void> {
    const stale = await this.db.query<{ kind: SubmissionKind; workspace_id: string; id: string }>(
      `(SELECT 'collection' AS kind, workspace_id, id FROM collections
        WHERE status = 'created' AND submitted_at IS NULL AND created_at < now() - make_interval(secs => $1 / 1000.0)
        ORDER BY expires_at LIMIT 200)
       UNION ALL
       (SELECT 'refund', workspace_id, id FROM refunds
        WHERE status = 'requested' AND submitted_at IS NULL AND requested_at < now() - make_interval(secs => $1 / 1000.0)
        ORDER BY updated_at LIMIT 200)`,
      [SWEEP_GRACE_MS],
    );
    for (const row of stale.rows) this.kick(row.kind, row.workspace_id, row.id);
  }

  /** Stops taking work and waits for the submissions in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    if (this.active > 0) await new Promise<void>((resolve) => (this.idle = resolve));
  }

  private pump(): void {
    while (this.active < this.concurrency && this.queue.length > 0) {
      const job = this.queue.shift() as Job;
      this.active += 1;
      void this.submit(job)
        .then(
          () => this.backoff.delete(job.id),
          (err: unknown) => {
            const failures = (this.backoff.get(job.id)?.failures ?? 0) + 1;
            this.backoff.set(job.id, { at: Date.now() + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** failures), failures });
            const level = err instanceof ProviderError ? 'warn' : 'error';
            this.log[level]({ err, kind: job.kind, id: job.id, failures }, 'provider initiation failed; will retry');
          },
        )
        .finally(() => {
          this.active -= 1;
          this.queued.delete(job.id);
          if (this.active === 0 && this.idle) this.idle();
          this.pump();
        });
    }
  }

  private submit(job: Job): Promise<void> {
    return job.kind === 'collection' ? this.submitCollection(job.workspaceId, job.id) : this.submitRefund(job.workspaceId, job.id);
  }

  private async submitCollection(workspaceId: string, id: string): Promise<void> {
    const row = await collections.findCollection(this.db, workspaceId, id);
    if (!row || row.status !== 'created' || row.submitted_at !== null) return;
    const provider = this.providers.get(row.provider);
    if (!provider) throw new Error(`collection ${id} names provider '${row.provider}', which is not configured`);
    const ack = await provider.initiateCollection({
      id,
      workspaceId,
      market: row.market,
      rail: row.rail,
      amount: row.amount,
      currency: row.currency,
      reference: row.reference,
      customer: row.customer,
      expiresAt: row.expires_at,
    });
    await withTransaction(this.db, (tx) =>
      this.lifecycle.moveCollection(tx, workspaceId, id, ack.status, { cause: `initiation at ${provider.name}`, reason: ack.reason, providerReference: ack.reference }),
    );
  }

  private async submitRefund(workspaceId: string, id: string): Promise<void> {
    const row = await refunds.findRefund(this.db, workspaceId, id);
    if (!row || row.status !== 'requested' || row.submitted_at !== null) return;
    const provider = this.providers.get(row.provider);
    if (!provider) throw new Error(`refund ${id} names provider '${row.provider}', which is not configured`);
    const collection = await collections.findCollection(this.db, workspaceId, row.collection_id);
    const ack = await provider.initiateRefund({
      id,
      workspaceId,
      collectionId: row.collection_id,
      collectionReference: collection?.provider_reference ?? null,
      amount: row.amount,
      currency: row.currency,
    });
    await withTransaction(this.db, (tx) =>
      this.lifecycle.moveRefund(tx, workspaceId, id, ack.status, { cause: `initiation at ${provider.name}`, reason: ack.reason, providerReference: ack.reference }),
    );
  }
}
