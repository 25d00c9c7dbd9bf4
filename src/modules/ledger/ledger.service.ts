// Reads of the ledger for the API: a workspace's available balances.
import type { Queryable } from '../../db/pool.js';
import { accountBalances, WORKSPACE_AVAILABLE, type BalanceRow } from './ledger.repository.js';

/** The workspace's available balance in each currency it has ever been credited in, by currency. */
export async function availableBalances(db: Queryable, workspaceId: string): Promise<BalanceRow[]> {
  return accountBalances(db, workspaceId, WORKSPACE_AVAILABLE);
}
