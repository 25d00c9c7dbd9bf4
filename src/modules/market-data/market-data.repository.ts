// SQL for market data. Sources and rates are the platform's shared reference data (like the catalogue),
// so these queries are not scoped by workspace; who may write them is the access table's business.
import type { Queryable } from '../../db/pool.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';

export interface SourceRow {
  id: string;
  name: string;
  kind: string;
  url: string | null;
  status: 'active' | 'inactive';
  created_at: Date;
  updated_at: Date;
}

export interface RateRow {
  id: string;
  source_id: string;
  source_name: string;
  base: string;
  quote: string;
  /** numeric comes back from pg as an exact string. */
  rate: string;
  observed_at: Date;
  created_at: Date;
}

const SOURCE_COLUMNS = 'id, name, kind, url, status, created_at, updated_at';
const RATE_COLUMNS = 'id, source_id, source_name, base, quote, rate, observed_at, created_at';
const RATES_WITH_SOURCE =
  '(SELECT r.*, s.name AS source_name, s.status AS source_status FROM rate_records r JOIN rate_sources s ON s.id = r.source_id) AS rr';

/** Inserts a source; undefined when the name is taken. */
export async function insertSource(db: Queryable, s: SourceRow): Promise<SourceRow | undefined> {
  const { rows } = await db.query<SourceRow>(
    `INSERT INTO rate_sources (${SOURCE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (name) DO NOTHING RETURNING ${SOURCE_COLUMNS}`,
    [s.id, s.name, s.kind, s.url, s.status, s.created_at, s.updated_at],
  );
  return rows[0];
}

export async function updateSource(
  db: Queryable,
  id: string,
  change: { status?: string; url?: string | null },
  at: Date,
): Promise<SourceRow | undefined> {
  const { rows } = await db.query<SourceRow>(
    `UPDATE rate_sources SET status = coalesce($2, status), url = CASE WHEN $3 THEN $4 ELSE url END, updated_at = $5
     WHERE id = $1 RETURNING ${SOURCE_COLUMNS}`,
    [id, change.status ?? null, change.url !== undefined, change.url ?? null, at],
  );
  return rows[0];
}

export async function findSource(db: Queryable, id: string): Promise<SourceRow | undefined> {
  return (await db.query<SourceRow>(`SELECT ${SOURCE_COLUMNS} FROM rate_sources WHERE id = $1`, [id])).rows[0];
}

export async function listActiveSources(db: Queryable, f: Omit<ListFilter, 'status'>): Promise<SourceRow[]> {
  const { text, values } = listQuery('rate_sources', SOURCE_COLUMNS, { status: 'active' }, { ...f, status: undefined });
  return (await db.query<SourceRow>(text, values)).rows;
}

export async function insertRate(
  db: Queryable,
  r: Omit<RateRow, 'source_name'> & { posted_by: string },
): Promise<void> {
  await db.query(
    'INSERT INTO rate_records (id, source_id, base, quote, rate, observed_at, created_at, posted_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    [r.id, r.source_id, r.base, r.quote, r.rate, r.observed_at, r.created_at, r.posted_by],
  );
}

export async function listRates(
  db: Queryable,
  pair: { base: string; quote: string } | undefined,
  f: Omit<ListFilter, 'status'>,
): Promise<RateRow[]> {
  const { text, values } = listQuery(RATES_WITH_SOURCE, RATE_COLUMNS, pair ?? {}, { ...f, status: undefined });
  return (await db.query<RateRow>(text, values)).rows;
}

/** The newest rate for a pair from an active source observed since `notBefore`, if any. */
export async function freshestRate(
  db: Queryable,
  base: string,
  quote: string,
  notBefore: Date,
): Promise<RateRow | undefined> {
  const { rows } = await db.query<RateRow>(
    `SELECT ${RATE_COLUMNS} FROM ${RATES_WITH_SOURCE}
     WHERE base = $1 AND quote = $2 AND source_status = 'active' AND observed_at >= $3
     ORDER BY observed_at DESC, id DESC LIMIT 1`,
    [base, quote, notBefore],
  );
  return rows[0];
}
