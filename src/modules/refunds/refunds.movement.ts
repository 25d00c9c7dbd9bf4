// A refund as a money movement: what the lifecycle engine needs to move one. The reservation made when it was
// requested is paid out of the provider's hold when it succeeds, or given back to the workspace when it fails.
import type { Tx } from '../../db/pool.js';
import { uuidv7, uuidv7Time } from '../../platform/ids.js';
import { findCollection, lockCollection, type CollectionRow } from '../collections/collections.repository.js';
import { recordEvent } from '../events/events.repository.js';
import { linesFor, post, type Posting } from '../ledger/ledger.repository.js';
import type { Movement } from '../lifecycle/movement.js';
import { findRefund, insertRefund, lockRefund, REFUND_COLUMNS, type RefundRow } from './refunds.repository.js';
import { refundFailureReason, toRefundApi, type RefundReason } from './refunds.schemas.js';
import { REFUND_TRANSITIONS, type RefundStatus } from './refunds.states.js';

/** A refund's events show its collection's metadata. */
interface RefundContext {
  metadata: Record<string, unknown>;
}

export const refundMovement: Movement<RefundStatus, RefundRow, RefundContext> = {
  type: 'refund',
  table: 'refunds',
  columns: REFUND_COLUMNS,
  stepColumns: ['resolved_at'],
  transitions: REFUND_TRANSITIONS,
  initial: 'requested',
  reported: ['pending', 'successful', 'failed'],
  inFlight: ['requested', 'pending'],
  moneyMoved: ['successful'],
  movedMoney: ['successful'],
  step(row, status, at, reason) {
    const final = status === 'successful' || status === 'failed';
    return {
      ...row,
      status,
      updated_at: at,
      resolved_at: final ? at : null,
      failure_reason: status === 'failed' ? refundFailureReason(reason) : row.failure_reason,
    };
  },
  toApi: (row, context) => toRefundApi(row, context.metadata),
  postings(row, status): Posting[] {
    if (status !== 'successful' && status !== 'failed') return [];
    const kind = status === 'successful' ? 'refund_settled' : 'refund_released';
    return [
      { kind, objectType: 'refund', objectId: row.id, currency: row.currency, lines: linesFor(kind, row.amount) },
    ];
  },
  // In the order refund creation takes the locks (collection, then refund), so the two never deadlock.
  async lock(tx, workspaceId, id) {
    const unlocked = await findRefund(tx, workspaceId, id);
    if (!unlocked) return undefined;
    const collection = await lockCollection(tx, workspaceId, unlocked.collection_id);
    const row = await lockRefund(tx, workspaceId, id);
    if (!row || !collection) throw new Error(`refund ${id} or its collection vanished`);
    return { row, context: { metadata: collection.metadata } };
  },
  async initiation(db, row) {
    const collection = await findCollection(db, row.workspace_id, row.collection_id);
    // Reversed (or otherwise no longer successful) since the refund was requested: the payer already has the
    // money back, so the refund must not be sent. (Normally the reversal has failed it already.)
    if (collection?.status !== 'successful')
      return { fail: { cause: 'collection no longer successful', reason: 'collection_reversed' } };
    return {
      send: (provider) =>
        provider.initiateRefund({
          id: row.id,
          workspaceId: row.workspace_id,
          collectionId: row.collection_id,
          collectionReference: collection.provider_reference,
          collectionReceipt: collection.provider_receipt,
          amount: row.amount,
          currency: row.currency,
        }),
    };
  },
  askBeforeGivingUp: false,
  // Its lock takes its collection first (the order a refund's creation takes), and its events need the collection.
  compareAndSet: false,
  async after(tx, { row }, engine) {
    // The money went back to the payer: the collection is refunded (refused, and logged, if it was reversed meanwhile).
    if (row.status === 'successful')
      await engine.move(tx, 'collection', row.workspace_id, row.collection_id, 'refunded', {
        cause: `refund:${row.id}`,
      });
  },
};

/**
 * Writes a refund of the whole collection (locked by the caller) with its `refund.requested` event, and reserves its
 * amount out of the available balance, in the caller's transaction: the API's refunds and those of late payments.
 */
export async function requestRefund(tx: Tx, collection: CollectionRow, reason: RefundReason): Promise<RefundRow> {
  const id = uuidv7();
  const now = uuidv7Time(id);
  const row: RefundRow = {
    id,
    workspace_id: collection.workspace_id,
    collection_id: collection.id,
    amount: collection.amount,
    currency: collection.currency,
    status: 'requested',
    reason,
    failure_reason: null,
    provider: collection.provider,
    provider_reference: null,
    provider_receipt: null,
    submitted_at: null,
    requested_at: now,
    updated_at: now,
    resolved_at: null,
  };
  // The sweep leaves a refund asked for through the API to the submitter's kick, right after the request commits, for
  // 5 seconds; one the service makes itself has no request to kick it, so it is due at once.
  const submitAfter = reason === 'merchant_request' ? new Date(now.getTime() + 5000) : now;
  await insertRefund(tx, row, submitAfter);
  await post(tx, collection.workspace_id, {
    kind: 'refund_reserved',
    objectType: 'refund',
    objectId: id,
    currency: row.currency,
    amount: row.amount,
    at: now,
  });
  await recordEvent(tx, collection.workspace_id, {
    type: 'refund.requested',
    objectType: 'refund',
    objectId: id,
    data: toRefundApi(row, collection.metadata),
    at: now,
  });
  return row;
}
