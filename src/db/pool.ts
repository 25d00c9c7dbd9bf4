// The one connection pool and the transaction helper every module uses.
import pg from 'pg';
import { isUuid } from '../platform/ids.js';

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

/** Statement text → its prepared statement's name, shared by every connection (one name per text). */
const statementNames = new Map<string, string>();
/** Our SQL is written in the code, so its texts are few; past this many, new texts run unprepared. */
const MAX_PREPARED = 1000;

/**
 * Text in which a `$n` could be anything but a parameter (string constants, quoted names, comments, dollar quotes),
 * or that holds more than one statement.
 */
const NOT_PLAIN = /['"\\;]|\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$|--|\/\*/;

/**
 * The statement with its parameters written in as literals, when that is safe to do without escaping: its text is
 * one statement with no quotes, comments or dollar quotes (so every `$n` is a parameter), every value is a UUID or
 * a finite number, and every value is used. Each goes in quotes, as a constant of no type yet, so PostgreSQL gives
 * it the type it would have given the parameter (`name = '5'` compares text where `name = 5` would fail).
 * Otherwise undefined.
 */
export function inlined(text: string, values: readonly unknown[]): string | undefined {
  if (NOT_PLAIN.test(text)) return undefined;
  const literals: string[] = [];
  for (const v of values) {
    if (typeof v === 'number' && Number.isFinite(v)) literals.push(`'${String(v)}'`);
    else if (typeof v === 'string' && isUuid(v)) literals.push(`'${v}'`);
    else return undefined;
  }
  const used = new Set<number>();
  let ok = true;
  // A `$` inside a name (`a$1`) is part of the name, not a parameter.
  const out = text.replace(/(?<![\w$])\$(\d+)/g, (_, n: string) => {
    const literal = literals[Number(n) - 1];
    if (literal === undefined) ok = false;
    else used.add(Number(n));
    return literal ?? '';
  });
  return ok && used.size === literals.length ? out : undefined;
}

/**
 * A client that prepares every statement sent with parameters, once per connection, under a name kept for its
 * text: later runs skip PostgreSQL's parse and, after a few runs, its planning (measured: PostgreSQL's CPU per
 * created collection down by about a third). Statements without parameters (BEGIN, the idempotency lookup's
 * simple query) go as they are.
 *
 * In a transaction opened by `withTransaction`, BEGIN waits for the first statement: when that one's parameters can
 * be written in as literals (`inlined`: ids and numbers, as the row locks that open most transactions take), both go
 * in one simple query, a round trip fewer; otherwise BEGIN goes first, alone, as before.
 */
class PreparingClient extends pg.Client {
  beginPending = false;

  // pg's own overloads cannot be re-declared one by one; the arguments pass through unchanged.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(config: any, values?: any, callback?: any): any {
    if (this.beginPending) {
      this.beginPending = false;
      const text = typeof config === 'string' && callback === undefined && (values === undefined || Array.isArray(values)) ? inlined(config, values ?? []) : undefined;
      if (text !== undefined) {
        return (super.query(`BEGIN; ${text}`) as unknown as Promise<pg.QueryResult[]>).then((results) => {
          const result = Array.isArray(results) && results.length === 2 ? results[1] : undefined;
          if (result === undefined) throw new Error('BEGIN and the first statement did not answer as two statements');
          return result;
        });
      }
      // A query object pg drives itself (a cursor, a stream) is handed back as it is, queued right behind BEGIN.
      if (typeof config === 'object' && config !== null && typeof (config as { submit?: unknown }).submit === 'function') {
        void (super.query('BEGIN') as unknown as Promise<unknown>).catch(() => undefined);
        return this.query(config, values, callback);
      }
      // Otherwise the statement is sent once BEGIN has answered: a failed BEGIN must not leave it to run on its own.
      // (A transaction's statements are awaited one at a time here; one sent beside it would go before it.)
      return (super.query('BEGIN') as unknown as Promise<unknown>).then(() => this.query(config, values, callback));
    }
    if (typeof config === 'string' && Array.isArray(values)) {
      let name = statementNames.get(config);
      if (name === undefined && statementNames.size < MAX_PREPARED) statementNames.set(config, (name = `p${statementNames.size + 1}`));
      if (name !== undefined) return super.query({ name, text: config, values }, callback);
    }
    return super.query(config, values, callback);
  }
}

export function createPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: 'payments-service', Client: PreparingClient, idleTimeoutMillis: 60_000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return pool;
}

export async function withTransaction<T>(pool: pg.Pool, work: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const deferring = client instanceof PreparingClient;
  try {
    // BEGIN goes with the first statement (see PreparingClient), or now on a client of another kind.
    if (deferring) client.beginPending = true;
    else await client.query('BEGIN');
    const result = await work(client);
    // A transaction that ran no statement was never opened.
    if (deferring && client.beginPending) client.beginPending = false;
    else await client.query('COMMIT');
    return result;
  } catch (err) {
    if (deferring && client.beginPending) client.beginPending = false;
    else await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
