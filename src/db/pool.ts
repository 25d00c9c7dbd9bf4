// The one connection pool and the transaction helper every module uses.
import pg from 'pg';
import { isConnectionLost } from './errors.js';

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

/** How the service's connections behave when the database is slow, gone, or replaced (docs/operations.md#connections). */
export interface PoolSettings {
  /** Name the statements (above); false sends each one unnamed, as pg does by default. */
  prepare: boolean;
  /** A new connection that is not open within this fails (and the request gets 503) instead of waiting on a dead host. */
  connectTimeoutMs: number;
  /** PostgreSQL cancels a statement running longer than this (0: never). */
  statementTimeoutMs: number;
  /** PostgreSQL ends a session left idle inside a transaction this long (0: never), so it cannot hold locks forever. */
  idleInTransactionTimeoutMs: number;
}

export const DEFAULT_POOL_SETTINGS: PoolSettings = {
  prepare: true,
  connectTimeoutMs: 5000,
  statementTimeoutMs: 60_000,
  idleInTransactionTimeoutMs: 60_000,
};

export function createPool(connectionString: string, max: number, options: Partial<PoolSettings> = {}): pg.Pool {
  const settings = { ...DEFAULT_POOL_SETTINGS, ...options };
  const pool = new pg.Pool({
    connectionString,
    max,
    application_name: 'payments-service',
    Client: settings.prepare ? PreparingClient : pg.Client,
    idleTimeoutMillis: 60_000,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    // A peer that vanished without closing (a host powered off, a network cut) is noticed by the kernel's probes.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    statement_timeout: settings.statementTimeoutMs,
    idle_in_transaction_session_timeout: settings.idleInTransactionTimeoutMs,
  });
  // A connection that dies emits 'error' on its client. pg-pool listens while the client is idle but takes its listener
  // off while the client is checked out, and an 'error' with no listener ends the process: so every client gets a
  // listener of its own for its whole life. The query in flight still fails with the error, and pg-pool drops a client
  // whose connection is gone when it is released (it checks that the client is still queryable).
  pool.on('connect', (client) => client.on('error', () => undefined));
  pool.on('error', () => undefined);
  return pool;
}

/**
 * The one transaction helper: BEGIN, the work, COMMIT; ROLLBACK if the work throws. A connection lost on the way (a
 * server restart, a failover) fails the work with a database error (`isDatabaseUnavailable`); the client is released
 * with it, so pg-pool destroys it rather than reuse it. A COMMIT cut off may or may not have committed: callers that
 * must know (an idempotent write) find out on retry.
 */
export async function withTransaction<T>(pool: pg.Pool, work: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let lost: Error | undefined;
  // Notes left on this connection by work that did not run here (a transaction of its own) are not this one's.
  notes.delete(client);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    const noted = notes.get(client);
    notes.delete(client);
    if (noted) tellCommitted(pool, [...noted.values()]);
    return result;
  } catch (err) {
    notes.delete(client);
    if (isConnectionLost(err)) lost = err as Error;
    else await client.query('ROLLBACK').catch((rollbackErr: unknown) => (lost = rollbackErr as Error));
    throw err;
  } finally {
    client.release(lost);
  }
}

/** Per connection, what the transaction running on it noted for after its commit (`noteForCommit`), by key. */
const notes = new WeakMap<pg.ClientBase, Map<string, unknown>>();
/** Per pool, who hears of its transactions' notes once they commit (`onCommitted`). */
const committedListeners = new WeakMap<pg.Pool, Set<(notes: unknown[]) => void>>();

/**
 * Notes `note` on the transaction `tx` runs in (`withTransaction`): once it commits, the pool's listeners
 * (`onCommitted`) are handed it; if it rolls back, it is forgotten. One note per key and transaction: noting a key again
 * (a batch of moves, each recording events) changes nothing. What a note means is its listeners' business: db/ only
 * carries it past the commit.
 */
export function noteForCommit(tx: Tx, key: string, note: unknown): void {
  let noted = notes.get(tx);
  if (!noted) notes.set(tx, (noted = new Map()));
  if (!noted.has(key)) noted.set(key, note);
}

/**
 * Hands `listener` the notes of every transaction of `pool` that commits from now on (each committed transaction's
 * notes in one call, right after its COMMIT). It must not throw: the transaction has committed. Returns what stops it.
 */
export function onCommitted(pool: pg.Pool, listener: (notes: unknown[]) => void): () => void {
  let listeners = committedListeners.get(pool);
  if (!listeners) committedListeners.set(pool, (listeners = new Set()));
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Hands `noted` to the pool's listeners as a committed transaction's notes: for work that committed on its own, a
 * single statement sent outside any transaction (the batcher's lone statement).
 */
export function tellCommitted(pool: pg.Pool, noted: unknown[]): void {
  for (const listener of committedListeners.get(pool) ?? []) {
    try {
      listener(noted);
    } catch {
      // Listeners must not throw (see onCommitted); if one does, its transaction has committed all the same.
    }
  }
}
