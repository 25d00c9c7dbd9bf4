// The double-entry ledger: postings whose lines sum to zero, and running balances updated in the same
// transaction, each split across bucket rows summed on read (no hot row). Debits are positive, credits negative.
import type { Queryable, Tx } from '../../db/pool.js';
import { uuidv7 } from '../../platform/ids.js';
import { parameters, unnestOf, type Param } from '../../db/parameters.js';

/** What the rail providers hold for us (debit-normal); payouts are paid out of it. */
export const PROVIDER_RECEIVABLE = 'provider_receivable';
/** What we owe the workspace: its available balance (credit-normal, so the balance is negative). */
export const WORKSPACE_AVAILABLE = 'workspace_available';
/** Crypto assets received on deposit addresses and held for the workspace (debit-normal). */
export const CUSTODY_ASSETS = 'custody_assets';
/** Payouts committed and not yet settled or released: the workspace's reserved money (credit-normal). */
export const PAYOUTS_IN_FLIGHT = 'payouts_in_flight';
/** Refunds requested and not yet settled with the provider or released: reserved for the payer (credit-normal). */
export const REFUNDS_IN_FLIGHT = 'refunds_in_flight';
/** Fees we earned (credit-normal). */
export const FEE_INCOME = 'fee_income';
/** The two sides of every conversion: the source amount comes in, the converted amount goes out (per currency). */
export const FX_CONVERSION = 'fx_conversion';

export type PostingKind =
  | 'collection_successful'
  | 'collection_reversed'
  | 'refund_reserved'
  | 'refund_released'
  | 'refund_settled'
  /** Refunds that succeeded before refunds reserved (migration 015): one posting, straight from the available balance. */
  | 'refund_successful'
  | 'deposit_credited'
  | 'autoconvert_source'
  | 'autoconvert_target'
  | 'payout_reserved'
  | 'payout_released'
  | 'payout_settled'
  | 'payout_converted';

export interface Line {
  account: string;
  amount: number;
}

/** A collection or refund movement: one posting of two lines, in the object's currency. */
export type MovementKind =
  'collection_successful' | 'collection_reversed' | 'refund_reserved' | 'refund_released' | 'refund_settled';

/**
 * The lines of the collection and refund movements: money in from the provider; a refund reserved out of the
 * available balance when requested, given back if it fails, paid out of the provider's hold when it succeeds; a
 * reversal taken back by the provider.
 */
export function linesFor(kind: MovementKind, amount: number): Line[] {
  const move = (debit: string, credit: string): Line[] => [
    { account: debit, amount },
    { account: credit, amount: -amount },
  ];
  switch (kind) {
    case 'collection_successful':
      return move(PROVIDER_RECEIVABLE, WORKSPACE_AVAILABLE);
    case 'collection_reversed':
      return move(WORKSPACE_AVAILABLE, PROVIDER_RECEIVABLE);
    case 'refund_reserved':
      return move(WORKSPACE_AVAILABLE, REFUNDS_IN_FLIGHT);
    case 'refund_released':
      return move(REFUNDS_IN_FLIGHT, WORKSPACE_AVAILABLE);
    case 'refund_settled':
      return move(REFUNDS_IN_FLIGHT, PROVIDER_RECEIVABLE);
  }
}

export interface Posting {
  kind: PostingKind;
  objectType: string;
  objectId: string;
  /** Every line of a posting is in this currency; a conversion is two postings, one per currency. */
  currency: string;
  /** Lines of amount 0 (a zero fee) are left out. */
  lines: Line[];
}

/** Bucket rows per (workspace, account, currency) at most; bucket 0 is the account's check row (lockAvailable). */
const BUCKETS = 16;

/**
 * The accounts split over buckets: the two every success writes (and most other postings too). The others (money
 * in flight, fees, conversions, custody) are written by refunds, payouts and deposits, one object at a time, and
 * keep one row, bucket 0: a posting waits for another on them, as before.
 */
const SPREAD_ACCOUNTS: ReadonlySet<string> = new Set([WORKSPACE_AVAILABLE, PROVIDER_RECEIVABLE]);

/**
 * The order accounts are first written in, everywhere: the workspace's available balance first (a payout commit or
 * refund request locks its check row before anything else), then by account and currency. A posting waits only for
 * an account it holds no bucket of yet, so two transactions never wait on each other in a cycle.
 */
function lockOrder(a: { account: string; currency: string }, b: { account: string; currency: string }): number {
  const rank = (x: string) => (x === WORKSPACE_AVAILABLE ? 0 : 1);
  // Code-point comparison: the same order in every process, whatever its locale or ICU version.
  const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return rank(a.account) - rank(b.account) || cmp(a.account, b.account) || cmp(a.currency, b.currency);
}

/** Postings made ready to write: checked to balance, with their ids, their lines, and the balance changes they make. */
export interface PreparedPostings {
  workspaceId: string;
  at: Date;
  postings: Posting[];
  ids: string[];
  lines: { posting: string; account: string; currency: string; amount: number }[];
  /** The balance changes, summed per account and currency, in lock order. */
  deltas: { account: string; currency: string; amount: number }[];
}

/** Checks that each posting sums to zero in its currency, and gives each its id; nothing is written. */
export function preparePostings(workspaceId: string, postings: Posting[], at: Date): PreparedPostings {
  const ids: string[] = [];
  const lines: PreparedPostings['lines'] = [];
  for (const p of postings) {
    const kept = p.lines.filter((l) => l.amount !== 0);
    if (
      kept.length < 2 ||
      kept.reduce((sum, l) => sum + l.amount, 0) !== 0 ||
      kept.some((l) => !Number.isSafeInteger(l.amount))
    ) {
      throw new Error(`posting ${p.kind} of ${p.objectId} does not balance`);
    }
    const id = uuidv7(at.getTime());
    ids.push(id);
    for (const l of kept) lines.push({ posting: id, account: l.account, currency: p.currency, amount: l.amount });
  }
  const deltas = new Map<string, { account: string; currency: string; amount: number }>();
  for (const l of lines) {
    const key = `${l.account}\u0000${l.currency}`;
    const d = deltas.get(key) ?? { account: l.account, currency: l.currency, amount: 0 };
    d.amount += l.amount;
    deltas.set(key, d);
  }
  return { workspaceId, at, postings, ids, lines, deltas: [...deltas.values()].sort(lockOrder) };
}

/** Prepared postings of the moves one statement saves, each under its move's number (`part`). */
export interface PartPostings {
  part: number;
  prepared: PreparedPostings;
}

/**
 * The writes (`name AS (…)`, for a data-modifying WITH) of prepared postings: the postings, their lines and the
 * balances, made only for the parts that `written` (an SQL query of part numbers) names. In one statement with the
 * moves that cause them, `written` is the parts whose move was saved; for postings alone, every part.
 *
 * The balances are what the lines written add, summed per workspace, account and currency over all the statement's
 * parts, so several moves of one workspace add to a bucket row once (a statement may not change a row twice), and
 * only after the lines are written (the postings' unique key, which refuses a second posting of a kind for an object,
 * is checked before any bucket is touched). They go in lock order. An account spread over buckets (SPREAD_ACCOUNTS)
 * adds to the first of:
 * - its lowest bucket no other transaction holds (SKIP LOCKED never waits, and does not skip a bucket this
 *   transaction holds), so one writer at a time keeps to one row and overlapping writers spread;
 * - a bucket it has not got yet: bucket 0 when it has none, so bucket 0 exists whenever the account has a balance;
 *   else the first missing one from a random one on (`spare`), so writers that overlap while the account grows its
 *   buckets mostly create different ones;
 * - all 16 held: `spare`, waiting for its holder. `spare` is never 0, the check row, so a posting never waits for a
 *   payout commit or refund request (lockAvailable).
 *
 * Any other account adds to its bucket 0, waiting for a transaction that holds it.
 */
export function postingWrites(parts: readonly PartPostings[], written: string, param: Param): string[] {
  const postings = parts.flatMap(({ part, prepared }) =>
    prepared.postings.map((p, i) => ({
      part,
      id: prepared.ids[i],
      p,
      workspaceId: prepared.workspaceId,
      at: prepared.at,
    })),
  );
  const lines = parts.flatMap(({ part, prepared }) =>
    prepared.lines.map((l) => ({ part, l, workspaceId: prepared.workspaceId })),
  );
  const buckets = param(BUCKETS, 'int');
  return [
    `new_postings AS (
       INSERT INTO ledger_postings (id, workspace_id, kind, object_type, object_id, currency, created_at)
       SELECT p.id, p.workspace_id, p.kind, p.object_type, p.object_id, p.currency, p.created_at
       FROM ${unnestOf(param, postings, 'p', {
         part: [(x) => x.part, 'int'],
         id: [(x) => x.id, 'uuid'],
         workspace_id: [(x) => x.workspaceId, 'uuid'],
         kind: [(x) => x.p.kind, 'text'],
         object_type: [(x) => x.p.objectType, 'text'],
         object_id: [(x) => x.p.objectId, 'uuid'],
         currency: [(x) => x.p.currency, 'text'],
         created_at: [(x) => x.at, 'timestamptz'],
       })}
       WHERE p.part IN (${written}) RETURNING id, created_at)`,
    `new_lines AS (
       INSERT INTO ledger_lines (posting_id, workspace_id, account, currency, amount)
       SELECT l.posting_id, l.workspace_id, l.account, l.currency, l.amount
       FROM ${unnestOf(param, lines, 'l', {
         part: [(x) => x.part, 'int'],
         posting_id: [(x) => x.l.posting, 'uuid'],
         workspace_id: [(x) => x.workspaceId, 'uuid'],
         account: [(x) => x.l.account, 'text'],
         currency: [(x) => x.l.currency, 'text'],
         amount: [(x) => x.l.amount, 'bigint'],
       })}
       WHERE l.part IN (${written}) RETURNING posting_id, workspace_id, account, currency, amount)`,
    `new_balances AS (
       INSERT INTO ledger_balances AS b (workspace_id, account, currency, bucket, balance, updated_at)
       SELECT d.workspace_id, d.account, d.currency,
              CASE WHEN d.spread THEN coalesce(free.bucket, missing.k, d.spare) ELSE 0 END, d.amount, d.at
       FROM (
         SELECT l.workspace_id, l.account, l.currency, sum(l.amount)::bigint AS amount, max(p.created_at) AS at,
                l.account = ANY(${param([...SPREAD_ACCOUNTS], 'text[]')}) AS spread,
                1 + floor(random() * (${buckets} - 1))::int AS spare
         FROM new_lines AS l JOIN new_postings AS p ON p.id = l.posting_id
         GROUP BY l.workspace_id, l.account, l.currency
         -- Lock order (lockOrder): by workspace, its available balance first, then by account and currency in code points.
         ORDER BY l.workspace_id, l.account <> ${param(WORKSPACE_AVAILABLE, 'text')}, l.account COLLATE "C",
                  l.currency COLLATE "C") AS d
       LEFT JOIN LATERAL (
         SELECT bucket FROM ledger_balances
         WHERE d.spread AND workspace_id = d.workspace_id AND account = d.account AND currency = d.currency
         ORDER BY bucket LIMIT 1 FOR UPDATE SKIP LOCKED) AS free ON true
       LEFT JOIN LATERAL (
         SELECT k FROM generate_series(0, ${buckets} - 1) AS k
         WHERE d.spread AND NOT EXISTS (
           SELECT 1 FROM ledger_balances
           WHERE workspace_id = d.workspace_id AND account = d.account AND currency = d.currency AND bucket = k)
         ORDER BY k > 0, (k + ${buckets} - d.spare) % ${buckets} LIMIT 1) AS missing ON true
       ON CONFLICT (workspace_id, account, currency, bucket)
       DO UPDATE SET balance = b.balance + excluded.balance, updated_at = excluded.updated_at)`,
  ];
}

/**
 * Posts movements inside the caller's transaction: the postings, their lines and the balances in one statement.
 * Each posting must sum to zero in its currency. The unique (workspace, kind, object) key
 * makes a second posting of a kind for the same object fail the whole transaction rather than move money twice.
 */
export async function postMany(tx: Tx, workspaceId: string, postings: Posting[], at: Date): Promise<void> {
  const prepared = preparePostings(workspaceId, postings, at);
  const { values, param } = parameters();
  const writes = postingWrites([{ part: 0, prepared }], 'SELECT 0', param);
  await tx.query(`WITH ${writes.join(', ')} SELECT 1`, values);
}

/** Posts one collection or refund movement (see linesFor) inside the caller's transaction. */
export async function post(
  tx: Tx,
  workspaceId: string,
  p: {
    kind: MovementKind;
    objectType: string;
    objectId: string;
    currency: string;
    amount: number;
    at: Date;
  },
): Promise<void> {
  await postMany(
    tx,
    workspaceId,
    [
      {
        kind: p.kind,
        objectType: p.objectType,
        objectId: p.objectId,
        currency: p.currency,
        lines: linesFor(p.kind, p.amount),
      },
    ],
    p.at,
  );
}

/**
 * Locks the check row (bucket 0) of the workspace's available balance in `currency`, the first lock of the order,
 * and returns what is available: every bucket summed, read after the lock so that it sees the debit of the checked
 * debit before it. The balance is credit-normal, so it is the negated sum, 0 when there is none yet. Every debit
 * that needs a check takes this lock, so they pass one at a time; a credit committed meanwhile lands in another
 * bucket and can only raise the balance.
 */
export async function lockAvailable(tx: Tx, workspaceId: string, currency: string): Promise<number> {
  await tx.query(
    'SELECT 1 FROM ledger_balances WHERE workspace_id = $1 AND account = $2 AND currency = $3 AND bucket = 0 FOR UPDATE',
    [workspaceId, WORKSPACE_AVAILABLE, currency],
  );
  const { rows } = await tx.query<{ balance: number }>(
    `SELECT coalesce(sum(balance), 0)::bigint AS balance FROM ledger_balances
     WHERE workspace_id = $1 AND account = $2 AND currency = $3`,
    [workspaceId, WORKSPACE_AVAILABLE, currency],
  );
  return -(rows[0]?.balance ?? 0);
}

export interface BalanceRow {
  currency: string;
  balance: number;
  updated_at: Date;
}

/** An account's balance per currency: its buckets summed, in one statement (one snapshot), so exact. */
export async function accountBalances(db: Queryable, workspaceId: string, account: string): Promise<BalanceRow[]> {
  const { rows } = await db.query<BalanceRow>(
    `SELECT currency, sum(balance)::bigint AS balance, max(updated_at) AS updated_at FROM ledger_balances
     WHERE workspace_id = $1 AND account = $2 GROUP BY currency ORDER BY currency`,
    [workspaceId, account],
  );
  return rows;
}

/**
 * The ledger's invariants, each a query returning the rows that break it (none when the books are sound).
 * Maintenance: they span workspaces.
 */
export interface Invariant {
  name: string;
  sql: string;
}

export const INVARIANTS: readonly Invariant[] = [
  {
    name: 'every posting has at least two lines and sums to zero',
    sql: `SELECT p.id AS posting_id, count(l.id) AS lines, coalesce(sum(l.amount), 0) AS total
          FROM ledger_postings p LEFT JOIN ledger_lines l ON l.posting_id = p.id
          GROUP BY p.id HAVING count(l.id) < 2 OR coalesce(sum(l.amount), 0) <> 0`,
  },
  {
    name: "every line is in its posting's workspace and currency",
    sql: `SELECT l.id AS line_id, l.posting_id FROM ledger_lines l JOIN ledger_postings p ON p.id = l.posting_id
          WHERE l.currency <> p.currency OR l.workspace_id <> p.workspace_id`,
  },
  {
    name: 'every balance equals the sum of its lines',
    // A balance is the sum of its buckets.
    sql: `SELECT coalesce(b.workspace_id, s.workspace_id) AS workspace_id, coalesce(b.account, s.account) AS account,
                 coalesce(b.currency, s.currency) AS currency, b.balance, s.total
          FROM (SELECT workspace_id, account, currency, sum(balance) AS balance FROM ledger_balances
                GROUP BY workspace_id, account, currency) b
          FULL OUTER JOIN (SELECT workspace_id, account, currency, sum(amount) AS total FROM ledger_lines
                           GROUP BY workspace_id, account, currency) s
            ON s.workspace_id = b.workspace_id AND s.account = b.account AND s.currency = b.currency
          WHERE b.balance IS DISTINCT FROM s.total`,
  },
  {
    name: 'no collection is credited twice',
    sql: `SELECT object_id, count(*) AS credits FROM ledger_postings WHERE kind = 'collection_successful'
          GROUP BY object_id HAVING count(*) > 1`,
  },
  {
    name: 'a collection is credited exactly when it reached successful, for its own amount',
    sql: `SELECT c.id AS collection_id, c.status, p.id AS posting_id
          FROM collections c
          LEFT JOIN ledger_postings p ON p.object_id = c.id AND p.kind = 'collection_successful'
          LEFT JOIN ledger_lines l ON l.posting_id = p.id AND l.account = 'provider_receivable'
          WHERE (c.status IN ('successful', 'refunded', 'reversed')) <> (p.id IS NOT NULL)
             OR (p.id IS NOT NULL AND (l.amount IS DISTINCT FROM c.amount OR p.currency <> c.currency OR p.workspace_id <> c.workspace_id))`,
  },
  {
    name: 'a collection is debited for a reversal exactly when it is reversed',
    sql: `SELECT c.id AS collection_id, c.status, p.id AS posting_id
          FROM collections c
          LEFT JOIN ledger_postings p ON p.object_id = c.id AND p.kind = 'collection_reversed'
          LEFT JOIN ledger_lines l ON l.posting_id = p.id AND l.account = 'workspace_available'
          WHERE (c.status = 'reversed') <> (p.id IS NOT NULL) OR (p.id IS NOT NULL AND l.amount IS DISTINCT FROM c.amount)`,
  },
  {
    // Refunds resolved before refunds reserved (migration 015) have the postings of then: one refund_successful when
    // successful, none when failed.
    name: 'a refund is reserved once, for its own amount; released exactly when failed; settled exactly when successful',
    sql: `WITH counted AS (
            SELECT r.id AS refund_id, r.status, r.amount,
                   count(*) FILTER (WHERE p.kind = 'refund_reserved') AS reserved,
                   count(*) FILTER (WHERE p.kind = 'refund_released') AS released,
                   count(*) FILTER (WHERE p.kind = 'refund_settled') AS settled,
                   count(*) FILTER (WHERE p.kind = 'refund_successful') AS before_reserving,
                   sum(l.amount) FILTER (WHERE p.kind IN ('refund_reserved', 'refund_successful')) AS taken
            FROM refunds r
            LEFT JOIN ledger_postings p ON p.object_id = r.id AND p.workspace_id = r.workspace_id
            LEFT JOIN ledger_lines l ON l.posting_id = p.id AND l.account = 'workspace_available'
            GROUP BY r.id, r.status, r.amount)
          SELECT refund_id, status, reserved, released, settled, before_reserving, taken FROM counted
          WHERE NOT (
            (reserved, released, settled, before_reserving) = (1, 0, 0, 0) AND status IN ('requested', 'pending') AND taken = amount
            OR (reserved, released, settled, before_reserving) = (1, 1, 0, 0) AND status = 'failed' AND taken = amount
            OR (reserved, released, settled, before_reserving) = (1, 0, 1, 0) AND status = 'successful' AND taken = amount
            OR (reserved, released, settled, before_reserving) = (0, 0, 0, 1) AND status = 'successful' AND taken = amount
            OR (reserved, released, settled, before_reserving) = (0, 0, 0, 0) AND status = 'failed')`,
  },
  {
    name: 'a collection is refunded exactly when one of its refunds succeeded',
    sql: `SELECT c.id AS collection_id, c.status
          FROM collections c
          WHERE (c.status = 'refunded') <> EXISTS (SELECT 1 FROM refunds r WHERE r.collection_id = c.id AND r.status = 'successful')
            AND c.status <> 'reversed'`,
  },
  {
    name: 'a deposit is credited exactly when it is credited, once, for its own amount',
    sql: `SELECT d.id AS deposit_id, d.status, count(p.id) AS postings
          FROM deposits d
          LEFT JOIN autoconvert_credits c ON c.deposit_id = d.id
          LEFT JOIN ledger_postings p ON (p.object_id = d.id AND p.kind = 'deposit_credited') OR (p.object_id = c.id AND p.kind = 'autoconvert_source')
          LEFT JOIN ledger_lines l ON l.posting_id = p.id AND l.account = 'custody_assets'
          GROUP BY d.id, d.status, d.amount
          HAVING (d.status = 'credited') <> (count(p.id) = 1) OR coalesce(sum(l.amount), d.amount) <> d.amount`,
  },
  {
    name: 'a payout is reserved once, for its source amount; released exactly when failed; settled exactly when successful',
    sql: `SELECT po.id AS payout_id, po.status,
                 count(*) FILTER (WHERE p.kind = 'payout_reserved') AS reserved,
                 count(*) FILTER (WHERE p.kind = 'payout_released') AS released,
                 count(*) FILTER (WHERE p.kind = 'payout_settled') AS settled
          FROM payouts po
          LEFT JOIN ledger_postings p ON p.object_id = po.id AND p.workspace_id = po.workspace_id
          GROUP BY po.id, po.status
          HAVING count(*) FILTER (WHERE p.kind = 'payout_reserved') <> 1
              OR (count(*) FILTER (WHERE p.kind = 'payout_released') = 1) <> (po.status = 'failed')
              OR (count(*) FILTER (WHERE p.kind = 'payout_settled') = 1) <> (po.status = 'successful')`,
  },
];

/** Up to 20 of the rows that break an invariant. */
export async function brokenRows(db: Queryable, invariant: Invariant): Promise<Record<string, unknown>[]> {
  const { rows } = await db.query<Record<string, unknown>>(`${invariant.sql} LIMIT 20`);
  return rows;
}
