// The after-commit hook: the one way committed work reaches what reacts to it in this process, outside the
// transaction that wrote it. Every cross-module reaction that must wait for a commit goes through it:
//   - a new collection, refund or payout is handed to its provider (the submitter);
//   - new events in the outbox, or new deliveries, wake the webhook relay (fan-out and send now, not at its next poll);
//   - a collection ended unpaid is closed at its provider, where the payer could otherwise still pay it.
// The rule: a write never tells another module, or the background, about itself directly; it says what it committed
// to this hook, in one of two ways:
//   - `afterCommit.emit(committed)` once its own transaction has returned (a service that ran the transaction, or a
//     single statement in autocommit);
//   - `emitOnCommit(tx, committed)` from inside a transaction it did not open (recordEvent, collections' insert): the
//     note rides on the transaction and is emitted when it commits, and dropped if it rolls back (db/pool.ts carries
//     it). The notes of many pieces of work sharing one transaction (the batcher) are emitted once each.
// There is one AfterCommit per composition (composition.ts): the services are given it, it watches the pools the
// services' transactions run on, and the workers listen to it while they run (workers/index.ts). With no listener
// (tests without workers, scripts) nothing follows a commit, and the periodic sweeps and polls pick the work up later.
import { noteForCommit, onCommitted, type Db, type Tx } from '../db/pool.js';

export type Committed =
  /** A new operation to hand to its provider. */
  | { kind: 'collection' | 'refund' | 'payout'; workspaceId: string; id: string }
  /** New events in the outbox, or new deliveries, to send. */
  | { kind: 'events' }
  /** A collection ended unpaid (expired or failed) that its provider may still let the payer pay: to close there. */
  | { kind: 'close'; provider: string; workspaceId: string; id: string; reference: string };

export type CommitListener = (committed: Committed) => void;

/** One key per distinct reaction, so that noting it again in the same transaction changes nothing. */
function keyOf(committed: Committed): string {
  return committed.kind === 'events' ? 'events' : `${committed.kind}:${committed.workspaceId}:${committed.id}`;
}

/**
 * Notes `committed` on the transaction `tx` runs in: the AfterCommit watching its pool emits it once that transaction
 * has committed, and never if it rolls back.
 */
export function emitOnCommit(tx: Tx, committed: Committed): void {
  noteForCommit(tx, noteKey(committed), committed);
}

const noteKey = (committed: Committed): string => `after-commit:${keyOf(committed)}`;

/**
 * The notes `emitOnCommit` would leave, by key, for work that is handed over as one statement (the batcher's
 * `runStatement`), which notes them on its transaction or, sent alone, emits them once it has committed.
 */
export function commitNotes(...committed: Committed[]): Map<string, Committed> {
  return new Map(committed.map((c) => [noteKey(c), c]));
}

/** Whether a note handed on by db/pool.ts is one of ours. */
function isCommitted(note: unknown): note is Committed {
  const kind = (note as { kind?: unknown } | null)?.kind;
  return kind === 'events' || kind === 'collection' || kind === 'refund' || kind === 'payout' || kind === 'close';
}

export class AfterCommit {
  private listener: CommitListener | undefined;

  /** Called once the transaction that wrote the work has committed. */
  emit(committed: Committed): void {
    this.listener?.(committed);
  }

  /** Listens from now on (one listener at a time); returns what puts the previous one back. */
  listen(listener: CommitListener | undefined): () => void {
    const previous = this.listener;
    this.listener = listener;
    return () => {
      this.listener = previous;
    };
  }

  /** Emits what transactions of `pool` noted with `emitOnCommit`, as each commits; returns what stops watching. */
  watch(pool: Db): () => void {
    return onCommitted(pool, (notes) => {
      for (const note of notes) if (isCommitted(note)) this.emit(note);
    });
  }
}
