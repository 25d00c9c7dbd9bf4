// Provider notices (callbacks, and answers to status queries) applied to our objects: each notice once,
// by the provider's notice id, in one transaction with the transition it causes.
import type { FastifyBaseLogger } from 'fastify';
import { withTransaction, type Db, type Tx } from '../../db/pool.js';
import { ApiError } from '../../platform/errors.js';
import { isUuid } from '../../platform/ids.js';
import * as collections from '../collections/collections.repository.js';
import type { CollectionStatus } from '../collections/collections.schemas.js';
import type { Lifecycle, MoveOutcome } from '../lifecycle/lifecycle.service.js';
import type { RefundStatus } from '../lifecycle/transitions.js';
import * as payouts from '../payouts/payouts.repository.js';
import type { PayoutStatus } from '../payouts/payouts.schemas.js';
import * as refunds from '../refunds/refunds.repository.js';
import type { CallbackHeaders, ProviderNotice } from './provider.js';
import type { ProviderRegistry } from './providers.registry.js';

const COLLECTION_NOTICE_STATUSES: readonly string[] = ['pending', 'processing', 'successful', 'failed', 'reversed'];
const REFUND_NOTICE_STATUSES: readonly string[] = ['pending', 'successful', 'failed'];
const PAYOUT_NOTICE_STATUSES: readonly string[] = ['pending', 'successful', 'failed'];

export type NoticeOutcome = MoveOutcome;

/** Thrown inside the transaction to roll it back when the notice turns out to be one already applied. */
const DUPLICATE = Symbol('duplicate notice');

export class ProviderNotices {
  constructor(
    private readonly db: Db,
    private readonly providers: ProviderRegistry,
    private readonly lifecycle: Lifecycle,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** An inbound callback: the provider's signature is checked before anything is read. */
  async receive(providerName: string, rawBody: string, headers: CallbackHeaders): Promise<NoticeOutcome> {
    const provider = this.providers.get(providerName);
    if (!provider) throw new ApiError('not_found', `No provider '${providerName}' is configured here.`);
    return this.apply(provider.name, provider.parseCallback(rawBody, headers));
  }

  async apply(providerName: string, notice: ProviderNotice): Promise<NoticeOutcome> {
    const unknown = new ApiError('not_found', `No ${notice.objectType} ${notice.objectId} is run by provider '${providerName}'.`);
    if (!isUuid(notice.objectId)) throw unknown;
    const owner =
      notice.objectType === 'collection'
        ? await collections.collectionOwner(this.db, notice.objectId)
        : notice.objectType === 'refund'
          ? await refunds.refundOwner(this.db, notice.objectId)
          : await payouts.payoutOwner(this.db, notice.objectId);
    if (!owner || owner.provider !== providerName) throw unknown;
    const workspaceId = owner.workspace_id;
    try {
      return await withTransaction(this.db, async (tx) => {
        const outcome = await this.move(tx, workspaceId, notice);
        // Recorded after the move, in the same transaction. The same notice arriving twice at once waits on the
        // object's row lock, then finds the first one's change already made and its id taken here: it rolls back.
        const recorded = await tx.query(
          `INSERT INTO provider_notices (provider, notice_id, workspace_id, object_type, object_id, status, outcome, received_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, now()) ON CONFLICT (provider, notice_id) DO NOTHING`,
          [providerName, notice.noticeId, workspaceId, notice.objectType, notice.objectId, notice.status, outcome],
        );
        if (recorded.rowCount === 0) throw DUPLICATE;
        return outcome;
      });
    } catch (err) {
      if (err === DUPLICATE) return 'duplicate';
      throw err;
    }
  }

  private async move(tx: Tx, workspaceId: string, notice: ProviderNotice): Promise<NoticeOutcome> {
    const options = { cause: `provider notice ${notice.noticeId}`, reason: notice.reason, providerReference: notice.reference };
    if (notice.objectType === 'collection') {
      if (!COLLECTION_NOTICE_STATUSES.includes(notice.status)) return this.refuse(notice, 'not a collection status a provider reports');
      const moved = await this.lifecycle.moveCollection(tx, workspaceId, notice.objectId, notice.status as CollectionStatus, options);
      return moved?.outcome ?? 'refused';
    }
    if (notice.objectType === 'payout') {
      if (!PAYOUT_NOTICE_STATUSES.includes(notice.status)) return this.refuse(notice, 'not a payout status a provider reports');
      const moved = await this.lifecycle.movePayout(tx, workspaceId, notice.objectId, notice.status as PayoutStatus, options);
      return moved?.outcome ?? 'refused';
    }
    if (!REFUND_NOTICE_STATUSES.includes(notice.status)) return this.refuse(notice, 'not a refund status a provider reports');
    const moved = await this.lifecycle.moveRefund(tx, workspaceId, notice.objectId, notice.status as RefundStatus, options);
    return moved?.outcome ?? 'refused';
  }

  private refuse(notice: ProviderNotice, why: string): NoticeOutcome {
    this.log.warn({ notice_id: notice.noticeId, object_type: notice.objectType, object_id: notice.objectId, status: notice.status }, `provider notice refused: ${why}`);
    return 'refused';
  }
}
