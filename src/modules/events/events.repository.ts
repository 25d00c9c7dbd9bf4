// Events and their outbox rows: always written together, inside the caller's transaction. Recording an event wakes
// the webhook relay of this process once that transaction commits (the after-commit hook, platform/after-commit.ts),
// so the event goes out at once rather than at the relay's next poll.
import type { Tx } from '../../db/pool.js';
import { emitOnCommit } from '../../platform/after-commit.js';
import { unnestOf, type Param } from '../../db/parameters.js';
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
export function eventStatement(workspaceId: string, event: EventInput & { id: string }, change?: Statement): Statement {
  const before = change?.values ?? [];
  const p = (n: number): string => `$${before.length + n}`;
  return {
    text: `WITH ${change ? `change AS (${change.text}), ` : ''}e AS (
       INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
       VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}) RETURNING id, workspace_id, created_at)
     INSERT INTO outbox (workspace_id, event_id, created_at) SELECT workspace_id, id, created_at FROM e`,
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

/** An event of one of the moves a statement saves (`part`), its id chosen by the caller. */
export interface PartEvent {
  part: number;
  workspaceId: string;
  event: EventInput & { id: string };
}

/**
 * The writes (`name AS (…)`, for a data-modifying WITH) of events and their outbox rows, made only for the parts
 * that `written` (an SQL query of part numbers) names: in the statement that saves moves, those whose move was saved.
 */
export function eventWrites(events: readonly PartEvent[], written: string, param: Param): string[] {
  return [
    `new_events AS (
       INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
       SELECT e.id, e.workspace_id, e.type, e.object_type, e.object_id, e.data, e.created_at
       FROM ${unnestOf(param, events, 'e', {
         part: [(e) => e.part, 'int'],
         id: [(e) => e.event.id, 'uuid'],
         workspace_id: [(e) => e.workspaceId, 'uuid'],
         type: [(e) => e.event.type, 'text'],
         object_type: [(e) => e.event.objectType, 'text'],
         object_id: [(e) => e.event.objectId, 'uuid'],
         data: [(e) => JSON.stringify(e.event.data), 'jsonb'],
         created_at: [(e) => e.event.at, 'timestamptz'],
       })}
       WHERE e.part IN (${written}) RETURNING id, workspace_id, created_at)`,
    // The outbox rows in the order of the events' times (a move's steps are each a millisecond at least after the
    // last), so a move of several steps is relayed in the order it happened.
    `new_outbox AS (
       INSERT INTO outbox (workspace_id, event_id, created_at)
       SELECT workspace_id, id, created_at FROM new_events ORDER BY created_at, id)`,
  ];
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
