// The ledger's invariants, checked by `npm run ledger:verify` and by the tests: an empty report means the books
// are sound. The invariants' SQL is in ledger.repository.ts. Maintenance: spans workspaces.
import type { Queryable } from '../../db/pool.js';
import { brokenRows, INVARIANTS } from './ledger.repository.js';

export { INVARIANTS };

export interface Violation {
  invariant: string;
  rows: Record<string, unknown>[];
}

/** Runs every invariant; returns those broken, each with (up to 20 of) the rows that break it. */
export async function verifyLedger(db: Queryable): Promise<Violation[]> {
  const violations: Violation[] = [];
  for (const invariant of INVARIANTS) {
    const rows = await brokenRows(db, invariant);
    if (rows.length > 0) violations.push({ invariant: invariant.name, rows });
  }
  return violations;
}
