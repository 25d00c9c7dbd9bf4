// The lifecycle engine: every status change of a collection, refund or payout is made here, written once over the
// movement descriptions (`<module>.movement.ts`), inside the caller's transaction, with its events, their outbox rows
// and, where money moves, its ledger postings. A repeated notice changes nothing; a transition the table does not
// allow is refused and logged.
import type { FastifyBaseLogger } from 'fastify';
import type { Tx } from '../../db/pool.js';
import { commitNotes, emitOnCommit } from '../../platform/after-commit.js';
import { minorUnits } from '../../platform/money.js';
import { plan } from '../../platform/state-machine.js';
import { stepTime } from '../../platform/time.js';
import { collectionMovement } from '../collections/collections.movement.js';
import type { CollectionRow } from '../collections/collections.repository.js';
import type { CollectionStatus } from '../collections/collections.schemas.js';
import type { OneStatement } from '../../db/batcher.js';
import { uuidv7 } from '../../platform/ids.js';
import { preparePostings, type PreparedPostings } from '../ledger/ledger.repository.js';
import { payoutMovement } from '../payouts/payouts.movement.js';
import type { PayoutRow } from '../payouts/payouts.repository.js';
import type { PayoutStatus } from '../payouts/payouts.schemas.js';
import { refundMovement } from '../refunds/refunds.movement.js';
import type { RefundRow } from '../refunds/refunds.repository.js';
import type { RefundStatus } from '../refunds/refunds.states.js';
import type { AnyMovement, Move, MoveOptions, MovementType, MovingRow, Reactions, Versioned } from './movement.js';
import { movesStatement, saveStatus, savedParts, type MovePart } from './movements.repository.js';

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
   *
   * Given `seen`, the row as read earlier (by a claim, or a notice's owner lookup) with its version, and where its
   * movement allows it (`compareAndSet`): a move the table allows from it is made without a locked read, by one
   * update that changes the row only if it is still that version. Anything else (the row changed since, or the move is
   * a repeat or refused, which the locked path logs and records) takes the locked path.
   */
  async move<K extends MovementType>(
    tx: Tx,
    type: K,
    workspaceId: string,
    id: string,
    to: Typed[K]['status'],
    options: MoveOptions,
    seen?: Versioned,
  ): Promise<Move<Typed[K]['row']> | undefined> {
    const m = MOVEMENTS[type];
    if (seen !== undefined && m.compareAndSet && seen.workspace_id === workspaceId && seen.id === id) {
      const route = this.route(m, seen, to, options);
      if ('steps' in route) {
        const moved = await this.apply(tx, m, seen, route, undefined, options, seen.version);
        if (moved) return moved as Move<Typed[K]['row']>;
      }
    }
    const locked = await m.lock(tx, workspaceId, id);
    if (!locked) return undefined;
    const current = locked.row as MovingRow;
    const started = await this.start(tx, m, current, to, options);
    if ('done' in started) return started.done as Move<Typed[K]['row']>;
    return (await this.apply(tx, m, current, started, locked.context, options)) as Move<Typed[K]['row']>;
  }

  /**
   * A move from `seen` that is one statement, built and not sent, for the batcher's `runStatement`: a compare-and-set
   * move (its save, events, outbox rows, notice's record, postings, lines and balances) whose movement says nothing
   * follows it (`savedAlone`). Its answer is the applied move, or undefined when the row was no longer the version
   * read; the caller gives the batcher what to do then (`otherwise`: `move` in a transaction). In a batch, the batcher
   * sends such moves of one movement together, as one statement (`together`). Undefined when the move is not one
   * statement.
   */
  moveStatement<K extends MovementType>(
    type: K,
    workspaceId: string,
    id: string,
    to: Typed[K]['status'],
    options: MoveOptions,
    seen: Versioned,
  ): Omit<OneStatement<Move<Typed[K]['row']>>, 'otherwise'> | undefined {
    const m = MOVEMENTS[type];
    if (!m.compareAndSet || m.savedAlone === undefined || seen.workspace_id !== workspaceId || seen.id !== id) return;
    const route = this.route(m, seen, to, options);
    if (!('steps' in route)) return;
    const part = this.plan(m, seen, route, undefined, options, seen.version);
    if (!m.savedAlone(part.row, seen.status)) return;
    const answer = (rows: unknown[]): Move<Typed[K]['row']> | undefined => {
      const saved = [...savedParts(rows).values()][0];
      if (saved === undefined) return undefined;
      const row = part.row as Typed[K]['row'];
      return { outcome: 'applied', row, from: seen.status, noticeWritten: saved.noticeWritten };
    };
    return {
      ...movesStatement(m, [part]),
      notes: commitNotes({ kind: 'events' }),
      answer,
      together: {
        // Strict notices and the others are recorded by different statements (see noticeWrites).
        kind: `move ${m.type}${options.notice?.strict ? ' strict' : ''}`,
        target: `${m.type} ${id}`,
        part,
        combine: (parts) => movesStatement(m, parts as MovePart[]),
      },
    };
  }

  /**
   * Writes a move's steps (`plan`) in one statement, then what follows the movement. With `version`, the save is a
   * compare-and-set, and undefined (nothing written) when the row is no longer that version.
   */
  private async apply(
    tx: Tx,
    m: AnyMovement,
    current: MovingRow,
    started: { row: MovingRow; steps: string[] },
    context: unknown,
    options: MoveOptions,
    version?: string,
  ): Promise<Move<MovingRow> | undefined> {
    const part = this.plan(m, current, started, context, options, version);
    const save = movesStatement(m, [part]);
    const saved = savedParts((await tx.query(save.text, save.values)).rows).get(0);
    if (saved === undefined) return undefined;
    emitOnCommit(tx, { kind: 'events' });
    const { row } = part;
    await m.after?.(tx, { row, from: current.status, cause: options.cause }, this);
    return { outcome: 'applied', row, from: current.status, noticeWritten: saved.noticeWritten };
  }

  /**
   * A move's writes, planned and not sent: the row after its steps, each step's event (a late payment's lead event
   * first), the notice's record, and the postings of the steps that post, for `movesStatement`.
   */
  private plan(
    m: AnyMovement,
    current: MovingRow,
    started: { row: MovingRow; steps: string[] },
    context: unknown,
    options: MoveOptions,
    version?: string,
  ): MovePart {
    const workspaceId = current.workspace_id;
    let row = started.row;
    const events: MovePart['events'] = [];
    const postings: PreparedPostings[] = [];
    const to = started.steps[started.steps.length - 1] as string;
    const lead = m.lead?.(current.status);
    if (lead !== undefined) {
      const at = stepTime(row.updated_at);
      row = m.step(row, to, at, options.reason);
      events.push(this.event(m, row, context, lead, at));
    }
    for (const status of started.steps) {
      const at = stepTime(row.updated_at);
      row = m.step(row, status, at, options.reason);
      events.push(this.event(m, row, context, status, at));
      const stepPostings = m.postings(row, status);
      if (stepPostings.length > 0) postings.push(preparePostings(workspaceId, stepPostings, at));
    }
    return { row, version, events, notice: options.notice, postings };
  }

  private event(m: AnyMovement, row: MovingRow, context: unknown, name: string, at: Date): MovePart['events'][number] {
    const event = { type: `${m.type}.${name}`, objectType: m.type, objectId: row.id, data: m.toApi(row, context), at };
    return { ...event, id: uuidv7(at.getTime()) };
  }

  /**
   * Where a notice leads from `current`, without writing anything: the statuses to step through (with the provider's
   * reference and receipt recorded where the row had none), a repeat, or a refusal and why.
   */
  private route(
    m: AnyMovement,
    current: MovingRow,
    to: string,
    options: MoveOptions,
  ): { row: MovingRow; steps: string[] } | { repeat: true } | { refusedFor: 'reference' | 'amount' | 'transition' } {
    if (!sameReference(current, options.providerReference)) return { refusedFor: 'reference' };
    if (
      options.amount !== undefined &&
      minorUnits(options.amount, this.exponentOf(current.currency)) !== current.amount
    )
      return { refusedFor: 'amount' };
    const route = plan(m.transitions, current.status, to, m.notWalked);
    if (route.kind === 'steps') return { row: withReference(m, current, options), steps: route.steps };
    return route.kind === 'refused' ? { refusedFor: 'transition' } : { repeat: true };
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
    const route = this.route(m, current, to, options);
    if ('steps' in route) return route;
    if ('repeat' in route) {
      const row = withReference(m, current, options);
      if (row !== current) await saveStatus(tx, m, row);
      return { done: { outcome: 'duplicate', row, from } };
    }
    if (route.refusedFor === 'reference') {
      this.log.warn(ids, 'provider notice refused: its reference is not the one the provider gave');
    } else if (route.refusedFor === 'amount') {
      // Money moved, but not the amount we asked for: a person must look; nothing is credited or settled.
      this.log.error(
        { ...ids, amount: current.amount, reported_amount: options.amount },
        `provider reports another amount for this ${m.type}; refused`,
      );
    } else {
      const moneyMoved = (m.moneyMoved as string[]).includes(to);
      this.log[moneyMoved ? 'error' : 'warn'](
        { ...ids, from, to, money_moved: moneyMoved },
        `${m.type} transition refused`,
      );
    }
    return { done: { outcome: 'refused', row: current, from, refusedFor: route.refusedFor } };
  }
}
