// Refund rules (POST /v1/collections/{id}/refund): full refunds of successful collections, one in progress at a time,
// created through the idempotency engine with their event and outbox row in one transaction.
import type { Db, Tx } from '../../db/pool.js';
import { ApiError, notFound } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import { isUuid } from '../../platform/ids.js';
import { type CursorCodec, type Page } from '../../platform/pagination.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import * as collections from '../collections/collections.repository.js';
import { lockAvailable } from '../ledger/ledger.repository.js';
import type { AfterCommit } from '../../platform/after-commit.js';
import * as repo from './refunds.repository.js';
import { requestRefund } from './refunds.movement.js';
import { toRefundApi, type CreateRefundBody, type ListRefundsQuery, type Refund } from './refunds.schemas.js';

export class RefundsService {
  constructor(
    private readonly db: Db,
    /** The rails, and whether each offers refunds. */
    private readonly catalogue: MarketCatalogue,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
    /** Runs in the request's transaction once the refund is written (the risk rules look at the pace of refunds). */
    private readonly afterRequested: (tx: Tx, workspaceId: string, refundId: string) => Promise<void>,
    /** Told of each new refund once it is committed (the submitter hands it to the provider). */
    private readonly afterCommit: AfterCommit,
  ) {}

  async create(
    workspaceId: string,
    collectionId: string,
    body: CreateRefundBody,
    key: string,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    let created: string | undefined;
    const result = await this.idempotency.run(workspaceId, key, requestFingerprint, async (tx) => {
      // The collection row lock serialises refund requests for one collection: of two at once, one is in progress
      // when the other looks.
      const collection = isUuid(collectionId)
        ? await collections.lockCollection(tx, workspaceId, collectionId)
        : undefined;
      if (!collection) throw notFound('collection');
      this.catalogue.requireCapability(collection.market, collection.rail, 'refunds');
      if (collection.status !== 'successful') {
        throw new ApiError(
          'collection_not_refundable',
          `Only a successful collection can be refunded; this one is ${collection.status}.`,
        );
      }
      const inProgress = await repo.refundInProgress(tx, workspaceId, collectionId);
      if (inProgress) {
        throw new ApiError(
          'refund_in_progress',
          `Refund ${inProgress.id} of this collection is still ${inProgress.status}; wait for it to resolve.`,
        );
      }
      if (body.amount !== collection.amount) {
        throw new ApiError(
          'refund_amount_mismatch',
          `Only full refunds are supported: the amount must be ${collection.amount}, the collection's amount.`,
          {
            errors: [{ field: 'amount', message: `must equal the collection's amount, ${collection.amount}` }],
          },
        );
      }
      // The lock every refund and payout of this workspace and currency takes: reservations are checked one at a time.
      const available = await lockAvailable(tx, workspaceId, collection.currency);
      if (available < collection.amount) {
        throw new ApiError(
          'insufficient_balance',
          `The available ${collection.currency} balance is ${available} minor units; this refund needs ${collection.amount}.`,
          { errors: [{ field: 'amount', message: `exceeds the available balance of ${available}` }] },
        );
      }
      const row = await requestRefund(tx, collection, 'merchant_request');
      const id = row.id;
      const refund = toRefundApi(row, collection.metadata);
      await this.afterRequested(tx, workspaceId, id);
      created = id;
      return { status: 201, headers: { location: `/v1/refunds/${id}` }, body: JSON.stringify(refund) };
    });
    if (created !== undefined) this.afterCommit.emit({ kind: 'refund', workspaceId, id: created });
    return result;
  }

  async get(workspaceId: string, id: string): Promise<Refund> {
    const row = isUuid(id) ? await repo.findRefund(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('refund');
    return toRefundApi(row, await this.metadataOf(workspaceId, row.collection_id));
  }

  async listForCollection(workspaceId: string, collectionId: string, query: ListRefundsQuery): Promise<Page<Refund>> {
    const collection = isUuid(collectionId)
      ? await collections.findCollection(this.db, workspaceId, collectionId)
      : undefined;
    if (!collection) throw notFound('collection');
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listRefunds(this.db, workspaceId, collectionId, filter);
    return this.cursors.page(rows, limit, (row) => toRefundApi(row, collection.metadata));
  }

  /** The workspace's refunds, newest first, each with its collection's metadata. */
  async list(workspaceId: string, query: ListRefundsQuery): Promise<Page<Refund>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listRefunds(this.db, workspaceId, undefined, filter);
    const metadata = await collections.collectionMetadata(this.db, workspaceId, [
      ...new Set(rows.map((r) => r.collection_id)),
    ]);
    return this.cursors.page(rows, limit, (row) => toRefundApi(row, metadata.get(row.collection_id) ?? {}));
  }

  private async metadataOf(workspaceId: string, collectionId: string): Promise<Record<string, unknown>> {
    return (await collections.findCollection(this.db, workspaceId, collectionId))?.metadata ?? {};
  }
}
