// SQL for risk signals. The workspace id comes first; the admin's reads across workspaces say so in their names.
import type { Queryable } from '../../db/pool.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';
import type { Severity, SignalStatus } from './risk.schemas.js';

export interface SignalRow {
  id: string;
  workspace_id: string;
  type: string;
  severity: Severity;
  status: SignalStatus;
  source: 'rule' | 'integrator' | 'liquidity_provider' | 'admin';
  subject_type: string;
  subject_id: string;
  description: string;
  details: Record<string, unknown>;
  resolution_note: string | null;
  acknowledged_at: Date | null;
  resolved_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'id, workspace_id, type, severity, status, source, subject_type, subject_id, description, details, resolution_note, acknowledged_at, resolved_at, created_at, updated_at';

/**
 * Inserts the signal; a rule's signal is skipped (returns false) while the same rule already has one open for the
 * same subject (the partial unique index), so a pattern that goes on does not flood the queue.
 */
export async function insertSignal(
  db: Queryable,
  workspaceId: string,
  s: Omit<SignalRow, 'workspace_id'>,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO risk_signals (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (workspace_id, type, subject_type, subject_id) WHERE status = 'open' AND source = 'rule' DO NOTHING`,
    [
      s.id,
      workspaceId,
      s.type,
      s.severity,
      s.status,
      s.source,
      s.subject_type,
      s.subject_id,
      s.description,
      JSON.stringify(s.details),
      s.resolution_note,
      s.acknowledged_at,
      s.resolved_at,
      s.created_at,
      s.updated_at,
    ],
  );
  return rowCount === 1;
}

export async function findSignal(db: Queryable, workspaceId: string, id: string): Promise<SignalRow | undefined> {
  const { rows } = await db.query<SignalRow>(
    `SELECT ${COLUMNS} FROM risk_signals WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}

/** The admin's read: a signal of any workspace. */
export async function findSignalAnyWorkspace(db: Queryable, id: string): Promise<SignalRow | undefined> {
  const { rows } = await db.query<SignalRow>(`SELECT ${COLUMNS} FROM risk_signals WHERE id = $1`, [id]);
  return rows[0];
}

export async function lockSignalAnyWorkspace(tx: Queryable, id: string): Promise<SignalRow | undefined> {
  const { rows } = await tx.query<SignalRow>(`SELECT ${COLUMNS} FROM risk_signals WHERE id = $1 FOR UPDATE`, [id]);
  return rows[0];
}

export async function saveReview(tx: Queryable, s: SignalRow): Promise<void> {
  await tx.query(
    `UPDATE risk_signals SET status = $3, resolution_note = $4, acknowledged_at = $5, resolved_at = $6, updated_at = $7
     WHERE workspace_id = $1 AND id = $2`,
    [s.workspace_id, s.id, s.status, s.resolution_note, s.acknowledged_at, s.resolved_at, s.updated_at],
  );
}

/** Open signals of one workspace, or (`null`) of every workspace for the admin. */
export async function listOpen(db: Queryable, workspaceId: string | null, f: ListFilter): Promise<SignalRow[]> {
  const scope: Record<string, unknown> = workspaceId === null ? {} : { workspace_id: workspaceId };
  const { text, values } = listQuery('risk_signals', COLUMNS, { ...scope, status: 'open' }, f);
  return (await db.query<SignalRow>(text, values)).rows;
}

/**
 * Serialises a rule's count for one subject: two changes at once would each count only themselves plus what
 * was committed, and both stay under the threshold. Taken after the change's own row lock, and nothing takes a
 * row lock after it, so it cannot deadlock.
 */
export async function lockRuleSubject(
  tx: Queryable,
  workspaceId: string,
  rule: string,
  subject: string,
): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 7301))', [
    `risk:${workspaceId}:${rule}:${subject}`,
  ]);
}

/** When the rule last raised a signal for the subject (any status): what came before it has been seen. */
export async function lastRuleSignalAt(
  tx: Queryable,
  workspaceId: string,
  rule: string,
  subjectType: string,
  subjectId: string,
): Promise<Date | undefined> {
  const { rows } = await tx.query<{ at: Date | null }>(
    `SELECT max(created_at) AS at FROM risk_signals
     WHERE workspace_id = $1 AND type = $2 AND subject_type = $3 AND subject_id = $4 AND source = 'rule'`,
    [workspaceId, rule, subjectType, subjectId],
  );
  return rows[0]?.at ?? undefined;
}

/** Collections of one phone number in the workspace that the payer's side failed (declined, no funds) after `since`. */
export async function countPayerFailuresForPhone(
  db: Queryable,
  workspaceId: string,
  phone: string,
  since: Date,
  reasons: readonly string[],
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM collections
     WHERE workspace_id = $1 AND customer->>'phone_number' = $2 AND status = 'failed' AND updated_at > $3 AND failure_reason = ANY($4::text[])`,
    [workspaceId, phone, since, reasons],
  );
  return rows[0]?.n ?? 0;
}

/** Refunds requested in the workspace after `since` (the refund-burst rule). */
export async function countRefundsSince(db: Queryable, workspaceId: string, since: Date): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM refunds WHERE workspace_id = $1 AND requested_at > $2',
    [workspaceId, since],
  );
  return rows[0]?.n ?? 0;
}
