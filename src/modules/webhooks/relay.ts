// The webhook relay: turns outbox rows into one delivery per subscribed endpoint, then sends due deliveries.
// At least once: a delivery is held by a lease while it is sent; a worker that dies mid-attempt leaves the lease to
// run out and another (or the restarted one) sends it again. A claim leases its rows in the same statement, so two
// workers never send the same attempt at once. A slow or dead endpoint holds at most `endpointConcurrency` of this
// process's `concurrency` slots; the others keep flowing. The SQL is in relay.repository.ts.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { PaymentsEnv } from '../../config.js';
import { isDatabaseUnavailable } from '../../db/errors.js';
import { withTransaction, type Db } from '../../db/pool.js';
import { uuidv7 } from '../../platform/ids.js';
import type { SecretBox } from '../../platform/secret-box.js';
import { subscribes } from './event-types.js';
import { notSent, send, storable, type AttemptResult } from './sender.js';
import { signedHeaders } from './signing.js';
import type { LookUpAddresses } from './url-guard.js';
import * as repo from './relay.repository.js';
import { enabledEndpoints, failPendingDeliveries } from './webhooks.repository.js';
import { signingSecrets } from './webhooks.service.js';

export interface RelayOptions {
  env: PaymentsEnv;
  /** Delays before each retry (ms): the first entry follows the first failure. */
  retryScheduleMs: number[];
  timeoutMs: number;
  concurrency: number;
  endpointConcurrency: number;
  /** Opens the endpoints' signing secrets, stored sealed. */
  box: SecretBox;
  /** Name resolution for the production address guard (the system resolver unless a test says otherwise). */
  lookUpAddresses?: LookUpAddresses;
  registry?: Registry;
}

const FAN_OUT_BATCH = 500;
/** Retry-After is honoured up to this long. */
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** Retries land within ±10% of their scheduled delay, so failures of many deliveries do not retry in lockstep. */
const JITTER = 0.1;
/** At most this many attempts are written by one statement. */
const RECORD_BATCH = 200;

export function retryDelay(
  scheduleMs: number[],
  failedAttempts: number,
  retryAfterMs: number | undefined,
  random = Math.random,
): number {
  const base = scheduleMs[failedAttempts - 1] ?? 0;
  const jittered = Math.round(base * (1 + (random() * 2 - 1) * JITTER));
  return retryAfterMs === undefined ? jittered : Math.max(jittered, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/** Takes one from a count kept per key, dropping the key at zero. */
function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left <= 0) counts.delete(key);
  else counts.set(key, left);
}

/** An attempt waiting to be written with others (`writeRecords`). */
interface PendingRecord {
  record: repo.AttemptRecord;
  done: (recorded: boolean) => void;
  failed: (err: unknown) => void;
}

export class WebhookRelay {
  private readonly inFlight = new Set<Promise<void>>();
  /** Per endpoint, this process's attempts in flight. */
  private readonly perEndpoint = new Map<string, number>();
  /** Endpoints whose slot freed since the pump last claimed for them: each is refilled from its own due deliveries. */
  private readonly refill = new Set<string>();
  /** Endpoints that answered 410 Gone and are being disabled, with how many such answers are being recorded. */
  private readonly gone = new Map<string, number>();
  private readonly toRecord: PendingRecord[] = [];
  private recording = false;
  private stopped = false;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  /** Whether the running or next pump claims across endpoints (a poll, a resend, a slot freed for the process). */
  private acrossAgain = false;
  private readonly attemptsTotal: Counter<'outcome'> | undefined;
  private readonly lag: Histogram | undefined;

  constructor(
    private readonly db: Db,
    private readonly options: RelayOptions,
    private readonly log: FastifyBaseLogger,
  ) {
    if (options.registry) {
      this.attemptsTotal = new Counter({
        name: 'webhook_attempts_total',
        help: 'Webhook delivery attempts, by outcome (succeeded, failed)',
        labelNames: ['outcome'],
        registers: [options.registry],
      });
      this.lag = new Histogram({
        name: 'webhook_delivery_lag_seconds',
        help: 'From the change an event records to its first successful delivery',
        buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600],
        registers: [options.registry],
      });
    }
  }

  /**
   * One poll: fan new events out, then have what is due sent. It does not wait for the sending, so the next poll (its
   * fan-out of new events) never waits for busy endpoints to drain.
   */
  async tick(): Promise<void> {
    if (this.stopped) return;
    while ((await this.fanOut()) === FAN_OUT_BATCH && !this.stopped);
    this.kick();
  }

  /** Sends due deliveries now (after a resend, say) rather than at the next poll. */
  kick(): void {
    this.acrossAgain = true;
    this.pumpSoon();
  }

  /** Outbox rows → deliveries, in one transaction; returns how many outbox rows it published. */
  async fanOut(): Promise<number> {
    return withTransaction(this.db, async (tx) => {
      const batch = await repo.unpublishedOutbox(tx, FAN_OUT_BATCH);
      if (batch.length === 0) return 0;
      const endpoints = await enabledEndpoints(tx, [...new Set(batch.map((b) => b.workspace_id))], true);
      const deliveries = {
        ids: [] as string[],
        workspaces: [] as string[],
        events: [] as string[],
        endpoints: [] as string[],
      };
      for (const item of batch) {
        for (const endpoint of endpoints) {
          // An endpoint receives the events that happened after it was created and that it subscribes to.
          if (endpoint.workspace_id !== item.workspace_id || endpoint.created_at > item.created_at) continue;
          if (!subscribes(endpoint.enabled_events, item.type)) continue;
          deliveries.ids.push(uuidv7());
          deliveries.workspaces.push(item.workspace_id);
          deliveries.events.push(item.event_id);
          deliveries.endpoints.push(endpoint.id);
        }
      }
      if (deliveries.ids.length > 0) {
        await repo.insertDeliveries(tx, deliveries, this.options.retryScheduleMs.length + 1, new Date());
      }
      await repo.markPublished(
        tx,
        batch.map((b) => b.id),
      );
      return batch.length;
    });
  }

  /** Starts a pump (or asks the running one for another round) without waiting for it; a failure is logged. */
  private pumpSoon(): void {
    void this.pump().catch((err: unknown) =>
      // A database away for a moment (the next poll tries again) is not an error worth a person's look.
      isDatabaseUnavailable(err)
        ? this.log.warn({ err: { message: (err as Error).message } }, 'webhook relay paused: database unavailable')
        : this.log.error({ err }, 'webhook relay failed'),
    );
  }

  /** Claims and starts due deliveries while slots are free; never runs twice at once in one process. */
  private pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return this.pumping;
    }
    // Cleared in a `finally` callback, which always runs after this assignment (clearing it inside the async body
    // could run first, and store the settled promise for good). A refill or kick that came after the pump's last
    // round but before this callback only set `pumpAgain`: a new pump takes it rather than leave it to the next poll.
    this.pumping = this.claimWhileFree().finally(() => {
      this.pumping = undefined;
      if (this.pumpAgain && !this.stopped) this.pumpSoon();
    });
    return this.pumping;
  }

  /** This process's slots not sending now. */
  private free(): number {
    return this.options.concurrency - this.inFlight.size;
  }

  /**
   * First refills the endpoints whose slots freed, each from its own due deliveries (a cheap index range). Then, when
   * asked, claims across endpoints until the slots are full or nothing more is due: a short claim means nothing more
   * is due, unless an endpoint reached its share in it, and the next claim leaves that endpoint out to reach the
   * deliveries of others behind it.
   */
  private async claimWhileFree(): Promise<void> {
    const leaseMs = this.options.timeoutMs + 5000;
    do {
      this.pumpAgain = false;
      const endpoints = [...this.refill];
      this.refill.clear();
      for (const endpointId of endpoints) {
        const room = Math.min(this.free(), this.options.endpointConcurrency - (this.perEndpoint.get(endpointId) ?? 0));
        if (this.stopped || room <= 0 || this.gone.has(endpointId)) continue;
        const claimed = await repo.claimForEndpoint(this.db, { endpointId, slots: room, leaseMs, token: randomUUID() });
        await this.startOrHandBack(claimed);
      }
      if (!this.acrossAgain) continue;
      this.acrossAgain = false;
      while (!this.stopped) {
        const free = this.free();
        if (free <= 0) break;
        const excludedBefore = this.excluded().length;
        const claimed = await repo.claimAcrossEndpoints(this.db, {
          busy: Object.fromEntries(this.perEndpoint),
          share: this.options.endpointConcurrency,
          slots: free,
          leaseMs,
          token: randomUUID(),
          excluded: this.excluded(),
        });
        await this.startOrHandBack(claimed);
        if (claimed.length === 0 || (claimed.length < free && this.excluded().length === excludedBefore)) break;
      }
    } while (this.pumpAgain && !this.stopped);
  }

  /**
   * Starts the claimed deliveries that still fit (a slot of the process free, their endpoint below its share and not
   * answering 410: something may have changed while the claim ran); the others go back at once, unsent.
   */
  private async startOrHandBack(claimed: repo.ClaimedDelivery[]): Promise<void> {
    const back: repo.ClaimedDelivery[] = [];
    for (const delivery of claimed) {
      if (!this.stopped && this.fits(delivery.endpoint_id)) this.start(delivery);
      else back.push(delivery);
    }
    if (back.length > 0) await repo.handBack(this.db, back);
  }

  /** Whether one more attempt to this endpoint fits: a slot of the process free and the endpoint below its share. */
  private fits(endpointId: string): boolean {
    return (
      this.free() > 0 &&
      !this.gone.has(endpointId) &&
      (this.perEndpoint.get(endpointId) ?? 0) < this.options.endpointConcurrency
    );
  }

  /** Endpoints the claim across endpoints leaves out: those at their share here, and those answering 410. */
  private excluded(): string[] {
    const saturated = [...this.perEndpoint].filter(([, n]) => n >= this.options.endpointConcurrency).map(([id]) => id);
    return [...new Set([...saturated, ...this.gone.keys()])];
  }

  private start(delivery: repo.ClaimedDelivery): void {
    this.perEndpoint.set(delivery.endpoint_id, (this.perEndpoint.get(delivery.endpoint_id) ?? 0) + 1);
    // The endpoint's slot is given back once the HTTP attempt is over, before its result is written (writing it sends
    // nothing to the endpoint, and the delivery stays leased until it is written); the endpoint is then refilled.
    let released = false;
    const endpointFreed = (): void => {
      if (released) return;
      released = true;
      decrement(this.perEndpoint, delivery.endpoint_id);
      if (this.stopped) return;
      this.refill.add(delivery.endpoint_id);
      this.pumpSoon();
    };
    // Begun from a microtask, so that this task is counted in flight before anything `deliver` calls back runs.
    const task = Promise.resolve()
      .then(() => this.deliver(delivery, endpointFreed))
      .catch((err: unknown) =>
        this.log.error({ err, delivery_id: delivery.id }, 'webhook delivery could not be recorded'),
      )
      .finally(() => {
        // When every slot of the process was taken, others' deliveries may be waiting: claim across endpoints.
        const full = this.free() <= 0;
        this.inFlight.delete(task);
        endpointFreed();
        if (full && !this.stopped) this.kick();
      });
    this.inFlight.add(task);
  }

  /** Sends one attempt and records it; `sent` is called between the two unless the endpoint answered 410 Gone. */
  private async deliver(d: repo.ClaimedDelivery, sent: () => void): Promise<void> {
    const body = JSON.stringify({
      id: d.event_id,
      type: d.type,
      timestamp: d.event_created_at.toISOString(),
      data: d.data,
    });
    const now = new Date();
    let result: AttemptResult;
    let secrets: string[] | undefined;
    if (d.endpoint_live) {
      try {
        secrets = signingSecrets(d, now, this.options.box);
      } catch (err) {
        // This process lacks the key the secret is sealed under (a node still on the old key after rotate-key): the
        // operator hears why; the integrator's attempt log says only that it was not sent (retried as any failure).
        this.log.error(
          { err, endpoint_id: d.endpoint_id },
          'a webhook signing secret cannot be opened with the secrets key',
        );
      }
    }
    if (!d.endpoint_live) {
      // Disabled or deleted after this delivery was queued: nothing is sent.
      result = notSent('not sent: the endpoint is disabled or deleted');
    } else if (secrets === undefined) {
      result = notSent('not sent: the service could not read the signing secret');
    } else {
      try {
        const headers = signedHeaders(secrets, d.event_id, now, body);
        result = await send(d.url, headers, body, {
          timeoutMs: this.options.timeoutMs,
          env: this.options.env,
          lookUpAddresses: this.options.lookUpAddresses,
        });
      } catch (err) {
        result = notSent(`not sent: ${(err as Error).message}`);
      }
    }
    // A 410 disables the endpoint when it is recorded: until then its slot stays taken, and nothing more is claimed for it.
    if (result.statusCode === 410) this.gone.set(d.endpoint_id, (this.gone.get(d.endpoint_id) ?? 0) + 1);
    else sent();
    await this.record(d, result, now, !d.endpoint_live);
  }

  private async record(d: repo.ClaimedDelivery, result: AttemptResult, startedAt: Date, final = false): Promise<void> {
    const code = result.statusCode;
    const succeeded = code !== undefined && code >= 200 && code < 300;
    const gone = code === 410;
    const why = succeeded ? null : storable(result.error ?? `HTTP ${code}`).slice(0, 1000);
    let status: repo.AttemptRecord['status'] = succeeded ? 'succeeded' : 'failed';
    let nextAt: Date | null = null;
    if (!succeeded && !gone && !final && d.attempts < d.max_attempts) {
      status = 'pending';
      nextAt = new Date(Date.now() + retryDelay(this.options.retryScheduleMs, d.attempts, result.retryAfterMs));
    }
    const record: repo.AttemptRecord = {
      deliveryId: d.id,
      leaseToken: d.lease_token,
      status,
      nextAt,
      why: gone ? 'the endpoint answered 410 Gone; it is now disabled' : why,
      attemptId: uuidv7(),
      workspaceId: d.workspace_id,
      attempt: d.attempts,
      url: d.url,
      statusCode: code ?? null,
      durationMs: result.durationMs,
      responseBody: result.responseBody ?? null,
      error: result.error ?? null,
      succeeded,
      startedAt,
    };
    let recorded: boolean;
    if (!gone) {
      recorded = await new Promise<boolean>((done, failed) => {
        this.toRecord.push({ record, done, failed });
        if (!this.recording) void this.writeRecords();
      });
    } else {
      try {
        recorded = await withTransaction(this.db, async (tx) => {
          await repo.lockEndpoint(tx, d.endpoint_id);
          const updated = await repo.recordAttempts(tx, [record]);
          await repo.disableGoneEndpoint(tx, d.endpoint_id);
          await failPendingDeliveries(
            tx,
            d.workspace_id,
            d.endpoint_id,
            'endpoint disabled: it answered 410 Gone',
            d.id,
          );
          return updated.has(d.id);
        });
      } finally {
        decrement(this.gone, d.endpoint_id);
      }
    }
    if (!recorded) {
      // The lease ran out before the result was written: another worker may be sending it again.
      this.log.warn({ delivery_id: d.id, attempt: d.attempts }, 'webhook attempt finished after its lease ran out');
    }
    this.attemptsTotal?.inc({ outcome: succeeded ? 'succeeded' : 'failed' });
    if (succeeded && d.attempts === 1 && d.kind === 'event') {
      this.lag?.observe((Date.now() - d.event_created_at.getTime()) / 1000);
    }
    if (gone) this.log.warn({ endpoint_id: d.endpoint_id }, 'webhook endpoint answered 410 Gone; disabled');
  }

  /**
   * Writes the attempts waiting to be recorded, with their deliveries' new states, in one statement. One write at a
   * time: the attempts that finish while it runs go together in the next, so a busy relay writes many per round trip
   * and an idle one writes each at once.
   */
  private async writeRecords(): Promise<void> {
    this.recording = true;
    try {
      while (this.toRecord.length > 0) {
        const batch = this.toRecord.splice(0, RECORD_BATCH);
        try {
          const updated = await repo.recordAttempts(
            this.db,
            batch.map((p) => p.record),
          );
          for (const p of batch) p.done(updated.has(p.record.deliveryId));
        } catch (err) {
          if (batch.length === 1) {
            batch[0]!.failed(err);
            continue;
          }
          // One row that cannot be written fails the whole statement: each is then written alone, so only that one is lost.
          for (const p of batch) {
            await repo
              .recordAttempts(this.db, [p.record])
              .then((updated) => p.done(updated.has(p.record.deliveryId)), p.failed);
          }
        }
      }
    } finally {
      this.recording = false;
    }
  }

  /** Stops claiming and waits for the attempts in progress (each is bounded by the timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.pumping;
    await Promise.all([...this.inFlight]);
  }
}
