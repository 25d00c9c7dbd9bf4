// How a status is reached through a transition table: the one walk every state machine of the service uses
// (collections, refunds, payouts). Pure: each aggregate keeps its own table in its `<module>.states.ts`.

/** A transition table: each status and the statuses it may move to. */
export type TransitionTable<S extends string> = Readonly<Record<S, readonly S[]>>;

export type Plan<S extends string> =
  /** Already in that status: a repeated notice, nothing to do. */
  | { kind: 'duplicate' }
  /** No way from the current status to the target under the table. */
  | { kind: 'refused' }
  /** The statuses to pass through, in order, ending with the target. */
  | { kind: 'steps'; steps: S[] };

/**
 * How to reach `to` from `from`: the shortest path through the table. A provider that reports only the
 * final outcome ("successful" while we know "pending") is walked through the statuses between, each
 * recorded as its own event; a target the table cannot reach (failed → successful, a stale "pending"
 * after "processing") is refused. A path never passes *through* a status in `notThrough`: a status that
 * moves money must be reported, never inferred.
 */
export function plan<S extends string>(
  table: TransitionTable<S>,
  from: S,
  to: S,
  notThrough: readonly S[] = [],
): Plan<S> {
  if (from === to) return { kind: 'duplicate' };
  const previous = new Map<S, S>();
  const queue: S[] = [from];
  while (queue.length > 0) {
    const at = queue.shift() as S;
    for (const next of table[at]) {
      if (next === from || previous.has(next)) continue;
      previous.set(next, at);
      if (next === to) {
        const steps: S[] = [to];
        for (let s = at; s !== from; s = previous.get(s) as S) steps.unshift(s);
        return { kind: 'steps', steps };
      }
      if (!notThrough.includes(next)) queue.push(next);
    }
  }
  return { kind: 'refused' };
}

/** Whether a status has no way out. */
export function isFinal<S extends string>(table: TransitionTable<S>, status: S): boolean {
  return table[status].length === 0;
}

/** Whether the table allows `from` → `to` in one step. */
export function allows<S extends string>(table: TransitionTable<S>, from: S, to: S): boolean {
  return table[from].includes(to);
}
