// SQL of operator float: each operator account's last balance (operator_float) and the schedule of the reads
// (operator_float_reads). Platform-wide tables: an operator account belongs to a connector, not to a workspace, so
// these queries are keyed by the connector's name.
import type { Queryable, Tx } from '../../db/pool.js';
import { uuidv7 } from '../../platform/ids.js';

export interface FloatRow {
  id: string;
  connector: string;
  account: string;
  currency: string | null;
  /** Minor units; bigint comes back from pg as a string. */
  balance: string | null;
  read_at: Date | null;
  low: boolean;
  last_error: string | null;
  error_at: Date | null;
}

const COLUMNS = 'id, connector, account, currency, balance, read_at, low, last_error, error_at';

/**
 * Claims the connector's next read: true for the one node whose statement moved next_read_at past now (or made the
 * row), false for every other node until the interval has passed.
 */
export async function claimRead(db: Queryable, connector: string, intervalMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO operator_float_reads (connector, next_read_at)
     VALUES ($1, now() + make_interval(secs => $2::double precision / 1000))
     ON CONFLICT (connector) DO UPDATE SET next_read_at = EXCLUDED.next_read_at
     WHERE operator_float_reads.next_read_at <= now()`,
    [connector, intervalMs],
  );
  return (rowCount ?? 0) > 0;
}

/** The account's row, locked for the rest of `tx` (made first if it is new), so two nodes never both see a crossing. */
export async function lockAccount(tx: Tx, connector: string, account: string): Promise<FloatRow> {
  await tx.query(
    `INSERT INTO operator_float (id, connector, account) VALUES ($1, $2, $3) ON CONFLICT (connector, account) DO NOTHING`,
    [uuidv7(), connector, account],
  );
  const { rows } = await tx.query<FloatRow>(
    `SELECT ${COLUMNS} FROM operator_float WHERE connector = $1 AND account = $2 FOR UPDATE`,
    [connector, account],
  );
  const row = rows[0];
  if (!row) throw new Error(`operator_float row ${connector}/${account} vanished`);
  return row;
}

/** A successful read: the balance, when it was read and whether it is below its threshold; the last error cleared. */
export async function storeBalance(
  tx: Tx,
  connector: string,
  account: string,
  reading: { currency: string; balance: number; low: boolean; at: Date },
): Promise<FloatRow> {
  const { rows } = await tx.query<FloatRow>(
    `UPDATE operator_float SET currency = $3, balance = $4, read_at = $5, low = $6, last_error = NULL, error_at = NULL
     WHERE connector = $1 AND account = $2 RETURNING ${COLUMNS}`,
    [connector, account, reading.currency, reading.balance, reading.at, reading.low],
  );
  const row = rows[0];
  if (!row) throw new Error(`operator_float row ${connector}/${account} vanished`);
  return row;
}

/** A failed read of one account: the error is kept beside the last balance, which stays as it was. */
export async function storeAccountError(
  db: Queryable,
  connector: string,
  account: string,
  error: string,
  at: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO operator_float (id, connector, account, last_error, error_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (connector, account) DO UPDATE SET last_error = EXCLUDED.last_error, error_at = EXCLUDED.error_at`,
    [uuidv7(), connector, account, error, at],
  );
}

/**
 * A failed read of a whole connector (the operator down, a refused credential): the error goes on each of its
 * accounts, or, when none is known yet, on a row of account '' standing for them.
 */
export async function storeConnectorError(db: Queryable, connector: string, error: string, at: Date): Promise<void> {
  const { rowCount } = await db.query(`UPDATE operator_float SET last_error = $2, error_at = $3 WHERE connector = $1`, [
    connector,
    error,
    at,
  ]);
  if ((rowCount ?? 0) === 0) await storeAccountError(db, connector, '', error, at);
}

/** The row standing for a connector's unknown accounts, once they are known. */
export async function dropPlaceholder(tx: Tx, connector: string): Promise<void> {
  await tx.query(`DELETE FROM operator_float WHERE connector = $1 AND account = ''`, [connector]);
}

/** Every operator account, by connector and account (a few dozen at most: one per connector account). */
export async function listAccounts(db: Queryable): Promise<FloatRow[]> {
  const { rows } = await db.query<FloatRow>(
    `SELECT ${COLUMNS} FROM operator_float ORDER BY connector, account LIMIT 1000`,
  );
  return rows;
}
