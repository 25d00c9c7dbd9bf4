// Records the statements the service's own pool sends (the requests' round trips), with the error each one ended in.
import type { Pool, PoolClient } from 'pg';

export interface SentStatement {
  text: string;
  /** The SQLSTATE and constraint of the error the statement ended in; undefined when it succeeded. */
  error?: { code: string | undefined; constraint: string | undefined };
}

type Callback = (err: Error | null | undefined, res?: unknown) => void;

const recordings = new WeakMap<Pool, SentStatement[][]>();

/**
 * Runs `work` and returns every statement `pool` sent meanwhile, in the order they were sent. Each client the pool
 * hands out (to `pool.query` as to a transaction) gets its `query` wrapped once; the wrapper only records while a
 * recording is on. Background work runs on a pool of its own (`workerDb`), so it is not counted.
 */
export async function statementsSent<T>(
  pool: Pool,
  work: () => Promise<T>,
): Promise<{ result: T; statements: SentStatement[] }> {
  if (!recordings.has(pool)) {
    const active: SentStatement[][] = [];
    recordings.set(pool, active);
    const wrapped = new WeakSet<PoolClient>();
    pool.on('acquire', (client: PoolClient) => {
      if (wrapped.has(client)) return;
      wrapped.add(client);
      const original = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        if (active.length === 0) return original(...args);
        const first = args[0];
        const sent: SentStatement = { text: typeof first === 'string' ? first : (first as { text: string }).text };
        for (const list of active) list.push(sent);
        const failed = (err: unknown): void => {
          const e = err as { code?: string; constraint?: string };
          sent.error = { code: e.code, constraint: e.constraint };
        };
        const last = args[args.length - 1];
        if (typeof last === 'function') {
          const cb = last as Callback;
          args[args.length - 1] = (err: Error | null | undefined, res?: unknown) => {
            if (err) failed(err);
            cb(err, res);
          };
          return original(...args);
        }
        const result = original(...args);
        if (result instanceof Promise) result.catch(failed);
        return result;
      };
    });
  }
  const active = recordings.get(pool) as SentStatement[][];
  const statements: SentStatement[] = [];
  active.push(statements);
  try {
    return { result: await work(), statements };
  } finally {
    active.splice(active.indexOf(statements), 1);
  }
}

/** A statement that writes (an INSERT, UPDATE or DELETE anywhere in it), as opposed to a read or transaction control. */
export const isWrite = (text: string): boolean => /\b(INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b/i.test(text);

/** BEGIN, COMMIT, ROLLBACK or SAVEPOINT. */
export const isTransactionControl = (text: string): boolean =>
  /^\s*(BEGIN|START\s+TRANSACTION|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i.test(text);
