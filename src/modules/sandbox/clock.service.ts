// The sandbox test clock (docs/guides/sandbox-clock.md): a sandbox workspace moves its own clock forward, and its
// expiries, webhook retries, simulator steps, status queries and idempotency retention fall due as if that time had
// passed. A move pulls the workspace's pending deadlines earlier in the transaction that records it; the sweeps, the
// relay and the purge then find them due with their own queries, unchanged, so no other workspace (and no create) pays
// for the clock. Status queries, whose due time is counted from history (`updated_at`), are asked by the move itself.
import type { Db } from '../../db/pool.js';
import { emitOnCommit } from '../../platform/after-commit.js';
import { notFound } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import * as repo from './clock.repository.js';
import { toClockAdvanceApi, toClockApi, type AdvanceClockBody, type SandboxClock } from './clock.schemas.js';

/**
 * Asks the providers about the workspace's operations in flight with no news for `afterSeconds` (0: all of them), as
 * the reconciliation sweep does for every workspace once they have been quiet for RECONCILE_AFTER_SECONDS; resolves to
 * how many were asked, and never rejects (a failure is logged: the periodic sweep asks later). From composition.ts.
 */
export type AskQuiet = (workspaceId: string, afterSeconds: number) => Promise<number>;

export class SandboxClockService {
  constructor(
    private readonly db: Db,
    private readonly idempotency: IdempotencyEngine,
    /** How long an operation waits, with no news, for the sweep's status query (RECONCILE_AFTER_SECONDS). */
    private readonly reconcileAfterSeconds: number,
    private readonly askQuiet: AskQuiet,
  ) {}

  async read(workspaceId: string): Promise<SandboxClock> {
    const row = await repo.readClock(this.db, workspaceId);
    if (!row) throw notFound('sandbox workspace');
    return toClockApi(workspaceId, row);
  }

  async advance(
    workspaceId: string,
    { seconds }: AdvanceClockBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    const result = await this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const row = await repo.moveClock(tx, workspaceId, seconds);
      if (!row) throw notFound('sandbox workspace');
      const moved = await repo.pullDeadlines(tx, workspaceId, seconds);
      // Deliveries now due are sent once this commits, not at the relay's next poll. Expiries and simulator steps are
      // found by their sweeps (every WORKER_INTERVAL_MS), and outcomes past retention were deleted above.
      if (moved.webhook_deliveries > 0) emitOnCommit(tx, { kind: 'events' });
      return { status: 200, headers: {}, body: JSON.stringify(toClockAdvanceApi(workspaceId, row, moved)) };
    });
    // The status queries the move made due (an operation quiet for RECONCILE_AFTER_SECONDS by the workspace's clock):
    // their "last news" is `updated_at`, history that is not pulled, so they are asked here, once the move has
    // committed, rather than found by the sweep. A replay moved nothing and asks nothing.
    if (!result.replayed) await this.askQuiet(workspaceId, Math.max(0, this.reconcileAfterSeconds - seconds));
    return result;
  }
}
