// Opens the database the configuration names: DATABASE_URL, or the embedded server in DATA_DIR.
import type { Config } from '../config.js';
import { startEmbedded, type EmbeddedServer } from './embedded.js';
import { createPool, type Db } from './pool.js';

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

export async function openDatabase(
  config: Config,
  log: (message: string) => void,
  notice: (message: string) => void = log,
): Promise<OpenDatabase> {
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
  const pool = createPool(url, config.dbPoolSize, config.dbPreparedStatements);
  const workerPool = createPool(url, config.workerDbPoolSize, config.dbPreparedStatements);
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    await workerPool.end().catch(() => undefined);
    await embedded?.stop();
    throw new Error(`cannot reach the database: ${(err as Error).message}`, { cause: err });
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
