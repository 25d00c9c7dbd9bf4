// SQL for the audit log (migration 025): append one row, read a page of a workspace's, and the retention purge. The
// workspace id comes first; the purge spans workspaces and says so in its name.
import type { Queryable } from '../../db/pool.js';
import type { AuditEntry } from '../../platform/audit.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';

export interface AuditEventRow {
  id: string;
  workspace_id: string;
  occurred_at: Date;
  actor_type: string;
  actor_id: string | null;
  action: string;
  object_type: string | null;
  object_id: string | null;
  status: number;
  client_address: string | null;
  request_id: string;
}

const COLUMNS =
  'id, workspace_id, occurred_at, actor_type, actor_id, action, object_type, object_id, status, host(client_address) AS client_address, request_id';

export async function insertAuditEvent(db: Queryable, id: string, e: AuditEntry): Promise<void> {
  await db.query(
    `INSERT INTO audit_events (workspace_id, id, occurred_at, actor_type, actor_id, action, object_type, object_id,
       status, client_address, request_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::inet, $11)`,
    [
      e.workspaceId,
      id,
      e.occurredAt,
      e.actorType,
      e.actorId,
      e.action,
      e.objectType,
      e.objectId,
      e.status,
      e.clientAddress,
      e.requestId,
    ],
  );
}

export interface AuditScope {
  action?: string | undefined;
  actorId?: string | undefined;
  objectId?: string | undefined;
}

/** A page of one workspace's audit events, newest first, filtered by action, actor and object. */
export async function listAuditEvents(
  db: Queryable,
  workspaceId: string,
  scope: AuditScope,
  f: ListFilter,
): Promise<(AuditEventRow & { created_at: Date })[]> {
  const where: Record<string, unknown> = { workspace_id: workspaceId };
  if (scope.action !== undefined) where.action = scope.action;
  if (scope.actorId !== undefined) where.actor_id = scope.actorId;
  if (scope.objectId !== undefined) where.object_id = scope.objectId;
  const { text, values } = listQuery('audit_events', COLUMNS, where, { ...f, status: undefined }, 'occurred_at');
  return (await db.query<AuditEventRow & { created_at: Date }>(text, values)).rows;
}

/**
 * Maintenance, across workspaces: deletes at most `limit` events older than the retention, oldest first, by the
 * age index. The table's trigger refuses to delete anything younger than 30 days whatever this is asked.
 */
export async function purgeAuditEventsOfAllWorkspaces(
  db: Queryable,
  olderThanSeconds: number,
  limit: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM audit_events WHERE (workspace_id, id) IN (
       SELECT workspace_id, id FROM audit_events WHERE occurred_at < now() - make_interval(secs => $1)
       ORDER BY occurred_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}
