// Composition: every service of the app, constructed once and wired to each other (no HTTP here). buildApp gives
// them their routes; the workers (src/workers) give them their background jobs.
import { ReportsService } from './modules/reports/reports.service.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from './config.js';
import type { Db } from './db/pool.js';
import { AfterCommit } from './platform/after-commit.js';
import type { LiveCredentialLookup } from './platform/auth.js';
import { IdempotencyEngine } from './platform/idempotency.js';
import { CursorCodec } from './platform/pagination.js';
import type { SecretBox } from './platform/secret-box.js';
import type { ServiceKeys } from './platform/secrets.js';
import type { TokenService } from './platform/tokens.js';
import { AuditService } from './modules/audit/audit.service.js';
import { AvailabilityService } from './modules/availability/availability.service.js';
import { BeneficiariesService } from './modules/beneficiaries/beneficiaries.service.js';
import type { MarketCatalogue } from './modules/catalogue/catalogue.js';
import { CheckoutService } from './modules/checkout/checkout.service.js';
import { PredictService } from './modules/predict/predict.service.js';
import { CollectionsService } from './modules/collections/collections.service.js';
import { findLiveToken } from './modules/credentials/credentials.repository.js';
import { CredentialsService } from './modules/credentials/credentials.service.js';
import { DepositsService } from './modules/deposits/deposits.service.js';
import { permissionsOfRole } from './modules/members/permissions.js';
import { Lifecycle } from './modules/lifecycle/lifecycle.service.js';
import { ProviderNotices } from './modules/lifecycle/notices.service.js';
import { TransactionBatcher } from './db/batcher.js';
import { Submitter } from './modules/lifecycle/submitter.js';
import type { MovingRow } from './modules/lifecycle/movement.js';
import { MarketDataService } from './modules/market-data/market-data.service.js';
import { PayoutsService } from './modules/payouts/payouts.service.js';
import { exponentOf } from './modules/providers/connector-config.js';
import { OperatorFloatService } from './modules/float/float.service.js';
import { buildProviders, type ProviderPlan, type ProviderRegistry } from './modules/providers/providers.registry.js';
import { RefundsService } from './modules/refunds/refunds.service.js';
import { RiskService } from './modules/risk/risk.service.js';
import { SandboxService } from './modules/sandbox/sandbox.service.js';
import { SandboxClockService } from './modules/sandbox/clock.service.js';
import { reconcileWorkspace } from './modules/lifecycle/sweeps.js';
import type { LookUpAddresses } from './modules/webhooks/url-guard.js';
import { WebhooksService } from './modules/webhooks/webhooks.service.js';
import { WorkspaceConfigurationService } from './modules/workspace-configuration/workspace-configuration.service.js';

export interface CompositionDeps {
  config: Config;
  db: Db;
  /** The background work's connections: the submitter's and the providers'. */
  workerDb: Db;
  keys: ServiceKeys;
  /** Seals and opens the secrets kept at rest (webhook signing secrets, stored answers holding a secret). */
  box: SecretBox;
  catalogue: MarketCatalogue;
  providerPlan: ProviderPlan;
  tokens: TokenService;
  metrics: Registry;
  log: FastifyBaseLogger;
  lookUpAddresses?: LookUpAddresses | undefined;
}

export interface Services {
  /** The after-commit hook: what committed work tells the background workers (they listen while they run). */
  afterCommit: AfterCommit;
  /** The secrets key: what the relay opens webhook signing secrets with. */
  box: SecretBox;
  tokens: TokenService;
  credentials: CredentialsService;
  /** The audit log: what the recording hook (platform/audit.ts) writes, and its reads. */
  audit: AuditService;
  idempotency: IdempotencyEngine;
  collections: CollectionsService;
  checkout: CheckoutService;
  predict: PredictService;
  /** Rail availability: the judgement, maintenance, and this node's snapshot that new collections consult. */
  availability: AvailabilityService;
  refunds: RefundsService;
  risk: RiskService;
  marketData: MarketDataService;
  deposits: DepositsService;
  payouts: PayoutsService;
  beneficiaries: BeneficiariesService;
  lifecycle: Lifecycle;
  providers: ProviderRegistry;
  /** Operator float: the operators' balances, read on a schedule (the workers) and listed for the operator. */
  operatorFloat: OperatorFloatService;
  notices: ProviderNotices;
  /** Background moves of the lifecycle, many in one commit. */
  batcher: TransactionBatcher;
  submitter: Submitter;
  webhooks: WebhooksService;
  reports: ReportsService;
  /** The markets, rails and limits an admin enables per workspace. */
  workspaceConfiguration: WorkspaceConfigurationService;
  /** The simulate endpoints' service: only in the sandbox, when the simulator runs a rail. */
  sandbox: SandboxService | undefined;
  /** The sandbox test clock's service: only in the sandbox. */
  sandboxClock: SandboxClockService | undefined;
  metrics: Registry;
}

export function compose(deps: CompositionDeps): Services {
  const { config, db, workerDb, log, tokens } = deps;
  const idempotency = new IdempotencyEngine(db, config.idempotencyRetentionSeconds, deps.box);
  // The one after-commit hook (platform/after-commit.ts): what a transaction of either pool noted for after its commit
  // (an event recorded, a collection inserted) is emitted once it commits.
  const afterCommit = new AfterCommit();
  afterCommit.watch(db);
  if (workerDb !== db) afterCommit.watch(workerDb);
  const cursors = new CursorCodec(deps.keys.cursorKey);
  const credentials = new CredentialsService(tokens, config.paymentsEnv);
  // The background's writes (providers' answers, notices, expiry, the simulator's operations) share transactions: many
  // in one commit.
  const batcher = new TransactionBatcher(workerDb, 100, 4);
  // Built before the registry, which hands it the balances answered by callback; it reads the registry's connectors.
  const operatorFloat = new OperatorFloatService(
    workerDb,
    { intervalMs: config.operatorFloatIntervalMs, thresholds: config.operatorFloatThresholds },
    log,
    () => providers.connectors(),
  );
  const providers = buildProviders(
    deps.providerPlan,
    config,
    workerDb,
    deps.keys.sandboxProviderSecret,
    deps.catalogue,
    log,
    deps.box,
    batcher,
    operatorFloat,
  );
  const availability = new AvailabilityService(db, workerDb, deps.catalogue, config.availability, log);
  // New collections wait for no prompt that would come too late: refused while this process's initiations are behind,
  // or while their rail is down (from the availability snapshot in memory).
  const collections = new CollectionsService(
    db,
    deps.catalogue,
    idempotency,
    cursors,
    providers,
    afterCommit,
    { waitingMs: (): number => submitter.waitingMs(), maxWaitMs: config.initiationMaxWaitMs },
    (market, rail) => availability.unavailable(market, rail, 'collections'),
  );
  const risk = new RiskService(db, idempotency, cursors);
  const refunds = new RefundsService(
    db,
    deps.catalogue,
    idempotency,
    cursors,
    (tx, workspaceId, refundId) => risk.afterRefundRequested(tx, workspaceId, refundId),
    afterCommit,
  );
  const marketData = new MarketDataService(db, idempotency, cursors, config.rateMaxAgeSeconds);
  const deposits = new DepositsService(db, deps.catalogue, idempotency, cursors, marketData, {
    env: config.paymentsEnv,
    autoconvertFeeBps: config.autoconvertFeeBps,
    log: log,
  });
  const payouts = new PayoutsService(
    db,
    deps.catalogue,
    idempotency,
    cursors,
    marketData,
    risk,
    providers,
    afterCommit,
  );
  const predict = new PredictService(deps.catalogue);
  const checkout = new CheckoutService(db, deps.catalogue, collections, idempotency, cursors, {
    env: config.paymentsEnv,
    publicBaseUrl: config.publicBaseUrl,
    predictor: predict,
  });
  // In the transaction that moves a collection: its checkout session follows, and the risk rules look at it.
  const lifecycle = new Lifecycle(
    log,
    async (tx, workspaceId, collection, late) => {
      await checkout.followCollection(tx, workspaceId, collection, late);
      await risk.afterCollectionMoved(tx, workspaceId, collection);
    },
    (currency) => exponentOf(deps.catalogue, currency),
    (tx, workspaceId, collection) => checkout.lateAttemptStands(tx, workspaceId, collection),
  );
  const notices = new ProviderNotices(db, providers, lifecycle, batcher, log);
  // An initiation is held by its sender for longer than any provider call may take (gateways: 15 s).
  const leaseSeconds = Math.ceil(Math.max(config.operatorTimeoutMs, 15_000) / 1000) + 5;
  // Provider calls in flight at once: a call holds no database connection (claims and answers are batched), so under
  // load payers' prompts go out as fast as collections are created.
  const submitter = new Submitter(
    workerDb,
    providers,
    lifecycle,
    batcher,
    log,
    config.initiationConcurrency,
    leaseSeconds,
    // Payouts on a rail that is down wait for it (as pawaPay holds them), looked at again when it should be back.
    (kind, row) => {
      if (kind !== 'payout') return undefined;
      const { market, rail } = row as MovingRow & { market: string; rail: string };
      const down = availability.unavailable(market, rail, 'payouts');
      return down && Math.min(down.retryAfterSeconds, config.availability.retryAfterSeconds);
    },
  );
  const webhooks = new WebhooksService(
    db,
    config.paymentsEnv,
    idempotency,
    cursors,
    afterCommit,
    deps.box,
    deps.lookUpAddresses,
  );

  const beneficiaries = new BeneficiariesService(db, deps.catalogue, idempotency, cursors);
  const reports = new ReportsService(db, deps.catalogue);
  const audit = new AuditService(db, cursors);
  const workspaceConfiguration = new WorkspaceConfigurationService(db, deps.catalogue, idempotency);
  const sandbox =
    config.paymentsEnv === 'sandbox' && providers.sandbox
      ? new SandboxService(idempotency, lifecycle, providers.sandbox)
      : undefined;
  // The test clock's status queries after a move run on the background's connections, as the sweep's do.
  const sandboxClock =
    config.paymentsEnv === 'sandbox'
      ? new SandboxClockService(db, idempotency, config.reconcileAfterSeconds, (workspaceId, afterSeconds) =>
          reconcileWorkspace(workerDb, providers, notices, log, workspaceId, afterSeconds).catch((err: unknown) => {
            log.warn(
              { err, workspace_id: workspaceId },
              'status queries after a clock move failed; the sweep asks later',
            );
            return 0;
          }),
        )
      : undefined;
  return {
    afterCommit,
    box: deps.box,
    tokens,
    credentials,
    audit,
    idempotency,
    collections,
    checkout,
    predict,
    availability,
    refunds,
    risk,
    marketData,
    deposits,
    payouts,
    beneficiaries,
    reports,
    workspaceConfiguration,
    lifecycle,
    providers,
    operatorFloat,
    notices,
    batcher,
    submitter,
    webhooks,
    sandbox,
    sandboxClock,
    metrics: deps.metrics,
  };
}

/**
 * What the authentication hook (platform/auth.ts) asks of the credentials module, handed in as a function so that
 * platform/ imports no module: the active credential a signed token names and, for a member's, what its role permits.
 */
export function liveCredentialLookup(db: Db): LiveCredentialLookup {
  return async (workspaceId, credentialId, tokenId) => {
    const found = await findLiveToken(db, workspaceId, credentialId, tokenId);
    if (!found) return undefined;
    return {
      audience: found.audience,
      environment: found.environment,
      permissions: permissionsOfRole(found.member_role),
      enabledRails: found.enabled_rails,
    };
  };
}
