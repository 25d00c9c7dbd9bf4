// Group commit: work from many callers, each a few statements that belong in one transaction (a provider's answer
// recorded, a notice applied, a collection expired), run one after another in one transaction with one commit.
// Under load the work that arrives while a batch commits makes up the next batch, so the commits per second stay few
// while the work per commit grows. Nothing here is faster than the database when it is idle: a lone caller's work runs
// alone, at once.
//
// Work that is one statement (`runStatement`: a move saved by compare-and-set with everything it writes) is sent
// alone, outside any transaction, when no other work shares its batch: one round trip instead of BEGIN, the statement
// and COMMIT. In a batch, statements of one kind (`together`: the moves of one movement) are sent as one statement
// doing all their work, so a batch costs a round trip per kind of work in it, not one per piece: its transaction
// never waits for Node between two pieces of one kind.
import pg from 'pg';
import { isDatabaseUnavailable } from './errors.js';
import { noteForCommit, tellCommitted, withTransaction, type Db, type Tx } from './pool.js';

/** Work that is one statement, and what to do instead when that statement changes nothing or fails. */
export interface OneStatement<T> {
  text: string;
  values: unknown[];
  /** Noted for after its commit, by key, as `noteForCommit` notes them (its relay wake-up). */
  notes: ReadonlyMap<string, unknown>;
  /** The work's answer, from the statement's rows; undefined when the statement changed nothing. */
  answer: (rows: unknown[]) => T | undefined;
  /**
   * The same work done another way, in a transaction: when the statement changed nothing (a compare-and-set that
   * found the row changed), or failed (a constraint the other way handles). It must leave the database as if the
   * statement had never been sent, which it has not, having changed nothing or rolled back.
   */
  otherwise: (tx: Tx) => Promise<T>;
  /** Set when the statement may be sent as one with others of its kind in a batch. */
  together?: Together;
}

/** A statement's part in one statement made of several of a kind (`combine`). */
export interface Together {
  /** Statements of one kind in a batch are sent as one, made by `combine` (any of them: it is the same for a kind). */
  kind: string;
  /** What it changes: two statements with the same target are never combined (one statement changes a row once). */
  target: string;
  part: unknown;
  /**
   * One statement doing the work of all the parts, in one round trip. Each row it answers names its part (its
   * `part` column: the part's place in `parts`); a part's rows are what that part's `answer` is given.
   */
  combine(parts: unknown[]): { text: string; values: unknown[] };
}

interface Waiting {
  work: (tx: Tx) => Promise<unknown>;
  /** Set when the work is one statement: sent alone without a transaction. */
  statement?: OneStatement<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface BatcherStats {
  /** Transactions committed, batches and lone work alike. */
  commits: number;
  /** Pieces of work committed. */
  applied: number;
  /** Batches undone because one piece of work failed, their work then run alone. */
  split: number;
  /** Statements sent alone and done the other way (`otherwise`): they changed nothing, or the database refused them. */
  fallbacks: number;
  /** Statements sent for several pieces of work together (`together`), and the pieces they carried. */
  combined: number;
  combinedPieces: number;
}

export class TransactionBatcher {
  private readonly waiting: Waiting[] = [];
  private running = 0;
  readonly stats: BatcherStats = { commits: 0, applied: 0, split: 0, fallbacks: 0, combined: 0, combinedPieces: 0 };

  constructor(
    private readonly db: Db,
    /** Pieces of work in one transaction at most. */
    private readonly maxBatch = 100,
    /** Batches in flight at once (each holds one connection of `db`). */
    private readonly concurrency = 2,
  ) {}

  /**
   * Runs `work` in a transaction shared with other callers' work, and answers what it returns once that transaction
   * has committed. The work must only touch the database (it may run twice: see `apply`), and must not swallow a
   * database error and go on, since the transaction it shares is then aborted for everyone.
   */
  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ work, resolve: resolve as (value: unknown) => void, reject });
      this.drain();
    });
  }

  /**
   * Runs one statement, in a transaction shared with other callers' work, or alone without one when nothing else is
   * waiting; answers what `answer` makes of its rows, or else what `otherwise` answers.
   */
  runStatement<T>(statement: OneStatement<T>): Promise<T> {
    const work = async (tx: Tx): Promise<T> => {
      const { rows } = await tx.query(statement.text, statement.values);
      const answer = statement.answer(rows);
      if (answer === undefined) return statement.otherwise(tx);
      for (const [key, note] of statement.notes) noteForCommit(tx, key, note);
      return answer;
    };
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({
        work,
        statement: statement as OneStatement<unknown>,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.drain();
    });
  }

  private drain(): void {
    while (this.running < this.concurrency && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxBatch);
      this.running += 1;
      void this.apply(batch).finally(() => {
        this.running -= 1;
        this.drain();
      });
    }
  }

  /**
   * One transaction for the whole batch. When a piece of work throws (a move that fails, a duplicate notice that must
   * roll back its own writes, a deadlock with another batch), the batch is undone and each piece runs again alone, so
   * that one failure neither loses nor blocks the others. A database that is away fails them all: each caller has its
   * own way to wait for it.
   */
  private async apply(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) return this.alone(batch[0] as Waiting);
    let results: unknown[];
    try {
      results = await withTransaction(this.db, async (tx) => {
        const out = new Map<Waiting, unknown>();
        for (const unit of units(batch)) {
          if (unit.length === 1) out.set(unit[0] as Waiting, await (unit[0] as Waiting).work(tx));
          else for (const [item, result] of await this.together(tx, unit)) out.set(item, result);
        }
        return batch.map((item) => out.get(item));
      });
    } catch (err) {
      if (isDatabaseUnavailable(err)) {
        for (const item of batch) item.reject(err);
        return;
      }
      this.stats.split += 1;
      for (const item of batch) await this.alone(item);
      return;
    }
    this.stats.commits += 1;
    this.stats.applied += batch.length;
    batch.forEach((item, i) => item.resolve(results[i]));
  }

  /**
   * Statements of one kind sent as one: each piece's answer from its rows, or, where its part changed nothing, its
   * `otherwise` in the same transaction, after the statement.
   */
  private async together(tx: Tx, unit: Waiting[]): Promise<Map<Waiting, unknown>> {
    const statements = unit.map((item) => item.statement as OneStatement<unknown>);
    const parts = statements.map((statement) => (statement.together as Together).part);
    const combined = (statements[0]?.together as Together).combine(parts);
    const { rows } = await tx.query<{ part: number }>(combined.text, combined.values);
    this.stats.combined += 1;
    this.stats.combinedPieces += unit.length;
    const results = new Map<Waiting, unknown>();
    for (const [i, item] of unit.entries()) {
      const statement = statements[i] as OneStatement<unknown>;
      const answer = statement.answer(rows.filter((row) => row.part === i));
      if (answer === undefined) results.set(item, await statement.otherwise(tx));
      else {
        for (const [key, note] of statement.notes) noteForCommit(tx, key, note);
        results.set(item, answer);
      }
    }
    return results;
  }

  private async alone(item: Waiting): Promise<void> {
    if (item.statement) return this.aloneStatement(item, item.statement);
    try {
      const result = await withTransaction(this.db, item.work);
      this.stats.commits += 1;
      this.stats.applied += 1;
      item.resolve(result);
    } catch (err) {
      item.reject(err);
    }
  }

  /**
   * One statement sent on its own: it commits as it ends. When it changed nothing, or the database refused it (so
   * nothing of it was written), its `otherwise` runs in a transaction of its own. Any other failure (the database
   * away, an answer that could not be read) leaves the statement in doubt and is the caller's, as a lost COMMIT is.
   */
  private async aloneStatement(item: Waiting, statement: OneStatement<unknown>): Promise<void> {
    let answer: unknown;
    try {
      let rows: unknown[] | undefined;
      try {
        rows = (await this.db.query(statement.text, statement.values)).rows;
      } catch (err) {
        if (isDatabaseUnavailable(err) || !(err instanceof pg.DatabaseError)) throw err;
      }
      answer = rows === undefined ? undefined : statement.answer(rows);
    } catch (err) {
      item.reject(err);
      return;
    }
    if (answer === undefined) {
      this.stats.fallbacks += 1;
      try {
        item.resolve(await withTransaction(this.db, statement.otherwise));
        this.stats.commits += 1;
        this.stats.applied += 1;
      } catch (err) {
        item.reject(err);
      }
      return;
    }
    this.stats.commits += 1;
    this.stats.applied += 1;
    tellCommitted(this.db, [...statement.notes.values()]);
    item.resolve(answer);
  }
}

/**
 * A batch in the order its work runs: each piece alone, but statements of one kind together, in the place of the
 * first of them; a statement whose target is already in its kind's group starts a new group after it. So a statement
 * may run before a piece that came into the batch ahead of it. That is an order its callers allow: the pieces of a
 * batch came in together, none of them waiting for another, as if each had run in a transaction of its own at once.
 */
function units(batch: readonly Waiting[]): Waiting[][] {
  const out: Waiting[][] = [];
  const open = new Map<string, { unit: Waiting[]; targets: Set<string> }>();
  for (const item of batch) {
    const together = item.statement?.together;
    if (together === undefined) {
      out.push([item]);
      continue;
    }
    let group = open.get(together.kind);
    if (group === undefined || group.targets.has(together.target)) {
      group = { unit: [], targets: new Set() };
      open.set(together.kind, group);
      out.push(group.unit);
    }
    group.unit.push(item);
    group.targets.add(together.target);
  }
  return out;
}
