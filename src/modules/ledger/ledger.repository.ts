// The double-entry ledger: postings whose lines sum to zero, and running balances updated in the same
// transaction. Debits are positive, credits negative.
import type { Queryable, Tx } from '../../db/pool.js';
import { uuidv7 } from '../../platform/ids.js';

/** What the rail providers hold for us (debit-normal). */
export const PROVIDER_RECEIVABLE = 'provider_receivable';
/** What we owe the workspace: its available balance (credit-normal, so the balance is negative). */
export const WORKSPACE_AVAILABLE = 'workspace_available';

export type PostingKind = 'collection_successful' | 'refund_successful' | 'collection_reversed';

export interface Line {
  account: string;
  amount: number;
}

/** The lines of each movement: money in from the provider, money back out to the payer. */
export function linesFor(kind: PostingKind, amount: number): Line[] {
  switch (kind) {
    case 'collection_successful':
      return [
        { account: PROVIDER_RECEIVABLE, amount },
        { account: WORKSPACE_AVAILABLE, amount: -amount },
      ];
    case 'refund_successful':
    case 'collection_reversed':
      return [
        { account: WORKSPACE_AVAILABLE, amount },
        { account: PROVIDER_RECEIVABLE, amount: -amount },
      ];
  }
}

/**
 * Posts one movement inside the caller's transaction. The unique (workspace, kind, object) key makes a
 * second posting for the same object fail the whole transaction rather than credit twice.
 */
export async function post(
  tx: Tx,
  workspaceId: string,
  p: { kind: PostingKind; objectType: string; objectId: string; currency: string; amount: number; at: Date },
): Promise<void> {
  const lines = linesFor(p.kind, p.amount).sort((a, b) => a.account.localeCompare(b.account));
  if (lines.reduce((sum, l) => sum + l.amount, 0) !== 0) throw new Error(`posting ${p.kind} does not balance`);
  const id = uuidv7(p.at.getTime());
  // One statement: the posting, its lines, and the balances (accounts in a fixed order, so two postings never deadlock).
  await tx.query(
    `WITH posting AS (
       INSERT INTO ledger_postings (id, workspace_id, kind, object_type, object_id, currency, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id),
     lines AS (
       INSERT INTO ledger_lines (posting_id, workspace_id, account, currency, amount)
       SELECT posting.id, $2, l.account, $6, l.amount
       FROM posting, unnest($8::text[], $9::bigint[]) AS l(account, amount))
     INSERT INTO ledger_balances AS b (workspace_id, account, currency, balance, updated_at)
     SELECT $2, l.account, $6, l.amount, $7 FROM unnest($8::text[], $9::bigint[]) AS l(account, amount)
     ORDER BY l.account
     ON CONFLICT (workspace_id, account, currency)
     DO UPDATE SET balance = b.balance + excluded.balance, updated_at = excluded.updated_at`,
    [id, workspaceId, p.kind, p.objectType, p.objectId, p.currency, p.at, lines.map((l) => l.account), lines.map((l) => l.amount)],
  );
}

export interface BalanceRow {
  currency: string;
  balance: number;
  updated_at: Date;
}

export async function accountBalances(db: Queryable, workspaceId: string, account: string): Promise<BalanceRow[]> {
  const { rows } = await db.query<BalanceRow>(
    'SELECT currency, balance, updated_at FROM ledger_balances WHERE workspace_id = $1 AND account = $2 ORDER BY currency',
    [workspaceId, account],
  );
  return rows;
}
