// Collection rules: catalogue checks, creation with its event, outbox row and idempotent answer in one statement, reads.
import type { Db, Tx } from '../../db/pool.js';
import { ApiError, notFound, type FieldError } from '../../platform/errors.js';
import { canonicalJson, type IdempotencyEngine, type IdempotentResult } from '../../platform/idempotency.js';
import { uuidv7, uuidv7Time, isUuid } from '../../platform/ids.js';
import { type CursorCodec, type Page } from '../../platform/pagination.js';
import { phoneProblem, type MarketCatalogue } from '../catalogue/catalogue.js';
import type { Market, Rail } from '../catalogue/catalogue.schema.js';
import type { CurrencyRules } from '../catalogue/catalogue.js';
import { eventStatement, recordEvent, type EventInput, type Statement } from '../events/events.repository.js';
import * as repo from './collections.repository.js';
import {
  toCollectionApi,
  type Collection,
  type CreateCollectionBody,
  type ListCollectionsQuery,
} from './collections.schemas.js';
import { paymentInstruction } from './payment-instructions.js';
import type { ProviderLookup } from '../providers/provider.js';
import { emitOnCommit, type AfterCommit } from '../../platform/after-commit.js';
import { WorkspaceRails, type AmountLimits } from '../workspace-configuration/workspace-rails.js';

const METADATA_MAX_BYTES = 16 * 1024;

/**
 * The currency's amount limits (422 `amount_out_of_range`) and the metadata size limit, checked the same way by
 * every request that asks a payer for money (collections, checkout sessions). Returns the currency's rules.
 */
export function checkAmountAndMetadata(
  catalogue: MarketCatalogue,
  currencyCode: string,
  amount: number,
  metadata: unknown,
  /** The workspace's limits for the rail (WorkspaceRails.limits), inside the currency's; the currency's when not given. */
  narrowed?: (currency: CurrencyRules) => AmountLimits,
): CurrencyRules {
  const currency = catalogue.currency(currencyCode);
  if (!currency) throw new Error(`catalogue has no rules for ${currencyCode}`); // validated at boot
  const { min_amount: min, max_amount: max } = narrowed ? narrowed(currency) : currency;
  if (amount < min || amount > max) {
    throw new ApiError(
      'amount_out_of_range',
      `Amount must be between ${min} and ${max} minor units of ${currencyCode}.`,
      {
        errors: [{ field: 'amount', message: `must be between ${min} and ${max}` }],
      },
    );
  }
  if (metadata !== undefined && Buffer.byteLength(canonicalJson(metadata)) > METADATA_MAX_BYTES) {
    throw new ApiError('validation_failed', 'metadata is larger than 16 KiB.', {
      errors: [{ field: 'metadata', message: 'must be at most 16 KiB as JSON' }],
    });
  }
  return currency;
}

/** What the catalogue holds for a new collection's market and rail, once its request passed the catalogue's rules. */
export interface CatalogueEntries {
  market: Market;
  rail: Rail;
  currency: CurrencyRules;
}

export class CollectionsService {
  constructor(
    private readonly db: Db,
    private readonly catalogue: MarketCatalogue,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
    /** The provider registry: the provider that runs each rail (checked at boot: every rail has one). */
    private readonly providers: ProviderLookup,
    /**
     * Told of each new collection, and its `collection.created` event, once committed (the submitter hands the
     * collection to its provider; the relay sends the event).
     */
    private readonly afterCommit: AfterCommit,
    /** How long the oldest initiation waiting in this process has waited, in ms, and the most it may. */
    private readonly backlog: { waitingMs: () => number; maxWaitMs: number } = { waitingMs: () => 0, maxWaitMs: 2000 },
    /** Whether the rail's collections are down, from this node's availability snapshot (no statement). */
    private readonly railDown: (
      market: string,
      rail: string,
    ) => { retryAfterSeconds: number; detail: string } | undefined = () => undefined,
  ) {}

  /**
   * Refuses a new collection on a rail that is down (503 `rail_unavailable`, Retry-After) before anything is written:
   * the payer's prompt could not arrive. Answered from memory (the availability snapshot the workers keep fresh).
   */
  admitRail(marketCode: string, railCode: string): void {
    const down = this.railDown(marketCode, railCode);
    if (down === undefined) return;
    throw new ApiError(
      'rail_unavailable',
      `${marketCode}/${railCode} is down for collections: ${down.detail} This collection was not created.`,
      { headers: { 'Retry-After': String(down.retryAfterSeconds) } },
    );
  }

  /**
   * Refuses a new collection (503 `overloaded`, Retry-After) while its prompt could not go out within the most a payer
   * waits for it (`maxWaitMs`): accepted now, the prompt would come after the phone gave up. A new initiation queues
   * behind those queued, so it waits about as long as the oldest of them has: it is refused once that one has waited
   * half the most. The client retries shortly, or on another node.
   */
  admit(): void {
    const waited = this.backlog.waitingMs();
    if (waited > this.backlog.maxWaitMs / 2) {
      throw new ApiError(
        'overloaded',
        `Payment prompts are ${Math.round(waited)} ms behind; this collection was not created. Retry after a second.`,
        { headers: { 'Retry-After': '1' } },
      );
    }
  }

  /**
   * `admitRail` and `admit` for a request with an idempotency key: a refused request whose key already has a live
   * answer gets that answer (its replay) instead of the 503, since what it asks for was done before the refusal
   * began; the refusal stands for a new one. Nothing is read unless the request is refused.
   */
  async admitOrReplay(
    marketCode: string,
    railCode: string,
    stored: () => Promise<IdempotentResult | undefined>,
  ): Promise<IdempotentResult | undefined> {
    try {
      this.admitRail(marketCode, railCode);
      this.admit();
      return undefined;
    } catch (refusal) {
      const replay = await stored();
      if (replay === undefined) throw refusal;
      return replay;
    }
  }

  /**
   * Checks a create-collection request (POST /v1/collections/{market}/rails/{rail}) against the catalogue, in the
   * order a payer's request fails it: the market exists and offers the rail (else 400 `invalid_market`,
   * `invalid_rail`), the currency is the market's, the customer fields are those the rail requires (else 400
   * `invalid_customer`), the amount is within the currency's limits ("out-of-range values are rejected with 422")
   * and the metadata fits, and the rail's provider can move the amount.
   */
  validateAgainstCatalogue(
    marketCode: string,
    railCode: string,
    body: CreateCollectionBody,
    rails: WorkspaceRails = WorkspaceRails.ALL,
  ): CatalogueEntries {
    const market = this.catalogue.market(marketCode);
    if (!market) {
      throw new ApiError(
        'invalid_market',
        `Market '${marketCode}' is not supported; use one of ${this.catalogue.marketCodes().join(', ')}.`,
      );
    }
    const rail = this.catalogue.rail(market, railCode);
    if (!rail) {
      throw new ApiError(
        'invalid_rail',
        `Rail '${railCode}' is not offered in ${marketCode}; use one of ${Object.keys(market.rails).join(', ')}.`,
      );
    }
    // The workspace's active configuration: a rail the admin did not enable is refused as the catalogue's own would be.
    rails.requireRail(marketCode, railCode, market);
    if (body.currency !== market.currency) {
      throw new ApiError(
        'invalid_currency',
        `Collections in ${marketCode} are in ${market.currency}, not '${body.currency}'.`,
        {
          errors: [{ field: 'currency', message: `must be ${market.currency}` }],
        },
      );
    }
    const problems: FieldError[] = [];
    for (const field of rail.customer_fields) {
      if (body.customer[field] === undefined)
        problems.push({ field: `customer.${field}`, message: `is required on ${rail.name}` });
    }
    const phone = body.customer.phone_number;
    const phoneIssue = phone === undefined ? undefined : phoneProblem(market, phone);
    if (phoneIssue) problems.push({ field: 'customer.phone_number', message: phoneIssue });
    if (problems.length > 0)
      throw new ApiError('invalid_customer', `The customer fields are not valid for ${rail.name} in ${market.name}.`, {
        errors: problems,
      });
    const currency = checkAmountAndMetadata(this.catalogue, market.currency, body.amount, body.metadata, (c) =>
      rails.limits(marketCode, railCode, c),
    );
    const unsupported = this.providers.amountProblem(marketCode, railCode, body.amount, body.currency);
    if (unsupported !== undefined) {
      throw new ApiError('amount_not_supported', unsupported, {
        errors: [{ field: 'amount', message: `is not an amount ${rail.name} can move` }],
      });
    }
    return { market, rail, currency };
  }

  /**
   * Creating a collection (POST /v1/collections/{market}/rails/{rail}): the collection, its `collection.created` event
   * and outbox row, and the stored idempotent answer are one statement in autocommit: everything in it (ids, times,
   * the answer's body) is made before it is sent.
   */
  async create(
    workspaceId: string,
    marketCode: string,
    railCode: string,
    body: CreateCollectionBody,
    key: string,
    requestFingerprint: string,
    rails: WorkspaceRails = WorkspaceRails.ALL,
  ): Promise<IdempotentResult> {
    const entries = this.validateAgainstCatalogue(marketCode, railCode, body, rails);
    const replay = await this.admitOrReplay(marketCode, railCode, () =>
      this.idempotency.stored(workspaceId, key, requestFingerprint),
    );
    if (replay !== undefined) return replay;
    const { collection, event, change } = this.newCollection(workspaceId, marketCode, railCode, entries, body);
    const id = collection.collection_id;
    const result = await this.idempotency.create(
      workspaceId,
      key,
      requestFingerprint,
      eventStatement(workspaceId, { ...event, id: uuidv7(event.at.getTime()) }, change),
      { status: 201, headers: { location: `/v1/collections/${id}` }, body: JSON.stringify(collection) },
    );
    if (!result.replayed) {
      this.afterCommit.emit({ kind: 'collection', workspaceId, id });
      // The event went in with it (eventStatement, not recordEvent: there is no transaction to note it on).
      this.afterCommit.emit({ kind: 'events' });
    }
    return result;
  }

  /**
   * Writes a new collection and its `collection.created` event inside the caller's transaction. The caller
   * has run `validateAgainstCatalogue`. Once the transaction commits, the after-commit hook hands the collection to its provider
   * (and the event to the relay); if it rolls back, nothing is handed on. A hosted checkout's attempt names
   * its session, and its bank-transfer account is named after the merchant rather than the reference (the
   * payer sees the instruction). Its expiry is the rail's: cutting it short at the session's expiry would
   * expire a prompt the payer may still approve.
   */
  async insert(
    tx: Tx,
    workspaceId: string,
    marketCode: string,
    railCode: string,
    entries: CatalogueEntries,
    body: CreateCollectionBody,
    checkout?: { sessionId: string; accountName: string },
  ): Promise<Collection> {
    const { collection, event, change } = this.newCollection(
      workspaceId,
      marketCode,
      railCode,
      entries,
      body,
      checkout,
    );
    await recordEvent(tx, workspaceId, event, change);
    emitOnCommit(tx, { kind: 'collection', workspaceId, id: collection.collection_id });
    return collection;
  }

  /** A new collection as the API shows it, its `collection.created` event and its INSERT: made, not written. */
  private newCollection(
    workspaceId: string,
    marketCode: string,
    railCode: string,
    { market, rail, currency }: CatalogueEntries,
    body: CreateCollectionBody,
    checkout?: { sessionId: string; accountName: string },
  ): { collection: Collection; event: EventInput; change: Statement } {
    const id = uuidv7();
    const now = uuidv7Time(id);
    const row: repo.CollectionRow = {
      id,
      workspace_id: workspaceId,
      market: marketCode,
      rail: railCode,
      amount: body.amount,
      currency: body.currency,
      reference: body.reference,
      status: 'created',
      customer: { ...body.customer },
      metadata: body.metadata ?? {},
      payment_instruction: paymentInstruction(market, rail, {
        id,
        amount: body.amount,
        currency: body.currency,
        exponent: currency.exponent,
        phone: body.customer.phone_number,
        reference: body.reference,
        accountName: checkout?.accountName,
      }),
      created_at: now,
      updated_at: now,
      expires_at: new Date(now.getTime() + rail.expiry_seconds * 1000),
      provider: this.providers.nameFor(marketCode, railCode),
      provider_reference: null,
      provider_receipt: null,
      submitted_at: null,
      failure_reason: null,
      checkout_session_id: checkout?.sessionId ?? null,
    };
    const collection = toCollectionApi(row);
    return {
      collection,
      event: { type: 'collection.created', objectType: 'collection', objectId: id, data: collection, at: now },
      change: repo.insertCollection(workspaceId, row),
    };
  }

  async get(workspaceId: string, id: string): Promise<Collection> {
    const row = isUuid(id) ? await repo.findCollection(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('collection');
    return toCollectionApi(row);
  }

  async list(workspaceId: string, query: ListCollectionsQuery): Promise<Page<Collection>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const { market, rail, reference, phone_number } = query;
    const rows = await repo.listCollections(this.db, workspaceId, filter, { market, rail, reference, phone_number });
    return this.cursors.page(rows, limit, toCollectionApi);
  }
}
