// Hands new collections, refunds and payouts to their rail provider, outside any transaction (a provider call is
// network I/O), then records the provider's answer in one. A kick right after creation does it at once;
// a periodic sweep catches anything a kick missed (a crash, a provider outage). The sweep claims rows by
// pushing their `submit_after` forward (a lease and a persisted backoff in one), so several processes
// never pick the same row at once and a row that keeps failing does not hold up the others. After
// MAX_ATTEMPTS the object fails with `provider_error`.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from '../../db/errors.js';
import type { TransactionBatcher } from '../../db/batcher.js';
import { withTransaction, type Db, type Tx } from '../../db/pool.js';
import { ANSWER_BY_CALLBACK, ProviderError, type ProviderAck, type RailProvider } from '../providers/provider.js';
import type { ProviderRegistry } from '../providers/providers.registry.js';
import { MOVEMENTS, type Lifecycle } from './lifecycle.service.js';
import type { MoveOptions, MovementType, MovingRow, Versioned } from './movement.js';
import * as sql from './movements.repository.js';
import type { Claimed } from './movements.repository.js';

interface Job {
  kind: MovementType;
  workspaceId: string;
  id: string;
  /** Which sweep attempt this is (0: the kick right after creation). */
  attempt: number;
  /** When it was queued (ms since the epoch). */
  queuedAt: number;
  /** Set as its provider is called: whether that provider can be asked about it by our id, and whether it answered. */
  sending?: { askable: boolean; answered: boolean };
  /** Its row as the claim left it: the answer's move is made from it, by compare-and-set, if nothing changed it since. */
  claimed?: Versioned<MovingRow>;
}

const MAX_QUEUE = 10_000;

/** Initiation claims in flight at once in a process (see `pump`). */
const CLAIMS_IN_FLIGHT = 2;

/** How the lifecycle records an initiation's answer. */
function ackOptions(providerName: string, ack: ProviderAck): MoveOptions {
  return {
    cause: `initiation at ${providerName}`,
    reason: ack.reason,
    providerReference: ack.reference,
    receipt: ack.receipt,
    redirectUrl: ack.redirectUrl,
  };
}

/** Seconds of a lease not counted on when waiting for the database to record an answer (clocks drift apart); a quarter of a shorter lease. */
const LEASE_MARGIN_SECONDS = 5;

/** Sweep attempts before giving up on an initiation (with the backoff below, about 8 minutes). */
export const MAX_ATTEMPTS = 10;

export class Submitter {
  private readonly queue: Job[] = [];
  private readonly queued = new Set<string>();
  private active = 0;
  private stopped = false;
  private idle: (() => void) | undefined;

  constructor(
    private readonly db: Db,
    private readonly providers: ProviderRegistry,
    private readonly lifecycle: Lifecycle,
    /** Records the providers' answers, many in one commit. */
    private readonly batcher: TransactionBatcher,
    private readonly log: FastifyBaseLogger,
    /**
     * Initiations in flight at once. A provider call holds no database connection (the claims and the answers are
     * batched), so this is the provider calls waiting for an answer at once.
     */
    private readonly concurrency = 64,
    /** How long an initiation is held by its sender: longer than any provider call may take, in seconds. */
    private readonly leaseSeconds = 35,
    /**
     * Whether an initiation must wait rather than go to its provider now (its rail is down), and for how many seconds;
     * undefined: send it. Composition asks rail availability's in-memory snapshot (no statement).
     */
    private readonly holdFor: (kind: MovementType, row: MovingRow) => number | undefined = () => undefined,
  ) {}

  kick(kind: MovementType, workspaceId: string, id: string, attempt = 0): void {
    if (this.stopped || this.queued.has(id) || this.queue.length >= MAX_QUEUE) return;
    this.queued.add(id);
    this.queue.push({ kind, workspaceId, id, attempt, queuedAt: Date.now() });
    this.pump();
  }

  /**
   * Claims initiations that are due (never sent, or whose last attempt failed) and sends them. Each claim
   * moves the row's `submit_after` on by a backoff of 2^attempts seconds (at most 60), so a crash or
   * failure leaves it for a later sweep. Maintenance: spans workspaces.
   */
  async sweep(): Promise<void> {
    for (const row of await sql.claimDueInitiations(this.db, Object.values(MOVEMENTS)))
      this.kick(row.kind, row.workspace_id, row.id, row.submit_attempts);
  }

  /** How long the oldest initiation still queued here (not yet claimed) has waited, in ms; 0 when none waits. */
  waitingMs(): number {
    const oldest = this.queue[0];
    return oldest === undefined ? 0 : Date.now() - oldest.queuedAt;
  }

  /** Stops taking work and waits for the submissions in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    if (this.active > 0) await new Promise<void>((resolve) => (this.idle = resolve));
  }

  /** Claims in flight: while there are CLAIMS_IN_FLIGHT, the jobs queued meanwhile wait, then are claimed together. */
  private claiming = 0;

  /**
   * Takes as many queued jobs as there are free places, claims them in one statement per kind, and sends each one
   * claimed. At most CLAIMS_IN_FLIGHT claims are in flight: under load the jobs that queue meanwhile (kicked, or
   * freed by an answer) are claimed together by the next, one commit for them all, rather than one claim each. Two,
   * not one: a claim held up (a row lock, a slow commit) does not hold up every initiation of the process.
   */
  private pump(): void {
    const free = this.concurrency - this.active;
    if (this.claiming >= CLAIMS_IN_FLIGHT || free <= 0 || this.queue.length === 0) return;
    const jobs = this.queue.splice(0, free);
    this.active += jobs.length;
    this.claiming += 1;
    void this.claimAndSubmit(jobs);
  }

  /** A claim is answered (or failed): the next may go. */
  private claimed(): void {
    this.claiming -= 1;
    this.pump();
  }

  private async claimAndSubmit(jobs: Job[]): Promise<void> {
    const claimedAt = Date.now();
    const claimId = randomUUID();
    const claimable = jobs.filter((job) => job.attempt <= MAX_ATTEMPTS);
    let claimed: Map<string, Claimed<MovingRow>>;
    try {
      claimed = await this.claim(claimable, claimId);
      this.databaseBack();
    } catch (err) {
      this.claimed();
      // Nothing is sent. The claim may have taken rows all the same (its answer lost as it committed, or one kind's
      // claim failing after another's): those are released, and sent again.
      if (isDatabaseUnavailable(err)) this.databaseAway(err);
      else this.log.warn({ err, jobs: jobs.length }, 'could not claim initiations; the sweep retries them');
      for (const job of jobs) this.finished(job);
      void this.release(claimable, claimId, claimedAt);
      return;
    }
    this.claimed();
    for (const job of jobs) {
      void this.submit(job, claimed.get(job.id), claimedAt)
        .catch(async (err: unknown) => {
          if (isDatabaseUnavailable(err)) this.databaseAway(err);
          else
            this.log[err instanceof ProviderError ? 'warn' : 'error'](
              { err, kind: job.kind, id: job.id, attempt: job.attempt },
              'provider initiation failed; the sweep retries it',
            );
          // The call is over: the next try after the backoff. A provider that cannot be asked by our id throws only
          // when nothing reached the operator (an unanswered STK push at Daraja is answered as pending): the next try
          // sends it again. Any other may have acted, or did (its answer could not be recorded): it is asked first.
          const sentNothing = job.sending !== undefined && !job.sending.answered && !job.sending.askable;
          await sql.scheduleRetry(this.db, MOVEMENTS[job.kind], job.workspaceId, job.id, sentNothing);
        })
        .catch((err: unknown) => {
          if (isDatabaseUnavailable(err)) this.databaseAway(err);
          else
            this.log.error(
              { err, kind: job.kind, id: job.id },
              'could not schedule the retry; the lease runs out instead',
            );
        })
        .finally(() => this.finished(job));
    }
  }

  /** Whether a database outage has been told: it is said once, not once per initiation it holds up. */
  private away = false;

  /**
   * The database is away (a restart, a failover): every initiation it holds up is due again by its `submit_after`, or
   * its lease, and the sweep sends it; said once.
   */
  private databaseAway(err: unknown): void {
    if (this.away) return;
    this.away = true;
    this.log.warn(
      { err: { message: (err as Error).message } },
      'database unavailable: initiations wait for it, and the sweep sends what it held up',
    );
  }

  private databaseBack(): void {
    if (!this.away) return;
    this.away = false;
    this.log.info('database back: initiations resume');
  }

  /** The rows of the jobs' initiations taken for this sender under `claimId`, by id: one statement per kind. */
  private async claim(jobs: Job[], claimId: string): Promise<Map<string, Claimed<MovingRow>>> {
    const claimed = new Map<string, Claimed<MovingRow>>();
    for (const m of Object.values(MOVEMENTS)) {
      const ofKind = jobs.filter((job) => job.kind === m.type);
      if (ofKind.length === 0) continue;
      for (const row of await sql.claimInitiations(this.db, m, ofKind, this.leaseSeconds, claimId))
        claimed.set(row.id, row);
    }
    return claimed;
  }

  /**
   * A claim whose answer never came sent nothing, but may have taken its rows and marked them `sent_at` (maybe sent):
   * left so, the next sender after the lease would not send them (a Daraja STK push cannot be asked about by our id),
   * and the payer would never be prompted. So the rows claim `claimId` still holds get their mark back and are sent
   * again, the database waited for (as `record` waits) while this sender's lease holds.
   */
  private async release(jobs: Job[], claimId: string, claimedAt: number): Promise<void> {
    let released: Set<string>;
    try {
      released = await this.whileHeld(claimedAt, async () => {
        const ids = new Set<string>();
        for (const m of Object.values(MOVEMENTS)) {
          const ofKind = jobs.filter((job) => job.kind === m.type);
          if (ofKind.length > 0) for (const id of await sql.releaseClaim(this.db, m, ofKind, claimId)) ids.add(id);
        }
        return ids;
      });
    } catch (err) {
      this.log.error(
        { err, jobs: jobs.length },
        'could not release a claim whose answer was lost: its initiations may wait for their lease, then be taken as maybe sent',
      );
      return;
    }
    if (released.size === 0) return; // the claim took nothing: each is due again at its `submit_after`
    this.log.info(
      { released: released.size },
      'initiations taken by a claim whose answer was lost: released, and sent again',
    );
    for (const job of jobs) if (released.has(job.id)) this.kick(job.kind, job.workspaceId, job.id, job.attempt);
  }

  /**
   * Runs `work`, and again after a growing pause while the database is away and the lease taken at `claimedAt` still
   * holds (`onWait` hears of the first pause); throws what stops it: another error, or the lease running out.
   */
  private async whileHeld<T>(claimedAt: number, work: () => Promise<T>, onWait?: (err: unknown) => void): Promise<T> {
    const until = this.heldUntil(claimedAt);
    let pause = 250;
    for (let waited = false; ; waited = true) {
      try {
        return await work();
      } catch (err) {
        if (!isDatabaseUnavailable(err) || Date.now() + pause > until) throw err;
        if (!waited) onWait?.(err);
        await sleep(pause);
        pause = Math.min(pause * 2, 2000);
      }
    }
  }

  /** Until when a sender may count on the lease its claim at `claimedAt` took (less a margin for clocks). */
  private heldUntil(claimedAt: number): number {
    return claimedAt + (this.leaseSeconds - Math.min(LEASE_MARGIN_SECONDS, this.leaseSeconds / 4)) * 1000;
  }

  private finished(job: Job): void {
    this.active -= 1;
    this.queued.delete(job.id);
    if (this.active === 0 && this.idle) this.idle();
    this.pump();
  }

  /**
   * Reads what the provider needs of a claimed row, sends it, and records the answer. An object that cannot be sent
   * (its provider is not configured here, its beneficiary is gone) is given up on; one not claimed is left alone.
   */
  private async submit(job: Job, row: Claimed<MovingRow> | undefined, claimedAt: number): Promise<void> {
    if (job.attempt > MAX_ATTEMPTS)
      return this.giveUp(job, `no answer from the provider after ${MAX_ATTEMPTS} attempts`);
    if (!row) return; // sent already, or another sender has it
    job.claimed = row;
    const m = MOVEMENTS[job.kind];
    const hold = this.holdFor(job.kind, row);
    if (hold !== undefined) {
      this.log.info({ kind: job.kind, id: job.id, hold_seconds: hold }, 'initiation held: its rail is down');
      return sql.holdInitiation(this.db, m, job.workspaceId, job.id, row.sent_before, hold);
    }
    const provider = this.providers.get(row.provider);
    if (!provider) return this.giveUp(job, `provider '${row.provider}' is not configured here`);
    if (row.sent_before !== null && (await this.askedInstead(job, row, provider, claimedAt))) return;
    const initiation = await m.initiation(this.db, row);
    if ('giveUp' in initiation) return this.giveUp(job, initiation.giveUp);
    if ('fail' in initiation) return this.move(job, 'failed', initiation.fail);
    job.sending = { askable: provider.findsByOurId(job.kind), answered: false };
    const ack = await initiation.send(provider);
    job.sending.answered = true;
    await this.record(job, claimedAt, ack.status, ackOptions(provider.name, ack));
  }

  /**
   * An initiation claimed before whose answer was never recorded (its sender crashed, or the database was away for
   * longer than the lease) may have reached the operator: it is never sent again blindly. A provider that keys it by our
   * id is asked: its answer is recorded, and only an operation it does not know is sent. One that cannot be asked (an
   * STK push at Daraja) is recorded as pending without a reference, as a push whose answer was lost: its callback or
   * its expiry settles it. True when it was settled here, false when it is to be sent.
   */
  private async askedInstead(job: Job, row: MovingRow, provider: RailProvider, claimedAt: number): Promise<boolean> {
    const ids = { kind: job.kind, id: job.id, provider: provider.name };
    if (!provider.findsByOurId(job.kind)) {
      // A collection's expiry ends it if no callback comes; a refund or payout has no clock: a person may have to look.
      this.log[job.kind === 'collection' ? 'warn' : 'error'](
        ids,
        'initiation may have reached an operator that cannot be asked by our id: not sent again; pending until its callback',
      );
      await this.record(job, claimedAt, 'pending', { cause: `unanswered initiation at ${provider.name}` });
      return true;
    }
    const answer = await provider.queryStatus(job.kind, job.id, row.provider_reference ?? '');
    if (answer === undefined) return false;
    if (answer === ANSWER_BY_CALLBACK) {
      await this.record(job, claimedAt, 'pending', { cause: `unanswered initiation at ${provider.name}` });
      return true;
    }
    this.log.info(
      { ...ids, status: answer.status },
      'initiation reached the operator before: its status recorded, not sent again',
    );
    await this.record(job, claimedAt, answer.status as ProviderAck['status'], {
      cause: `status query of an unanswered initiation at ${provider.name}`,
      reason: answer.reason,
      providerReference: answer.reference,
      receipt: answer.receipt,
      redirectUrl: answer.redirectUrl,
    });
    return true;
  }

  /** The initiation cannot be made: the object fails with provider_error (and its event) rather than wait forever. */
  private async giveUp(job: Job, why: string): Promise<void> {
    if (MOVEMENTS[job.kind].askBeforeGivingUp) return this.giveUpAsking(job, why);
    this.log.error({ kind: job.kind, id: job.id }, `giving up on the provider initiation: ${why}`);
    await this.move(job, 'failed', { cause: `initiation abandoned: ${why}`, reason: 'provider_error' });
  }

  /**
   * Records the provider's answer to an initiation. The answer cannot be had again without sending again, so a
   * database that is away (a restart, a failover) is waited for, with a growing pause, for as long as this sender
   * still holds the initiation (`claimedAt` + the lease, less a margin for clocks): meanwhile no other sender takes
   * it, and once the database is back the answer is written and nothing is sent twice. Writing it again after a COMMIT
   * whose answer was lost is harmless: the lifecycle takes a move it already made as a duplicate.
   */
  private async record(job: Job, claimedAt: number, to: ProviderAck['status'], options: MoveOptions): Promise<void> {
    let waited = false;
    await this.whileHeld(
      claimedAt,
      () => this.move(job, to, options),
      (err) => {
        waited = true;
        this.log.warn(
          { kind: job.kind, id: job.id, err: { message: (err as Error).message } },
          'database unavailable: holding the provider answer until it is back',
        );
      },
    );
    if (waited) this.log.info({ kind: job.kind, id: job.id }, 'database back: the provider answer was recorded');
  }

  /**
   * Moves the job's object through the lifecycle, in a transaction shared with other answers recorded meanwhile; a
   * move that is one statement (from the row the claim read) is sent alone when nothing else is waiting.
   */
  private async move(job: Job, to: ProviderAck['status'], options: MoveOptions): Promise<void> {
    const move = (seen?: Versioned<MovingRow>) => (tx: Tx) =>
      this.lifecycle.move(tx, job.kind, job.workspaceId, job.id, to, options, seen);
    const one =
      job.claimed && this.lifecycle.moveStatement(job.kind, job.workspaceId, job.id, to, options, job.claimed);
    // Done otherwise from the locked row: the claim's read is what the one statement found changed.
    await (one ? this.batcher.runStatement({ ...one, otherwise: move() }) : this.batcher.run(move(job.claimed)));
  }

  /**
   * An object whose initiation went unanswered may still have moved money (a payout: a time-out after the provider
   * took it). Failing it would give the reservation back while the money left: so the provider is asked first. It
   * knows the object: its status is applied. It says it never got it: the object fails and the reservation is
   * released. No answer: it stays in its first status, an error is logged for a person, and the next sweep asks again.
   */
  private async giveUpAsking(job: Job, why: string): Promise<void> {
    const m = MOVEMENTS[job.kind];
    const row = await sql.findRow<MovingRow>(this.db, m, job.workspaceId, job.id);
    if (!row || row.status !== m.initial) return;
    const provider = this.providers.get(row.provider);
    let answer: Awaited<ReturnType<NonNullable<typeof provider>['queryStatus']>>;
    try {
      answer = provider ? await provider.queryStatus(job.kind, job.id, row.provider_reference ?? '') : undefined;
      // The operator answers later, by callback: nothing is known yet, so nothing is released.
      if (answer === ANSWER_BY_CALLBACK) throw new ProviderError('its status is answered by callback');
    } catch (err) {
      this.log.error(
        { err, kind: job.kind, id: job.id },
        `initiation unanswered (${why}) and its status unknown: left ${m.initial as string}; the next sweep asks again`,
      );
      return;
    }
    await withTransaction(this.db, async (tx) => {
      if (answer && answer.status !== 'failed') {
        await this.lifecycle.move(tx, job.kind, job.workspaceId, job.id, answer.status as never, {
          cause: 'status query before giving up',
          reason: answer.reason,
          providerReference: answer.reference,
        });
        return;
      }
      this.log.error(
        { kind: job.kind, id: job.id },
        `giving up on the initiation: ${why}; the provider ${answer ? 'failed it' : 'does not have it'}`,
      );
      await this.lifecycle.move(tx, job.kind, job.workspaceId, job.id, 'failed', {
        cause: `initiation abandoned: ${why}`,
        reason: answer?.reason ?? 'provider_error',
      });
    });
  }
}
