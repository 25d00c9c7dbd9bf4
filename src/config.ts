// Environment parsed once at boot; a bad value stops the service with a clear message.
import path from 'node:path';
import { DEFAULT_EMBEDDED_PORT } from './db/embedded.js';
import { ConfigError, SECRETS_KEY_FORM, type PaymentsEnv } from './platform/environment.js';

export { ConfigError, SECRETS_KEY_FORM, type PaymentsEnv };

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  paymentsEnv: PaymentsEnv;
  publicBaseUrl: string;
  logLevel: string;
  /** Path to a JSON file replacing the built-in market and rail catalogue. */
  catalogueFile: string | undefined;
  /** Sustained requests per second allowed per credential (token bucket refill rate). */
  rateLimitPerSecond: number;
  /** Bucket size: how many requests a credential may burst above the sustained rate. */
  rateLimitBurst: number;
  /** Where the nodes share their per-credential rate-limit buckets; PostgreSQL when unset. */
  redisUrl: string | undefined;
  /** The mail server invitations are sent through (smtp:// or smtps://); unset: the inviter is shown the link. */
  smtpUrl: string | undefined;
  /** The From of the service's mail. */
  smtpFrom: string;
  /** Requests per second a payer's client may make on one checkout link (token bucket refill rate), and its burst. */
  checkoutRateLimitPerSecond: number;
  checkoutRateLimitBurst: number;
  /**
   * Whom to believe about the client's address (X-Forwarded-For): false (nobody: the peer is the client), true (any
   * proxy), a number of proxy hops, or a comma-separated list of proxy addresses or CIDRs. Used by per-client limits.
   */
  trustProxy: boolean | number | string;
  /** Port of the embedded PostgreSQL (0: any free port). */
  embeddedPgPort: number;
  /** Size of the PostgreSQL connection pool. */
  dbPoolSize: number;
  /** Connections for background work (provider initiations, the sandbox provider, webhook delivery, the sweeps' searches), apart from the API's. */
  workerDbPoolSize: number;
  /** Prepare statements under names, once per connection (src/db/pool.ts); off behind a pooler in transaction mode. */
  dbPreparedStatements: boolean;
  /** A new database connection not open within this fails (503 database_unavailable), in ms. */
  dbConnectTimeoutMs: number;
  /** PostgreSQL's statement_timeout for the service's sessions, in ms (0: none). */
  dbStatementTimeoutMs: number;
  /** PostgreSQL's idle_in_transaction_session_timeout for the service's sessions, in ms (0: none). */
  dbIdleInTransactionTimeoutMs: number;
  /** At start, how long to keep trying a database that does not answer (a failover, a server still starting), in ms. */
  dbStartTimeoutMs: number;
  /**
   * New collections are refused (503 `overloaded`) while the oldest initiation queued in this process has waited longer
   * than this, in ms: a payer's prompt that would arrive after their phone gave up is not accepted.
   */
  initiationMaxWaitMs: number;
  /** Provider initiations in flight at once per process (each a provider call; none holds a database connection). */
  initiationConcurrency: number;
  /** How long an idempotency outcome is kept, in seconds (contract: 24 hours). */
  idempotencyRetentionSeconds: number;
  /** Finished webhook deliveries (succeeded or failed) and their attempts are deleted this many days after they finished. */
  webhookDeliveryRetentionDays: number;
  /**
   * Provider notices (the record that de-duplicates repeated callbacks by notice id) are deleted this many days after
   * they arrived; at least 7, far longer than any provider repeats a callback.
   */
  providerNoticeRetentionDays: number;
  /** Audit events are deleted this many days after they occurred; at least 30 (the table's trigger refuses younger). */
  auditRetentionDays: number;
  /** How often the retention purges run, in ms. */
  purgeIntervalMs: number;
  /** Rows one purge statement deletes at most (a webhook delivery counts with its attempts). */
  purgeBatchSize: number;
  /** A JSON file naming the operator connectors and HTTP gateways that run rails (required in production for every rail). */
  providersFile: string | undefined;
  /** How long one call to an operator's API (Daraja, MoMo, Airtel) may take before it counts as unanswered, in ms. */
  operatorTimeoutMs: number;
  /** Time between two steps of the sandbox simulator, in milliseconds. */
  sandboxStepMs: number;
  /** How often the background workers look for due work (expiry, simulator steps, unsent initiations), in ms. */
  workerIntervalMs: number;
  /** A collection or refund in flight this long without news is asked about at its provider, in seconds. */
  reconcileAfterSeconds: number;
  /** A rate observed longer ago than this is never used to convert, in seconds. */
  rateMaxAgeSeconds: number;
  /** The fee on autoconvert credits, basis points of the converted amount. */
  autoconvertFeeBps: number;
  /** Delays before each webhook retry, in ms (by default immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
  webhookRetryScheduleMs: number[];
  /** How long one webhook delivery attempt may take before it counts as failed, in ms. */
  webhookTimeoutMs: number;
  /** How often the webhook relay looks for new events and due deliveries, in ms. */
  webhookPollMs: number;
  /** How long a request may take to arrive in full (headers and body) before it is answered 408, in ms. */
  requestTimeoutMs: number;
  /** On SIGTERM, how long requests in flight may take to finish before their connections are closed, in ms. */
  shutdownDrainMs: number;
  /** Failed authentications one client address may make per minute (and at once) before it gets 429 for a while. */
  authFailuresPerMinute: number;
  /** Deliveries in flight at once in one process, and at most this many to one endpoint. */
  webhookConcurrency: number;
  webhookEndpointConcurrency: number;
  /**
   * The key secrets at rest are sealed under (32 bytes, SECRETS_KEY); unset: DATA_DIR/secrets.key, created on first
   * start (src/platform/secrets-key.ts).
   */
  secretsKey: Buffer | undefined;
  /** An earlier key, kept during a rotation to open what it sealed (SECRETS_KEY_PREVIOUS). */
  secretsKeyPrevious: Buffer | undefined;
  /** How often each connector's operator balances are read (OPERATOR_FLOAT_INTERVAL_MS). */
  operatorFloatIntervalMs: number;
  /** Thresholds in minor units, by `connector/account` or `connector` (OPERATOR_FLOAT_THRESHOLDS). */
  operatorFloatThresholds: Record<string, number>;
  /** Rail availability: the window, thresholds and paces (docs/configuration.md, docs/guides/availability.md). */
  availability: AvailabilityConfig;
}

/** How rail availability is judged from the attempts the service saw (src/modules/availability). */
export interface AvailabilityConfig {
  /** Judge from traffic (else only planned maintenance moves a rail); by default in production only. */
  judgeTraffic: boolean;
  /** The sliding window of attempts judged, by their creation time, in seconds. */
  windowSeconds: number;
  /** Attempts with a known outcome in the window below which a rail is not judged (stays operational). */
  minAttempts: number;
  /** Share of operator failures (errors, refusals, time-outs) at or above which a rail is degraded, in percent. */
  degradedPercent: number;
  /** Share of operator failures at or above which a rail is down, in percent. */
  downPercent: number;
  /** Median time to a final status above which a rail is degraded, in seconds. */
  slowSeconds: number;
  /** An attempt its provider has not accepted after this long counts as an operator time-out, in seconds. */
  timeoutSeconds: number;
  /** How often one node judges every rail, in ms. */
  intervalMs: number;
  /** How often every node reads the judgement into memory (what a create consults), in ms. */
  refreshMs: number;
  /** The Retry-After of a 503 `rail_unavailable` for a rail down by its traffic, in seconds. */
  retryAfterSeconds: number;
  /** A change is sent to the workspaces that used the rail within this many days. */
  notifyDays: number;
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got '${raw}'`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

const DURATION = /^(\d+)(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A comma-separated list of durations such as `0s,5s,5m,30m,2h`; each at most 24 hours. */
function durations(env: NodeJS.ProcessEnv, name: string, fallback: string): number[] {
  const raw = env[name] === undefined || env[name] === '' ? fallback : (env[name] as string);
  const items = raw.split(',').map((s) => s.trim());
  if (items.length > 20) throw new ConfigError(`${name} may list at most 20 delays, got ${items.length}`);
  return items.map((item) => {
    const m = DURATION.exec(item);
    if (!m)
      throw new ConfigError(
        `${name} must be a comma-separated list of durations like 0s,5s,5m,2h; '${item}' is not one`,
      );
    const ms = Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    if (ms > 86_400_000) throw new ConfigError(`${name}: '${item}' is longer than 24 hours`);
    return ms;
  });
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new ConfigError(`${name} must be true or false, got '${raw}'`);
}

function trustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (!/^[0-9A-Fa-f:.,/ ]+$/.test(raw))
    throw new ConfigError(`TRUST_PROXY must be true, false, a hop count or a list of addresses/CIDRs; got '${raw}'`);
  return raw;
}

/** A secrets key from the environment; the message never quotes the value, which is a secret. */
function secretsKey(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (!SECRETS_KEY_FORM.test(raw))
    throw new ConfigError(
      `${name} must be 32 random bytes in base64 (44 characters ending in '=', as \`openssl rand -base64 32\` prints); ` +
        `the value set has ${raw.length} characters`,
    );
  return Buffer.from(raw, 'base64');
}

export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '0s,5s,5m,30m,2h,5h,10h,10h';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const paymentsEnv = env.PAYMENTS_ENV ?? 'sandbox';
  if (paymentsEnv !== 'sandbox' && paymentsEnv !== 'production') {
    throw new ConfigError(`PAYMENTS_ENV must be 'sandbox' or 'production', got '${paymentsEnv}'`);
  }
  const databaseUrl = env.DATABASE_URL === '' ? undefined : env.DATABASE_URL;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// URL (leave it unset for the embedded database)');
  }
  const publicBaseUrl = (env.PUBLIC_BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, '');
  try {
    new URL(publicBaseUrl);
  } catch {
    throw new ConfigError(`PUBLIC_BASE_URL must be an absolute URL, got '${publicBaseUrl}'`);
  }
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent; got '${logLevel}'`);
  }
  return {
    port,
    host: env.HOST ?? '0.0.0.0',
    databaseUrl,
    dataDir: path.resolve(env.DATA_DIR ?? './data'),
    paymentsEnv,
    publicBaseUrl,
    logLevel,
    catalogueFile: env.CATALOGUE_FILE === '' ? undefined : env.CATALOGUE_FILE,
    rateLimitPerSecond: integer(env, 'RATE_LIMIT_PER_SECOND', 100, 1, 1_000_000),
    rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', 200, 1, 1_000_000),
    redisUrl: redisUrlFrom(env),
    smtpUrl: smtpUrlFrom(env),
    smtpFrom: smtpFromOf(env, publicBaseUrl),
    checkoutRateLimitPerSecond: integer(env, 'CHECKOUT_RATE_LIMIT_PER_SECOND', 5, 1, 1_000_000),
    checkoutRateLimitBurst: integer(env, 'CHECKOUT_RATE_LIMIT_BURST', 30, 1, 1_000_000),
    trustProxy: trustProxy(env.TRUST_PROXY),
    dbPoolSize: integer(env, 'DB_POOL_SIZE', 12, 1, 1000),
    workerDbPoolSize: integer(env, 'WORKER_DB_POOL_SIZE', 16, 1, 1000),
    dbPreparedStatements: boolean(env, 'DB_PREPARED_STATEMENTS', true),
    dbConnectTimeoutMs: integer(env, 'DB_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    dbStatementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 60_000, 0, 86_400_000),
    dbIdleInTransactionTimeoutMs: integer(env, 'DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 60_000, 0, 86_400_000),
    dbStartTimeoutMs: integer(env, 'DB_START_TIMEOUT_MS', 60_000, 0, 3_600_000),
    initiationMaxWaitMs: integer(env, 'INITIATION_MAX_WAIT_MS', 2000, 50, 600_000),
    initiationConcurrency: integer(env, 'INITIATION_CONCURRENCY', 64, 1, 10_000),
    embeddedPgPort: integer(env, 'EMBEDDED_PG_PORT', DEFAULT_EMBEDDED_PORT, 0, 65535),
    idempotencyRetentionSeconds: integer(env, 'IDEMPOTENCY_RETENTION_SECONDS', 86_400, 1, 30 * 86_400),
    webhookDeliveryRetentionDays: integer(env, 'WEBHOOK_DELIVERY_RETENTION_DAYS', 30, 1, 3650),
    providerNoticeRetentionDays: integer(env, 'PROVIDER_NOTICE_RETENTION_DAYS', 90, 7, 3650),
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 400, 30, 3650),
    purgeIntervalMs: integer(env, 'PURGE_INTERVAL_MS', 3_600_000, 1000, 86_400_000),
    purgeBatchSize: integer(env, 'PURGE_BATCH_SIZE', 1000, 1, 100_000),
    providersFile: env.PROVIDERS_FILE === '' ? undefined : env.PROVIDERS_FILE,
    operatorTimeoutMs: integer(env, 'OPERATOR_TIMEOUT_MS', 30_000, 100, 120_000),
    sandboxStepMs: integer(env, 'SANDBOX_STEP_MS', 2000, 1, 600_000),
    workerIntervalMs: integer(env, 'WORKER_INTERVAL_MS', 500, 10, 60_000),
    reconcileAfterSeconds: integer(env, 'RECONCILE_AFTER_SECONDS', 120, 1, 86_400),
    rateMaxAgeSeconds: integer(env, 'RATE_MAX_AGE_SECONDS', 300, 1, 7 * 86_400),
    autoconvertFeeBps: integer(env, 'AUTOCONVERT_FEE_BPS', 100, 0, 10_000),
    webhookRetryScheduleMs: durations(env, 'WEBHOOK_RETRY_SCHEDULE', DEFAULT_WEBHOOK_RETRY_SCHEDULE),
    webhookTimeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 100, 60_000),
    webhookPollMs: integer(env, 'WEBHOOK_POLL_MS', 100, 10, 60_000),
    webhookConcurrency: integer(env, 'WEBHOOK_CONCURRENCY', 64, 1, 1000),
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 30_000, 1000, 600_000),
    shutdownDrainMs: integer(env, 'SHUTDOWN_DRAIN_MS', 10_000, 100, 120_000),
    authFailuresPerMinute: integer(env, 'AUTH_FAILURES_PER_MINUTE', 60, 1, 1_000_000),
    webhookEndpointConcurrency: integer(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 8, 1, 1000),
    secretsKey: secretsKey(env, 'SECRETS_KEY'),
    secretsKeyPrevious: secretsKey(env, 'SECRETS_KEY_PREVIOUS'),
    operatorFloatIntervalMs: integer(env, 'OPERATOR_FLOAT_INTERVAL_MS', 300_000, 1000, 86_400_000),
    operatorFloatThresholds: floatThresholds(env.OPERATOR_FLOAT_THRESHOLDS),
    availability: availabilityFrom(env, paymentsEnv),
  };
}

function availabilityFrom(env: NodeJS.ProcessEnv, paymentsEnv: PaymentsEnv): AvailabilityConfig {
  const degradedPercent = integer(env, 'AVAILABILITY_DEGRADED_PERCENT', 10, 1, 100);
  const downPercent = integer(env, 'AVAILABILITY_DOWN_PERCENT', 50, 1, 100);
  if (downPercent < degradedPercent)
    throw new ConfigError(
      `AVAILABILITY_DOWN_PERCENT (${downPercent}) must be at least AVAILABILITY_DEGRADED_PERCENT (${degradedPercent})`,
    );
  return {
    // The sandbox's test numbers fail on purpose (payer outcomes, never counted), but a tenant driving operator errors
    // by hand would close a rail for every other tenant of the sandbox: there only maintenance counts unless asked.
    judgeTraffic: boolean(env, 'AVAILABILITY_JUDGE_TRAFFIC', paymentsEnv === 'production'),
    windowSeconds: integer(env, 'AVAILABILITY_WINDOW_SECONDS', 900, 10, 86_400),
    minAttempts: integer(env, 'AVAILABILITY_MIN_ATTEMPTS', 10, 1, 1_000_000),
    degradedPercent,
    downPercent,
    slowSeconds: integer(env, 'AVAILABILITY_SLOW_SECONDS', 120, 1, 86_400),
    timeoutSeconds: integer(env, 'AVAILABILITY_TIMEOUT_SECONDS', 60, 1, 86_400),
    intervalMs: integer(env, 'AVAILABILITY_INTERVAL_MS', 10_000, 10, 3_600_000),
    refreshMs: integer(env, 'AVAILABILITY_REFRESH_MS', 2000, 10, 600_000),
    retryAfterSeconds: integer(env, 'AVAILABILITY_RETRY_AFTER_SECONDS', 60, 1, 86_400),
    notifyDays: integer(env, 'AVAILABILITY_NOTIFY_DAYS', 30, 1, 400),
  };
}

/**
 * OPERATOR_FLOAT_THRESHOLDS: comma-separated `connector/account=minor units` (one account) or `connector=minor units`
 * (each account of the connector), e.g. `mpesa/Utility Account=5000000,mtn/disbursement=200000`.
 */
function floatThresholds(raw: string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (raw === undefined || raw.trim() === '') return out;
  for (const item of raw.split(',')) {
    const at = item.lastIndexOf('=');
    const key = item.slice(0, at).trim();
    const value = item.slice(at + 1).trim();
    if (at < 1 || key === '' || !/^\d{1,15}$/.test(value))
      throw new ConfigError(
        `OPERATOR_FLOAT_THRESHOLDS: '${item.trim()}' is not connector/account=amount (a whole number of minor units)`,
      );
    out[key] = Number(value);
  }
  return out;
}

/** SMTP_URL: an smtp:// or smtps:// URL (user and password in it, percent-encoded), or unset (no mail is sent). */
function smtpUrlFrom(env: Record<string, string | undefined>): string | undefined {
  const raw = env.SMTP_URL;
  if (raw === undefined || raw === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || url.hostname === '')
    throw new ConfigError(
      `SMTP_URL must be an smtp:// or smtps:// URL such as smtp://user:password@mail.example:587, got '${raw.replace(/:[^:@/]*@/, ':***@')}'`,
    );
  return raw;
}

/** SMTP_FROM: the mail's From, by default "Payments dashboard <no-reply@<PUBLIC_BASE_URL's host>>". */
function smtpFromOf(env: Record<string, string | undefined>, publicBaseUrl: string): string {
  const raw = env.SMTP_FROM;
  if (raw === undefined || raw === '') return `Payments dashboard <no-reply@${new URL(publicBaseUrl).hostname}>`;
  if (!/^[^\r\n<>]*<?[^\s@<>]+@[^\s@<>]+>?$/.test(raw))
    throw new ConfigError(`SMTP_FROM must be an address, optionally with a name ("Name <a@b.example>"), got '${raw}'`);
  return raw;
}

/** REDIS_URL: a redis:// or rediss:// URL, or unset (the buckets are shared through PostgreSQL). */
function redisUrlFrom(env: Record<string, string | undefined>): string | undefined {
  const raw = env.REDIS_URL;
  if (raw === undefined || raw === '') return undefined;
  if (!/^rediss?:\/\/[^\s]+$/.test(raw))
    throw new ConfigError(`REDIS_URL must be a redis:// or rediss:// URL, got '${raw.replace(/:[^:@/]*@/, ':***@')}'`);
  return raw;
}
