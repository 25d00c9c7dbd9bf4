// SQL for the settlement report and for reconciliation against operator statements. The report's queries take the
// workspace id first. Reconciliation is maintenance: it reads one provider's objects across workspaces, as the
// operator's statement covers every workspace the connector serves.
import type { Queryable } from '../../db/pool.js';
import { FEE_INCOME, WORKSPACE_AVAILABLE } from '../ledger/ledger.repository.js';

/** The events that put an object in a final status; the report counts them by the day they were recorded. */
export const FINAL_EVENTS = [
  'collection.successful',
  'collection.failed',
  'collection.expired',
  'collection.refunded',
  'collection.reversed',
  'refund.successful',
  'refund.failed',
  'payout.successful',
  'payout.failed',
] as const;

export interface OutcomeRow {
  market: string;
  rail: string;
  type: (typeof FINAL_EVENTS)[number];
  count: number;
  amount: string;
  fee: string;
}

/**
 * The day's outcomes per rail, from the events (immutable, so a past day's report never changes): each object counted
 * under the status it reached that day, with its amount (a refund's rail is its collection's).
 */
export async function outcomesOfDay(
  db: Queryable,
  workspaceId: string,
  currency: string,
  from: Date,
  to: Date,
): Promise<OutcomeRow[]> {
  const { rows } = await db.query<OutcomeRow>(
    `SELECT coalesce(e.data->>'market', c.market) AS market, coalesce(e.data->>'rail', c.rail) AS rail, e.type,
            count(*)::int AS count, sum((e.data->>'amount')::bigint)::text AS amount,
            coalesce(sum((e.data->>'fee')::bigint), 0)::text AS fee
     FROM events e
     LEFT JOIN collections c
       ON e.object_type = 'refund' AND c.workspace_id = e.workspace_id AND c.id = (e.data->>'collection_id')::uuid
     WHERE e.workspace_id = $1 AND e.created_at >= $3 AND e.created_at < $4 AND e.type = ANY($5::text[])
       AND e.data->>'currency' = $2
     GROUP BY 1, 2, 3
     ORDER BY 1, 2, 3`,
    [workspaceId, currency, from, to, FINAL_EVENTS],
  );
  return rows;
}

export interface MovementRow {
  kind: string;
  count: number;
  /** The change of the available balance (credit-normal, so the negated sum of its lines). */
  amount: string;
}

/** The available balance's movements of the day, by posting kind. */
export async function availableMovements(
  db: Queryable,
  workspaceId: string,
  currency: string,
  from: Date,
  to: Date,
): Promise<MovementRow[]> {
  const { rows } = await db.query<MovementRow>(
    `SELECT p.kind, count(*)::int AS count, (-sum(l.amount))::text AS amount
     FROM ledger_postings p JOIN ledger_lines l ON l.posting_id = p.id AND l.account = $5
     WHERE p.workspace_id = $1 AND p.currency = $2 AND p.created_at >= $3 AND p.created_at < $4
     GROUP BY p.kind ORDER BY p.kind`,
    [workspaceId, currency, from, to, WORKSPACE_AVAILABLE],
  );
  return rows;
}

/** The available balance from everything posted before `at` (the day's opening; its closing adds the movements). */
export async function availableBefore(db: Queryable, workspaceId: string, currency: string, at: Date): Promise<number> {
  const { rows } = await db.query<{ available: string }>(
    `SELECT (-coalesce(sum(l.amount), 0))::text AS available
     FROM ledger_postings p JOIN ledger_lines l ON l.posting_id = p.id AND l.account = $4
     WHERE p.workspace_id = $1 AND p.currency = $2 AND p.created_at < $3`,
    [workspaceId, currency, at, WORKSPACE_AVAILABLE],
  );
  return Number(rows[0]?.available ?? 0);
}

/** The fees earned in [from, to) (fee income is credit-normal). */
export async function feesOfDay(
  db: Queryable,
  workspaceId: string,
  currency: string,
  from: Date,
  to: Date,
): Promise<number> {
  const { rows } = await db.query<{ fees: string }>(
    `SELECT (-coalesce(sum(l.amount), 0))::text AS fees
     FROM ledger_postings p JOIN ledger_lines l ON l.posting_id = p.id AND l.account = $5
     WHERE p.workspace_id = $1 AND p.currency = $2 AND p.created_at >= $3 AND p.created_at < $4`,
    [workspaceId, currency, from, to, FEE_INCOME],
  );
  return Number(rows[0]?.fees ?? 0);
}

export interface MismatchEventRow {
  id: string;
  object_type: string;
  object_id: string;
  data: Record<string, unknown>;
  created_at: Date;
}

/** The day's `reconciliation.mismatch` events. */
export async function mismatchesOfDay(
  db: Queryable,
  workspaceId: string,
  from: Date,
  to: Date,
): Promise<MismatchEventRow[]> {
  const { rows } = await db.query<MismatchEventRow>(
    `SELECT id, object_type, object_id, data, created_at FROM events
     WHERE workspace_id = $1 AND type = 'reconciliation.mismatch' AND created_at >= $2 AND created_at < $3
     ORDER BY created_at, id`,
    [workspaceId, from, to],
  );
  return rows;
}

/** One of our money movements at a provider, as reconciliation compares it with the operator's statement. */
export interface ProviderRecord {
  kind: 'collection' | 'refund' | 'payout';
  id: string;
  workspace_id: string;
  status: string;
  amount: number;
  currency: string;
  provider_reference: string | null;
  provider_receipt: string | null;
  /** When the money moved (or the object failed): a collection's credit, a refund's or payout's resolution. */
  moved_at: Date | null;
}

const RECORDS = `
  SELECT 'collection' AS kind, c.id, c.workspace_id, c.status, c.amount, c.currency, c.provider_reference,
         c.provider_receipt, p.created_at AS moved_at
  FROM collections c
  LEFT JOIN ledger_postings p ON p.workspace_id = c.workspace_id AND p.object_id = c.id AND p.kind = 'collection_successful'
  WHERE c.provider = $1
  UNION ALL
  SELECT 'refund', r.id, r.workspace_id, r.status, r.amount, r.currency, r.provider_reference, r.provider_receipt,
         r.resolved_at
  FROM refunds r WHERE r.provider = $1
  UNION ALL
  SELECT 'payout', o.id, o.workspace_id, o.status, o.amount, o.currency, o.provider_reference, o.provider_receipt,
         o.completed_at
  FROM payouts o WHERE o.provider = $1`;

/** Our objects at `provider` that a statement names by receipt or reference. Maintenance: spans workspaces. */
export async function recordsNamed(db: Queryable, provider: string, references: string[]): Promise<ProviderRecord[]> {
  const { rows } = await db.query<ProviderRecord>(
    `SELECT * FROM (${RECORDS}) r WHERE r.provider_receipt = ANY($2::text[]) OR r.provider_reference = ANY($2::text[])`,
    [provider, references],
  );
  return rows;
}

/**
 * Our money movements at `provider` in [from, to]: collections credited, refunds and payouts that succeeded. What a
 * statement of that period must list. Maintenance: spans workspaces.
 */
export async function movementsBetween(
  db: Queryable,
  provider: string,
  from: Date,
  to: Date,
): Promise<ProviderRecord[]> {
  const { rows } = await db.query<ProviderRecord>(
    `SELECT * FROM (${RECORDS}) r
     WHERE r.moved_at >= $2 AND r.moved_at <= $3
       AND (r.kind = 'collection' OR r.status = 'successful')
     ORDER BY r.moved_at, r.id`,
    [provider, from, to],
  );
  return rows;
}

/** Whether any collection, refund or payout of this database runs on `provider`. Maintenance: spans workspaces. */
export async function providerKnown(db: Queryable, provider: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM collections WHERE provider = $1
     UNION ALL SELECT 1 FROM refunds WHERE provider = $1
     UNION ALL SELECT 1 FROM payouts WHERE provider = $1 LIMIT 1`,
    [provider],
  );
  return rows.length > 0;
}
