// The ledger's invariants, checked by `npm run ledger:verify` and by the tests. Each query returns the
// rows that break an invariant; an empty report means the books are sound. Maintenance: spans workspaces.
import type { Queryable } from '../../db/pool.js';

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
    sql: `SELECT coalesce(b.workspace_id, s.workspace_id) AS workspace_id, coalesce(b.account, s.account) AS account,
                 coalesce(b.currency, s.currency) AS currency, b.balance, s.total
          FROM ledger_balances b
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
    name: 'a refund is debited exactly when it is successful, for its own amount',
    sql: `SELECT r.id AS refund_id, r.status, p.id AS posting_id
          FROM refunds r
          LEFT JOIN ledger_postings p ON p.object_id = r.id AND p.kind = 'refund_successful'
          LEFT JOIN ledger_lines l ON l.posting_id = p.id AND l.account = 'workspace_available'
          WHERE (r.status = 'successful') <> (p.id IS NOT NULL) OR (p.id IS NOT NULL AND l.amount IS DISTINCT FROM r.amount)`,
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

export interface Violation {
  invariant: string;
  rows: Record<string, unknown>[];
}

/** Runs every invariant; returns those broken, each with (up to 20 of) the rows that break it. */
export async function verifyLedger(db: Queryable): Promise<Violation[]> {
  const violations: Violation[] = [];
  for (const invariant of INVARIANTS) {
    const { rows } = await db.query<Record<string, unknown>>(`${invariant.sql} LIMIT 20`);
    if (rows.length > 0) violations.push({ invariant: invariant.name, rows });
  }
  return violations;
}
