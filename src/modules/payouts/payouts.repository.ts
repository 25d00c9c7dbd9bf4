// SQL for offramp routes (shared reference data) and payouts (the workspace id first).
import type { Queryable } from '../../db/pool.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';
import type { BeneficiaryRow } from '../beneficiaries/beneficiaries.repository.js';
import type { PayoutStatus } from './payouts.schemas.js';

export interface RouteRow {
  id: string;
  source: string;
  market: string;
  rail: string;
  currency: string;
  min_amount: number;
  max_amount: number;
  fee_fixed: number;
  fee_bps: number;
  status: 'active' | 'inactive';
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

const ROUTE_COLUMNS =
  'id, source, market, rail, currency, min_amount, max_amount, fee_fixed, fee_bps, status, created_by, created_at, updated_at';

export async function insertRoute(db: Queryable, r: RouteRow): Promise<void> {
  await db.query(
    `INSERT INTO offramp_routes (${ROUTE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
    [
      r.id,
      r.source,
      r.market,
      r.rail,
      r.currency,
      r.min_amount,
      r.max_amount,
      r.fee_fixed,
      r.fee_bps,
      r.status,
      r.created_by,
      r.created_at,
      r.updated_at,
    ],
  );
}

/** A route; `share` holds it against a concurrent change until the caller's transaction ends. */
export async function findRoute(db: Queryable, id: string, share = false): Promise<RouteRow | undefined> {
  const { rows } = await db.query<RouteRow>(
    `SELECT ${ROUTE_COLUMNS} FROM offramp_routes WHERE id = $1${share ? ' FOR SHARE' : ''}`,
    [id],
  );
  return rows[0];
}

export async function lockRoute(db: Queryable, id: string): Promise<RouteRow | undefined> {
  const { rows } = await db.query<RouteRow>(`SELECT ${ROUTE_COLUMNS} FROM offramp_routes WHERE id = $1 FOR UPDATE`, [
    id,
  ]);
  return rows[0];
}

/** The workspace whose credential added the route. */
export async function routeOwner(db: Queryable, id: string): Promise<string | undefined> {
  const { rows } = await db.query<{ workspace_id: string }>(
    'SELECT c.workspace_id FROM offramp_routes r JOIN credentials c ON c.id = r.created_by WHERE r.id = $1',
    [id],
  );
  return rows[0]?.workspace_id;
}

export async function saveRoute(db: Queryable, r: RouteRow): Promise<void> {
  await db.query(
    'UPDATE offramp_routes SET status = $2, min_amount = $3, max_amount = $4, fee_fixed = $5, fee_bps = $6, updated_at = $7 WHERE id = $1',
    [r.id, r.status, r.min_amount, r.max_amount, r.fee_fixed, r.fee_bps, r.updated_at],
  );
}

export async function listActiveRoutes(db: Queryable, f: ListFilter): Promise<RouteRow[]> {
  const { text, values } = listQuery('offramp_routes', ROUTE_COLUMNS, { status: 'active' }, f);
  return (await db.query<RouteRow>(text, values)).rows;
}

export interface PayoutRow {
  id: string;
  workspace_id: string;
  route_id: string;
  beneficiary_id: string;
  market: string;
  rail: string;
  source_currency: string;
  source_amount: number;
  currency: string;
  gross_amount: number;
  fee: number;
  amount: number;
  rate: string | null;
  rate_id: string | null;
  rate_source_name: string | null;
  reference: string;
  metadata: Record<string, unknown>;
  status: PayoutStatus;
  failure_reason: string | null;
  provider: string;
  provider_reference: string | null;
  /** The operator's receipt of the payment to the recipient, once it confirmed it. */
  provider_receipt: string | null;
  submitted_at: Date | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export const PAYOUT_COLUMNS =
  'id, workspace_id, route_id, beneficiary_id, market, rail, source_currency, source_amount, currency, gross_amount, fee, amount, rate, rate_id, ' +
  'rate_source_name, reference, metadata, status, failure_reason, provider, provider_reference, provider_receipt, submitted_at, created_at, updated_at, completed_at';

export async function insertPayout(db: Queryable, p: PayoutRow): Promise<void> {
  // As for collections: the sweep leaves a new payout to the submitter's immediate kick for its first 5 seconds.
  await db.query(
    `INSERT INTO payouts (${PAYOUT_COLUMNS}, submit_after)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26,
             $24::timestamptz + interval '5 seconds')`,
    [
      p.id,
      p.workspace_id,
      p.route_id,
      p.beneficiary_id,
      p.market,
      p.rail,
      p.source_currency,
      p.source_amount,
      p.currency,
      p.gross_amount,
      p.fee,
      p.amount,
      p.rate,
      p.rate_id,
      p.rate_source_name,
      p.reference,
      JSON.stringify(p.metadata),
      p.status,
      p.failure_reason,
      p.provider,
      p.provider_reference,
      p.provider_receipt,
      p.submitted_at,
      p.created_at,
      p.updated_at,
      p.completed_at,
    ],
  );
}

export async function findPayout(db: Queryable, workspaceId: string, id: string): Promise<PayoutRow | undefined> {
  const { rows } = await db.query<PayoutRow>(
    `SELECT ${PAYOUT_COLUMNS} FROM payouts WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}

export async function lockPayout(db: Queryable, workspaceId: string, id: string): Promise<PayoutRow | undefined> {
  const { rows } = await db.query<PayoutRow>(
    `SELECT ${PAYOUT_COLUMNS} FROM payouts WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    [workspaceId, id],
  );
  return rows[0];
}

export async function listPayouts(
  db: Queryable,
  workspaceId: string,
  f: ListFilter<PayoutStatus>,
): Promise<PayoutRow[]> {
  const { text, values } = listQuery('payouts', PAYOUT_COLUMNS, { workspace_id: workspaceId }, f);
  return (await db.query<PayoutRow>(text, values)).rows;
}

/** What a payout needs of its beneficiary. */
type PayoutBeneficiary = Pick<
  BeneficiaryRow,
  'id' | 'name' | 'market' | 'rail' | 'status' | 'phone_number' | 'bank_code' | 'account_number'
>;

/** The beneficiary a payout goes to, held against deactivation until the commit ends. */
export async function shareBeneficiary(
  db: Queryable,
  workspaceId: string,
  id: string,
): Promise<PayoutBeneficiary | undefined> {
  const { rows } = await db.query<PayoutBeneficiary>(
    'SELECT id, name, market, rail, status, phone_number, bank_code, account_number FROM beneficiaries WHERE workspace_id = $1 AND id = $2 FOR SHARE',
    [workspaceId, id],
  );
  return rows[0];
}
