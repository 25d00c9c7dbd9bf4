// The lifecycle engine: every status change of a collection, refund or payout is made here, written once over the
// movement descriptions (`<module>.movement.ts`), inside the caller's transaction, with its events, their outbox rows
// and, where money moves, its ledger postings. A repeated notice changes nothing; a transition the table does not
// allow is refused and logged.
import type { FastifyBaseLogger } from 'fastify';
import type { Tx } from '../../db/pool.js';
import { minorUnits } from '../../platform/money.js';
import { plan } from '../../platform/state-machine.js';
import { stepTime } from '../../platform/time.js';
import { collectionMovement } from '../collections/collections.movement.js';
import type { CollectionRow } from '../collections/collections.repository.js';
import type { CollectionStatus } from '../collections/collections.schemas.js';
import { recordEvent, type EventInput } from '../events/events.repository.js';
import { postMany } from '../ledger/ledger.repository.js';
import { payoutMovement } from '../payouts/payouts.movement.js';
import type { PayoutRow } from '../payouts/payouts.repository.js';
import type { PayoutStatus } from '../payouts/payouts.schemas.js';
import { refundMovement } from '../refunds/refunds.movement.js';
import type { RefundRow } from '../refunds/refunds.repository.js';
import type { RefundStatus } from '../refunds/refunds.states.js';
import type { AnyMovement, Move, MoveOptions, MovementType, MovingRow, Reactions } from './movement.js';
import { saveStatus, statusUpdate } from './movements.repository.js';

export type { Move, MoveOptions, MoveOutcome } from './movement.js';

/** Every movement the engine runs, by type. */
export const MOVEMENTS: Readonly<Record<MovementType, AnyMovement>> = {
  collection: collectionMovement,
  refund: refundMovement,
  payout: payoutMovement,
};

/** The statuses and rows of each movement, for the callers' types. */
interface Typed {
  collection: { status: CollectionStatus; row: CollectionRow };
  refund: { status: RefundStatus; row: RefundRow };
  payout: { status: PayoutStatus; row: PayoutRow };
}

/** A notice naming a reference other than the one recorded is about something else: it must not move this object. */
function sameReference(row: MovingRow, reference: string | undefined): boolean {
  return reference === undefined || row.provider_reference === null || row.provider_reference === reference;
}

/**
 * The row with the provider's reference and receipt recorded where it had none yet (the first one given wins), and
 * what else the movement records of a provider's answer.
 */
function withReference<R extends MovingRow>(m: AnyMovement, row: R, options: MoveOptions): R {
  const recorded = withIds(row, options);
  return m.recordAnswer ? (m.recordAnswer(recorded, options) as R) : recorded;
}

function withIds<R extends MovingRow>(row: R, options: MoveOptions): R {
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

export class Lifecycle implements Reactions {
  constructor(
    readonly log: FastifyBaseLogger,
    /** What else moves with a collection, in its transaction: its checkout session, the risk rules. */
    readonly followCollection: Reactions['followCollection'],
    /** Decimals of a currency (operators write amounts in major units). */
    private readonly exponentOf: (currency: string) => number,
    readonly lateAttemptStands: Reactions['lateAttemptStands'],
  ) {}

  /**
   * Moves one object to `to`: locks it, checks the notice against it, walks the transition table, and writes each
   * step's event (the last one in the statement that saves the row) and ledger postings; then what follows the
   * movement (its `after`). Undefined when the object is not there.
   */
  async move<K extends MovementType>(
    tx: Tx,
    type: K,
    workspaceId: string,
    id: string,
    to: Typed[K]['status'],
    options: MoveOptions,
  ): Promise<Move<Typed[K]['row']> | undefined> {
    const m = MOVEMENTS[type];
    const locked = await m.lock(tx, workspaceId, id);
    if (!locked) return undefined;
    const current = locked.row as MovingRow;
    const started = await this.start(tx, m, current, to, options);
    if ('done' in started) return started.done as Move<Typed[K]['row']>;
    const from = current.status;
    let row = started.row;
    const events: EventInput[] = [];
    const lead = m.lead?.(from);
    if (lead !== undefined) {
      const at = stepTime(row.updated_at);
      row = m.step(row, to, at, options.reason);
      events.push(this.event(m, row, locked.context, lead, at));
    }
    for (const status of started.steps) {
      const at = stepTime(row.updated_at);
      row = m.step(row, status, at, options.reason);
      events.push(this.event(m, row, locked.context, status, at));
      const postings = m.postings(row, status);
      if (postings.length > 0) await postMany(tx, workspaceId, postings, at);
    }
    // The last step's event goes in the statement that saves the row (a plan has at least one step).
    const last = events.pop() as EventInput;
    for (const event of events) await recordEvent(tx, workspaceId, event);
    await recordEvent(tx, workspaceId, last, statusUpdate(m, row));
    await m.after?.(tx, { row, from, cause: options.cause }, this);
    return { outcome: 'applied', row: row as Typed[K]['row'], from };
  }

  private event(m: AnyMovement, row: MovingRow, context: unknown, name: string, at: Date): EventInput {
    return { type: `${m.type}.${name}`, objectType: m.type, objectId: row.id, data: m.toApi(row, context), at };
  }

  /**
   * What every move does before its steps. A notice naming another reference is refused. A repeat, or a move
   * the table refuses, changes nothing but the provider's reference and receipt (recorded by a repeat, never by a
   * refusal); a refused report that money moved needs a person, so it is logged as an error. Otherwise the
   * row (with the reference recorded) and the statuses to step through.
   */
  private async start(
    tx: Tx,
    m: AnyMovement,
    current: MovingRow,
    to: string,
    options: MoveOptions,
  ): Promise<{ done: Move<MovingRow> } | { row: MovingRow; steps: string[] }> {
    const from = current.status;
    const ids = { [`${m.type}_id`]: current.id, cause: options.cause };
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
        `provider reports another amount for this ${m.type}; refused`,
      );
      return { done: { outcome: 'refused', row: current, from, refusedFor: 'amount' } };
    }
    const route = plan(m.transitions, from, to, m.notWalked);
    if (route.kind === 'steps') return { row: withReference(m, current, options), steps: route.steps };
    if (route.kind === 'refused') {
      const moneyMoved = (m.moneyMoved as string[]).includes(to);
      this.log[moneyMoved ? 'error' : 'warn'](
        { ...ids, from, to, money_moved: moneyMoved },
        `${m.type} transition refused`,
      );
      return { done: { outcome: 'refused', row: current, from, refusedFor: 'transition' } };
    }
    const row = withReference(m, current, options);
    if (row !== current) await saveStatus(tx, m, row);
    return { done: { outcome: 'duplicate', row, from } };
  }
}
