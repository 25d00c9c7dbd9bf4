// Events and their outbox rows: always written together, inside the caller's transaction.
import type { Tx } from '../../db/pool.js';
import { uuidv7 } from '../../platform/ids.js';

export interface RecordedEvent {
  id: string;
  type: string;
  created_at: Date;
}

export async function recordEvent(
  tx: Tx,
  workspaceId: string,
  event: { type: string; objectType: string; objectId: string; data: unknown; at: Date },
): Promise<RecordedEvent> {
  const id = uuidv7(event.at.getTime());
  await tx.query(
    `WITH e AS (
       INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, workspace_id, created_at)
     INSERT INTO outbox (workspace_id, event_id, created_at) SELECT workspace_id, id, created_at FROM e`,
    [id, workspaceId, event.type, event.objectType, event.objectId, JSON.stringify(event.data), event.at],
  );
  return { id, type: event.type, created_at: event.at };
}

export interface EventRow {
  id: string;
  type: string;
  object_type: string;
  object_id: string;
  data: unknown;
  created_at: Date;
}

export async function listObjectEvents(db: Tx | import('pg').Pool, workspaceId: string, objectId: string): Promise<EventRow[]> {
  const { rows } = await db.query<EventRow>(
    `SELECT id, type, object_type, object_id, data, created_at FROM events
     WHERE workspace_id = $1 AND object_id = $2 ORDER BY created_at, id`,
    [workspaceId, objectId],
  );
  return rows;
}
