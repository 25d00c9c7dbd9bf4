// The sandbox test clock (docs/guides/sandbox-clock.md): a sandbox workspace moves its own clock forward, and its
// expiries, webhook retries, simulator steps and idempotency retention fall due as if that time had passed. A move
// pulls the workspace's pending deadlines earlier in the transaction that records it; the sweeps, the relay and the
// purge then find them due with their own queries, unchanged, so no other workspace (and no create) pays for the clock.
import type { Db } from '../../db/pool.js';
import { emitOnCommit } from '../../platform/after-commit.js';
import { notFound } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import * as repo from './clock.repository.js';
import { toClockAdvanceApi, toClockApi, type AdvanceClockBody, type SandboxClock } from './clock.schemas.js';

export class SandboxClockService {
  constructor(
    private readonly db: Db,
    private readonly idempotency: IdempotencyEngine,
  ) {}

  async read(workspaceId: string): Promise<SandboxClock> {
    const row = await repo.readClock(this.db, workspaceId);
    if (!row) throw notFound('sandbox workspace');
    return toClockApi(workspaceId, row);
  }

  advance(
    workspaceId: string,
    { seconds }: AdvanceClockBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const row = await repo.moveClock(tx, workspaceId, seconds);
      if (!row) throw notFound('sandbox workspace');
      const moved = await repo.pullDeadlines(tx, workspaceId, seconds);
      // Deliveries now due are sent once this commits, not at the relay's next poll. Expiries and simulator steps are
      // found by their sweeps (every WORKER_INTERVAL_MS), and outcomes past retention were deleted above.
      if (moved.webhook_deliveries > 0) emitOnCommit(tx, { kind: 'events' });
      return { status: 200, headers: {}, body: JSON.stringify(toClockAdvanceApi(workspaceId, row, moved)) };
    });
  }
}
