// Airtel Money Open API: collections by USSD push, payouts by disbursement, refunds of a collection by its Airtel
// Money id. Each transaction's id at Airtel is our object's id, so a retry is refused as a duplicate rather than
// made twice. Business errors come as HTTP 200 with status.success false: each is mapped to a stable reason or,
// when Airtel says the outcome is ambiguous, settled by its enquiry. Setup and choices: docs/connectors/airtel-money.md.
import { Type } from 'typebox';
import { ApiError } from '../../../platform/errors.js';
import { isUuid } from '../../../platform/ids.js';
import { majorUnits } from '../../../platform/money.js';
import {
  connectorEntry,
  exponentOf,
  Secret,
  type ConnectorCommon,
  type ConnectorDeps,
  type ConnectorKind,
} from '../connector-config.js';
import {
  balanceMinorUnits,
  callOperator,
  readToken,
  field,
  text,
  withToken,
  type OperatorResponse,
} from '../operator-http.js';
import { TokenCache } from '../operator-tokens.js';
import {
  ProviderError,
  type CallbackReading,
  type CollectionOrder,
  type FloatReading,
  type NoticeObjectType,
  type OperatorConnector,
  type PayoutOrder,
  type ProviderAck,
  type ProviderStatus,
  type RefundOrder,
} from '../provider.js';

const Entry = connectorEntry('airtel_money', {
  client_id: Secret("The application's client_id."),
  client_secret: Secret("The application's client_secret."),
  country: Type.String({ pattern: '^[A-Z]{2}$', description: 'X-Country: the one country this application serves.' }),
  currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'X-Currency: that country’s currency.' }),
  pin: Secret(
    'The disbursement PIN, RSA-encrypted with the public key of Airtel’s portal and Base64-encoded, as Airtel’s API takes it.',
  ),
});

export interface AirtelSettings extends ConnectorCommon {
  type: 'airtel_money';
  client_id: string;
  client_secret: string;
  country: string;
  currency: string;
  pin: string;
}

const PATHS = {
  token: '/auth/oauth2/token',
  payment: '/merchant/v1/payments/',
  paymentEnquiry: '/standard/v1/payments/',
  refund: '/standard/v2/payments/refund',
  disbursement: '/standard/v2/disbursements/',
  balance: '/standard/v1/users/balance',
};

/** Codes Airtel gives when it does not know yet whether it acted: asked again (our id makes a retry a duplicate, not a second payment). */
const AMBIGUOUS = new Set([
  'ESB000001',
  'ESB000004',
  'ESB000014',
  '0000900',
  'ROUTER117',
  'DP00800001000',
  'DP00900001000',
  'DP00900001014',
]);
/** A transaction with our id is already there: an earlier attempt got through. */
const DUPLICATE = new Set(['ESB000041', 'DP00900001011', 'DP00900001017']);
/** Airtel does not know the id. */
const NOT_FOUND = new Set(['ESB000045', 'DP00800001025', 'DP00900001015']);

/** Airtel's collection codes (response_code or result_code) as our stable reasons. */
const COLLECTION_REASONS: Record<string, string> = {
  DP00800001002: 'wrong_pin',
  DP00800001003: 'payer_limit_reached',
  DP00800001005: 'prompt_expired',
  DP00800001007: 'insufficient_funds',
  DP00800001008: 'payer_declined',
  DP00800001009: 'payer_declined',
  DP00800001010: 'provider_refused',
  DP00800001024: 'prompt_expired',
  DP00800001029: 'prompt_expired',
  ESB000033: 'payer_not_found',
  ESB000036: 'payer_not_found',
};

/** … disbursements. */
const PAYOUT_REASONS: Record<string, string> = {
  DP00900001003: 'recipient_limit_reached',
  DP00900001007: 'insufficient_provider_balance',
  DP00900001009: 'invalid_account',
  DP00900001012: 'invalid_account',
  DP00900001010: 'provider_refused',
  DP00900001013: 'provider_refused',
  DP00900001004: 'provider_refused',
  ESB000033: 'invalid_account',
  ESB000036: 'invalid_account',
};

function codes(body: unknown): string[] {
  return [text(body, 'status', 'response_code'), text(body, 'status', 'result_code')].filter(
    (c): c is string => c !== undefined,
  );
}

function reasonOf(table: Record<string, string>, body: unknown, fallback: string): string {
  for (const code of codes(body)) if (table[code] !== undefined) return table[code];
  return fallback;
}

/** Airtel's transaction statuses (data.transaction.status) in our terms. */
function statusOf(code: string | undefined): 'successful' | 'failed' | 'pending' | 'reversed' {
  if (code === 'TS') return 'successful';
  if (code === 'TF' || code === 'TE') return 'failed';
  if (code === 'TR') return 'reversed';
  // TIP (in progress), TA (ambiguous: ask again), TI, or nothing yet.
  return 'pending';
}

/** Airtel's `reference`: 4 to 64 letters and digits; the merchant's own when it fits, else our id. */
function airtelReference(reference: string, id: string): string {
  const cleaned = reference.replace(/[^A-Za-z0-9]/g, '').slice(0, 64);
  return cleaned.length >= 4 ? cleaned : id.replace(/-/g, '');
}

export class AirtelConnector implements OperatorConnector {
  readonly name: string;
  readonly callbackToken: string;
  readonly pollSeconds: number | undefined;
  private readonly tokens: TokenCache;

  constructor(
    private readonly settings: AirtelSettings,
    private readonly deps: ConnectorDeps,
  ) {
    this.name = settings.name;
    this.callbackToken = settings.callback_token;
    this.pollSeconds = settings.poll_seconds;
    this.tokens = new TokenCache(
      async () => {
        const res = await callOperator(this.name, {
          method: 'POST',
          url: `${settings.base_url}${PATHS.token}`,
          headers: {},
          body: {
            client_id: settings.client_id,
            client_secret: settings.client_secret,
            grant_type: 'client_credentials',
          },
          timeoutMs: deps.timeoutMs,
        });
        return readToken(`${this.name}: the token request`, res, 180);
      },
      { ...deps, connector: settings.name, scope: 'default' },
    );
  }

  /** Airtel calls one URL, registered in its portal: this one, with no sub-path. */
  callbackUrls(): string[] {
    return [this.deps.callbackBase];
  }

  async initiateCollection(order: CollectionOrder): Promise<ProviderAck> {
    const res = await this.call('POST', PATHS.payment, {
      reference: airtelReference(order.reference, order.id),
      subscriber: {
        country: this.settings.country,
        currency: this.settings.currency,
        msisdn: this.national(order.customer.phone_number ?? ''),
      },
      transaction: {
        amount: this.amount(order.amount),
        country: this.settings.country,
        currency: this.settings.currency,
        id: order.id,
      },
    });
    const body = this.answer(res, 'collection', order.id);
    if (body.success) return { reference: order.id, status: 'pending' };
    return {
      reference: order.id,
      status: 'failed',
      reason: reasonOf(COLLECTION_REASONS, res.json, 'provider_refused'),
    };
  }

  async initiatePayout(order: PayoutOrder): Promise<ProviderAck> {
    if (order.beneficiary.phone_number === null)
      return { reference: undefined, status: 'failed', reason: 'invalid_account' };
    const res = await this.call('POST', PATHS.disbursement, {
      payee: { msisdn: this.national(order.beneficiary.phone_number), wallet_type: 'NORMAL' },
      reference: airtelReference(order.reference, order.id),
      pin: this.settings.pin,
      transaction: { amount: this.amount(order.amount), id: order.id, type: 'B2C' },
    });
    const body = this.answer(res, 'payout', order.id);
    if (body.duplicate) {
      const known = await this.queryStatus('payout', order.id);
      if (known === undefined)
        throw new ProviderError(
          `${this.name}: Airtel calls payout ${order.id} a duplicate but does not find it; asked again later`,
        );
      return {
        reference: order.id,
        status: known.status === 'failed' ? 'failed' : known.status === 'successful' ? 'successful' : 'pending',
        reason: known.reason,
        receipt: known.receipt,
      };
    }
    if (!body.success)
      return { reference: order.id, status: 'failed', reason: reasonOf(PAYOUT_REASONS, res.json, 'provider_refused') };
    const status = statusOf(text(res.json, 'data', 'transaction', 'status'));
    return {
      reference: order.id,
      status: status === 'successful' ? 'successful' : 'pending',
      receipt: text(res.json, 'data', 'transaction', 'airtel_money_id'),
    };
  }

  /**
   * Airtel refunds a whole collection by its Airtel Money id and answers at once; it has no refund enquiry. So the
   * refunded collection is asked about first: already reversed (TR) means an earlier attempt went through.
   */
  async initiateRefund(order: RefundOrder): Promise<ProviderAck> {
    if (order.collectionReceipt === null) return { reference: undefined, status: 'failed', reason: 'provider_refused' };
    const before = await this.queryStatus('refund', order.id, order.collectionId);
    if (before?.status === 'successful') return { reference: order.collectionId, status: 'successful' };
    const res = await this.call('POST', PATHS.refund, { transaction: { airtel_money_id: order.collectionReceipt } });
    const body = this.answer(res, 'refund', order.id);
    if (body.success) return { reference: order.collectionId, status: 'successful' };
    // Airtel's own example of a successful refund says success false: the enquiry decides before it is failed.
    const after = await this.queryStatus('refund', order.id, order.collectionId);
    if (after?.status === 'successful') return { reference: order.collectionId, status: 'successful' };
    return { reference: order.collectionId, status: 'failed', reason: 'provider_refused' };
  }

  /**
   * Collections and payouts by their enquiry; a refund by the enquiry of the collection it refunds (`reference`),
   * which Airtel then reports as reversed (TR).
   */
  /** Airtel keys collections and payouts by our id as its transaction id; a refund is known only by Airtel's own reference. */
  findsByOurId(objectType: NoticeObjectType): boolean {
    return objectType !== 'refund';
  }

  async queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
    reference = '',
  ): Promise<ProviderStatus | undefined> {
    const id = objectType === 'refund' ? reference : objectId;
    if (!isUuid(id)) return undefined;
    const path =
      objectType === 'payout' ? `${PATHS.disbursement}${id}?transactionType=B2C` : `${PATHS.paymentEnquiry}${id}`;
    const res = await this.call('GET', path);
    if (res.status !== 200)
      throw new ProviderError(`${this.name}: the enquiry answered ${res.status} ${res.text.slice(0, 200)}`);
    if (field(res.json, 'status', 'success') !== true) {
      if (codes(res.json).some((c) => NOT_FOUND.has(c))) return undefined;
      throw new ProviderError(`${this.name}: the enquiry failed: ${res.text.slice(0, 200)}`);
    }
    const status = statusOf(text(res.json, 'data', 'transaction', 'status'));
    const receipt = text(res.json, 'data', 'transaction', 'airtel_money_id');
    if (objectType === 'refund') {
      return status === 'reversed'
        ? { objectType, objectId, reference: id, status: 'successful' }
        : { objectType, objectId, reference: id, status: 'pending' };
    }
    const reasons = objectType === 'payout' ? PAYOUT_REASONS : COLLECTION_REASONS;
    return {
      objectType,
      objectId,
      reference: id,
      status,
      receipt: status === 'successful' ? receipt : undefined,
      reason:
        status === 'failed'
          ? text(res.json, 'data', 'transaction', 'status') === 'TE'
            ? this.expiredReason(objectType)
            : reasonOf(reasons, res.json, 'provider_error')
          : undefined,
    };
  }

  async readCallback(path: string, body: unknown): Promise<CallbackReading> {
    const id = text(body, 'transaction', 'id');
    const status = text(body, 'transaction', 'status_code');
    if (path !== '')
      throw new ApiError('not_found', 'Airtel calls the connector’s callback URL itself, with no sub-path.');
    if (id === undefined || !isUuid(id) || (status !== 'TS' && status !== 'TF')) {
      throw new ApiError(
        'validation_failed',
        'An Airtel callback carries transaction.id (our id) and transaction.status_code TS or TF.',
      );
    }
    // The one URL serves every kind: the kind is found by our id.
    return {
      claim: {
        objectType: undefined,
        objectId: id,
        status: statusOf(status),
        reference: id,
        receipt: status === 'TS' ? text(body, 'transaction', 'airtel_money_id') : undefined,
      },
      reply: { status: 'received' },
    };
  }

  /**
   * The wallet's balance: GET /standard/v1/users/balance with the token, X-Country and X-Currency answers
   * `data.balance` (major units, as a string) and `data.currency` in Airtel's envelope; `status.success` false is a
   * refusal, read like any other.
   */
  async readBalances(): Promise<FloatReading[]> {
    const account = 'wallet';
    try {
      const res = await this.call('GET', PATHS.balance);
      const currency = text(res.json, 'data', 'currency') ?? this.settings.currency;
      const balance = balanceMinorUnits(field(res.json, 'data', 'balance'), exponentOf(this.deps.catalogue, currency));
      if (res.status !== 200 || field(res.json, 'status', 'success') !== true || balance === undefined) {
        const code = codes(res.json).join(', ');
        return [
          {
            account,
            error: `Airtel answered ${res.status}${code ? ` ${code}` : ''} ${text(res.json, 'status', 'message') ?? res.text.slice(0, 200)}`,
          },
        ];
      }
      return [{ account, currency, balance }];
    } catch (err) {
      return [{ account, error: (err as Error).message }];
    }
  }

  private expiredReason(objectType: NoticeObjectType): string {
    return objectType === 'collection' ? 'prompt_expired' : 'provider_error';
  }

  /** An amount as Airtel takes it: a number in major units. */
  private amount(minor: number): number {
    return Number(majorUnits(minor, exponentOf(this.deps.catalogue, this.settings.currency)));
  }

  /** The number without its country code, as Airtel wants it. */
  private national(phone: string): string {
    const digits = this.deps.catalogue.market(this.settings.country)?.phone.national_digits ?? 9;
    return phone.replace(/\D/g, '').slice(-digits);
  }

  /**
   * One call with the token, and Airtel's country and currency. A 401 or 403 about the token: one new token and
   * one retry (the call was refused, so nothing happened).
   */
  private call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<OperatorResponse> {
    const send = (token: string) =>
      callOperator(this.name, {
        method,
        url: `${this.settings.base_url}${path}`,
        headers: {
          authorization: `Bearer ${token}`,
          'x-country': this.settings.country,
          'x-currency': this.settings.currency,
        },
        body,
        timeoutMs: this.deps.timeoutMs,
      });
    return withToken(
      this.tokens,
      send,
      (res) => (res.status === 401 || res.status === 403) && field(res.json, 'error') !== undefined,
    );
  }

  /**
   * Reads the answer to a POST: accepted, a duplicate of an earlier attempt, or refused for good. Ambiguous
   * answers, gateway errors and 5xx throw, so the call is made again later (our id makes it safe).
   */
  private answer(
    res: OperatorResponse,
    objectType: NoticeObjectType,
    id: string,
  ): { success: boolean; duplicate: boolean } {
    if (res.status >= 500 || res.status === 408 || res.status === 429)
      throw new ProviderError(`${this.name}: answered ${res.status}`);
    if (res.status !== 200) {
      this.deps.log.error(
        { object_type: objectType, object_id: id, status: res.status },
        `Airtel refused the request: ${res.text.slice(0, 200)}`,
      );
      return { success: false, duplicate: false };
    }
    if (field(res.json, 'status', 'success') === true) return { success: true, duplicate: false };
    const found = codes(res.json);
    if (found.some((c) => DUPLICATE.has(c))) return { success: objectType !== 'payout', duplicate: true };
    if (found.length === 0 || found.some((c) => AMBIGUOUS.has(c)))
      throw new ProviderError(`${this.name}: outcome ambiguous (${found.join(', ') || 'no code'}); asked again later`);
    this.deps.log.warn(
      { object_type: objectType, object_id: id, codes: found, message: text(res.json, 'status', 'message') },
      'Airtel refused the request',
    );
    return { success: false, duplicate: false };
  }
}

export const AIRTEL_MONEY: ConnectorKind<AirtelSettings> = {
  type: 'airtel_money',
  schema: Entry,
  railProblem: (settings, market, currency, rail) => {
    if (rail !== 'airtel_money') return 'an airtel_money connector runs airtel_money rails only';
    if (market !== settings.country || currency !== settings.currency)
      return `this connector serves ${settings.country} in ${settings.currency} (its country and currency)`;
    return undefined;
  },
  create: (settings, deps) => new AirtelConnector(settings, deps),
};
