// The simulate endpoints (POST /v1/sandbox/collections/{id}/simulate, and refunds and payouts likewise): drive a
// sandbox collection, refund or payout to an outcome by hand. The simulator's own script stops there, and the change
// goes through the lifecycle like any other.
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { isUuid } from '../../platform/ids.js';
import type { Plan } from '../../platform/state-machine.js';
import * as collections from '../collections/collections.repository.js';
import type { CollectionStatus } from '../collections/collections.schemas.js';
import { toCollectionApi } from '../collections/collections.schemas.js';
import type { Lifecycle } from '../lifecycle/lifecycle.service.js';
import { planCollection } from '../collections/collections.states.js';
import { planPayout } from '../payouts/payouts.states.js';
import { planRefund, type RefundStatus } from '../refunds/refunds.states.js';
import * as payouts from '../payouts/payouts.repository.js';
import { toPayoutApi } from '../payouts/payouts.schemas.js';
import { SANDBOX_PROVIDER, type SandboxProvider } from '../providers/sandbox.provider.js';
import * as refunds from '../refunds/refunds.repository.js';
import { toRefundApi } from '../refunds/refunds.schemas.js';

/** 409 unless the simulator runs this object and its lifecycle can take it to `outcome` (`route`: how, from its status). */
function checkSimulatable(
  kind: 'collection' | 'refund' | 'payout',
  row: { provider: string; status: string },
  outcome: string,
  route: Plan<string>,
): void {
  if (row.provider !== SANDBOX_PROVIDER) {
    throw new ApiError('transition_not_allowed', `This ${kind} runs on provider '${row.provider}', not the simulator.`);
  }
  if (route.kind === 'refused')
    throw new ApiError('transition_not_allowed', `A ${row.status} ${kind} cannot become ${outcome}.`);
}

export class SandboxService {
  constructor(
    private readonly idempotency: IdempotencyEngine,
    private readonly lifecycle: Lifecycle,
    private readonly simulator: SandboxProvider,
  ) {}

  simulateCollection(
    workspaceId: string,
    id: string,
    { outcome, reason }: { outcome: CollectionStatus; reason?: string | undefined },
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const row = isUuid(id) ? await collections.lockCollection(tx, workspaceId, id) : undefined;
      if (!row) throw notFound('collection');
      checkSimulatable('collection', row, outcome, planCollection(row.status, outcome));
      await this.simulator.driveByHand(tx, workspaceId, 'collection', id, outcome === 'expired' ? undefined : outcome);
      const moved = await this.lifecycle.move(tx, 'collection', workspaceId, id, outcome, {
        cause: 'sandbox simulation',
        reason,
      });
      return { status: 200, headers: {}, body: JSON.stringify(toCollectionApi(moved?.row ?? row)) };
    });
  }

  simulateRefund(
    workspaceId: string,
    id: string,
    { outcome, reason }: { outcome: RefundStatus; reason?: string | undefined },
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const row = isUuid(id) ? await refunds.findRefund(tx, workspaceId, id) : undefined;
      if (!row) throw notFound('refund');
      checkSimulatable('refund', row, outcome, planRefund(row.status, outcome));
      const moved = await this.lifecycle.move(tx, 'refund', workspaceId, id, outcome, {
        cause: 'sandbox simulation',
        reason,
      });
      // Checked again under the lock: the refund may have moved since it was read.
      if (moved?.outcome === 'refused')
        throw new ApiError('transition_not_allowed', `A ${moved.row.status} refund cannot become ${outcome}.`);
      await this.simulator.driveByHand(tx, workspaceId, 'refund', id, outcome);
      const after = moved?.row ?? row;
      const collection = await collections.findCollection(tx, workspaceId, after.collection_id);
      return { status: 200, headers: {}, body: JSON.stringify(toRefundApi(after, collection?.metadata ?? {})) };
    });
  }

  simulatePayout(
    workspaceId: string,
    id: string,
    { outcome, reason }: { outcome: 'successful' | 'failed'; reason?: string | undefined },
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const row = isUuid(id) ? await payouts.lockPayout(tx, workspaceId, id) : undefined;
      if (!row) throw notFound('payout transaction');
      checkSimulatable('payout', row, outcome, planPayout(row.status, outcome));
      await this.simulator.driveByHand(tx, workspaceId, 'payout', id, outcome);
      const moved = await this.lifecycle.move(tx, 'payout', workspaceId, id, outcome, {
        cause: 'sandbox simulation',
        reason,
      });
      return { status: 200, headers: {}, body: JSON.stringify(toPayoutApi(moved?.row ?? row)) };
    });
  }
}
