// SQL for workspaces. A workspace's own id is its scope; listing all of them is for the admin audience only.
import type { Queryable } from '../../db/pool.js';
import type { PaymentsEnv } from '../../config.js';

export interface WorkspaceRow {
  id: string;
  name: string;
  display_name: string;
  environment: PaymentsEnv;
  kind: 'integrator' | 'operator';
  /** What a payment confirmed after its collection expired becomes: `refund` sends it back, `accept` keeps it. */
  late_payment: LatePaymentPolicy;
  created_at: Date;
}

export const LATE_PAYMENT_POLICIES = ['refund', 'accept'] as const;
export type LatePaymentPolicy = (typeof LATE_PAYMENT_POLICIES)[number];

const COLUMNS = 'id, name, display_name, environment, kind, late_payment, created_at';

export async function insertWorkspace(db: Queryable, w: WorkspaceRow): Promise<WorkspaceRow> {
  const { rows } = await db.query<WorkspaceRow>(
    `INSERT INTO workspaces (id, name, display_name, environment, kind, late_payment, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
    [w.id, w.name, w.display_name, w.environment, w.kind, w.late_payment, w.created_at],
  );
  return rows[0] as WorkspaceRow;
}

export async function findWorkspace(db: Queryable, workspaceId: string): Promise<WorkspaceRow | undefined> {
  const { rows } = await db.query<WorkspaceRow>(`SELECT ${COLUMNS} FROM workspaces WHERE id = $1`, [workspaceId]);
  return rows[0];
}

/** Changes the workspace's late payment policy; undefined when there is no such workspace. */
export async function updateLatePayment(
  db: Queryable,
  workspaceId: string,
  policy: LatePaymentPolicy,
): Promise<WorkspaceRow | undefined> {
  const { rows } = await db.query<WorkspaceRow>(
    `UPDATE workspaces SET late_payment = $2 WHERE id = $1 RETURNING ${COLUMNS}`,
    [workspaceId, policy],
  );
  return rows[0];
}

/** The policy, read in the transaction that applies a late payment. */
export async function latePaymentPolicy(db: Queryable, workspaceId: string): Promise<LatePaymentPolicy> {
  const { rows } = await db.query<{ late_payment: LatePaymentPolicy }>(
    'SELECT late_payment FROM workspaces WHERE id = $1',
    [workspaceId],
  );
  return rows[0]?.late_payment ?? 'refund';
}

/** Admin only: every integrator workspace, newest first. */
export async function listAllWorkspaces(db: Queryable): Promise<WorkspaceRow[]> {
  const { rows } = await db.query<WorkspaceRow>(
    `SELECT ${COLUMNS} FROM workspaces WHERE kind = 'integrator' ORDER BY created_at DESC, id DESC LIMIT 1000`,
  );
  return rows;
}

export async function countWorkspaces(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM workspaces');
  return rows[0]?.n ?? 0;
}

/**
 * The operator workspace, where admin credentials live (the first start creates it), for `npm run admin`.
 * Not scoped by a workspace id: finding that id is its purpose.
 */
export async function findOperatorWorkspaceId(db: Queryable): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM workspaces WHERE kind = 'operator' ORDER BY created_at, id LIMIT 1`,
  );
  return rows[0]?.id;
}
