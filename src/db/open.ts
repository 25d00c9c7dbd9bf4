// Opens the database the configuration names: DATABASE_URL, or the embedded server in DATA_DIR.
import { startEmbedded, type EmbeddedServer } from './embedded.js';
import { createPool, type Db, type PoolSettings } from './pool.js';

/** The settings the database is opened with (config.ts's Config has them all; db/ imports nothing above it). */
export interface DatabaseSettings {
  /** DATABASE_URL; the embedded server in `dataDir` when unset. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Port of the embedded PostgreSQL (0: any free port). */
  embeddedPgPort: number;
  /** Connections of the API's pool. */
  dbPoolSize: number;
  /** Connections of the background work's pool. */
  workerDbPoolSize: number;
  dbPreparedStatements: boolean;
  dbConnectTimeoutMs: number;
  dbStatementTimeoutMs: number;
  dbIdleInTransactionTimeoutMs: number;
  /** At start, how long to keep trying a database that does not answer, in ms. */
  dbStartTimeoutMs: number;
}

export interface OpenDatabase {
  /** The API's connections. */
  pool: Db;
  /**
   * The background work's own connections (provider initiations, the sandbox provider, webhook delivery, the sweeps'
   * searches; what a provider's answer or a sweep then changes goes through the services, on `pool`), so that
   * requests queueing for the API's pool under load never hold back sending a payer's prompt.
   */
  workerPool: Db;
  embedded: EmbeddedServer | undefined;
  /** Ends the pool, then stops the embedded server if there is one. */
  close(): Promise<void>;
}

/** How the service's pools are set up from the configuration. */
export function poolSettings(config: DatabaseSettings): PoolSettings {
  return {
    prepare: config.dbPreparedStatements,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    idleInTransactionTimeoutMs: config.dbIdleInTransactionTimeoutMs,
  };
}

/** Why the database cannot take the service's writes now, or undefined when it can. */
export async function writableProblem(db: Db): Promise<string | undefined> {
  try {
    const { rows } = await db.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
    return rows[0]?.standby ? 'the server is a standby (read-only)' : undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

export interface StartWait {
  /** Told of each try that failed (main logs it as a warning); `notice` when unset. */
  retrying?: (message: string) => void;
  /** True once the start should stop waiting (a signal arrived). */
  stopped?: () => boolean;
}

/**
 * Opens the database: the embedded server, or DATABASE_URL's. A server that does not answer yet, or answers as a
 * standby (a failover under way, a server still starting), is tried again with a growing pause for
 * DB_START_TIMEOUT_MS, each try told through `retrying`, before the start gives up.
 */
export async function openDatabase(
  config: DatabaseSettings,
  log: (message: string) => void,
  notice: (message: string) => void = log,
  waiting: StartWait = {},
): Promise<OpenDatabase> {
  const retrying = waiting.retrying ?? notice;
  let embedded: EmbeddedServer | undefined;
  let url = config.databaseUrl;
  if (url === undefined) {
    embedded = await startEmbedded({
      dataDir: config.dataDir,
      port: config.embeddedPgPort,
      database: 'payments',
      log,
      notice,
    });
    url = embedded.url;
    notice(`embedded PostgreSQL is serving ${embedded.clusterDir} on 127.0.0.1:${embedded.port}`);
  }
  const pool = createPool(url, config.dbPoolSize, poolSettings(config));
  const workerPool = createPool(url, config.workerDbPoolSize, poolSettings(config));
  const deadline = Date.now() + config.dbStartTimeoutMs;
  let pause = 250;
  for (let attempt = 1; ; attempt++) {
    const problem = await writableProblem(pool);
    if (problem === undefined) break;
    const left = deadline - Date.now();
    if (left <= 0 || waiting.stopped?.()) {
      await pool.end().catch(() => undefined);
      await workerPool.end().catch(() => undefined);
      await embedded?.stop();
      throw new Error(
        `cannot reach the database after ${attempt} tries over ${Math.round(config.dbStartTimeoutMs / 1000)} s (DB_START_TIMEOUT_MS): ${problem}`,
      );
    }
    const wait = Math.min(pause, left);
    retrying(`database not ready (try ${attempt}): ${problem}; trying again in ${wait} ms`);
    await new Promise((resolve) => setTimeout(resolve, wait));
    pause = Math.min(pause * 2, 5000);
  }
  return {
    pool,
    workerPool,
    embedded,
    async close() {
      await pool.end().catch(() => undefined);
      await workerPool.end().catch(() => undefined);
      await embedded?.stop();
    },
  };
}
