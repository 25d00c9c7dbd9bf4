// SQL for checkout sessions. The workspace id is always the first argument, except the payer's lookup by token.
import type { Queryable } from '../../db/pool.js';
import type { EnabledRail } from '../../platform/enabled-rails.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';
import type { SessionStatus } from './checkout.schemas.js';

export interface SessionRow {
  id: string;
  workspace_id: string;
  token: string;
  status: SessionStatus;
  amount: number;
  currency: string;
  market: string;
  reference: string | null;
  redirect_url: string;
  customer: Record<string, string>;
  metadata: Record<string, unknown>;
  collection_id: string | null;
  rail: string | null;
  failure_reason: string | null;
  attempts: number;
  expires_at: Date;
  completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'id, workspace_id, token, status, amount, currency, market, reference, redirect_url, customer, metadata, collection_id, rail, ' +
  'failure_reason, attempts, expires_at, completed_at, created_at, updated_at';
/** The same columns, qualified for the join with workspaces. */
const SESSION_COLUMNS = COLUMNS.split(', ')
  .map((c) => `s.${c}`)
  .join(', ');

export async function insertSession(
  db: Queryable,
  workspaceId: string,
  s: Omit<SessionRow, 'workspace_id'>,
): Promise<void> {
  await db.query(
    `INSERT INTO checkout_sessions (${COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
    [
      s.id,
      workspaceId,
      s.token,
      s.status,
      s.amount,
      s.currency,
      s.market,
      s.reference,
      s.redirect_url,
      JSON.stringify(s.customer),
      JSON.stringify(s.metadata),
      s.collection_id,
      s.rail,
      s.failure_reason,
      s.attempts,
      s.expires_at,
      s.completed_at,
      s.created_at,
      s.updated_at,
    ],
  );
}

export async function findSession(db: Queryable, workspaceId: string, id: string): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>(
    `SELECT ${COLUMNS} FROM checkout_sessions WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}

/** The row, locked for the rest of the transaction: every status change of a session goes through here. */
export async function lockSession(tx: Queryable, workspaceId: string, id: string): Promise<SessionRow | undefined> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT ${COLUMNS} FROM checkout_sessions WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    [workspaceId, id],
  );
  return rows[0];
}

/**
 * The payer's page knows only the token: the one lookup of a session without its workspace. Everything after
 * it is scoped by the workspace found here.
 */
/** A session as its payer's page reads it: with the merchant's name and the workspace's enabled rails (null: all). */
export type PayerSessionRow = SessionRow & { merchant_name: string; enabled_rails: EnabledRail[] | null };

export async function findByToken(db: Queryable, token: string): Promise<PayerSessionRow | undefined> {
  const { rows } = await db.query<PayerSessionRow>(
    `SELECT ${SESSION_COLUMNS}, w.display_name AS merchant_name,
            (SELECT c.rails FROM workspace_configurations c WHERE c.workspace_id = s.workspace_id) AS enabled_rails
     FROM checkout_sessions s JOIN workspaces w ON w.id = s.workspace_id WHERE s.token = $1`,
    [token],
  );
  return rows[0];
}

/** Writes what changes over a session's life: status, the latest attempt, times. */
export async function saveSession(tx: Queryable, s: SessionRow): Promise<void> {
  await tx.query(
    `UPDATE checkout_sessions SET status = $3, collection_id = $4, rail = $5, failure_reason = $6, attempts = $7, completed_at = $8, updated_at = $9
     WHERE workspace_id = $1 AND id = $2`,
    [
      s.workspace_id,
      s.id,
      s.status,
      s.collection_id,
      s.rail,
      s.failure_reason,
      s.attempts,
      s.completed_at,
      s.updated_at,
    ],
  );
}

export async function listSessions(
  db: Queryable,
  workspaceId: string,
  f: ListFilter<SessionStatus>,
): Promise<SessionRow[]> {
  const { text, values } = listQuery('checkout_sessions', COLUMNS, { workspace_id: workspaceId }, f);
  return (await db.query<SessionRow>(text, values)).rows;
}

/**
 * Open sessions past their expiry, locked (SKIP LOCKED: several processes sweep at once without waiting on each
 * other, and a session being paid right now is left to that payment). Maintenance: spans workspaces.
 */
export async function lockDueForExpiry(tx: Queryable, batch: number): Promise<SessionRow[]> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT ${COLUMNS} FROM checkout_sessions WHERE status = 'open' AND expires_at <= now()
     ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [batch],
  );
  return rows;
}
