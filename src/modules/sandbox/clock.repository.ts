// SQL of the sandbox test clock: the workspace's offset, and its pending deadlines pulled earlier when it moves. The
// workspace id comes first; every statement touches that workspace's rows only.
import type { Queryable } from '../../db/pool.js';

export interface ClockRow {
  clock_offset_seconds: string;
  clock_advanced_at: Date | null;
  /** The database's time when the row was read (the statement's `now()`). */
  server_time: Date;
}

/** The clock of a sandbox workspace; undefined for a workspace that is not one. */
export async function readClock(db: Queryable, workspaceId: string): Promise<ClockRow | undefined> {
  const { rows } = await db.query<ClockRow>(
    `SELECT clock_offset_seconds::text AS clock_offset_seconds, clock_advanced_at, now() AS server_time
     FROM workspaces WHERE id = $1 AND environment = 'sandbox'`,
    [workspaceId],
  );
  return rows[0];
}

/**
 * Moves the clock of a sandbox workspace forward by `seconds`, locking its row first: two moves of one workspace take
 * turns, so each pulls the deadlines by its own duration exactly once. Undefined for a workspace that is not a sandbox one.
 */
export async function moveClock(tx: Queryable, workspaceId: string, seconds: number): Promise<ClockRow | undefined> {
  const { rows } = await tx.query<ClockRow>(
    `UPDATE workspaces SET clock_offset_seconds = clock_offset_seconds + $2, clock_advanced_at = now()
     WHERE id = $1 AND environment = 'sandbox'
     RETURNING clock_offset_seconds::text AS clock_offset_seconds, clock_advanced_at, now() AS server_time`,
    [workspaceId, seconds],
  );
  return rows[0];
}

/** What a move pulled earlier (or, for the idempotency records, deleted), by kind. */
export interface Moved {
  collections: number;
  checkout_sessions: number;
  webhook_deliveries: number;
  simulator_steps: number;
  idempotency_records: number;
  idempotency_records_deleted: number;
}

const pulled = (column: string): string => `${column} = ${column} - make_interval(secs => $2)`;

/**
 * Pulls the workspace's pending deadlines `seconds` earlier: the expiry of its open collections and checkout sessions,
 * the next attempt of its pending webhook deliveries, the simulator's next step of its operations, and the end of
 * retention of its stored idempotency outcomes. An outcome the move takes past its retention is deleted here, as the
 * purge would have: its key is free at once. Not moved: a provider initiation's wait (its `submit_after` is also the
 * sender's lease, which must not end early) and `created_at`/`updated_at` (history, not deadlines).
 */
export async function pullDeadlines(tx: Queryable, workspaceId: string, seconds: number): Promise<Moved> {
  const values = [workspaceId, seconds];
  const count = async (text: string): Promise<number> => (await tx.query(text, values)).rowCount ?? 0;
  const idempotencyDeleted = await count(
    `DELETE FROM idempotency_keys WHERE workspace_id = $1 AND expires_at <= now() + make_interval(secs => $2)`,
  );
  return {
    collections: await count(
      `UPDATE collections SET ${pulled('expires_at')} WHERE workspace_id = $1 AND status IN ('created', 'pending')`,
    ),
    checkout_sessions: await count(
      `UPDATE checkout_sessions SET ${pulled('expires_at')} WHERE workspace_id = $1 AND status = 'open'`,
    ),
    webhook_deliveries: await count(
      `UPDATE webhook_deliveries SET ${pulled('next_attempt_at')} WHERE workspace_id = $1 AND status = 'pending'`,
    ),
    simulator_steps: await count(
      `UPDATE sandbox_operations SET ${pulled('next_at')} WHERE workspace_id = $1 AND next_at IS NOT NULL`,
    ),
    idempotency_records: await count(`UPDATE idempotency_keys SET ${pulled('expires_at')} WHERE workspace_id = $1`),
    idempotency_records_deleted: idempotencyDeleted,
  };
}
