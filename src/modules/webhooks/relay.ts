// The webhook relay: turns outbox rows into one delivery per subscribed endpoint, then sends due deliveries.
// At least once: a delivery is held by a lease while it is sent; a worker that dies mid-attempt leaves the
// lease to run out and another (or the restarted one) sends it again. Claims re-check the lease in the same
// statement, so two workers never send the same attempt at once. A slow or dead endpoint holds at most
// `endpointConcurrency` of this process's `concurrency` slots; the others keep flowing. A busy endpoint also has up
// to one share of its deliveries leased ahead (held), so that a freed slot sends the next without waiting for a claim.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { PaymentsEnv } from '../../config.js';
import { withTransaction, type Db } from '../../db/pool.js';
import { uuidv7 } from '../../platform/ids.js';
import { subscribes } from './event-types.js';
import * as repo from './webhooks.repository.js';
import { notSent, send, storable, type AttemptResult } from './sender.js';
import { signedHeaders } from './signing.js';
import type { Resolve } from './url-guard.js';
import { signingSecrets } from './webhooks.service.js';

export interface RelayOptions {
  env: PaymentsEnv;
  /** Delays before each retry (ms): the first entry follows the first failure. */
  retryScheduleMs: number[];
  timeoutMs: number;
  concurrency: number;
  endpointConcurrency: number;
  /** Name resolution for the production address guard (the system resolver unless a test says otherwise). */
  resolve?: Resolve;
  registry?: Registry;
}

const FAN_OUT_BATCH = 500;
/** Retry-After is honoured up to this long. */
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** Retries land within ±10% of their scheduled delay, so failures of many deliveries do not retry in lockstep. */
const JITTER = 0.1;

/** Takes one from a count kept per key, dropping the key at zero. */
function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left <= 0) counts.delete(key);
  else counts.set(key, left);
}

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

interface Claimed {
  id: string;
  workspace_id: string;
  event_id: string;
  endpoint_id: string;
  kind: 'event' | 'resend';
  attempts: number;
  max_attempts: number;
  lease_token: string;
  type: string;
  data: Record<string, unknown>;
  event_created_at: Date;
  url: string;
  secret: string;
  previous_secrets: repo.PreviousSecret[];
  endpoint_live: boolean;
}

// One attempt's log row ($6…$16) and its delivery's new state ($1…$5), written together by `record`. The update
// applies only while this worker still holds the lease; a delivery stopped meanwhile (endpoint disabled or
// deleted) stays failed unless this attempt got through.
const INSERT_ATTEMPT = `INSERT INTO webhook_attempts
    (id, workspace_id, delivery_id, attempt, url, status_code, duration_ms, response_body, error, succeeded, created_at)
  VALUES ($6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`;
const UPDATE_DELIVERY = `UPDATE webhook_deliveries SET
    status = CASE WHEN $3 = 'succeeded' OR status = 'pending' THEN $3 ELSE status END,
    next_attempt_at = CASE WHEN $3 = 'succeeded' OR status = 'pending' THEN $4::timestamptz ELSE NULL END,
    last_error = CASE WHEN $3 = 'succeeded' THEN NULL WHEN status = 'pending' THEN $5 ELSE last_error END,
    lease_until = NULL, lease_token = NULL, updated_at = now()
  WHERE id = $1 AND lease_token = $2`;

const RECORD_ONE = `WITH attempt AS (${INSERT_ATTEMPT}) ${UPDATE_DELIVERY}`;
// The same for many attempts at once: parameter $n holds, for each attempt, what $n of RECORD_ONE holds. Returns the
// deliveries it updated (those whose lease this worker still held).
const RECORD_MANY = `WITH r AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[], $6::uuid[], $7::uuid[],
                         $8::uuid[], $9::integer[], $10::text[], $11::integer[], $12::integer[], $13::text[], $14::text[],
                         $15::boolean[], $16::timestamptz[])
      AS r (delivery_id, lease_token, status, next_at, why, attempt_id, workspace_id, attempt_delivery_id, attempt, url,
            status_code, duration_ms, response_body, error, succeeded, created_at)
  ), attempt AS (
    INSERT INTO webhook_attempts
      (id, workspace_id, delivery_id, attempt, url, status_code, duration_ms, response_body, error, succeeded, created_at)
    SELECT attempt_id, workspace_id, delivery_id, attempt, url, status_code, duration_ms, response_body, error, succeeded, created_at
    FROM r
  )
  UPDATE webhook_deliveries d SET
    status = CASE WHEN r.status = 'succeeded' OR d.status = 'pending' THEN r.status ELSE d.status END,
    next_attempt_at = CASE WHEN r.status = 'succeeded' OR d.status = 'pending' THEN r.next_at ELSE NULL END,
    last_error = CASE WHEN r.status = 'succeeded' THEN NULL WHEN d.status = 'pending' THEN r.why ELSE d.last_error END,
    lease_until = NULL, lease_token = NULL, updated_at = now()
  FROM r WHERE d.id = r.delivery_id AND d.lease_token = r.lease_token
  RETURNING d.id`;
/** At most this many attempts are written by one statement. */
const RECORD_BATCH = 200;

/** A delivery leased ahead of a free slot of its endpoint (`claimWhileFree`), and the time by which it must start. */
interface Held {
  delivery: Claimed;
  startBy: number;
}

/** One attempt waiting to be written: RECORD_ONE's parameters (its delivery's new state, then its log row). */
interface PendingRecord {
  params: unknown[];
  done: (recorded: boolean) => void;
  failed: (err: unknown) => void;
}

export class WebhookRelay {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly toRecord: PendingRecord[] = [];
  private recording = false;
  private readonly perEndpoint = new Map<string, number>();
  private stopped = false;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  /** Whether the running or next pump claims across endpoints (a poll, a resend, a slot freed for the process). */
  private acrossAgain = false;
  /** Endpoints whose slot freed since the pump last claimed for them: each is refilled from its own due deliveries. */
  private readonly refill = new Set<string>();
  /** Per endpoint, its deliveries leased ahead, oldest first: a freed slot starts the next at once, without a claim. */
  private readonly held = new Map<string, Held[]>();
  /** Endpoints that answered 410 Gone and are being disabled, with how many such answers are being recorded: nothing held for them is sent. */
  private readonly gone = new Map<string, number>();
  /** Hand-backs under way, which `stop` waits for. */
  private readonly handingBack = new Set<Promise<void>>();
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
   * One poll: fan new events out, then have what is due sent. It does not wait for the sending: with busy endpoints
   * refilling, a pump may run on for as long as their backlogs last, and the next poll (its fan-out of new events,
   * its claim across endpoints) must not wait for it. A pump already running makes this poll's claim across
   * endpoints in its next round.
   */
  async tick(): Promise<void> {
    if (this.stopped) return;
    while ((await this.fanOut()) === FAN_OUT_BATCH && !this.stopped);
    // Held deliveries that found no slot when theirs freed (every slot of the process taken) start or go back now.
    this.startAllHeld();
    this.kick();
  }

  /** Sends due deliveries now (after a resend, say) rather than at the next poll. */
  kick(): void {
    this.acrossAgain = true;
    this.pumpSoon();
  }

  /** A slot of this endpoint freed: its next due delivery goes out now rather than at the next poll. */
  private refillEndpoint(endpointId: string): void {
    this.refill.add(endpointId);
    this.pumpSoon();
  }

  /** Starts a pump (or asks the running one for another round) without waiting for it; a failure is logged. */
  private pumpSoon(): void {
    void this.pump().catch((err: unknown) => this.log.error({ err }, 'webhook relay failed'));
  }

  /** This process's slots not sending now. */
  private free(): number {
    return this.options.concurrency - this.inFlight.size;
  }

  /** Outbox rows → deliveries, in one transaction; returns how many outbox rows it published. */
  async fanOut(): Promise<number> {
    return withTransaction(this.db, async (tx) => {
      const { rows: batch } = await tx.query<{
        id: number;
        event_id: string;
        workspace_id: string;
        type: string;
        created_at: Date;
      }>(
        `SELECT o.id, o.event_id, o.workspace_id, e.type, e.created_at FROM outbox o JOIN events e ON e.id = o.event_id
         WHERE o.published_at IS NULL ORDER BY o.id LIMIT ${FAN_OUT_BATCH} FOR UPDATE OF o SKIP LOCKED`,
      );
      if (batch.length === 0) return 0;
      const endpoints = await repo.enabledEndpoints(tx, [...new Set(batch.map((b) => b.workspace_id))], true);
      const ids: string[] = [];
      const events: string[] = [];
      const targets: string[] = [];
      const workspaces: string[] = [];
      for (const item of batch) {
        for (const endpoint of endpoints) {
          // An endpoint receives the events that happened after it was created and that it subscribes to.
          if (endpoint.workspace_id !== item.workspace_id || endpoint.created_at > item.created_at) continue;
          if (!subscribes(endpoint.enabled_events, item.type)) continue;
          ids.push(uuidv7());
          events.push(item.event_id);
          targets.push(endpoint.id);
          workspaces.push(item.workspace_id);
        }
      }
      if (ids.length > 0) {
        await tx.query(
          `INSERT INTO webhook_deliveries (id, workspace_id, event_id, endpoint_id, kind, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
           SELECT d.id, d.workspace_id, d.event_id, d.endpoint_id, 'event', 'pending', 0, $5, $6, $6, $6
           FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[]) AS d (id, workspace_id, event_id, endpoint_id)
           ON CONFLICT DO NOTHING`,
          // A millisecond time from here, not now(): list cursors carry milliseconds, and a microsecond
          // creation time would fall between two cursor positions and drop rows from a page walk.
          [ids, workspaces, events, targets, this.options.retryScheduleMs.length + 1, new Date()],
        );
      }
      await tx.query('UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[])', [batch.map((b) => b.id)]);
      return batch.length;
    });
  }

  /** Claims and starts due deliveries while slots are free; never runs twice at once in one process. */
  private pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return this.pumping;
    }
    // Cleared in a `finally` callback, which always runs after this assignment. Clearing it inside the async body
    // would run first when the body finishes without waiting (every slot taken): the settled promise would then be
    // stored for good, and every later pump would return it and claim nothing ever again.
    // A refill or kick that came after the pump's last round but before this callback only set `pumpAgain`: a new
    // pump takes it rather than leave it to the next poll.
    this.pumping = this.claimWhileFree().finally(() => {
      this.pumping = undefined;
      if (this.pumpAgain && !this.stopped) this.pumpSoon();
    });
    return this.pumping;
  }

  /**
   * First refills the endpoints whose slots freed, each from its own due deliveries (a cheap index range: a busy
   * endpoint's next delivery goes out as its last one ends). Then, when asked, claims across endpoints until the
   * slots are full or nothing more is due: a short claim means nothing more is due, unless an endpoint reached its
   * share in it, and the next claim leaves that endpoint out to reach the deliveries of others behind it.
   */
  private async claimWhileFree(): Promise<void> {
    do {
      this.pumpAgain = false;
      const endpoints = [...this.refill];
      this.refill.clear();
      for (const endpointId of endpoints) {
        if (this.stopped) continue;
        this.startHeld(endpointId);
        // The endpoint's free slots, and one share more held ahead; claimed again only once half of that is used, so
        // a busy endpoint's claims take several deliveries each and its slots never wait for one.
        // Nothing is held while every slot of the process is taken: it could not start before others free.
        // At most two shares are leased to one endpoint by this process: in flight and held together.
        const share = this.options.endpointConcurrency;
        const queued = this.held.get(endpointId)?.length ?? 0;
        if (queued > share / 2 || this.free() <= 0 || this.gone.has(endpointId)) continue;
        const room = Math.max(0, Math.min(this.free(), share - (this.perEndpoint.get(endpointId) ?? 0)));
        // A held delivery must start within one timeout of its claim: its lease (two timeouts and 5 s) then covers
        // its own attempt as a claim's covers one sent at once. One that cannot is handed back (`startHeld`).
        const startBy = performance.now() + this.options.timeoutMs;
        const claimed = await this.claim(room + share - queued, endpointId, 2 * this.options.timeoutMs + 5000);
        if (claimed.length === 0) continue;
        const queue = this.held.get(endpointId) ?? [];
        for (const delivery of claimed) queue.push({ delivery, startBy });
        this.held.set(endpointId, queue);
        this.startHeld(endpointId);
      }
      if (!this.acrossAgain) continue;
      this.acrossAgain = false;
      while (!this.stopped) {
        const free = this.free();
        if (free <= 0) break;
        const excludedBefore = this.excluded().length;
        const claimed = await this.claim(free);
        // Held deliveries may have taken slots while the claim ran, or an endpoint come to have some held or answer
        // 410: what no longer fits goes back.
        const over: Claimed[] = [];
        for (const delivery of claimed) {
          if (
            this.fits(delivery.endpoint_id) &&
            !this.held.has(delivery.endpoint_id) &&
            !this.gone.has(delivery.endpoint_id)
          )
            this.start(delivery);
          else over.push(delivery);
        }
        this.handBack(over);
        if (claimed.length === 0 || (claimed.length < free && this.excluded().length === excludedBefore)) break;
      }
    } while (this.pumpAgain && !this.stopped);
  }

  /** Endpoints this process already sends to at their full share. */
  private saturated(): string[] {
    return [...this.perEndpoint].filter(([, n]) => n >= this.options.endpointConcurrency).map(([id]) => id);
  }

  /** Whether one more attempt to this endpoint fits: a slot of the process free and the endpoint below its share. */
  private fits(endpointId: string): boolean {
    return this.free() > 0 && (this.perEndpoint.get(endpointId) ?? 0) < this.options.endpointConcurrency;
  }

  /**
   * Endpoints the claim across endpoints leaves out: those at their share, those with deliveries held (their slots fill
   * from those first) and those answering 410.
   */
  private excluded(): string[] {
    return [...new Set([...this.saturated(), ...this.held.keys(), ...this.gone.keys()])];
  }

  private startAllHeld(): void {
    for (const endpointId of [...this.held.keys()]) this.startHeld(endpointId);
  }

  /**
   * Starts this endpoint's held deliveries while it and the process have free slots, oldest first. Those past their
   * time to start are handed back instead, to be claimed again (here or by another worker) with a lease of their own.
   */
  private startHeld(endpointId: string): void {
    const queue = this.held.get(endpointId);
    // After a 410 they wait for its record, which fails them, then hands them back (`record`): handed back before
    // that, the claim across endpoints could take and send them.
    if (!queue || this.gone.has(endpointId)) return;
    const late: Claimed[] = [];
    const now = performance.now();
    while (queue.length > 0 && queue[0]!.startBy < now) late.push(queue.shift()!.delivery);
    while (queue.length > 0 && !this.stopped && this.fits(endpointId)) {
      this.start(queue.shift()!.delivery);
    }
    if (queue.length === 0) this.held.delete(endpointId);
    this.handBack(late);
  }

  /**
   * Gives up held deliveries that were never sent: their lease ends now and the attempt their claim counted is taken
   * back, so the next claim sends them as the attempt they were. A delivery failed meanwhile (its endpoint disabled)
   * stays failed. When this cannot be written, the leases run out as a dead worker's would (and the claim after that
   * counts one attempt more than were made); the failure is logged. `stop` waits for it.
   */
  private handBack(deliveries: Claimed[]): void {
    if (deliveries.length === 0) return;
    const done: Promise<void> = this.db
      .query(
        `UPDATE webhook_deliveries d SET lease_until = NULL, lease_token = NULL, attempts = d.attempts - 1, updated_at = now()
         FROM unnest($1::uuid[], $2::uuid[]) AS h (id, lease_token) WHERE d.id = h.id AND d.lease_token = h.lease_token`,
        [deliveries.map((d) => d.id), deliveries.map((d) => d.lease_token)],
      )
      .then(
        () => undefined,
        (err: unknown) =>
          this.log.error({ err, deliveries: deliveries.length }, 'webhook relay could not hand back held deliveries'),
      )
      .finally(() => this.handingBack.delete(done));
    this.handingBack.add(done);
  }

  /** Due deliveries leased to this process: of one endpoint (up to `limit`), or across endpoints as described below. */
  private async claim(
    limit: number,
    onlyEndpoint: string | null = null,
    leaseMs = this.options.timeoutMs + 5000,
  ): Promise<Claimed[]> {
    const busy: Record<string, number> = Object.fromEntries(this.perEndpoint);
    // Across endpoints: the oldest due deliveries (twice the free slots) of endpoints not yet at their share (left out
    // before the window is taken, so a backlog for one slow endpoint can never fill it and starve everyone else),
    // locked with SKIP LOCKED; of those at most `endpointConcurrency` per endpoint, less what this process already
    // sends there, are leased. For one endpoint: its oldest due deliveries, up to `limit`. Migrations 009 and 010.
    const { rows } = await this.db.query<Claimed>({
      name: 'webhook-relay-claim',
      text: 'SELECT * FROM claim_webhook_deliveries($1::jsonb, $2, $3, $4, $5, $6::uuid[], $7::uuid)',
      values: [
        JSON.stringify(busy),
        this.options.endpointConcurrency,
        limit,
        leaseMs,
        randomUUID(),
        this.excluded(),
        onlyEndpoint,
      ],
    });
    return rows;
  }

  private start(delivery: Claimed): void {
    this.perEndpoint.set(delivery.endpoint_id, (this.perEndpoint.get(delivery.endpoint_id) ?? 0) + 1);
    // The endpoint's slot is given back once the HTTP attempt is over, before its result is written: writing it
    // sends nothing to the endpoint, and the delivery stays leased (unclaimable) until it is written.
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      decrement(this.perEndpoint, delivery.endpoint_id);
    };
    // Its endpoint's slot freed: that endpoint is refilled. The attempt's end frees one of the process's slots too,
    // which matters to other endpoints only when every slot was taken.
    const endpointFreed = (): void => {
      if (!released) {
        release();
        if (this.stopped) return;
        this.startHeld(delivery.endpoint_id);
        this.refillEndpoint(delivery.endpoint_id);
      }
    };
    // Begun from a microtask, so that this task is counted in flight before anything `deliver` calls back runs (an
    // attempt not sent frees its slot at once).
    const task = Promise.resolve()
      .then(() => this.deliver(delivery, endpointFreed))
      .catch((err: unknown) =>
        this.log.error({ err, delivery_id: delivery.id }, 'webhook delivery could not be recorded'),
      )
      .finally(() => {
        const full = this.free() <= 0;
        this.inFlight.delete(task);
        endpointFreed();
        if (full && !this.stopped) {
          this.startAllHeld();
          this.kick();
        }
      });
    this.inFlight.add(task);
  }

  /** Sends one attempt and records it; `sent` is called between the two unless the endpoint answered 410 Gone. */
  private async deliver(d: Claimed, sent: () => void): Promise<void> {
    const body = JSON.stringify({
      id: d.event_id,
      type: d.type,
      timestamp: d.event_created_at.toISOString(),
      data: d.data,
    });
    const now = new Date();
    let result: AttemptResult;
    if (!d.endpoint_live) {
      // Disabled or deleted after this delivery was queued: nothing is sent.
      result = notSent('not sent: the endpoint is disabled or deleted');
    } else {
      try {
        const headers = signedHeaders(signingSecrets(d, now), d.event_id, now, body);
        result = await send(d.url, headers, body, {
          timeoutMs: this.options.timeoutMs,
          env: this.options.env,
          resolve: this.options.resolve,
        });
      } catch (err) {
        result = notSent(`not sent: ${(err as Error).message}`);
      }
    }
    // A 410 disables the endpoint when it is recorded: until then its slot stays taken, and nothing held for it is
    // sent (`gone`).
    if (result.statusCode === 410) this.gone.set(d.endpoint_id, (this.gone.get(d.endpoint_id) ?? 0) + 1);
    else sent();
    await this.record(d, result, now, !d.endpoint_live);
  }

  private async record(d: Claimed, result: AttemptResult, startedAt: Date, final = false): Promise<void> {
    const code = result.statusCode;
    const succeeded = code !== undefined && code >= 200 && code < 300;
    const gone = code === 410;
    const why = succeeded ? null : storable(result.error ?? `HTTP ${code}`).slice(0, 1000);
    let status: 'pending' | 'succeeded' | 'failed' = succeeded ? 'succeeded' : 'failed';
    let nextAt: Date | null = null;
    if (!succeeded && !gone && !final && d.attempts < d.max_attempts) {
      status = 'pending';
      nextAt = new Date(Date.now() + retryDelay(this.options.retryScheduleMs, d.attempts, result.retryAfterMs));
    }
    const attempt = [
      uuidv7(),
      d.workspace_id,
      d.id,
      d.attempts,
      d.url,
      code ?? null,
      result.durationMs,
      result.responseBody ?? null,
      result.error ?? null,
      succeeded,
      startedAt,
    ];
    const outcome = [
      d.id,
      d.lease_token,
      status,
      nextAt,
      gone ? 'the endpoint answered 410 Gone; it is now disabled' : why,
    ];
    let recorded: boolean;
    if (!gone) {
      recorded = await new Promise<boolean>((done, failed) => {
        this.toRecord.push({ params: [...outcome, ...attempt], done, failed });
        if (!this.recording) void this.writeRecords();
      });
    } else {
      try {
        recorded = await withTransaction(this.db, async (tx) => {
          // Locks in the order every other path takes them (endpoint, then its deliveries), so a burst of 410s,
          // or a 410 and a PATCH, cannot deadlock.
          await tx.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [d.endpoint_id]);
          const updated = await tx.query(RECORD_ONE, [...outcome, ...attempt]);
          await tx.query(
            `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'endpoint_gone', updated_at = now()
             WHERE id = $1 AND status = 'enabled' AND deleted_at IS NULL`,
            [d.endpoint_id],
          );
          await repo.failPendingDeliveries(
            tx,
            d.workspace_id,
            d.endpoint_id,
            'endpoint disabled: it answered 410 Gone',
            d.id,
          );
          return updated.rowCount === 1;
        });
      } finally {
        // Its held deliveries were failed with the rest (or, when this could not be written, go back to be claimed
        // again): none of them is sent from here.
        const held = this.held.get(d.endpoint_id) ?? [];
        this.held.delete(d.endpoint_id);
        this.handBack(held.map((h) => h.delivery));
        decrement(this.gone, d.endpoint_id);
      }
    }
    if (!recorded) {
      // The lease ran out before the result was written: another worker may be sending it again.
      this.log.warn({ delivery_id: d.id, attempt: d.attempts }, 'webhook attempt finished after its lease ran out');
    }
    this.attemptsTotal?.inc({ outcome: succeeded ? 'succeeded' : 'failed' });
    if (succeeded && d.attempts === 1 && d.kind === 'event')
      this.lag?.observe((Date.now() - d.event_created_at.getTime()) / 1000);
    if (gone) this.log.warn({ endpoint_id: d.endpoint_id }, 'webhook endpoint answered 410 Gone; disabled');
  }

  /**
   * Writes the attempts waiting to be recorded, each with its delivery's new state in the same statement (one
   * implicit transaction). One write at a time: the attempts that finish while it runs go together in the next,
   * so a busy relay writes many per round trip and an idle one writes each at once.
   */
  private async writeRecords(): Promise<void> {
    this.recording = true;
    try {
      while (this.toRecord.length > 0) {
        const batch = this.toRecord.splice(0, RECORD_BATCH);
        try {
          const columns = batch[0]!.params.map((_, i) => batch.map((r) => r.params[i]));
          const { rows } = await this.db.query<{ id: string }>(RECORD_MANY, columns);
          const updated = new Set(rows.map((r) => r.id));
          for (const r of batch) r.done(updated.has(r.params[0] as string));
        } catch (err) {
          if (batch.length === 1) {
            batch[0]!.failed(err);
            continue;
          }
          // One row that cannot be written fails the whole statement: each is then written alone, so only that one is lost.
          for (const r of batch) await this.writeRecord(r).then(r.done, r.failed);
        }
      }
    } finally {
      this.recording = false;
    }
  }

  /** One attempt alone: after its batch failed. */
  private async writeRecord(r: PendingRecord): Promise<boolean> {
    const { rowCount } = await this.db.query(RECORD_ONE, r.params);
    return rowCount === 1;
  }

  /** Stops claiming, hands back the held deliveries and waits for the attempts in progress (each is bounded by the timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.pumping;
    const held = [...this.held.values()].flat().map((h) => h.delivery);
    this.held.clear();
    this.handBack(held);
    await Promise.all([...this.inFlight]);
    await Promise.all([...this.handingBack]);
  }
}

/** Published outbox rows older than a day are of no further use: the events table keeps the history. */
export async function purgePublishedOutbox(db: Db): Promise<number> {
  const { rowCount } = await db.query("DELETE FROM outbox WHERE published_at < now() - interval '1 day'");
  return rowCount ?? 0;
}
