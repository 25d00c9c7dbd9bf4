// SQL for deposit addresses, deposits and autoconvert credits. Workspace-scoped reads take the workspace id
// first; the pool and the reporter's lookup by address span workspaces (they say so).
import type { Queryable } from '../../db/pool.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';
import type { DepositStatus } from './deposits.schemas.js';

export interface AddressRow {
  id: string;
  workspace_id: string | null;
  asset: string;
  network: string;
  address: string;
  status: 'available' | 'assigned';
  autoconvert_currency: string | null;
  label: string | null;
  metadata: Record<string, unknown>;
  pooled_at: Date;
  created_at: Date;
}

const ADDRESS_COLUMNS =
  'id, workspace_id, asset, network, address, status, autoconvert_currency, label, metadata, pooled_at, created_at';

/** Assigns the longest-waiting pool address of the asset and network to the workspace; undefined when the pool has none. */
export async function assignFromPool(
  tx: Queryable,
  workspaceId: string,
  a: {
    asset: string;
    network: string;
    autoconvert_currency: string | null;
    label: string | null;
    metadata: Record<string, unknown>;
    at: Date;
  },
): Promise<AddressRow | undefined> {
  const { rows } = await tx.query<AddressRow>(
    `UPDATE deposit_addresses SET workspace_id = $1, status = 'assigned', autoconvert_currency = $4, label = $5, metadata = $6, created_at = $7
     WHERE id = (SELECT id FROM deposit_addresses WHERE status = 'available' AND asset = $2 AND network = $3
                 ORDER BY pooled_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING ${ADDRESS_COLUMNS}`,
    [workspaceId, a.asset, a.network, a.autoconvert_currency, a.label, JSON.stringify(a.metadata), a.at],
  );
  return rows[0];
}

export async function insertAddress(tx: Queryable, a: AddressRow): Promise<void> {
  await tx.query(
    `INSERT INTO deposit_addresses (${ADDRESS_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      a.id,
      a.workspace_id,
      a.asset,
      a.network,
      a.address,
      a.status,
      a.autoconvert_currency,
      a.label,
      JSON.stringify(a.metadata),
      a.pooled_at,
      a.created_at,
    ],
  );
}

/** Stocks the pool (spans workspaces): addresses already known are left alone. Returns how many were new. */
export async function addToPool(
  tx: Queryable,
  ids: string[],
  asset: string,
  network: string,
  addresses: string[],
  at: Date,
): Promise<number> {
  const { rowCount } = await tx.query(
    `INSERT INTO deposit_addresses (id, workspace_id, asset, network, address, status, metadata, pooled_at, created_at)
     SELECT a.id, NULL, $3, $4, a.address, 'available', '{}', $5, $5 FROM unnest($1::uuid[], $2::text[]) AS a(id, address)
     ON CONFLICT (network, address) DO NOTHING`,
    [ids, addresses, asset, network, at],
  );
  return rowCount ?? 0;
}

export async function poolSize(db: Queryable, asset: string, network: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM deposit_addresses WHERE status = 'available' AND asset = $1 AND network = $2",
    [asset, network],
  );
  return rows[0]?.n ?? 0;
}

export async function findAddress(db: Queryable, workspaceId: string, id: string): Promise<AddressRow | undefined> {
  const { rows } = await db.query<AddressRow>(
    `SELECT ${ADDRESS_COLUMNS} FROM deposit_addresses WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}

/** The reporter's lookup (spans workspaces): the assigned address a transfer arrived on. */
export async function findAssignedAddress(
  db: Queryable,
  network: string,
  address: string,
): Promise<AddressRow | undefined> {
  const { rows } = await db.query<AddressRow>(
    `SELECT ${ADDRESS_COLUMNS} FROM deposit_addresses WHERE network = $1 AND address = $2 AND status = 'assigned'`,
    [network, address],
  );
  return rows[0];
}

export async function listAddresses(db: Queryable, workspaceId: string, f: ListFilter): Promise<AddressRow[]> {
  const { text, values } = listQuery('deposit_addresses', ADDRESS_COLUMNS, { workspace_id: workspaceId }, f);
  return (await db.query<AddressRow>(text, values)).rows;
}

export interface DepositRow {
  id: string;
  workspace_id: string;
  deposit_address_id: string;
  address: string;
  asset: string;
  network: string;
  amount: number;
  tx_hash: string;
  log_index: number;
  status: DepositStatus;
  confirmations: number;
  failure_reason: string | null;
  credited_currency: string | null;
  credited_amount: number | null;
  credit_id: string | null;
  created_at: Date;
  updated_at: Date;
  confirmed_at: Date | null;
  credited_at: Date | null;
}

const DEPOSIT_COLUMNS =
  'd.id, d.workspace_id, d.deposit_address_id, a.address, d.asset, d.network, d.amount, d.tx_hash, d.log_index, d.status, d.confirmations, d.failure_reason, ' +
  'd.credited_currency, d.credited_amount, d.credit_id, d.created_at, d.updated_at, d.confirmed_at, d.credited_at';
const DEPOSIT_FROM = 'deposits d JOIN deposit_addresses a ON a.id = d.deposit_address_id';

/** Inserts a new deposit; undefined when this transfer to this address is already recorded. */
export async function insertDeposit(
  tx: Queryable,
  d: {
    id: string;
    workspace_id: string;
    deposit_address_id: string;
    asset: string;
    network: string;
    amount: number;
    tx_hash: string;
    log_index: number;
    confirmations: number;
    at: Date;
  },
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO deposits (id, workspace_id, deposit_address_id, asset, network, amount, tx_hash, log_index, status, confirmations, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10, $10) ON CONFLICT (network, tx_hash, log_index, deposit_address_id) DO NOTHING`,
    [
      d.id,
      d.workspace_id,
      d.deposit_address_id,
      d.asset,
      d.network,
      d.amount,
      d.tx_hash,
      d.log_index,
      d.confirmations,
      d.at,
    ],
  );
  return rowCount === 1;
}

/** The deposit of a transfer to an address, locked (spans workspaces: the reporter does not know the workspace). */
export async function lockDepositByTransfer(
  tx: Queryable,
  network: string,
  txHash: string,
  logIndex: number,
  addressId: string,
): Promise<DepositRow | undefined> {
  const { rows } = await tx.query<DepositRow>(
    `SELECT ${DEPOSIT_COLUMNS} FROM ${DEPOSIT_FROM} WHERE d.network = $1 AND d.tx_hash = $2 AND d.log_index = $3 AND d.deposit_address_id = $4 FOR UPDATE OF d`,
    [network, txHash, logIndex, addressId],
  );
  return rows[0];
}

export async function findDeposit(
  db: Queryable,
  workspaceId: string,
  id: string,
  lock = false,
): Promise<DepositRow | undefined> {
  const { rows } = await db.query<DepositRow>(
    `SELECT ${DEPOSIT_COLUMNS} FROM ${DEPOSIT_FROM} WHERE d.workspace_id = $1 AND d.id = $2${lock ? ' FOR UPDATE OF d' : ''}`,
    [workspaceId, id],
  );
  return rows[0];
}

export async function saveDeposit(tx: Queryable, d: DepositRow): Promise<void> {
  await tx.query(
    `UPDATE deposits SET status = $3, confirmations = $4, failure_reason = $5, credited_currency = $6, credited_amount = $7, credit_id = $8,
            updated_at = $9, confirmed_at = $10, credited_at = $11
     WHERE workspace_id = $1 AND id = $2`,
    [
      d.workspace_id,
      d.id,
      d.status,
      d.confirmations,
      d.failure_reason,
      d.credited_currency,
      d.credited_amount,
      d.credit_id,
      d.updated_at,
      d.confirmed_at,
      d.credited_at,
    ],
  );
}

export async function listDeposits(
  db: Queryable,
  workspaceId: string,
  f: ListFilter<DepositStatus>,
): Promise<DepositRow[]> {
  // A flattened subquery, so the list's plain column names (status, id, created_at) are the deposit's.
  const { text, values } = listQuery(
    `(SELECT d.*, a.address FROM ${DEPOSIT_FROM}) AS deposits`,
    DEPOSIT_COLUMNS.replaceAll('d.', '').replace('a.address', 'address'),
    { workspace_id: workspaceId },
    f,
  );
  return (await db.query<DepositRow>(text, values)).rows;
}

/**
 * Claims confirmed deposits still waiting for their credit, the least recently tried first, and marks them
 * tried (spans workspaces; the worker credits each in its own). A deposit that cannot be credited yet (no
 * rate for its currency) goes to the back, so it never holds up the others.
 */
export async function uncredited(db: Queryable, limit: number): Promise<{ workspace_id: string; id: string }[]> {
  const { rows } = await db.query<{ workspace_id: string; id: string }>(
    `UPDATE deposits SET credit_checked_at = now()
     WHERE id IN (SELECT id FROM deposits WHERE status = 'confirmed' ORDER BY credit_checked_at NULLS FIRST LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING workspace_id, id`,
    [limit],
  );
  return rows;
}

export interface CreditRow {
  id: string;
  workspace_id: string;
  deposit_id: string;
  source_asset: string;
  source_amount: number;
  target_currency: string;
  gross_amount: number;
  fee: number;
  amount: number;
  fee_bps: number;
  rate: string;
  rate_id: string;
  rate_source_id: string;
  rate_source_name: string;
  rate_observed_at: Date;
  created_at: Date;
}

const CREDIT_COLUMNS =
  'id, workspace_id, deposit_id, source_asset, source_amount, target_currency, gross_amount, fee, amount, fee_bps, rate, rate_id, rate_source_id, rate_source_name, rate_observed_at, created_at';

export async function insertCredit(tx: Queryable, c: CreditRow): Promise<void> {
  await tx.query(
    `INSERT INTO autoconvert_credits (${CREDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
    [
      c.id,
      c.workspace_id,
      c.deposit_id,
      c.source_asset,
      c.source_amount,
      c.target_currency,
      c.gross_amount,
      c.fee,
      c.amount,
      c.fee_bps,
      c.rate,
      c.rate_id,
      c.rate_source_id,
      c.rate_source_name,
      c.rate_observed_at,
      c.created_at,
    ],
  );
}

export async function findCredit(db: Queryable, workspaceId: string, id: string): Promise<CreditRow | undefined> {
  const { rows } = await db.query<CreditRow>(
    `SELECT ${CREDIT_COLUMNS} FROM autoconvert_credits WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}
