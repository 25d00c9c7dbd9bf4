// The background work of one process: provider initiations, the sandbox simulator, expiry, reconciliation,
// webhook delivery and the purges. Every job is safe to run in several processes at once (row claims with
// SKIP LOCKED or leases, and notices applied once by id).
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { TransactionBatcher } from '../db/batcher.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import type { Db } from '../db/pool.js';
import type { AfterCommit } from '../platform/after-commit.js';
import type { IdempotencyEngine } from '../platform/idempotency.js';
import type { SecretBox } from '../platform/secret-box.js';
import type { AvailabilityService } from '../modules/availability/availability.service.js';
import type { CheckoutService } from '../modules/checkout/checkout.service.js';
import type { DepositsService } from '../modules/deposits/deposits.service.js';
import type { OperatorFloatService } from '../modules/float/float.service.js';
import type { Lifecycle } from '../modules/lifecycle/lifecycle.service.js';
import type { ProviderNotices } from '../modules/lifecycle/notices.service.js';
import type { Submitter } from '../modules/lifecycle/submitter.js';
import type { ProviderRegistry } from '../modules/providers/providers.registry.js';
import type { LookUpAddresses } from '../modules/webhooks/url-guard.js';
import { expireDue, reconcile } from '../modules/lifecycle/sweeps.js';
import { runSimulatorStep } from '../modules/providers/sandbox.simulator.js';
import { WebhookRelay } from '../modules/webhooks/relay.js';
import { every, type JobReport, type PeriodicJob } from './periodic.js';
import { retentionPurges } from './retention.js';

/**
 * The services the jobs drive: composition.ts's Services has them all (main passes those). Named here so that workers/
 * imports nothing above it.
 */
export interface WorkerServices {
  afterCommit: AfterCommit;
  availability: AvailabilityService;
  box: SecretBox;
  idempotency: IdempotencyEngine;
  checkout: CheckoutService;
  deposits: DepositsService;
  lifecycle: Lifecycle;
  providers: ProviderRegistry;
  operatorFloat: OperatorFloatService;
  notices: ProviderNotices;
  batcher: TransactionBatcher;
  submitter: Submitter;
  metrics: Registry;
}

/**
 * The least time between the starts of two relay rounds woken by commits: a round within it waits. A round is a
 * transaction of four statements however many events it fans out, so under load this sets how many a second there
 * are: at 10 ms, a steady 180 creates a second (two events each) ran about 95 rounds a second; at 50 ms, 20, with
 * 0.4 fewer transactions per create and 7 % less CPU (bench/README.md, "The half-load tail"). A commit's events wait
 * at most these 50 ms for their round (was 10): a commit more than 50 ms after the last round began (the poll's
 * rounds included) starts one at once.
 */
const RELAY_ROUND_GAP_MS = 50;

export interface Workers {
  /** Stops taking work and waits for what is running. */
  stop(): Promise<void>;
}

export interface WorkerOptions {
  /** Name resolution for the production webhook address guard (tests may pass their own). */
  lookUpAddresses?: LookUpAddresses;
}

export function startWorkers(
  services: WorkerServices,
  config: Config,
  db: Db,
  log: FastifyBaseLogger,
  options: WorkerOptions = {},
): Workers {
  // What each job's runs tell: a failure as an error; a database outage once as a warning, and once when it ends.
  const report: JobReport = {
    failed: (name, err) => log.error({ err, job: name }, 'job failed'),
    paused: (name, err) =>
      log.warn(
        { job: name, err: { message: (err as Error).message, code: (err as { code?: unknown }).code } },
        'database unavailable: job paused, trying again with backoff',
      ),
    resumed: (name, pausedMs) => log.info({ job: name, paused_ms: pausedMs }, 'database back: job resumed'),
  };
  const { submitter, lifecycle, providers, notices } = services;

  const relay = new WebhookRelay(
    db,
    {
      env: config.paymentsEnv,
      retryScheduleMs: config.webhookRetryScheduleMs,
      timeoutMs: config.webhookTimeoutMs,
      concurrency: config.webhookConcurrency,
      endpointConcurrency: config.webhookEndpointConcurrency,
      box: services.box,
      lookUpAddresses: options.lookUpAddresses,
      registry: services.metrics,
    },
    log,
  );
  // The relay's round: new outbox rows fanned out to deliveries, then what is due sent. Run by its poll and by every
  // commit that wrote events or deliveries; one round at a time, at most one every RELAY_ROUND_GAP_MS, and the calls
  // made meanwhile share the next.
  const relayRound = oneAtATime(() => relay.tick(), Math.min(RELAY_ROUND_GAP_MS, config.webhookPollMs));
  // Committed work reaches the background at once, through the after-commit hook (platform/after-commit.ts): a new
  // operation goes to its provider; new events (recorded in any transaction: a request's, the lifecycle's) and new
  // deliveries (a resend, a test event) wake the relay.
  const stopListening = services.afterCommit.listen((committed) => {
    if (committed.kind === 'events') {
      relayRound.run().catch((err: unknown) =>
        // A database away for a moment (the next poll tries again) is not an error worth a person's look.
        isDatabaseUnavailable(err)
          ? log.warn({ err: { message: (err as Error).message } }, 'webhook relay paused: database unavailable')
          : log.error({ err }, 'webhook relay failed'),
      );
    } else if (committed.kind === 'close') {
      const provider = providers.get(committed.provider);
      provider
        ?.closeCollection?.(committed.id, committed.reference)
        .catch((err: unknown) =>
          log.warn(
            { err, collection_id: committed.id, provider: committed.provider },
            'closing the ended collection at its provider failed; it closes at its own expiry there',
          ),
        );
    } else submitter.kick(committed.kind, committed.workspaceId, committed.id);
  });

  const tick = config.workerIntervalMs;
  const jobs: PeriodicJob[] = [
    // What is past its retention (workers/retention.ts), in short batches; a run that deleted something says so.
    ...retentionPurges(db, services.idempotency, config).map((purge) =>
      every(
        config.purgeIntervalMs,
        purge.name,
        async () => {
          const result = await purge.run();
          if (result.deleted > 0) log.info({ job: purge.name, ...result }, 'purged rows past their retention');
        },
        report,
      ),
    ),
    every(config.webhookPollMs, 'webhook-relay', () => relayRound.run(), report),
    every(tick, 'initiation-sweep', () => submitter.sweep(), report),
    every(tick, 'expiry', () => expireDue(db, services.batcher, lifecycle, providers, notices, log), report),
    // Rail availability: one node at a time judges every rail (the others skip while it holds the lock); every node
    // reads the judgement into memory, which new collections consult without a statement.
    every(config.availability.intervalMs, 'availability-judge', () => services.availability.judgeAll(), report),
    every(config.availability.refreshMs, 'availability-refresh', () => services.availability.refresh(), report),
    every(tick, 'checkout-expiry', () => services.checkout.expireDue(), report),
    // Confirmed deposits waiting for a current rate to convert at (a confirmation credits at once when it can,
    // so only the waiting ones are left here: a tenth of the pace is soon enough, and less work per tick).
    every(tick * 10, 'deposit-credits', () => services.deposits.creditDue(), report),
    every(
      Math.min(30_000, config.reconcileAfterSeconds * 1000),
      'reconcile',
      () => reconcile(db, providers, notices, log, config.reconcileAfterSeconds),
      report,
    ),
  ];
  // Operator float: each connector's balances, read by one node per OPERATOR_FLOAT_INTERVAL_MS (a claim on its row);
  // every node looks often enough to take over when another stops.
  if (providers.connectors().some((c) => c.readBalances !== undefined)) {
    jobs.push(
      every(
        Math.min(config.operatorFloatIntervalMs, 10_000),
        'operator-float',
        () => services.operatorFloat.readDue(),
        report,
      ),
    );
  }
  // Operators that never repeat a callback (MTN MoMo) have their open operations polled at their own pace.
  const byPace = new Map<number, string[]>();
  for (const connector of providers.connectors()) {
    if (connector.pollSeconds !== undefined)
      byPace.set(connector.pollSeconds, [...(byPace.get(connector.pollSeconds) ?? []), connector.name]);
  }
  for (const [seconds, names] of byPace) {
    jobs.push(
      every(
        Math.max(tick, (seconds * 1000) / 2),
        `poll-${names.join('-')}`,
        () => reconcile(db, providers, notices, log, seconds, names),
        report,
      ),
    );
  }
  const simulator = providers.sandbox;
  if (simulator) {
    // Often enough that a step is never much later than SANDBOX_STEP_MS says.
    const every_ = Math.max(10, Math.min(tick, Math.floor(config.sandboxStepMs / 2)));
    jobs.push(every(every_, 'sandbox-simulator', () => runSimulatorStep(simulator, notices, log), report));
  }
  return {
    async stop() {
      stopListening();
      await Promise.all(jobs.map((j) => j.stop()));
      await relayRound.settled();
      await Promise.all([submitter.stop(), relay.stop(), notices.settle()]);
    },
  };
}

/**
 * `round` run one at a time, and started at most once every `gapMs`. A call while a round runs (or within `gapMs` of
 * the last start) is answered by the next round, shared by every call made meanwhile: what was committed after the
 * running round looked is seen by the next one, and a burst of calls costs one round, not one each. The gap bounds a
 * busy process's rounds (a commit with events every few milliseconds) to 1000 / gapMs a second.
 */
export function oneAtATime(round: () => Promise<void>, gapMs = 0): { run(): Promise<void>; settled(): Promise<void> } {
  let current: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  let lastStart = -Infinity;
  const start = (): Promise<void> => {
    lastStart = Date.now();
    return (current = round().finally(() => {
      current = undefined;
    }));
  };
  return {
    run() {
      if (next !== undefined) return next;
      if (current === undefined && Date.now() - lastStart >= gapMs) return start();
      next = (current ?? Promise.resolve())
        .catch(() => undefined)
        .then(async () => {
          const wait = lastStart + gapMs - Date.now();
          if (wait > 0) await sleep(wait);
          next = undefined;
          return start();
        });
      return next;
    },
    async settled() {
      await Promise.allSettled([current, next]);
      await current?.catch(() => undefined);
    },
  };
}
