// The one hook through which work committed in a request reaches the background: a new collection, refund or payout
// for its provider, new events for the webhook relay. Given to the services at construction; the workers listen
// while they run. Without them (tests, scripts) nothing follows a commit, and the sweeps pick the work up later.

export type Committed =
  /** A new operation to hand to its provider. */
  | { kind: 'collection' | 'refund' | 'payout'; workspaceId: string; id: string }
  /** New events in the outbox, to deliver. */
  | { kind: 'events' };

export type CommitListener = (committed: Committed) => void;

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
}
