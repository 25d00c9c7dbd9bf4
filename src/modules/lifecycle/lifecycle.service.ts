// Applies the transition tables: every status change is made here, inside the caller's transaction, with
// its event, its outbox row and, where money moves, its ledger posting. A repeated notice changes nothing;
// a transition the table does not allow is refused and logged.
import type { FastifyBaseLogger } from 'fastify';
import type { Tx } from '../../db/pool.js';
import { minorUnits } from '../../platform/money.js';
import { stepTime } from '../../platform/time.js';
import * as collections from '../collections/collections.repository.js';
import { failureReason, type CollectionStatus } from '../collections/collections.schemas.js';
import { toApi } from '../collections/collections.service.js';
import { recordEvent, type EventInput } from '../events/events.repository.js';
import { post, postMany } from '../ledger/ledger.repository.js';
import * as payouts from '../payouts/payouts.repository.js';
import { payoutFailureReason, type PayoutStatus } from '../payouts/payouts.schemas.js';
import { toPayoutApi } from '../payouts/payouts.service.js';
import { payoutReleasePostings, payoutSettlePostings } from '../ramp/postings.js';
import * as refunds from '../refunds/refunds.repository.js';
import { refundFailureReason, toRefundApi } from '../refunds/refunds.schemas.js';
import type { Plan } from '../../platform/state-machine.js';
import { planCollection, type LatePaymentAction } from '../collections/collections.states.js';
import { planPayout } from '../payouts/payouts.states.js';
import { planRefund, type RefundStatus } from '../refunds/refunds.states.js';
import { requestRefund } from '../refunds/refunds.service.js';
import { latePaymentPolicy } from '../workspaces/workspaces.repository.js';

export type MoveOutcome = 'applied' | 'duplicate' | 'refused';

export interface Move<R> {
  outcome: MoveOutcome;
  /** The row after the move (unchanged unless applied). */
  row: R;
  from: string;
  /** Why a move was refused: the notice names another reference or amount, or the table does not allow it. */
  refusedFor?: 'reference' | 'amount' | 'transition';
}

export interface MoveOptions {
  /** Who asked: `provider notice <id>`, `initiation at <provider>`, `expiry`, `sandbox simulation`, `refund:<id>`… (logged when refused). */
  cause: string;
  /** For a move to failed: why. */
  reason?: string | undefined;
  /** The provider's reference for the object, recorded (with the time) if none is recorded yet. */
  providerReference?: string | undefined;
  /** The operator's receipt of the money movement, recorded if none is recorded yet. */
  receipt?: string | undefined;
  /** The amount the operator says moved (major units, as it wrote it), when it says: a move for another amount than the row's is refused. */
  amount?: string | undefined;
}

/** A notice naming a reference other than the one recorded is about something else: it must not move this object. */
function sameReference(row: { provider_reference: string | null }, reference: string | undefined): boolean {
  return reference === undefined || row.provider_reference === null || row.provider_reference === reference;
}

interface ProviderFields {
  provider_reference: string | null;
  provider_receipt: string | null;
  submitted_at: Date | null;
}

/** The row with the provider's reference and receipt recorded where it had none yet (the first one given wins). */
function withReference<R extends ProviderFields>(row: R, options: MoveOptions): R {
  const reference = row.provider_reference === null ? options.providerReference : undefined;
  const receipt = row.provider_receipt === null ? options.receipt : undefined;
  if (reference === undefined && receipt === undefined) return row;
  return {
    ...row,
    provider_reference: reference ?? row.provider_reference,
    provider_receipt: receipt ?? row.provider_receipt,
    submitted_at: row.submitted_at ?? (reference === undefined ? null : new Date()),
  };
}

/**
 * Called in the same transaction after every applied collection move (checkout sessions follow; risk rules look);
 * `late` says what became of a late payment.
 */
export type CollectionFollower = (
  tx: Tx,
  workspaceId: string,
  collection: collections.CollectionRow,
  late?: LatePaymentAction,
) => Promise<void>;

/**
 * For a late payment the workspace would accept: whether the payer's attempt still stands. A checkout attempt the payer
 * retried, or whose session another attempt paid, does not: the payer would be charged twice.
 */
export type LateAttemptCheck = (tx: Tx, workspaceId: string, collection: collections.CollectionRow) => Promise<boolean>;

export class Lifecycle {
  constructor(
    private readonly log: FastifyBaseLogger,
    /** What else moves with a collection, in its transaction: its checkout session, the risk rules. */
    private readonly followCollection: CollectionFollower,
    /** Decimals of a currency (operators write amounts in major units). */
    private readonly exponentOf: (currency: string) => number,
    private readonly lateAttemptStands: LateAttemptCheck,
  ) {}

  async moveCollection(
    tx: Tx,
    workspaceId: string,
    id: string,
    to: CollectionStatus,
    options: MoveOptions,
  ): Promise<Move<collections.CollectionRow> | undefined> {
    const current = await collections.lockCollection(tx, workspaceId, id);
    if (!current) return undefined;
    // A refused report that money moved: paid after we expired it, reversed after a refund.
    const started = await this.start(
      'collection',
      current,
      to,
      planCollection(current.status, to),
      options,
      ['successful', 'reversed'],
      (r) => collections.saveStatus(tx, r),
    );
    if ('done' in started) return started.done;
    const from = current.status;
    let row = started.row;
    let announce: EventInput | undefined;
    if (from === 'expired') {
      // A late payment (contract §5; the table allows nothing else out of expired): the merchant hears of it first.
      const at = stepTime(row.updated_at);
      row = { ...row, status: 'successful', updated_at: at };
      announce = { type: 'collection.late_payment', objectType: 'collection', objectId: id, data: toApi(row), at };
    }
    for (const status of started.steps) {
      if (announce) await recordEvent(tx, workspaceId, announce);
      const at = stepTime(row.updated_at);
      row = {
        ...row,
        status,
        updated_at: at,
        failure_reason: status === 'failed' ? failureReason(options.reason) : row.failure_reason,
      };
      announce = { type: `collection.${status}`, objectType: 'collection', objectId: id, data: toApi(row), at };
      if (status === 'successful' || status === 'reversed') {
        await post(tx, workspaceId, {
          kind: status === 'successful' ? 'collection_successful' : 'collection_reversed',
          objectType: 'collection',
          objectId: id,
          currency: row.currency,
          amount: row.amount,
          at,
        });
      }
    }
    // The last step's event goes in the statement that saves the row (a plan has at least one step).
    await recordEvent(tx, workspaceId, announce as EventInput, collections.statusUpdate(row));
    const late = from === 'expired' ? await this.latePaymentAction(tx, workspaceId, row) : undefined;
    await this.followCollection(tx, workspaceId, row, late);
    if (late === 'refund') {
      // Credited above like any success, then sent straight back: the system refund reserves what was just credited.
      await requestRefund(tx, row, 'late_payment');
      this.log.info({ collection_id: id, cause: options.cause }, 'late payment: refunding it to the payer');
    } else if (late === 'accept') {
      this.log.info({ collection_id: id, cause: options.cause }, 'late payment: accepted and credited');
    }
    if (row.status === 'reversed') {
      // The payer has the money back: a refund not yet sent to the provider must not be sent.
      const unsent = await refunds.unsentRefunds(tx, workspaceId, id);
      for (const refundId of unsent) {
        await this.moveRefund(tx, workspaceId, refundId, 'failed', {
          cause: `collection ${id} reversed`,
          reason: 'collection_reversed',
        });
      }
    }
    return { outcome: 'applied', row, from };
  }

  /** The workspace's policy, unless the payer's checkout attempt no longer stands: then the money always goes back. */
  private async latePaymentAction(
    tx: Tx,
    workspaceId: string,
    collection: collections.CollectionRow,
  ): Promise<LatePaymentAction> {
    if ((await latePaymentPolicy(tx, workspaceId)) === 'refund') return 'refund';
    return (await this.lateAttemptStands(tx, workspaceId, collection)) ? 'accept' : 'refund';
  }

  async moveRefund(
    tx: Tx,
    workspaceId: string,
    id: string,
    to: RefundStatus,
    options: MoveOptions,
  ): Promise<Move<refunds.RefundRow> | undefined> {
    // Locks in the order refund creation takes them (collection, then refund), so the two never deadlock.
    const unlocked = await refunds.findRefund(tx, workspaceId, id);
    if (!unlocked) return undefined;
    const collection = await collections.lockCollection(tx, workspaceId, unlocked.collection_id);
    const lockedRefund = await refunds.lockRefund(tx, workspaceId, id);
    if (!lockedRefund || !collection) throw new Error(`refund ${id} or its collection vanished`);
    const started = await this.start(
      'refund',
      lockedRefund,
      to,
      planRefund(lockedRefund.status, to),
      options,
      ['successful'],
      (r) => refunds.saveStatus(tx, r),
    );
    if ('done' in started) return started.done;
    const from = lockedRefund.status;
    let row = started.row;
    for (const status of started.steps) {
      const at = stepTime(row.updated_at);
      const final = status === 'successful' || status === 'failed';
      row = {
        ...row,
        status,
        updated_at: at,
        resolved_at: final ? at : null,
        failure_reason: status === 'failed' ? refundFailureReason(options.reason) : row.failure_reason,
      };
      await recordEvent(tx, workspaceId, {
        type: `refund.${status}`,
        objectType: 'refund',
        objectId: id,
        data: toRefundApi(row, collection.metadata),
        at,
      });
      if (final) {
        // The reservation made when it was requested: paid out of the provider's hold, or given back to the workspace.
        await post(tx, workspaceId, {
          kind: status === 'successful' ? 'refund_settled' : 'refund_released',
          objectType: 'refund',
          objectId: id,
          currency: row.currency,
          amount: row.amount,
          at,
        });
      }
    }
    await refunds.saveStatus(tx, row);
    if (row.status === 'successful') {
      // The money went back to the payer: the collection is refunded (refused, and logged, if it was reversed meanwhile).
      await this.moveCollection(tx, workspaceId, row.collection_id, 'refunded', { cause: `refund:${id}` });
    }
    return { outcome: 'applied', row, from };
  }

  /**
   * Moves a payout: a failure gives the reservation back to the available balance; a success spends it (the
   * recipient's amount out of the provider's float, the fee earned, through FX when converted).
   */
  async movePayout(
    tx: Tx,
    workspaceId: string,
    id: string,
    to: PayoutStatus,
    options: MoveOptions,
  ): Promise<Move<payouts.PayoutRow> | undefined> {
    const current = await payouts.lockPayout(tx, workspaceId, id);
    if (!current) return undefined;
    const started = await this.start(
      'payout',
      current,
      to,
      planPayout(current.status, to),
      options,
      ['successful'],
      (r) => payouts.saveStatus(tx, r),
    );
    if ('done' in started) return started.done;
    const from = current.status;
    let row = started.row;
    for (const status of started.steps) {
      const at = stepTime(row.updated_at);
      const final = status === 'successful' || status === 'failed';
      row = {
        ...row,
        status,
        updated_at: at,
        completed_at: final ? at : null,
        failure_reason: status === 'failed' ? payoutFailureReason(options.reason) : row.failure_reason,
      };
      await recordEvent(tx, workspaceId, {
        type: `payout.${status}`,
        objectType: 'payout',
        objectId: id,
        data: toPayoutApi(row),
        at,
      });
      if (final)
        await postMany(
          tx,
          workspaceId,
          status === 'successful' ? payoutSettlePostings(row) : payoutReleasePostings(row),
          at,
        );
    }
    await payouts.saveStatus(tx, row);
    return { outcome: 'applied', row, from };
  }

  /**
   * What every move does before its steps. A notice naming another reference is refused. A repeat, or a move
   * the table refuses, changes nothing but the provider's reference and receipt (recorded by a repeat, never by a
   * refusal); a refused report that money moved needs a person, so it is logged as an error. Otherwise the
   * row (with the reference recorded) and the statuses to step through.
   */
  private async start<S extends string, R extends ProviderFields & { status: S; amount: number; currency: string }>(
    kind: 'collection' | 'refund' | 'payout',
    current: R,
    to: S,
    route: Plan<S>,
    options: MoveOptions,
    moneyMoves: readonly S[],
    save: (row: R) => Promise<void>,
  ): Promise<{ done: Move<R> } | { row: R; steps: S[] }> {
    const from = current.status;
    const ids = { [`${kind}_id`]: (current as unknown as { id: string }).id, cause: options.cause };
    if (!sameReference(current, options.providerReference)) {
      this.log.warn(ids, 'provider notice refused: its reference is not the one the provider gave');
      return { done: { outcome: 'refused', row: current, from, refusedFor: 'reference' } };
    }
    if (
      options.amount !== undefined &&
      minorUnits(options.amount, this.exponentOf(current.currency)) !== current.amount
    ) {
      // Money moved, but not the amount we asked for: a person must look; nothing is credited or settled.
      this.log.error(
        { ...ids, amount: current.amount, reported_amount: options.amount },
        `provider reports another amount for this ${kind}; refused`,
      );
      return { done: { outcome: 'refused', row: current, from, refusedFor: 'amount' } };
    }
    if (route.kind === 'steps') return { row: withReference(current, options), steps: route.steps };
    if (route.kind === 'refused') {
      const moneyMoved = moneyMoves.includes(to);
      this.log[moneyMoved ? 'error' : 'warn'](
        { ...ids, from, to, money_moved: moneyMoved },
        `${kind} transition refused`,
      );
      return { done: { outcome: 'refused', row: current, from, refusedFor: 'transition' } };
    }
    const row = withReference(current, options);
    if (row !== current) await save(row);
    return { done: { outcome: 'duplicate', row, from } };
  }
}
