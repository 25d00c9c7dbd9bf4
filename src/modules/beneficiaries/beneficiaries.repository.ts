// SQL for beneficiaries. The workspace id is always the first argument.
import type { Queryable } from '../../db/pool.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';

export interface BeneficiaryRow {
  id: string;
  workspace_id: string;
  name: string;
  market: string;
  rail: string;
  currency: string;
  phone_number: string | null;
  bank_code: string | null;
  account_number: string | null;
  reference: string | null;
  metadata: Record<string, unknown>;
  status: 'active' | 'inactive';
  created_at: Date;
  updated_at: Date;
  deactivated_at: Date | null;
}

const COLUMNS =
  'id, workspace_id, name, market, rail, currency, phone_number, bank_code, account_number, reference, metadata, status, created_at, updated_at, deactivated_at';

export async function insertBeneficiary(db: Queryable, b: BeneficiaryRow): Promise<void> {
  await db.query(
    `INSERT INTO beneficiaries (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    [
      b.id,
      b.workspace_id,
      b.name,
      b.market,
      b.rail,
      b.currency,
      b.phone_number,
      b.bank_code,
      b.account_number,
      b.reference,
      JSON.stringify(b.metadata),
      b.status,
      b.created_at,
      b.updated_at,
      b.deactivated_at,
    ],
  );
}

export async function findBeneficiary(
  db: Queryable,
  workspaceId: string,
  id: string,
  lock = false,
): Promise<BeneficiaryRow | undefined> {
  const { rows } = await db.query<BeneficiaryRow>(
    `SELECT ${COLUMNS} FROM beneficiaries WHERE workspace_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
    [workspaceId, id],
  );
  return rows[0];
}

/** Deactivates an active beneficiary; returns the row as it is afterwards (unchanged if it was already inactive). */
export async function deactivate(
  db: Queryable,
  workspaceId: string,
  id: string,
  at: Date,
): Promise<BeneficiaryRow | undefined> {
  const { rows } = await db.query<BeneficiaryRow>(
    `UPDATE beneficiaries SET status = 'inactive', deactivated_at = coalesce(deactivated_at, $3),
            updated_at = CASE WHEN status = 'active' THEN $3 ELSE updated_at END
     WHERE workspace_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [workspaceId, id, at],
  );
  return rows[0];
}

export async function listBeneficiaries(
  db: Queryable,
  workspaceId: string,
  f: ListFilter<'active' | 'inactive'>,
): Promise<BeneficiaryRow[]> {
  const { text, values } = listQuery('beneficiaries', COLUMNS, { workspace_id: workspaceId }, f);
  return (await db.query<BeneficiaryRow>(text, values)).rows;
}
