// SQL for workspaces. A workspace's own id is its scope; listing all of them is for the admin audience only.
import type { Queryable } from '../../db/pool.js';
import type { PaymentsEnv } from '../../config.js';

export interface WorkspaceRow {
  id: string;
  name: string;
  display_name: string;
  environment: PaymentsEnv;
  kind: 'integrator' | 'operator';
  created_at: Date;
}

const COLUMNS = 'id, name, display_name, environment, kind, created_at';

export async function insertWorkspace(db: Queryable, w: WorkspaceRow): Promise<WorkspaceRow> {
  const { rows } = await db.query<WorkspaceRow>(
    `INSERT INTO workspaces (id, name, display_name, environment, kind, created_at)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
    [w.id, w.name, w.display_name, w.environment, w.kind, w.created_at],
  );
  return rows[0] as WorkspaceRow;
}

export async function findWorkspace(db: Queryable, workspaceId: string): Promise<WorkspaceRow | undefined> {
  const { rows } = await db.query<WorkspaceRow>(`SELECT ${COLUMNS} FROM workspaces WHERE id = $1`, [workspaceId]);
  return rows[0];
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
