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
  options: { ifChanged?: boolean; alongside?: Alongside | undefined; also?: Alongside[] } = {},
): Statement {
  const before = change?.values ?? [];
  const eventValues = [
    event.id,
    workspaceId,
    event.type,
    event.objectType,
    event.objectId,
    JSON.stringify(event.data),
    event.at,
  ];
  const ifChanged = change !== undefined && options.ifChanged === true;
  // The writes made only if the change changed a row, each numbered after the parameters before it.
  let offset = before.length + eventValues.length;
  const numbered = (write: Alongside): Statement => {
    const statement = write(offset);
    offset += statement.values.length;
    return statement;
  };
  const alongside = ifChanged && options.alongside ? numbered(options.alongside) : undefined;
  const also = ifChanged ? (options.also ?? []).map(numbered) : [];
  const ctes = [
    ...(change ? [`change AS (${change.text})`] : []),
    ...(alongside ? [`alongside AS (${alongside.text})`] : []),
    ...also.map((write, i) => `also${i} AS (${write.text})`),
    eventSql(before.length, ifChanged, alongside !== undefined),
  ];
  return {
    text: `WITH ${ctes.join(', ')}`,
    values: [...before, ...eventValues, ...(alongside?.values ?? []), ...also.flatMap((write) => write.values)],
  };
}

/**
 * A write made in the statement that saves a change, only if the change changed a row (a provider notice's record):
 * an INSERT … SELECT … WHERE EXISTS (SELECT 1 FROM change) … RETURNING 1, its parameters numbered after `offset`.
 */
export type Alongside = (offset: number) => Statement;

/**
 * Saves `change` (an UPDATE … RETURNING, which may match no row: a compare-and-set) with the event that announces it,
 * its outbox row, `alongside` and `also`, all in one statement, built and not sent; the event, its outbox row and the
 * other writes are made only if the change changed a row. `savedBy` reads its answer. Its sender wakes the relay once
 * it has committed.
 */
export function saveStatement(
  workspaceId: string,
  event: EventInput,
  change: Statement,
  alongside?: Alongside,
  also: Alongside[] = [],
): Statement {
  const id = uuidv7(event.at.getTime());
  return eventStatement(workspaceId, { ...event, id }, change, { ifChanged: true, alongside, also });
}

/** What a `saveStatement` did: whether its change changed a row, and whether `alongside` wrote its row. */
export function savedBy(rows: readonly unknown[]): { changed: boolean; alongsideWritten: boolean } {
  const saved = rows[0] as { alongside: number } | undefined;
  if (saved === undefined) return { changed: false, alongsideWritten: false };
  return { changed: true, alongsideWritten: saved.alongside > 0 };
}

/**
 * The event and outbox inserts, their parameters numbered after `offset` others. Told `ifChanged`, only if `change`
 * changed a row, and answering one row (`alongside`: how many rows that write made) when they are written.
 */
function eventSql(offset: number, ifChanged = false, alongside = false): string {
  const p = (n: number): string => `$${offset + n}`;
  const row = ifChanged
    ? // Typed here: in a SELECT the parameters do not take the columns' types as VALUES' do.
      `SELECT ${p(1)}::uuid, ${p(2)}::uuid, ${p(3)}::text, ${p(4)}::text, ${p(5)}::uuid, ${p(6)}::jsonb, ${p(7)}::timestamptz
       WHERE EXISTS (SELECT 1 FROM change)`
    : `VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)})`;
  const answer = ifChanged
    ? ` RETURNING ${alongside ? '(SELECT count(*) FROM alongside)::int' : '0'} AS alongside`
    : '';
  return `e AS (
       INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
       ${row} RETURNING id, workspace_id, created_at)
     INSERT INTO outbox (workspace_id, event_id, created_at) SELECT workspace_id, id, created_at FROM e${answer}`;
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
