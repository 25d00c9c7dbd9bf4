// Wave Business APIs: collections by Checkout session (its wave_launch_url is the payer's instruction; on a phone it
// opens the Wave app), status by GET on the session (or by our id as its client_reference), refunds by the session's
// refund call, unpaid sessions closed by its expire call, and payouts by the Payout API under an idempotency key
// that is our payout's id. Webhooks are signed (Wave-Signature, HMAC-SHA256 of the timestamp and the raw body with
// the webhook's secret): a bad signature is refused, and a good one is still a claim until the session's status
// agrees. Setup, fields, result codes and choices: docs/connectors/wave.md.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../../../platform/errors.js';
import { isUuid } from '../../../platform/ids.js';
import { majorUnits } from '../../../platform/money.js';
import {
  exponentOf,
  WaveEntry,
  type ConnectorDeps,
  type ConnectorKind,
  type WaveSettings,
} from '../connector-config.js';
import { callOperator, field, text, type OperatorResponse } from '../operator-http.js';
import {
  CallbackRejected,
  ProviderError,
  type CallbackHeaders,
  type CallbackReading,
  type CollectionOrder,
  type NoticeObjectType,
  type OperatorConnector,
  type PayoutOrder,
  type ProviderAck,
  type ProviderStatus,
  type RefundOrder,
} from '../provider.js';

export const WAVE_SIGNATURE_HEADER = 'wave-signature';
/** A webhook signed longer ago than this is refused, so a captured one cannot be replayed later. */
export const WAVE_SIGNATURE_TOLERANCE_SECONDS = 300;

const PATHS = {
  sessions: '/v1/checkout/sessions',
  searchSessions: '/v1/checkout/sessions/search',
  payout: '/v1/payout',
  searchPayouts: '/v1/payouts/search',
};

/** Wave's `last_payment_error.code` of a checkout session, as our collection failure reasons. */
export const WAVE_PAYMENT_ERRORS: Record<string, string> = {
  'insufficient-funds': 'insufficient_funds',
  'payer-mobile-mismatch': 'payer_declined',
  'blocked-account': 'provider_refused',
  'customer-age-limit-exceeded': 'payer_limit_reached',
  'kyb-limits-exceeded': 'payer_limit_reached',
  'cross-border-payment-not-allowed': 'provider_refused',
  'payment-failure': 'provider_error',
};

/** Wave's `payout_error.error_code` of a payout, as our payout failure reasons. */
export const WAVE_PAYOUT_ERRORS: Record<string, string> = {
  'insufficient-funds': 'insufficient_provider_balance',
  'recipient-limit-exceeded': 'recipient_limit_reached',
  'payout-limit-exceeded': 'recipient_limit_reached',
  'blocked-account': 'invalid_account',
  'recipient-not-found': 'invalid_account',
  'name-mismatch': 'invalid_account',
};

/** Wave's signature of `body` at `timestamp` (seconds): hex HMAC-SHA256 of the timestamp followed by the body. */
export function waveSignature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}${body}`).digest('hex');
}

/**
 * Checks a webhook's `Wave-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]` against the raw body: one v1 made with
 * the webhook's secret, at most 5 minutes old. Throws CallbackRejected otherwise.
 */
export function verifyWaveSignature(secret: string, rawBody: string, headers: CallbackHeaders, now = Date.now()): void {
  const header = headers[WAVE_SIGNATURE_HEADER];
  if (typeof header !== 'string') throw new CallbackRejected('The webhook has no Wave-Signature header.');
  let timestamp: number | undefined;
  const given: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't') timestamp = Number(value);
    else if (key === 'v1') given.push(value);
  }
  if (timestamp === undefined || !Number.isSafeInteger(timestamp) || given.length === 0)
    throw new CallbackRejected('The Wave-Signature header is malformed.');
  if (Math.abs(now / 1000 - timestamp) > WAVE_SIGNATURE_TOLERANCE_SECONDS)
    throw new CallbackRejected('The Wave-Signature is too old (or from the future).');
  const expected = Buffer.from(waveSignature(secret, timestamp, rawBody), 'hex');
  const matches = given.some((g) => {
    const candidate = Buffer.from(/^[0-9a-f]{64}$/.test(g) ? g : '', 'hex');
    return candidate.length === expected.length && timingSafeEqual(candidate, expected);
  });
  if (!matches) throw new CallbackRejected('The Wave-Signature does not match.');
}

type Json = Record<string, unknown>;

export class WaveConnector implements OperatorConnector {
  readonly name: string;
  readonly callbackToken: string;
  readonly pollSeconds: number | undefined;

  constructor(
    private readonly settings: WaveSettings,
    private readonly deps: ConnectorDeps,
  ) {
    this.name = settings.name;
    this.callbackToken = settings.callback_token;
    this.pollSeconds = settings.poll_seconds;
  }

  /** Wave sends every event to the one URL registered for the webhook in its Business Portal: this one. */
  callbackUrls(): string[] {
    return [this.deps.callbackBase];
  }

  /** Wave takes XOF in whole francs: an amount with a fraction of the unit (a catalogue with decimals) it cannot carry. */
  amountProblem(amount: number, currency: string, exponent: number): string | undefined {
    if (amount % 10 ** exponent === 0) return undefined;
    return `Wave moves whole ${currency} only: ${amount} minor units is ${majorUnits(amount, exponent)} ${currency}.`;
  }

  async initiateCollection(order: CollectionOrder): Promise<ProviderAck> {
    const back = this.settings.return_url ?? new URL(this.deps.callbackBase).origin;
    const body: Json = {
      amount: this.amount(order.amount, order.currency),
      currency: order.currency,
      client_reference: order.id,
      success_url: back,
      error_url: back,
    };
    // Only the payer whose number the collection names can pay it: a link passed on cannot be paid by another wallet.
    if (order.customer.phone_number !== undefined) body.restrict_payer_mobile = order.customer.phone_number;
    const res = await this.call('POST', PATHS.sessions, body);
    this.throwIfUnsent(res, 'collection', order.id);
    if (res.status !== 200 && res.status !== 201) return this.refused(res, 'collection', order.id);
    const session = this.session(res);
    return { reference: session.reference, status: 'pending', redirectUrl: session.launchUrl };
  }

  /**
   * A refund by the refunded session's refund call, which Wave completes within the call. Wave has no refund to
   * ask about afterwards: a refund whose answer was lost waits for a person (findsByOurId is false for refunds).
   */
  async initiateRefund(order: RefundOrder): Promise<ProviderAck> {
    const session = order.collectionReference;
    if (session === null) return { reference: undefined, status: 'failed', reason: 'provider_refused' };
    const res = await this.call('POST', `${PATHS.sessions}/${encodeURIComponent(session)}/refund`);
    this.throwIfUnsent(res, 'refund', order.id);
    if (res.status === 200 || res.status === 204) return { reference: session, status: 'successful' };
    return { ...this.refused(res, 'refund', order.id), reference: session };
  }

  async initiatePayout(order: PayoutOrder): Promise<ProviderAck> {
    if (order.beneficiary.phone_number === null)
      return { reference: undefined, status: 'failed', reason: 'invalid_account' };
    const res = await this.call(
      'POST',
      PATHS.payout,
      {
        currency: order.currency,
        receive_amount: this.amount(order.amount, order.currency),
        mobile: order.beneficiary.phone_number,
        name: order.beneficiary.name,
        client_reference: order.id,
      },
      // The same key again answers the payout already made: a retry never pays twice.
      { 'idempotency-key': order.id },
    );
    this.throwIfUnsent(res, 'payout', order.id);
    if (res.status !== 200 && res.status !== 201) return this.refused(res, 'payout', order.id);
    const payout = this.payoutStatus(res.json, order.id);
    return {
      reference: payout.reference,
      status: payout.status === 'successful' ? 'successful' : payout.status === 'failed' ? 'failed' : 'pending',
      reason: payout.reason,
      receipt: payout.receipt,
    };
  }

  /** Sessions are found by our id (their client_reference), payouts likewise; Wave keeps no refund to look up. */
  findsByOurId(objectType: NoticeObjectType): boolean {
    return objectType !== 'refund';
  }

  async queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
    reference = '',
  ): Promise<ProviderStatus | undefined> {
    if (objectType === 'refund') return undefined;
    const byId = reference !== '';
    const path =
      objectType === 'collection'
        ? byId
          ? `${PATHS.sessions}/${encodeURIComponent(reference)}`
          : `${PATHS.searchSessions}?client_reference=${encodeURIComponent(objectId)}`
        : byId
          ? `${PATHS.payout}/${encodeURIComponent(reference)}`
          : `${PATHS.searchPayouts}?client_reference=${encodeURIComponent(objectId)}`;
    if (!byId && !isUuid(objectId)) return undefined;
    const res = await this.call('GET', path);
    if (res.status === 404) return undefined;
    if (res.status !== 200)
      throw new ProviderError(`${this.name}: the status query answered ${res.status} ${res.text.slice(0, 200)}`);
    let found: unknown = res.json;
    if (!byId) {
      const result = field(res.json, 'result');
      const matching = Array.isArray(result) ? result.filter((r) => text(r, 'client_reference') === objectId) : [];
      if (matching.length === 0) return undefined;
      // One session per collection is made; were there more, the one paid (or the newest) tells.
      found =
        matching.find((r) => text(r, 'payment_status') === 'succeeded' || text(r, 'status') === 'succeeded') ??
        matching.at(-1);
    }
    if (objectType === 'payout') return { objectType, objectId, ...this.payoutStatus(found, objectId) };
    return { objectType, objectId, ...this.sessionStatus(found) };
  }

  /** Closes an unpaid session we ended (expired or failed), so that it can no longer be paid. */
  async closeCollection(objectId: string, reference: string): Promise<void> {
    const res = await this.call('POST', `${PATHS.sessions}/${encodeURIComponent(reference)}/expire`);
    if (res.status === 200 || res.status === 204) return;
    this.deps.log.warn(
      { collection_id: objectId, session: reference, status: res.status, answer: res.text.slice(0, 200) },
      'Wave did not expire the checkout session (paid meanwhile, or already closed)',
    );
  }

  async readCallback(
    path: string,
    body: unknown,
    signed?: { rawBody: string | undefined; headers: CallbackHeaders },
  ): Promise<CallbackReading> {
    if (path !== '')
      throw new ApiError('not_found', 'Wave calls the connector’s webhook URL itself, with no sub-path.');
    verifyWaveSignature(this.settings.webhook_secret, signed?.rawBody ?? '', signed?.headers ?? {});
    const type = text(body, 'type');
    const data = field(body, 'data');
    const reply = { received: true };
    if (type !== 'checkout.session.completed' && type !== 'checkout.session.payment_failed') {
      this.deps.log.info({ type, event: text(body, 'id') }, 'Wave event of a kind this connector does not act on');
      return { reply };
    }
    const objectId = text(data, 'client_reference');
    const reference = text(data, 'id');
    if (objectId === undefined || !isUuid(objectId) || reference === undefined) {
      this.deps.log.info({ type, session: reference }, 'Wave event about a session not made by this service');
      return { reply };
    }
    const paid = type === 'checkout.session.completed';
    return {
      claim: {
        objectType: 'collection',
        objectId,
        reference,
        status: paid ? 'successful' : 'failed',
        reason: paid ? undefined : this.paymentReason(data),
        receipt: paid ? text(data, 'transaction_id') : undefined,
        amount: paid ? text(data, 'amount') : undefined,
      },
      reply,
    };
  }

  /** A session's status in our terms: paid, failed (an attempt Wave refused), expired, or still open. */
  private sessionStatus(session: unknown): Omit<ProviderStatus, 'objectType' | 'objectId'> {
    const reference = text(session, 'id');
    const redirectUrl = text(session, 'wave_launch_url');
    const checkout = text(session, 'checkout_status');
    const payment = text(session, 'payment_status');
    if (payment === 'succeeded')
      return {
        reference,
        status: 'successful',
        receipt: text(session, 'transaction_id'),
        amount: text(session, 'amount'),
        redirectUrl,
      };
    if (checkout === 'expired') return { reference, status: 'failed', reason: 'prompt_expired', redirectUrl };
    if (field(session, 'last_payment_error') !== undefined && field(session, 'last_payment_error') !== null)
      return { reference, status: 'failed', reason: this.paymentReason(session), redirectUrl };
    return { reference, status: 'pending', redirectUrl };
  }

  private paymentReason(session: unknown): string {
    const code = text(session, 'last_payment_error', 'code') ?? '';
    return WAVE_PAYMENT_ERRORS[code] ?? 'provider_error';
  }

  private payoutStatus(payout: unknown, objectId: string): Omit<ProviderStatus, 'objectType' | 'objectId'> {
    const reference = text(payout, 'id');
    if (reference === undefined) throw new ProviderError(`${this.name}: payout ${objectId} answered without an id`);
    const status = text(payout, 'status');
    if (status === 'succeeded') return { reference, status: 'successful', receipt: reference };
    if (status === 'failed') {
      const code = text(payout, 'payout_error', 'error_code') ?? '';
      return { reference, status: 'failed', reason: WAVE_PAYOUT_ERRORS[code] ?? 'provider_error' };
    }
    if (status === 'reversed') return { reference, status: 'reversed' };
    return { reference, status: 'pending' };
  }

  private session(res: OperatorResponse): { reference: string; launchUrl: string } {
    const reference = text(res.json, 'id');
    const launchUrl = text(res.json, 'wave_launch_url');
    if (reference === undefined || launchUrl === undefined)
      throw new ProviderError(`${this.name}: a checkout session answered without id or wave_launch_url`);
    return { reference, launchUrl };
  }

  /** An amount as Wave takes it: a string in major units ("5000" francs). */
  private amount(minor: number, currency: string): string {
    return majorUnits(minor, exponentOf(this.deps.catalogue, currency));
  }

  /**
   * Answers that say nothing was done and a later try may succeed: Wave's 5xx and 429, and its refusals of the API
   * key itself (401: missing, unreadable, unknown or revoked key; 403: a wallet, address or scope the key may not
   * use), which a person fixes in the Business Portal. Thrown, so the call is made again later.
   */
  private throwIfUnsent(res: OperatorResponse, objectType: NoticeObjectType, id: string): void {
    if (res.status >= 500 || res.status === 429 || res.status === 408)
      throw new ProviderError(`${this.name}: answered ${res.status}`);
    if (res.status === 401 || res.status === 403) {
      this.deps.log.error(
        { object_type: objectType, object_id: id, status: res.status, code: text(res.json, 'code') },
        'Wave refused the API key: check it (and its scopes and allowed addresses) in the Business Portal; retried later',
      );
      throw new ProviderError(`${this.name}: the API key was refused (${res.status} ${text(res.json, 'code') ?? ''})`);
    }
  }

  /** A 4xx Wave gave for the request itself: failed for good, logged with Wave's code. */
  private refused(res: OperatorResponse, objectType: NoticeObjectType, id: string): ProviderAck {
    this.deps.log.warn(
      { object_type: objectType, object_id: id, status: res.status, code: text(res.json, 'code') },
      `Wave refused the request: ${text(res.json, 'message') ?? res.text.slice(0, 200)}`,
    );
    return { reference: undefined, status: 'failed', reason: 'provider_refused' };
  }

  /** One call with the API key (and, when request signing is on for the key, its Wave-Signature). */
  private call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<OperatorResponse> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.settings.api_key}`, ...extra };
    if (this.settings.signing_secret !== undefined) {
      const timestamp = Math.floor(Date.now() / 1000);
      headers[WAVE_SIGNATURE_HEADER] =
        `t=${timestamp},v1=${waveSignature(this.settings.signing_secret, timestamp, body === undefined ? '' : JSON.stringify(body))}`;
    }
    return callOperator(this.name, {
      method,
      url: `${this.settings.base_url}${path}`,
      headers,
      body,
      timeoutMs: this.deps.timeoutMs,
    });
  }
}

export const WAVE: ConnectorKind<WaveSettings> = {
  type: 'wave',
  schema: WaveEntry,
  railProblem: (_settings, _market, currency, rail) => {
    if (rail !== 'wave') return 'a wave connector runs wave rails only';
    if (currency !== 'XOF') return `Wave's Checkout API takes XOF here, not ${currency}`;
    return undefined;
  },
  // Wave takes only https success and error URLs: the default, PUBLIC_BASE_URL, must be one when no return_url is given.
  check: (settings, callbackBase) =>
    settings.return_url === undefined && !callbackBase.startsWith('https:')
      ? 'field return_url is required while PUBLIC_BASE_URL is not https (Wave takes https success and error URLs only)'
      : settings.return_url !== undefined && !settings.return_url.startsWith('https:')
        ? 'field return_url must be an https URL (Wave takes no other)'
        : undefined,
  create: (settings, deps) => new WaveConnector(settings, deps),
};
