// SQL for a workspace's active configuration. The workspace id is always the first argument.
import type { Queryable } from '../../db/pool.js';
import type { EnabledRail } from '../../platform/enabled-rails.js';

export interface ConfigurationRow {
  rails: EnabledRail[];
  updated_at: Date;
}

export async function findConfiguration(db: Queryable, workspaceId: string): Promise<ConfigurationRow | undefined> {
  const { rows } = await db.query<ConfigurationRow>(
    'SELECT rails, updated_at FROM workspace_configurations WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0];
}

/** Sets the configuration of an integrator workspace; undefined when there is no such workspace. */
export async function saveConfiguration(
  db: Queryable,
  workspaceId: string,
  rails: EnabledRail[],
  at: Date,
): Promise<ConfigurationRow | undefined> {
  const { rows } = await db.query<ConfigurationRow>(
    `INSERT INTO workspace_configurations (workspace_id, rails, updated_at)
     SELECT id, $2, $3 FROM workspaces WHERE id = $1 AND kind = 'integrator'
     ON CONFLICT (workspace_id) DO UPDATE SET rails = EXCLUDED.rails, updated_at = EXCLUDED.updated_at
     RETURNING rails, updated_at`,
    [workspaceId, JSON.stringify(rails), at],
  );
  return rows[0];
}

/** Back to the whole catalogue; whether the workspace had a configuration. */
export async function deleteConfiguration(db: Queryable, workspaceId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM workspace_configurations WHERE workspace_id = $1', [workspaceId]);
  return (rowCount ?? 0) > 0;
}
