// The lifecycle's SQL, written once over the movement descriptions (each names its table and columns): a move's
// update, an initiation's claim, and the sweeps' claims of initiations due and operations gone quiet. Maintenance
// where noted: those claims span workspaces; each change they lead to is made in its own workspace.
import type { Queryable } from '../../db/pool.js';
import { parameters } from '../../db/parameters.js';
import { eventWrites, type EventInput, type Statement } from '../events/events.repository.js';
import { postingWrites, type PreparedPostings } from '../ledger/ledger.repository.js';
import { noticeWrites } from './notices.repository.js';
import type { AnyMovement, AppliedNotice, MovementType, MovingRow, Versioned } from './movement.js';

/** Columns every move writes; a description adds its own (`resolved_at`, `completed_at`). */
const MOVED = [
  'status',
  'updated_at',
  'failure_reason',
  'provider_reference',
  'submitted_at',
  'provider_receipt',
] as const;

/**
 * What a move changes when it is not saved with events (a provider reference recorded by a repeat): status, times,
 * failure reason, and the provider's reference and receipt once known.
 */
export async function saveStatus(db: Queryable, m: AnyMovement, row: MovingRow): Promise<void> {
  const columns: string[] = [...MOVED, ...(m.stepColumns as string[])];
  const record = row as unknown as Record<string, unknown>;
  await db.query(
    `UPDATE ${m.table} SET ${columns.map((c, i) => `${c} = $${i + 3}`).join(', ')} WHERE workspace_id = $1 AND id = $2`,
    [row.workspace_id, row.id, ...columns.map((c) => record[c])],
  );
}

/**
 * One of the moves a statement saves (`movesStatement`): the row after it, with everything the move writes with it.
 */
export interface MovePart {
  row: MovingRow;
  /** The version the row was read at (`xmin`): saved only if it is still that version. Absent: saved as it stands. */
  version?: string | undefined;
  /** Its events, in order (the last announces the status it ends in), their ids chosen. */
  events: (EventInput & { id: string })[];
  /** The record of the provider notice that causes it. */
  notice?: AppliedNotice | undefined;
  postings: PreparedPostings[];
}

/**
 * Saves moves of one movement, any number, in one statement (a data-modifying WITH), built and not sent: each row,
 * and, for each row it changed, the move's events and their outbox rows, its notice's record and its postings, their
 * lines and the balances they change (summed over the moves: see `postingWrites`). A move whose row is no longer the
 * version it was read at (a compare-and-set) changes nothing, and writes nothing else. `savedParts` reads the answer.
 * No two parts may be the same row: a statement changes a row once.
 */
export function movesStatement(m: AnyMovement, parts: readonly MovePart[]): Statement {
  const { values, param } = parameters();
  const columns: string[] = [...MOVED, ...(m.stepColumns as string[])];
  const rows = parts.map(({ row }) => {
    const record = row as unknown as Record<string, unknown>;
    return Object.fromEntries(['workspace_id', 'id', ...columns].map((c) => [c, record[c]]));
  });
  // A compare-and-set where the parts were read with their versions; the ones without are saved as they stand.
  const versions = parts.some((p) => p.version !== undefined)
    ? `AND coalesce(t.xmin = (${param(
        parts.map((p) => p.version ?? null),
        'text[]',
      )})[r.ordinality::int]::xid, true)`
    : '';
  // The rows as the table's own record type, so each column's value takes the column's type.
  const change = `change AS (
       UPDATE ${m.table} AS t SET ${columns.map((c) => `${c} = r.${c}`).join(', ')}
       FROM jsonb_populate_recordset(NULL::${m.table}, ${param(JSON.stringify(rows), 'jsonb')}) WITH ORDINALITY AS r
       WHERE t.workspace_id = r.workspace_id AND t.id = r.id ${versions}
       RETURNING r.ordinality::int - 1 AS part, t.id)`;
  const written = 'SELECT part FROM change';
  const events = parts.flatMap((p, part) =>
    p.events.map((event) => ({ part, workspaceId: p.row.workspace_id, event })),
  );
  const notices = parts.flatMap((p, part) => (p.notice ? [{ part, applied: p.notice }] : []));
  const postings = parts.flatMap((p, part) => p.postings.map((prepared) => ({ part, prepared })));
  const ctes = [
    change,
    ...eventWrites(events, written, param),
    ...(notices.length > 0 ? [noticeWrites(notices, written, param)] : []),
    ...(postings.length > 0 ? postingWrites(postings, written, param) : []),
  ];
  const noted = notices.length > 0 ? '(SELECT count(*) FROM noted WHERE noted.object_id = change.id)::int' : '0';
  return { text: `WITH ${ctes.join(',\n     ')}\n     SELECT part, ${noted} AS noted FROM change`, values };
}

/** What a `movesStatement` saved: for each part whose row it changed, whether its notice's record was written. */
export function savedParts(rows: readonly unknown[]): Map<number, { noticeWritten: boolean }> {
  return new Map((rows as { part: number; noted: number }[]).map((r) => [r.part, { noticeWritten: r.noted > 0 }]));
}

/** Due for its initiation: in its first status, not yet answered by its provider. */
const unsent = (m: AnyMovement): string => `status = '${m.initial as string}' AND submitted_at IS NULL`;

/** A claimed initiation's row as the claim left it, and when a sender last claimed it to call its provider (null: never). */
export type Claimed<R extends MovingRow> = Versioned<R> & { sent_before: Date | null };

/**
 * Takes the initiations of new objects for one sender, and reads them, in one statement: pushes each one's
 * `submit_after` past the longest a provider call may take, so no sweep (in any process) sends it again meanwhile, and
 * only if no other sender took it since its job was made for attempt `attempt`; and marks it `sent_at` (about to be
 * sent), under the claim's id `claimId`, keeping the mark it had before (`sent_before_claim`, for `releaseClaim`).
 * Answers the rows taken, each with the mark it had before (`sent_before`); one not there to take (sent already, or
 * another sender has it) is left out.
 */
export async function claimInitiations<R extends MovingRow>(
  db: Queryable,
  m: AnyMovement,
  jobs: readonly { workspaceId: string; id: string; attempt: number }[],
  leaseSeconds: number,
  claimId: string,
): Promise<Claimed<R>[]> {
  // The rows are found by primary key alone, and updated by the physical address found. A status condition in the
  // lookup would let the planner read the unsent rows through their partial index instead: with statistics taken while
  // few were unsent, it counts on one row there and joins the table to itself through it, which a burst of thousands
  // of unsent rows made quadratic (minutes, cut off by the statement time-out, with no initiation sent meanwhile).
  const { rows } = await db.query<Claimed<R>>(
    `WITH before AS MATERIALIZED (
       SELECT c.ctid AS row, c.sent_at, j.attempt FROM unnest($1::uuid[], $2::uuid[], $3::int[]) AS j(workspace_id, id, attempt)
       JOIN ${m.table} c ON c.id = j.id AND c.workspace_id = j.workspace_id)
     UPDATE ${m.table} AS t SET submit_after = now() + make_interval(secs => $4), sent_at = now(), claim_id = $5,
       sent_before_claim = t.sent_at
     FROM before
     -- Checked on the row as it is when locked. A row another process changed since the lookup has moved to another
     -- address and is not taken: a sweep that took it meanwhile (and moved its attempts on) wins.
     WHERE t.ctid = before.row AND t.submit_attempts = before.attempt
       AND t.status = '${m.initial as string}' AND t.submitted_at IS NULL
     RETURNING ${m.columns
       .split(',')
       .map((c) => `t.${c.trim()}`)
       .join(', ')}, t.xmin::text AS version, before.sent_at AS sent_before`,
    [jobs.map((j) => j.workspaceId), jobs.map((j) => j.id), jobs.map((j) => j.attempt), leaseSeconds, claimId],
  );
  return rows;
}

/**
 * Undoes claim `claimId` on the rows it still holds, for a sender that sent none of them (the claim's answer was lost:
 * it may or may not have committed): each gets back the `sent_at` mark it had before the claim, and is due at once.
 * A row claimed since by another sender (another claim id), or already answered, is left alone. Answers the ids of
 * the rows released.
 */
export async function releaseClaim(
  db: Queryable,
  m: AnyMovement,
  jobs: readonly { workspaceId: string; id: string }[],
  claimId: string,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE ${m.table} AS t SET sent_at = t.sent_before_claim, submit_after = now(), claim_id = NULL
     FROM unnest($1::uuid[], $2::uuid[]) AS j(workspace_id, id)
     WHERE t.workspace_id = j.workspace_id AND t.id = j.id AND t.claim_id = $3
       AND t.status = '${m.initial as string}' AND t.submitted_at IS NULL
     RETURNING t.id`,
    [jobs.map((j) => j.workspaceId), jobs.map((j) => j.id), claimId],
  );
  return rows.map((r) => r.id);
}

/** The next try after 2^attempts seconds (at most 60). */
const BACKOFF = 'now() + make_interval(secs => least(60, 2 ^ (submit_attempts + 1)))';

/**
 * Claims up to 100 due initiations of each kind (none yet with its provider), pushing each one's `submit_after` on by
 * the backoff: a lease and a persisted backoff in one. Maintenance: spans workspaces.
 */
export async function claimDueInitiations(
  db: Queryable,
  movements: readonly AnyMovement[],
): Promise<{ kind: MovementType; workspace_id: string; id: string; submit_attempts: number }[]> {
  const claims = movements.map(
    (m) => `${m.type} AS (
       UPDATE ${m.table} SET submit_attempts = submit_attempts + 1, submit_after = ${BACKOFF}
       WHERE id IN (SELECT id FROM ${m.table} WHERE ${unsent(m)} AND submit_after <= now()
                    ORDER BY submit_after LIMIT 100 FOR UPDATE SKIP LOCKED)
       RETURNING workspace_id, id, submit_attempts)`,
  );
  const { rows } = await db.query<{ kind: MovementType; workspace_id: string; id: string; submit_attempts: number }>(
    `WITH ${claims.join(',\n')}
     ${movements.map((m) => `SELECT '${m.type}' AS kind, workspace_id, id, submit_attempts FROM ${m.type}`).join(' UNION ALL ')}`,
  );
  return rows;
}

/** After an initiation that failed (an error answer, a refused connection, an answer not recorded): the next try after the backoff. */
export async function scheduleRetry(
  db: Queryable,
  m: AnyMovement,
  workspaceId: string,
  id: string,
  /** Nothing reached the operator: the next try sends it again rather than asking about it first. */
  sentNothing: boolean,
): Promise<void> {
  await db.query(
    `UPDATE ${m.table} SET submit_after = ${BACKOFF}, sent_at = CASE WHEN $3 THEN NULL ELSE sent_at END
     WHERE workspace_id = $1 AND id = $2 AND ${unsent(m)}`,
    [workspaceId, id, sentNothing],
  );
}

/**
 * An initiation claimed but not sent because its rail is down (a payout waits for its rail, as pawaPay holds them):
 * due again in `seconds`, its `sent_at` mark as it was before the claim (nothing reached the operator), and the try
 * not counted (a sweep's claim counted it), so a long outage never makes it give up.
 */
export async function holdInitiation(
  db: Queryable,
  m: AnyMovement,
  workspaceId: string,
  id: string,
  sentBefore: Date | null,
  seconds: number,
): Promise<void> {
  await db.query(
    `UPDATE ${m.table} SET submit_after = now() + make_interval(secs => $4), sent_at = $3,
       submit_attempts = greatest(0, submit_attempts - 1)
     WHERE workspace_id = $1 AND id = $2 AND ${unsent(m)}`,
    [workspaceId, id, sentBefore, seconds],
  );
}

/**
 * Collections still created or pending past their expires_at, oldest first. A reference only claimed by a callback
 * (the push's own answer was lost) comes back as the reference to ask about: never believed, only asked.
 * Maintenance: spans workspaces.
 */
export async function dueForExpiry(
  db: Queryable,
  batch: number,
): Promise<{ workspace_id: string; id: string; provider: string; provider_reference: string | null }[]> {
  const { rows } = await db.query<{
    workspace_id: string;
    id: string;
    provider: string;
    provider_reference: string | null;
  }>(
    `SELECT workspace_id, id, provider, coalesce(provider_reference, claimed_reference) AS provider_reference FROM collections
     WHERE status IN ('created', 'pending') AND expires_at <= now() ORDER BY expires_at LIMIT $1`,
    [batch],
  );
  return rows;
}

/**
 * Claims, per kind, the longest-quiet operations in flight at a provider (in one of the description's `inFlight`
 * statuses) with no news for `afterSeconds`, of the providers in `only` (or all), at most `batch` per kind, and marks
 * them asked. Maintenance: spans workspaces.
 */
export async function claimQuiet(
  db: Queryable,
  movements: readonly AnyMovement[],
  afterSeconds: number,
  batch: number,
  only: string[] | undefined,
): Promise<{ kind: MovementType; id: string; provider: string; reference: string }[]> {
  const claims = movements.map(
    (m) => `${m.type} AS (
       UPDATE ${m.table} SET checked_at = now() WHERE id IN (
         SELECT id FROM ${m.table}
         WHERE status IN (${(m.inFlight as string[]).map((s) => `'${s}'`).join(', ')})
           AND coalesce(provider_reference, claimed_reference) IS NOT NULL
           AND greatest(updated_at, checked_at) < now() - make_interval(secs => $1)
           AND ($3::text[] IS NULL OR provider = ANY($3))
         ORDER BY greatest(updated_at, checked_at) LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, provider, coalesce(provider_reference, claimed_reference) AS reference)`,
  );
  const { rows } = await db.query<{ kind: MovementType; id: string; provider: string; reference: string }>(
    `WITH ${claims.join(',\n')}
     ${movements.map((m) => `SELECT '${m.type}' AS kind, id, provider, reference FROM ${m.type}`).join(' UNION ALL ')}`,
    [afterSeconds, batch, only ?? null],
  );
  return rows;
}

/**
 * As `claimQuiet`, for one workspace and every provider: its operations in flight with no news for `afterSeconds`
 * (0: all of them), at most `batch` per kind, marked asked. The sandbox test clock's status queries after a move.
 */
export async function claimQuietOfWorkspace(
  db: Queryable,
  workspaceId: string,
  movements: readonly AnyMovement[],
  afterSeconds: number,
  batch: number,
): Promise<{ kind: MovementType; id: string; provider: string; reference: string }[]> {
  const claims = movements.map(
    (m) => `${m.type} AS (
       UPDATE ${m.table} SET checked_at = now() WHERE workspace_id = $1 AND id IN (
         SELECT id FROM ${m.table}
         WHERE workspace_id = $1 AND status IN (${(m.inFlight as string[]).map((s) => `'${s}'`).join(', ')})
           AND coalesce(provider_reference, claimed_reference) IS NOT NULL
           AND greatest(updated_at, checked_at) <= now() - make_interval(secs => $2)
         ORDER BY greatest(updated_at, checked_at) LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING id, provider, coalesce(provider_reference, claimed_reference) AS reference)`,
  );
  const { rows } = await db.query<{ kind: MovementType; id: string; provider: string; reference: string }>(
    `WITH ${claims.join(',\n')}
     ${movements.map((m) => `SELECT '${m.type}' AS kind, id, provider, reference FROM ${m.type}`).join(' UNION ALL ')}`,
    [workspaceId, afterSeconds, batch],
  );
  return rows;
}

export async function findRow<R extends MovingRow>(
  db: Queryable,
  m: AnyMovement,
  workspaceId: string,
  id: string,
): Promise<R | undefined> {
  const { rows } = await db.query<R>(`SELECT ${m.columns} FROM ${m.table} WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    id,
  ]);
  return rows[0];
}
