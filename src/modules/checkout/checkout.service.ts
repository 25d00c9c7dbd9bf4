// Hosted checkout rules: sessions (create, read), the payer's by-token view and payment attempts (no API key),
// sessions following their attempt's collection, and expiry. Every change is written with its event and
// outbox row in one transaction.
import { randomBytes } from 'node:crypto';
import { withTransaction, type Db, type Tx } from '../../db/pool.js';
import { ApiError, notFound } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import { parseHttpUrl } from '../../platform/http-url.js';
import { isUuid, uuidv7, uuidv7Time } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import { stepTime } from '../../platform/time.js';
import type { PaymentsEnv } from '../../config.js';
import { phoneProblem, type MarketCatalogue } from '../catalogue/catalogue.js';
import type { Market } from '../catalogue/catalogue.schema.js';
import * as collectionsRepo from '../collections/collections.repository.js';
import type { LatePaymentAction } from '../collections/collections.states.js';
import type { Collection } from '../collections/collections.schemas.js';
import { checkAmountAndMetadata, type CollectionsService } from '../collections/collections.service.js';
import { recordEvent } from '../events/events.repository.js';
import type { Prediction } from '../predict/predict.schemas.js';
import type { PredictService } from '../predict/predict.service.js';
import { WorkspaceRails } from '../workspace-configuration/workspace-rails.js';
import * as repo from './checkout.repository.js';
import { checkSessionMove } from './checkout.states.js';
import {
  EXPIRES_IN_DEFAULT,
  type CreateSessionBody,
  type ListSessionsQuery,
  type PayBody,
  toPayerView,
  toSessionApi,
  type PayerView,
  type Session,
} from './checkout.schemas.js';

/** 256 random bits, base64url: 43 characters. */
const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

export function newSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

export function isSessionToken(value: string): boolean {
  return TOKEN_RE.test(value);
}

/** Saves a session's move, once the state machine allows it (checkout.states.ts). */
async function saveMove(tx: Tx, from: repo.SessionRow, next: repo.SessionRow): Promise<void> {
  checkSessionMove(from.status, next.status);
  await repo.saveSession(tx, next);
}

/**
 * Failed attempts a session allows. Past this the session expires: anyone holding the link could otherwise send
 * payment prompts in the merchant's name to phone after phone.
 */
export const MAX_ATTEMPTS = 5;

export interface CheckoutOptions {
  env: PaymentsEnv;
  publicBaseUrl: string;
  /** The operator prediction (predict/predict.service.ts), so the page can preselect the payer's rail. */
  predictor: PredictService;
}

export class CheckoutService {
  constructor(
    private readonly db: Db,
    private readonly catalogue: MarketCatalogue,
    private readonly collections: CollectionsService,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
    private readonly options: CheckoutOptions,
  ) {}

  /**
   * Creating a session (POST /v1/checkout/sessions): its rules, in the order a request fails them: redirect URL, market
   * and currency, customer, amount, metadata.
   */
  private check(body: CreateSessionBody, rails: WorkspaceRails): { market: string } {
    const redirectProblem = this.redirectProblem(body.redirect_url);
    if (redirectProblem) {
      throw new ApiError('invalid_redirect_url', `redirect_url ${redirectProblem}.`, {
        errors: [{ field: 'redirect_url', message: redirectProblem }],
      });
    }
    const marketCode = this.marketFor(body, rails);
    const market = this.catalogue.market(marketCode) as Market;
    const phone = body.customer?.phone_number;
    const phoneIssue = phone === undefined ? undefined : phoneProblem(market, phone);
    if (phoneIssue) {
      throw new ApiError('invalid_customer', `The customer's phone number is not valid in ${market.name}.`, {
        errors: [{ field: 'customer.phone_number', message: phoneIssue }],
      });
    }
    // The payer picks the rail later: the amount must suit at least one rail the workspace may use there.
    checkAmountAndMetadata(this.catalogue, market.currency, body.amount, body.metadata, (currency) => {
      const limits = rails.railsOf(marketCode, market).map((rail) => rails.limits(marketCode, rail, currency));
      const fits = limits.find((l) => body.amount >= l.min_amount && body.amount <= l.max_amount);
      return (
        fits ?? {
          min_amount: Math.min(...limits.map((l) => l.min_amount)),
          max_amount: Math.max(...limits.map((l) => l.max_amount)),
        }
      );
    });
    return { market: marketCode };
  }

  /** Why a redirect URL cannot be used, or undefined when it can. */
  private redirectProblem(raw: string): string | undefined {
    const url = parseHttpUrl(raw, this.options.env, 'https://shop.example/thanks');
    return typeof url === 'string' ? url : undefined;
  }

  /** The market: as given (its currency must match), or the only market using the currency. */
  private marketFor(body: CreateSessionBody, rails: WorkspaceRails): string {
    if (body.market !== undefined) {
      const market = this.catalogue.marketField(body.market);
      rails.requireMarket(body.market);
      if (market.currency !== body.currency) {
        throw new ApiError(
          'invalid_currency',
          `Payments in ${body.market} are in ${market.currency}, not '${body.currency}'.`,
          {
            errors: [{ field: 'currency', message: `must be ${market.currency}` }],
          },
        );
      }
      return body.market;
    }
    const using = rails.marketsUsing(this.catalogue, body.currency);
    if (using.length === 0) {
      throw new ApiError('invalid_currency', `No market takes payments in '${body.currency}'.`, {
        errors: [{ field: 'currency', message: 'is not the currency of any supported market' }],
      });
    }
    if (using.length > 1) {
      throw new ApiError(
        'invalid_market',
        `${body.currency} is used in ${using.join(', ')}: say which market with \`market\`.`,
        {
          errors: [{ field: 'market', message: `is required for ${body.currency}: one of ${using.join(', ')}` }],
        },
      );
    }
    return using[0] as string;
  }

  async create(
    workspaceId: string,
    body: CreateSessionBody,
    key: string | undefined,
    requestFingerprint: string,
    rails: WorkspaceRails = WorkspaceRails.ALL,
  ): Promise<IdempotentResult> {
    const { market } = this.check(body, rails);
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const id = uuidv7();
      const now = uuidv7Time(id);
      const row: repo.SessionRow = {
        id,
        workspace_id: workspaceId,
        token: newSessionToken(),
        status: 'open',
        amount: body.amount,
        currency: body.currency,
        market,
        reference: body.reference ?? null,
        redirect_url: body.redirect_url,
        customer: { ...body.customer },
        metadata: body.metadata ?? {},
        collection_id: null,
        rail: null,
        failure_reason: null,
        attempts: 0,
        expires_at: new Date(now.getTime() + (body.expires_in ?? EXPIRES_IN_DEFAULT) * 1000),
        completed_at: null,
        created_at: now,
        updated_at: now,
      };
      await repo.insertSession(tx, workspaceId, row);
      return {
        status: 201,
        headers: { location: `/v1/checkout/sessions/${id}` },
        body: JSON.stringify(toSessionApi(row, this.options.publicBaseUrl)),
      };
    });
  }

  async get(workspaceId: string, id: string): Promise<Session> {
    const row = isUuid(id) ? await repo.findSession(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('checkout session');
    return toSessionApi(row, this.options.publicBaseUrl);
  }

  async list(workspaceId: string, query: ListSessionsQuery): Promise<Page<Session>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listSessions(this.db, workspaceId, filter);
    return this.cursors.page(rows, limit, (r) => toSessionApi(r, this.options.publicBaseUrl));
  }

  // ---- The by-token endpoints (/v1/checkout/by-token/{token}): the payer, who knows only the token.

  private async byToken(token: string): Promise<repo.PayerSessionRow> {
    const row = isSessionToken(token) ? await repo.findByToken(this.db, token) : undefined;
    if (!row) throw new ApiError('not_found', 'This payment link is not valid.');
    return row;
  }

  /** What the hosted page shows of the session (`toPayerView`), with its market and currency from the catalogue. */
  private payerView(
    row: repo.SessionRow,
    found: repo.PayerSessionRow,
    attempt: Collection | collectionsRepo.CollectionRow | undefined,
  ): PayerView {
    const exponent = this.catalogue.currency(row.currency)?.exponent ?? 0;
    const market = this.offeredMarket(found);
    return toPayerView(row, found.merchant_name, attempt, {
      market,
      exponent,
      sandbox: this.options.env === 'sandbox',
    });
  }

  /**
   * The session's market as its page offers it: only the rails the workspace may use (its active configuration) whose
   * limits take the session's amount.
   */
  private offeredMarket(found: repo.PayerSessionRow): Market {
    const market = this.catalogue.market(found.market);
    if (!market) throw new Error(`session ${found.id} names market ${found.market}, which the catalogue no longer has`);
    const currency = this.catalogue.currency(market.currency);
    const rails = WorkspaceRails.of(found.enabled_rails);
    const narrowed = rails.narrowMarket(found.market, market);
    if (!rails.narrowed || !currency) return narrowed;
    const fits = Object.entries(narrowed.rails).filter(([code]) => {
      const limits = rails.limits(found.market, code, currency);
      return found.amount >= limits.min_amount && found.amount <= limits.max_amount;
    });
    return { ...narrowed, rails: Object.fromEntries(fits) };
  }

  /**
   * The operator and rails of the number the payer is typing, in the session's market: the page preselects the first
   * rail. The token is checked like every by-token call, so the prediction is no open endpoint.
   */
  async predict(token: string, phoneNumber: string): Promise<Prediction> {
    const row = await this.byToken(token);
    const prediction = this.options.predictor.predict({ phone_number: phoneNumber, market: row.market });
    const offered = this.offeredMarket(row).rails;
    return { ...prediction, rails: prediction.rails.filter((rail) => Object.hasOwn(offered, rail)) };
  }

  async view(token: string): Promise<PayerView> {
    const row = await this.byToken(token);
    const attempt =
      row.collection_id === null
        ? undefined
        : await collectionsRepo.findCollection(this.db, row.workspace_id, row.collection_id);
    return this.payerView(row, row, attempt);
  }

  /**
   * One payment attempt: a collection on the chosen rail for the session's amount, carrying its reference and
   * metadata. Idempotent per attempt (the page sends one key per attempt); a session that is not open refuses.
   */
  async pay(token: string, body: PayBody, key: string, requestFingerprint: string): Promise<IdempotentResult> {
    const found = await this.byToken(token);
    const collectionBody = {
      amount: found.amount,
      currency: found.currency,
      reference: found.reference ?? found.id,
      customer: body.customer,
      metadata: found.metadata,
    };
    const entries = this.collections.validateAgainstCatalogue(
      found.market,
      body.rail,
      collectionBody,
      WorkspaceRails.of(found.enabled_rails),
    );
    const attemptKey = `checkout:${found.id}:${key}`;
    const replay = await this.collections.admitOrReplay(found.market, body.rail, () =>
      this.idempotency.stored(found.workspace_id, attemptKey, requestFingerprint),
    );
    if (replay !== undefined) return replay;
    const result = await this.idempotency.run(found.workspace_id, attemptKey, requestFingerprint, async (tx) => {
      const session = await repo.lockSession(tx, found.workspace_id, found.id);
      if (!session) throw new ApiError('not_found', 'This payment link is not valid.');
      if (session.status === 'expired' || (session.status === 'open' && session.expires_at.getTime() <= Date.now())) {
        throw new ApiError('checkout_session_expired', 'This payment link has expired; no payment was taken.');
      }
      if (session.status !== 'open') {
        throw new ApiError(
          'checkout_session_not_open',
          session.status === 'complete'
            ? 'This payment is already complete.'
            : 'A payment attempt is already in progress for this link.',
        );
      }
      const collection = await this.collections.insert(
        tx,
        found.workspace_id,
        found.market,
        body.rail,
        entries,
        collectionBody,
        {
          sessionId: session.id,
          accountName: found.merchant_name,
        },
      );
      const at = stepTime(session.updated_at);
      const next: repo.SessionRow = {
        ...session,
        status: 'processing',
        collection_id: collection.collection_id,
        rail: body.rail,
        failure_reason: null,
        attempts: session.attempts + 1,
        updated_at: at,
      };
      await saveMove(tx, session, next);
      return {
        status: 201,
        headers: {},
        body: JSON.stringify(this.payerView(next, found, collection)),
      };
    });
    return result;
  }

  // ---- Following the attempt, and expiry.

  /**
   * Called by the lifecycle, in the transaction that moved a collection started from a session (the collection
   * is locked first, then the session: the order payment attempts never reverse). A success completes the
   * session, even past its expires_at (the payer authorised in time: the money is taken, so the session is
   * paid). A failure or expiry opens it again for another attempt, or expires it when its time is up or
   * after MAX_ATTEMPTS attempts.
   */
  async followCollection(
    tx: Tx,
    workspaceId: string,
    collection: collectionsRepo.CollectionRow,
    late?: LatePaymentAction,
  ): Promise<void> {
    if (collection.checkout_session_id === null) return;
    const session = await repo.lockSession(tx, workspaceId, collection.checkout_session_id);
    // Only the latest attempt moves a session, and only while it is waiting for that attempt.
    if (!session || session.collection_id !== collection.id) return;
    if (late !== undefined) return this.followLatePayment(tx, session, late);
    if (session.status !== 'processing') return;
    const at = stepTime(session.updated_at);
    switch (collection.status) {
      case 'created':
      case 'pending':
      case 'processing':
      case 'refunded':
      case 'reversed':
        return;
      case 'successful': {
        const next: repo.SessionRow = { ...session, status: 'complete', completed_at: at, updated_at: at };
        await saveMove(tx, session, next);
        await this.recordSessionEvent(tx, 'checkout.session.completed', next);
        return;
      }
      case 'failed':
      case 'expired': {
        const reason = collection.status === 'expired' ? 'expired' : (collection.failure_reason ?? 'provider_error');
        const timeUp = session.expires_at.getTime() <= at.getTime() || session.attempts >= MAX_ATTEMPTS;
        const next: repo.SessionRow = {
          ...session,
          status: timeUp ? 'expired' : 'open',
          failure_reason: reason,
          updated_at: at,
        };
        await saveMove(tx, session, next);
        if (timeUp) await this.recordSessionEvent(tx, 'checkout.session.expired', next);
        return;
      }
    }
  }

  /**
   * A late payment of the session's latest attempt (the session is open again, or expired): accepted, it pays the
   * session; refunded, the session says so (`failure_reason` `late_payment_refunded`), so the payer's page tells them
   * the money is on its way back.
   */
  private async followLatePayment(tx: Tx, session: repo.SessionRow, late: LatePaymentAction): Promise<void> {
    if (session.status === 'complete' || session.status === 'processing') return;
    const at = stepTime(session.updated_at);
    if (late === 'accept') {
      const next: repo.SessionRow = { ...session, status: 'complete', completed_at: at, updated_at: at };
      await saveMove(tx, session, next);
      await this.recordSessionEvent(tx, 'checkout.session.completed', next);
      return;
    }
    // The status stays as it is (open for another attempt, or expired): only the reason changes.
    await repo.saveSession(tx, { ...session, failure_reason: 'late_payment_refunded', updated_at: at });
  }

  /**
   * For the lifecycle, before it accepts a late payment: a collection of no session stands; a checkout attempt stands
   * only while it is its session's latest and the session is not paid (the collection is locked, then the session).
   */
  async lateAttemptStands(tx: Tx, workspaceId: string, collection: collectionsRepo.CollectionRow): Promise<boolean> {
    if (collection.checkout_session_id === null) return true;
    const session = await repo.lockSession(tx, workspaceId, collection.checkout_session_id);
    return session?.collection_id === collection.id && (session.status === 'open' || session.status === 'expired');
  }

  /**
   * Expires open sessions past `expires_at`, with no request needed. A session with an attempt in flight is
   * not expired here: it ends with that attempt (followCollection), so a payer who approves the prompt in time
   * is never charged on an expired session. Returns how many expired (at most `batch`).
   */
  async expireDue(batch = 200): Promise<number> {
    return withTransaction(this.db, async (tx) => {
      const rows = await repo.lockDueForExpiry(tx, batch);
      for (const session of rows) {
        const at = stepTime(session.updated_at);
        const next: repo.SessionRow = { ...session, status: 'expired', updated_at: at };
        await saveMove(tx, session, next);
        await this.recordSessionEvent(tx, 'checkout.session.expired', next);
      }
      return rows.length;
    });
  }

  /** The session's event (with its metadata) and outbox row, at the time of the change, in the change's transaction. */
  private async recordSessionEvent(
    tx: Tx,
    type: 'checkout.session.completed' | 'checkout.session.expired',
    row: repo.SessionRow,
  ): Promise<void> {
    await recordEvent(tx, row.workspace_id, {
      type,
      objectType: 'checkout_session',
      objectId: row.id,
      data: toSessionApi(row, this.options.publicBaseUrl),
      at: row.updated_at,
    });
  }
}
