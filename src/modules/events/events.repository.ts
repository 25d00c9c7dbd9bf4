// Events and their outbox rows: always written together, inside the caller's transaction. Recording an event wakes
// the webhook relay of this process once that transaction commits (the after-commit hook, platform/after-commit.ts),
// so the event goes out at once rather than at the relay's next poll.
import type { Tx } from '../../db/pool.js';
import { emitOnCommit } from '../../platform/after-commit.js';
import { uuidv7 } from '../../platform/ids.js';

export interface RecordedEvent {
  id: string;
  type: string;
  created_at: Date;
}

/** One SQL statement and its parameters ($1…$n), to run later or inside another statement. */
export interface Statement {
  text: string;
  values: unknown[];
}

export interface EventInput {
  type: string;
  objectType: string;
  objectId: string;
  data: unknown;
  at: Date;
}

/**
 * Writes an event and its outbox row. With `change`, the write the event announces (an INSERT or UPDATE with no
 * RETURNING) runs in the same statement, as a data-modifying WITH: one round trip for the change, its event and
 * its outbox row, which all commit or roll back together anyway. Once `tx` commits, the relay is woken.
 */
export async function recordEvent(
  tx: Tx,
  workspaceId: string,
  event: EventInput,
  change?: Statement,
): Promise<RecordedEvent> {
  const id = uuidv7(event.at.getTime());
  const { text, values } = eventStatement(workspaceId, { ...event, id }, change);
  await tx.query(text, values);
  emitOnCommit(tx, { kind: 'events' });
  return { id, type: event.type, created_at: event.at };
}

/**
 * The statement `recordEvent` runs, built and not sent: the event (its id chosen by the caller), its outbox row and,
 * with `change`, the write it announces, as one data-modifying WITH whose parameters are the change's ($1…$n) and
 * then the event's. For a caller that sends it itself, inside a larger statement (a create adds its stored idempotent
 * answer to it); that caller wakes the relay itself once it has committed (`afterCommit.emit({ kind: 'events' })`).
 */
export function eventStatement(
  workspaceId: string,
  event: EventInput & { id: string },
  change?: Statement,
  options: { ifChanged?: boolean } = {},
): Statement {
  const before = change?.values ?? [];
  return {
    text: `WITH ${change ? `change AS (${change.text}), ` : ''}${eventSql(before.length, change !== undefined && options.ifChanged)}`,
    values: [
      ...before,
      event.id,
      workspaceId,
      event.type,
      event.objectType,
      event.objectId,
      JSON.stringify(event.data),
      event.at,
    ],
  };
}

/**
 * Writes an event and its outbox row only if `change` (an UPDATE with a RETURNING, which may match no row: a
 * compare-and-set) changed a row, all in one statement. True when it did, and then the relay is woken once `tx`
 * commits; false when it matched nothing, and nothing was written.
 */
export async function recordEventIfChanged(
  tx: Tx,
  workspaceId: string,
  event: EventInput,
  change: Statement,
): Promise<boolean> {
  const id = uuidv7(event.at.getTime());
  const { text, values } = eventStatement(workspaceId, { ...event, id }, change, { ifChanged: true });
  const { rowCount } = await tx.query(text, values);
  if (rowCount === 0) return false;
  emitOnCommit(tx, { kind: 'events' });
  return true;
}

/** The event and outbox inserts, their parameters numbered after `offset` others; only if `change` changed a row, if so told. */
function eventSql(offset: number, ifChanged = false): string {
  const p = (n: number): string => `$${offset + n}`;
  const row = ifChanged
    ? // Typed here: in a SELECT the parameters do not take the columns' types as VALUES' do.
      `SELECT ${p(1)}::uuid, ${p(2)}::uuid, ${p(3)}::text, ${p(4)}::text, ${p(5)}::uuid, ${p(6)}::jsonb, ${p(7)}::timestamptz
       WHERE EXISTS (SELECT 1 FROM change)`
    : `VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)})`;
  return `e AS (
       INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
       ${row} RETURNING id, workspace_id, created_at)
     INSERT INTO outbox (workspace_id, event_id, created_at) SELECT workspace_id, id, created_at FROM e`;
}

export interface EventRow {
  id: string;
  type: string;
  object_type: string;
  object_id: string;
  data: unknown;
  created_at: Date;
}

export async function listObjectEvents(
  db: Tx | import('pg').Pool,
  workspaceId: string,
  objectId: string,
): Promise<EventRow[]> {
  const { rows } = await db.query<EventRow>(
    `SELECT id, type, object_type, object_id, data, created_at FROM events
     WHERE workspace_id = $1 AND object_id = $2 ORDER BY created_at, id`,
    [workspaceId, objectId],
  );
  return rows;
}
