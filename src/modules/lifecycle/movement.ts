// What the lifecycle engine knows of a money movement (a collection, a refund, a payout): each is described once, in
// its own module (`<module>.movement.ts`), and the engine (lifecycle.service.ts), the submitter, provider notices and
// the sweeps are written once over these descriptions.
import type { FastifyBaseLogger } from 'fastify';
import type { Queryable, Tx } from '../../db/pool.js';
import type { TransitionTable } from '../../platform/state-machine.js';
import type { Posting } from '../ledger/ledger.repository.js';
import type { CollectionRow } from '../collections/collections.repository.js';
import type { LatePaymentAction } from '../collections/collections.states.js';
import type { NoticeObjectType, ProviderAck, RailProvider } from '../providers/provider.js';

/** The kinds of money movement the engine runs: the `object_type` of their events and provider notices. */
export type MovementType = NoticeObjectType;

/** The columns every moving row has: what the engine reads and writes. */
export interface MovingRow<S extends string = string> {
  id: string;
  workspace_id: string;
  status: S;
  amount: number;
  currency: string;
  /** Name of the rail provider running it. */
  provider: string;
  provider_reference: string | null;
  provider_receipt: string | null;
  /** When the provider accepted (or refused) the initiation; null until then. */
  submitted_at: Date | null;
  updated_at: Date;
  failure_reason: string | null;
}

/**
 * A row as read earlier, with its version (PostgreSQL's `xmin`, which every update of the row changes): a move from it
 * can be made by one compare-and-set, with no locked read first.
 */
export type Versioned<R extends MovingRow = MovingRow> = R & { version: string };

/** What the submitter sends a provider for one initiation, or why it cannot be sent. */
export type Initiation =
  | { send: (provider: RailProvider) => Promise<ProviderAck> }
  /** The object cannot be sent and must fail (its collection was reversed meanwhile…). */
  | { fail: { cause: string; reason: string } }
  /** Something it needs is gone: the initiation is abandoned. */
  | { giveUp: string };

export interface Movement<S extends string, R extends MovingRow<S>, C> {
  type: MovementType;
  /** Its table: every statement below names it. */
  table: string;
  /** The columns of a row, in `SELECT` order. */
  columns: string;
  /** Columns a move writes, besides `status`, `updated_at`, `failure_reason` and the provider fields. */
  stepColumns: readonly (keyof R & string)[];
  transitions: TransitionTable<S>;
  /** Statuses a path never passes through: a status that moves money must be reported, never inferred. */
  notWalked?: readonly S[];
  /** The status a provider is given it in (its initiation is due while it has no `submitted_at`). */
  initial: S;
  /** Statuses a provider may report. */
  reported: readonly S[];
  /** Statuses at which the provider is still working on it: quiet ones are asked about by the reconciliation sweep. */
  inFlight: readonly S[];
  /** Statuses that say money moved: a provider's report of one that the table refuses needs a person. */
  moneyMoved: readonly S[];
  /** Statuses in which, by our record, money moved: a provider's final word of failure then is a mismatch. */
  movedMoney: readonly S[];
  /** The name of an event announced before the steps of a move from `from` (a late payment's), if any. */
  lead?(from: S): string | undefined;
  /** The row after one step to `status` at `at` (its failure reason from `reason`, its final time…). */
  step(row: R, status: S, at: Date, reason: string | undefined): R;
  /** The event's `data`: the object as the API shows it. */
  toApi(row: R, context: C): unknown;
  /**
   * What else a provider's answer records on the row, as the reference and receipt are recorded (a collection's
   * redirect address); the same row when there is nothing new. Its columns are among `stepColumns`.
   */
  recordAnswer?(row: R, options: MoveOptions): R;
  /** The ledger postings of a step to `status` (none for most). */
  postings(row: R, status: S): Posting[];
  /**
   * Whether a move from a row read earlier (`Versioned`) may be made by a compare-and-set update instead of a locked
   * read: only where `lock` takes the row alone and its events need nothing more than the row (no context). The
   * update then locks the row first, as `lock` would.
   */
  compareAndSet: boolean;
  /**
   * Whether a compare-and-set move to `row` from `from` is the whole of the move: `after` writes nothing for it and
   * emits nothing but its events. Such a move is one statement, which the batcher may send on its own, without a
   * transaction. Absent: never.
   */
  savedAlone?(row: R, from: S): boolean;
  /** Reads the row locked for the transaction, with what its events need; in the lock order its creation takes. */
  lock(tx: Tx, workspaceId: string, id: string): Promise<{ row: R; context: C } | undefined>;
  /** What the submitter sends its provider for a claimed row. */
  initiation(db: Queryable, row: R): Promise<Initiation>;
  /** An unanswered initiation may have moved money (a payout): the provider is asked before it is failed. */
  askBeforeGivingUp: boolean;
  /** What else moves with it, in the same transaction, after an applied move (a refund's success refunds its collection). */
  after?(tx: Tx, moved: Moved<S, R>, engine: Reactions): Promise<void>;
}

/** An applied move, as `after` sees it. */
export interface Moved<S extends string, R> {
  row: R;
  from: S;
  cause: string;
}

/** What a movement's `after` may use: the engine's own move (in the same transaction), and what the service injects. */
export interface Reactions {
  move(tx: Tx, type: MovementType, workspaceId: string, id: string, to: string, options: MoveOptions): Promise<unknown>;
  log: FastifyBaseLogger;
  /** What else moves with a collection, in its transaction: its checkout session, the risk rules. */
  followCollection(tx: Tx, workspaceId: string, collection: CollectionRow, late?: LatePaymentAction): Promise<void>;
  /**
   * For a late payment the workspace would accept: whether the payer's attempt still stands. A checkout attempt the
   * payer retried, or whose session another attempt paid, does not: the payer would be charged twice.
   */
  lateAttemptStands(tx: Tx, workspaceId: string, collection: CollectionRow): Promise<boolean>;
}

export type MoveOutcome = 'applied' | 'duplicate' | 'refused';

export interface Move<R> {
  outcome: MoveOutcome;
  /** The row after the move (unchanged unless applied). */
  row: R;
  from: string;
  /** Why a move was refused: the notice names another reference or amount, or the table does not allow it. */
  refusedFor?: 'reference' | 'amount' | 'transition';
  /** Applied: whether the options' `notice` had its record written (false: it found its record there already). */
  noticeWritten?: boolean;
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
  /** The provider notice that causes the move, recorded in the statement that saves the row if the move is applied. */
  notice?: AppliedNotice | undefined;
  /** The operator's page for the payer (a collection on a redirect rail), recorded in its instruction if none is recorded yet. */
  redirectUrl?: string | undefined;
}

/**
 * The record of a notice as applied, written in the statement that saves the move it causes (`noticeWrites`): its
 * row is written if that move changed the object, and not if the same notice id was recorded before. `strict`: a
 * notice id recorded before fails the statement instead, undoing the move with it (for a statement that commits on its
 * own, where nothing after it could roll the move back).
 */
export interface AppliedNotice {
  provider: string;
  workspaceId: string;
  notice: { noticeId: string; objectType: NoticeObjectType; objectId: string; status: string };
  strict: boolean;
}

/** Any description, as the engine holds them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyMovement = Movement<any, any, any>;
