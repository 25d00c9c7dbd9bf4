// Rail availability's SQL: the window's aggregate over collections, payouts and refunds, the judgement rows, planned
// maintenance and the workspaces a change is sent to. Reference tables: no workspace id but in the audience query.
import type { Queryable, Tx } from '../../db/pool.js';
import type { AvailabilityReason, AvailabilityStatus, Direction } from './availability.schemas.js';

/** The lock one judgement holds, so that one node judges at a time and a change is announced once. */
const JUDGEMENT_LOCK = 3_600_036;

/** Takes the judgement's lock for the transaction: at once or not at all (`wait` false), or waiting for it. */
export async function lockJudgement(tx: Tx, wait: boolean): Promise<boolean> {
  if (wait) {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [JUDGEMENT_LOCK]);
    return true;
  }
  const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
    JUDGEMENT_LOCK,
  ]);
  return rows[0]?.locked === true;
}

export interface WindowStats {
  market: string;
  rail: string;
  direction: Direction;
  /** Attempts with a known outcome: final, or not accepted by the provider within the time-out. */
  attempts: number;
  /** Operator failures among them: `provider_error`, and time-outs. */
  failures: number;
  /** Median ms from creation to success; null with no success. */
  median_ms: number | null;
}

/**
 * One statement over the three tables: every market, rail and direction with attempts created since `from`. An
 * attempt still not accepted by its provider (collections and payouts `created`, refunds `requested`) before
 * `timedOutBefore` counts as a time-out. A payer's outcome (declined, no funds, expired) is an answer, not a failure.
 */
export async function windowStats(db: Queryable, from: Date, timedOutBefore: Date): Promise<WindowStats[]> {
  const { rows } = await db.query<WindowStats>(
    `WITH attempts AS (
       SELECT market, rail, 'collections' AS direction, status, failure_reason, created_at,
              CASE WHEN status IN ('successful', 'failed', 'expired', 'refunded', 'reversed') THEN updated_at END AS final_at,
              status = 'created' AS unaccepted
         FROM collections WHERE created_at >= $1
       UNION ALL
       SELECT market, rail, 'payouts', status, failure_reason, created_at, completed_at, status = 'created'
         FROM payouts WHERE created_at >= $1
       UNION ALL
       SELECT c.market, c.rail, 'refunds', r.status, r.failure_reason, r.requested_at, r.resolved_at,
              r.status = 'requested'
         FROM refunds r JOIN collections c ON c.workspace_id = r.workspace_id AND c.id = r.collection_id
        WHERE r.requested_at >= $1
     ), judged AS (
       SELECT *, final_at IS NULL AND unaccepted AND created_at < $2 AS timed_out FROM attempts
     )
     SELECT market, rail, direction,
            count(*) FILTER (WHERE final_at IS NOT NULL OR timed_out)::int AS attempts,
            count(*) FILTER (WHERE timed_out OR (status = 'failed' AND failure_reason = 'provider_error'))::int AS failures,
            (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM final_at - created_at) * 1000)
               FILTER (WHERE status = 'successful'))::int AS median_ms
       FROM judged GROUP BY market, rail, direction`,
    [from, timedOutBefore],
  );
  return rows;
}

export interface StateRow {
  market: string;
  rail: string;
  direction: Direction;
  id: string;
  status: AvailabilityStatus;
  reason: AvailabilityReason;
  detail: string;
  since: Date;
  attempts: number;
  failures: number;
  median_ms: number | null;
  computed_at: Date;
}

const STATE_COLUMNS =
  'market, rail, direction, id, status, reason, detail, since, attempts, failures, median_ms, computed_at';

export async function readStates(db: Queryable): Promise<StateRow[]> {
  const { rows } = await db.query<StateRow>(`SELECT ${STATE_COLUMNS} FROM rail_availability`);
  return rows;
}

/** Writes every judged row in one statement (new rows inserted, the others replaced). */
export async function saveStates(tx: Tx, states: readonly StateRow[]): Promise<void> {
  if (states.length === 0) return;
  await tx.query(
    `INSERT INTO rail_availability (${STATE_COLUMNS})
     SELECT ${STATE_COLUMNS} FROM jsonb_to_recordset($1::jsonb) AS s(
       market text, rail text, direction text, id uuid, status text, reason text, detail text, since timestamptz,
       attempts integer, failures integer, median_ms integer, computed_at timestamptz)
     ON CONFLICT (market, rail, direction) DO UPDATE SET
       status = excluded.status, reason = excluded.reason, detail = excluded.detail, since = excluded.since,
       attempts = excluded.attempts, failures = excluded.failures, median_ms = excluded.median_ms,
       computed_at = excluded.computed_at`,
    [JSON.stringify(states)],
  );
}

export interface MaintenanceRow {
  market: string;
  rail: string;
  starts_at: Date;
  ends_at: Date;
  note: string;
}

/** Maintenance not over at `now` (under way or to come). */
export async function currentMaintenance(db: Queryable, now: Date): Promise<MaintenanceRow[]> {
  const { rows } = await db.query<MaintenanceRow>(
    'SELECT market, rail, starts_at, ends_at, note FROM rail_maintenance WHERE ends_at > $1 ORDER BY market, rail',
    [now],
  );
  return rows;
}

export async function upsertMaintenance(db: Queryable, m: MaintenanceRow, at: Date): Promise<void> {
  await db.query(
    `INSERT INTO rail_maintenance (market, rail, starts_at, ends_at, note, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (market, rail) DO UPDATE SET starts_at = excluded.starts_at, ends_at = excluded.ends_at,
       note = excluded.note, updated_at = excluded.updated_at`,
    [m.market, m.rail, m.starts_at, m.ends_at, m.note, at],
  );
}

/** Deletes a rail's maintenance; whether there was one. */
export async function deleteMaintenance(db: Queryable, market: string, rail: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM rail_maintenance WHERE market = $1 AND rail = $2', [market, rail]);
  return (rowCount ?? 0) > 0;
}

/** The workspaces with a collection or payout on the rail created since `since` (a refund follows its collection). */
export async function workspacesUsingRail(db: Queryable, market: string, rail: string, since: Date): Promise<string[]> {
  const { rows } = await db.query<{ workspace_id: string }>(
    `SELECT workspace_id FROM collections WHERE market = $1 AND rail = $2 AND created_at >= $3
     UNION
     SELECT workspace_id FROM payouts WHERE market = $1 AND rail = $2 AND created_at >= $3`,
    [market, rail, since],
  );
  return rows.map((r) => r.workspace_id);
}
