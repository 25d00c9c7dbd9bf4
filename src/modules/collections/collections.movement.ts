// A collection as a money movement: what the lifecycle engine needs to move one (its table, transition table,
// events, ledger postings, API mapper and initiation). The rules of each step are the engine's, written once.
import { emitOnCommit } from '../../platform/after-commit.js';
import { linesFor, type Posting } from '../ledger/ledger.repository.js';
import type { Tx } from '../../db/pool.js';
import type { Movement, Reactions } from '../lifecycle/movement.js';
import { unsentRefunds } from '../refunds/refunds.repository.js';
import { requestRefund } from '../refunds/refunds.movement.js';
import { latePaymentPolicy } from '../workspaces/workspaces.repository.js';
import { recordRedirectUrl } from './payment-instructions.js';
import { COLLECTION_COLUMNS, lockCollection, type CollectionRow } from './collections.repository.js';
import { failureReason, toCollectionApi, type CollectionStatus } from './collections.schemas.js';
import { COLLECTION_NOT_WALKED, COLLECTION_TRANSITIONS, type LatePaymentAction } from './collections.states.js';

export const collectionMovement: Movement<CollectionStatus, CollectionRow, undefined> = {
  type: 'collection',
  table: 'collections',
  columns: COLLECTION_COLUMNS,
  // The instruction is written with each move: a redirect rail's gets the operator's address with its answer.
  stepColumns: ['payment_instruction'],
  transitions: COLLECTION_TRANSITIONS,
  notWalked: COLLECTION_NOT_WALKED,
  initial: 'created',
  reported: ['pending', 'processing', 'successful', 'failed', 'reversed'],
  inFlight: ['pending', 'processing'],
  // A refused report that money moved: paid after we expired it, reversed after a refund.
  moneyMoved: ['successful', 'reversed'],
  movedMoney: ['successful', 'refunded', 'reversed'],
  step: (row, status, at, reason) => ({
    ...row,
    status,
    updated_at: at,
    failure_reason: status === 'failed' ? failureReason(reason) : row.failure_reason,
  }),
  recordAnswer(row, options) {
    const instruction = recordRedirectUrl(row.payment_instruction, options.redirectUrl);
    return instruction === row.payment_instruction ? row : { ...row, payment_instruction: instruction };
  },
  toApi: (row) => toCollectionApi(row),
  postings(row, status): Posting[] {
    if (status !== 'successful' && status !== 'reversed') return [];
    const kind = status === 'successful' ? 'collection_successful' : 'collection_reversed';
    return [
      { kind, objectType: 'collection', objectId: row.id, currency: row.currency, lines: linesFor(kind, row.amount) },
    ];
  },
  async lock(tx, workspaceId, id) {
    const row = await lockCollection(tx, workspaceId, id);
    return row && { row, context: undefined };
  },
  initiation: async (_db, row) => ({
    send: (provider) =>
      provider.initiateCollection({
        id: row.id,
        workspaceId: row.workspace_id,
        market: row.market,
        rail: row.rail,
        amount: row.amount,
        currency: row.currency,
        reference: row.reference,
        customer: row.customer,
        expiresAt: row.expires_at,
      }),
  }),
  askBeforeGivingUp: false,
  compareAndSet: true,
  // What `after` does nothing for: no late payment, no checkout session to follow, and none of the statuses the risk
  // rules look at (failed), the operator closes (expired, failed) or that fail refunds (reversed).
  savedAlone: (row, from) =>
    from !== 'expired' &&
    row.checkout_session_id === null &&
    (row.status === 'pending' || row.status === 'processing' || row.status === 'successful'),
  // A late payment (the table allows nothing else out of expired): the merchant hears of it first.
  lead: (from) => (from === 'expired' ? 'late_payment' : undefined),
  async after(tx, { row, from, cause }, engine) {
    const workspaceId = row.workspace_id;
    const late = from === 'expired' ? await latePaymentAction(tx, row, engine) : undefined;
    await engine.followCollection(tx, workspaceId, row, late);
    if (late === 'refund') {
      // Credited like any success, then sent straight back: the system refund reserves what was just credited.
      await requestRefund(tx, row, 'late_payment');
      engine.log.info({ collection_id: row.id, cause }, 'late payment: refunding it to the payer');
    } else if (late === 'accept') {
      engine.log.info({ collection_id: row.id, cause }, 'late payment: accepted and credited');
    }
    if ((row.status === 'expired' || row.status === 'failed') && row.provider_reference !== null) {
      // Ended unpaid: the provider closes it too, where the payer could still pay it (a Wave session).
      emitOnCommit(tx, {
        kind: 'close',
        provider: row.provider,
        workspaceId,
        id: row.id,
        reference: row.provider_reference,
      });
    }
    if (row.status === 'reversed') {
      // The payer has the money back: a refund not yet sent to the provider must not be sent.
      for (const refundId of await unsentRefunds(tx, workspaceId, row.id)) {
        await engine.move(tx, 'refund', workspaceId, refundId, 'failed', {
          cause: `collection ${row.id} reversed`,
          reason: 'collection_reversed',
        });
      }
    }
  },
};

/** The workspace's policy, unless the payer's checkout attempt no longer stands: then the money always goes back. */
async function latePaymentAction(tx: Tx, row: CollectionRow, engine: Reactions): Promise<LatePaymentAction> {
  if ((await latePaymentPolicy(tx, row.workspace_id)) === 'refund') return 'refund';
  return (await engine.lateAttemptStands(tx, row.workspace_id, row)) ? 'accept' : 'refund';
}
