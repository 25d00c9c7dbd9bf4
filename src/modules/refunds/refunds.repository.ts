// SQL for refunds. The workspace id is always the first argument (except the provider-callback owner lookup).
import type { Queryable } from '../../db/pool.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';
import type { RefundReason } from './refunds.schemas.js';
import type { RefundStatus } from './refunds.states.js';

export interface RefundRow {
  id: string;
  workspace_id: string;
  collection_id: string;
  amount: number;
  currency: string;
  status: RefundStatus;
  reason: RefundReason;
  failure_reason: string | null;
  provider: string;
  provider_reference: string | null;
  /** The operator's receipt of the refund (a reversal's M-Pesa receipt…), once it confirmed it. */
  provider_receipt: string | null;
  submitted_at: Date | null;
  requested_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
}

export const REFUND_COLUMNS =
  'id, workspace_id, collection_id, amount, currency, status, reason, failure_reason, provider, provider_reference, provider_receipt, submitted_at, requested_at, updated_at, resolved_at';

/** `submitAfter`: when the initiation sweep may send it (until then it is left to the submitter's kick). */
export async function insertRefund(db: Queryable, r: RefundRow, submitAfter: Date): Promise<void> {
  await db.query(
    `INSERT INTO refunds (${REFUND_COLUMNS}, submit_after)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
    [
      r.id,
      r.workspace_id,
      r.collection_id,
      r.amount,
      r.currency,
      r.status,
      r.reason,
      r.failure_reason,
      r.provider,
      r.provider_reference,
      r.provider_receipt,
      r.submitted_at,
      r.requested_at,
      r.updated_at,
      r.resolved_at,
      submitAfter,
    ],
  );
}

export async function findRefund(db: Queryable, workspaceId: string, id: string): Promise<RefundRow | undefined> {
  const { rows } = await db.query<RefundRow>(
    `SELECT ${REFUND_COLUMNS} FROM refunds WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}

export async function lockRefund(tx: Queryable, workspaceId: string, id: string): Promise<RefundRow | undefined> {
  const { rows } = await tx.query<RefundRow>(
    `SELECT ${REFUND_COLUMNS} FROM refunds WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    [workspaceId, id],
  );
  return rows[0];
}

/** The refund of a collection that is still requested or pending, if any (at most one, by a unique index). */
export async function refundInProgress(
  db: Queryable,
  workspaceId: string,
  collectionId: string,
): Promise<RefundRow | undefined> {
  const { rows } = await db.query<RefundRow>(
    `SELECT ${REFUND_COLUMNS} FROM refunds WHERE workspace_id = $1 AND collection_id = $2 AND status IN ('requested', 'pending')`,
    [workspaceId, collectionId],
  );
  return rows[0];
}

/** Refunds of a collection still waiting to be sent to the provider. */
export async function unsentRefunds(db: Queryable, workspaceId: string, collectionId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    "SELECT id FROM refunds WHERE workspace_id = $1 AND collection_id = $2 AND status = 'requested' AND submitted_at IS NULL",
    [workspaceId, collectionId],
  );
  return rows.map((r) => r.id);
}

/** A page of refunds, newest first: of one collection, or (`collectionId` undefined) of the whole workspace. */
export async function listRefunds(
  db: Queryable,
  workspaceId: string,
  collectionId: string | undefined,
  f: ListFilter<RefundStatus>,
): Promise<(RefundRow & { created_at: Date })[]> {
  // requested_at is the refund's creation time; the pager reads it as created_at.
  const scope: Record<string, unknown> = { workspace_id: workspaceId };
  if (collectionId !== undefined) scope.collection_id = collectionId;
  const { text, values } = listQuery('refunds', REFUND_COLUMNS, scope, f, 'requested_at');
  return (await db.query<RefundRow & { created_at: Date }>(text, values)).rows;
}
