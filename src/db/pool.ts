// The one connection pool and the transaction helper every module uses.
import pg from 'pg';

// bigint columns (amounts in minor units) come back as JS numbers; amounts are bounded well
// inside Number.MAX_SAFE_INTEGER by the catalogue, and counts never approach it.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`int8 value ${value} is outside the safe integer range`);
  return n;
});

export type Db = pg.Pool;
export type Tx = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = pg.Pool | pg.PoolClient;

/**
 * Prepared statements are named here, and only here: every statement sent with parameters is prepared once per
 * connection under a name kept for its text, so later runs skip PostgreSQL's parse and, after a few runs, its
 * planning (measured: PostgreSQL's CPU per created collection down by about a third). Statements without
 * parameters (BEGIN, COMMIT) go as they are. Our SQL is written in the code, so its texts are few; past
 * MAX_PREPARED texts, new ones run unprepared. A named statement lives in one server session, so a pooler that
 * hands each transaction another session (PgBouncer in transaction mode before 1.21) needs them off
 * (`DB_PREPARED_STATEMENTS=false`, docs/operations.md#pgbouncer).
 */
const statementNames = new Map<string, string>();
const MAX_PREPARED = 1000;

class PreparingClient extends pg.Client {
  // pg's own overloads cannot be re-declared one by one; the arguments pass through unchanged.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(config: any, values?: any, callback?: any): any {
    if (typeof config === 'string' && Array.isArray(values)) {
      let name = statementNames.get(config);
      if (name === undefined && statementNames.size < MAX_PREPARED)
        statementNames.set(config, (name = `p${statementNames.size + 1}`));
      if (name !== undefined) return super.query({ name, text: config, values }, callback);
    }
    return super.query(config, values, callback);
  }
}

/** `prepare`: name the statements (above); false sends each one unnamed, as pg does by default. */
export function createPool(connectionString: string, max: number, prepare = true): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    application_name: 'payments-service',
    Client: prepare ? PreparingClient : pg.Client,
    idleTimeoutMillis: 60_000,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return pool;
}

/** The one transaction helper: BEGIN, the work, COMMIT; ROLLBACK if the work throws. */
export async function withTransaction<T>(pool: pg.Pool, work: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
