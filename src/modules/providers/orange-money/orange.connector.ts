// Orange Money Web Payment: a collection opens a payment session (`webpayment`, under the merchant key Orange issues
// per country), whose payment_url the payer opens to confirm with a one-time code; Orange then notifies notif_url with
// the session's notif_token, and the transaction status call (order_id, amount, pay_token) confirms it before anything
// moves. The Web Payment API has no refund and no payout call: the catalogue turns both off for orange_money. Setup,
// field limits and choices: docs/connectors/orange-money.md.
import { createHash, randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import { ApiError } from '../../../platform/errors.js';
import { majorUnits } from '../../../platform/money.js';
import {
  connectorEntry,
  exponentOf,
  Secret,
  type ConnectorCommon,
  type ConnectorDeps,
  type ConnectorKind,
} from '../connector-config.js';
import { callOperator, field, readToken, text, withToken, type OperatorResponse } from '../operator-http.js';
import { TokenCache } from '../operator-tokens.js';
import {
  ProviderError,
  type CallbackReading,
  type CollectionOrder,
  type NoticeObjectType,
  type OperatorConnector,
  type ProviderAck,
  type ProviderStatus,
} from '../provider.js';
import {
  latestWebpayment,
  recordWebpayment,
  webpaymentByNotifToken,
  webpaymentByPayToken,
  type Webpayment,
} from './orange.repository.js';

/** Orange's documented limits: order_id and reference at most 30 characters, each of the three URLs at most 120. */
export const ORANGE_LIMITS = { order_id: 30, reference: 30, url: 120 } as const;

const Url = (description: string) => Type.String({ format: 'uri', maxLength: ORANGE_LIMITS.url, description });

const Entry = connectorEntry('orange_money', {
  client_id: Secret("The Orange Developer application's client_id."),
  client_secret: Secret("The Orange Developer application's client_secret."),
  merchant_key: Secret("The merchant key Orange issued for this country's merchant account."),
  country: Type.String({ pattern: '^[A-Z]{2}$', description: 'The one country this merchant key serves.' }),
  currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'That country’s currency (XOF).' }),
  webpay_path: Type.Optional(
    Type.String({
      pattern: '^(/[a-z0-9-]+)+$',
      description:
        'The Web Payment API path under base_url; default /orange-money-webpay/{country in lower case}/v1 (Orange’s sandbox: /orange-money-webpay/dev/v1).',
    }),
  ),
  order_currency: Type.Optional(
    Type.String({
      pattern: '^[A-Z]{3}$',
      description: 'The currency code sent to Orange, when it is not `currency` (Orange’s sandbox takes only OUV).',
    }),
  ),
  return_url: Type.Optional(Url('Where Orange sends the payer after paying; default PUBLIC_BASE_URL.')),
  cancel_url: Type.Optional(Url('Where Orange sends the payer who cancels; default PUBLIC_BASE_URL.')),
});

export interface OrangeSettings extends ConnectorCommon {
  type: 'orange_money';
  client_id: string;
  client_secret: string;
  merchant_key: string;
  country: string;
  currency: string;
  webpay_path?: string | undefined;
  order_currency?: string | undefined;
  return_url?: string | undefined;
  cancel_url?: string | undefined;
}

/** Orange does not say it repeats a notification: open sessions are asked about after this many quiet seconds. */
export const ORANGE_DEFAULT_POLL_SECONDS = 10;

/** The callback sub-path of a notification; our id follows it (Orange's notification names none of our ids). */
const NOTIF_PATH = 'notif';

/** Characters of our id in base 36: 36^25 > 2^128, so every UUID fits. */
const ID_CHARS = 25;
const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Our id (a UUID) in base 36, 25 characters: what order_id and notif_url carry within Orange's limits. */
export function orangeIdPart(id: string): string {
  return BigInt(`0x${id.replace(/-/g, '')}`)
    .toString(36)
    .padStart(ID_CHARS, '0');
}

/** The UUID an `orangeIdPart` stands for, or undefined when it is not one. */
export function idFromOrangePart(part: string): string | undefined {
  if (part.length !== ID_CHARS || ![...part].every((c) => BASE36.includes(c))) return undefined;
  let n = 0n;
  for (const c of part) n = n * 36n + BigInt(BASE36.indexOf(c));
  if (n >= 1n << 128n) return undefined;
  const hex = n.toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * A new order_id for one webpayment call: our id in base 36 and 5 random characters, 30 in all. Each call gets its
 * own, so a call sent again (its answer lost) never meets Orange's rule that an order_id is unique; the session of a
 * lost answer cannot be paid, since nobody has its payment_url.
 */
export function newOrderId(id: string): string {
  const suffix = Array.from(randomBytes(ORANGE_LIMITS.order_id - ID_CHARS), (b) => BASE36[b % 36]).join('');
  return `${orangeIdPart(id)}${suffix}`;
}

/** The notif_url Orange is sent for a collection: the connector's callback base, `/notif/`, our id in base 36. */
export function notifUrl(callbackBase: string, id: string): string {
  return `${callbackBase}/${NOTIF_PATH}/${orangeIdPart(id)}`;
}

/** The page the payer is sent to when neither return_url nor cancel_url is set: PUBLIC_BASE_URL. */
function publicBase(callbackBase: string): string {
  const at = callbackBase.indexOf('/v1/providers/');
  return at < 0 ? callbackBase : callbackBase.slice(0, at);
}

/** The reference shown on Orange's payment page: the collection's, in at most 30 printable characters. */
function orangeReference(reference: string): string {
  return (
    reference
      .replace(/[^\x20-\x7e]/g, ' ')
      .slice(0, ORANGE_LIMITS.reference)
      .trim() || 'Payment'
  );
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

/** Orange's API gateway codes for a token it does not take (41 invalid, 42 expired): the call was not acted on. */
const TOKEN_REFUSED = new Set([41, 42]);

export class OrangeConnector implements OperatorConnector {
  readonly name: string;
  readonly callbackToken: string;
  readonly pollSeconds: number;
  private readonly tokens: TokenCache;
  private readonly webpay: string;

  constructor(
    private readonly settings: OrangeSettings,
    private readonly deps: ConnectorDeps,
  ) {
    this.name = settings.name;
    this.callbackToken = settings.callback_token;
    this.pollSeconds = settings.poll_seconds ?? ORANGE_DEFAULT_POLL_SECONDS;
    this.webpay = `${settings.base_url}${settings.webpay_path ?? `/orange-money-webpay/${settings.country.toLowerCase()}/v1`}`;
    this.tokens = new TokenCache(
      async () => {
        const res = await callOperator(this.name, {
          method: 'POST',
          url: `${settings.base_url}/oauth/v3/token`,
          headers: {
            authorization: `Basic ${Buffer.from(`${settings.client_id}:${settings.client_secret}`).toString('base64')}`,
          },
          form: { grant_type: 'client_credentials' },
          timeoutMs: deps.timeoutMs,
        });
        return readToken(`${this.name}: the token request`, res, 3600);
      },
      { ...deps, connector: settings.name, scope: 'default' },
    );
  }

  callbackUrls(): string[] {
    return [`${this.deps.callbackBase}/${NOTIF_PATH}/{our id in base 36}`];
  }

  async initiateCollection(order: CollectionOrder): Promise<ProviderAck> {
    const orderId = newOrderId(order.id);
    const amount = Number(majorUnits(order.amount, exponentOf(this.deps.catalogue, order.currency)));
    const base = publicBase(this.deps.callbackBase);
    const res = await this.call('/webpayment', {
      merchant_key: this.settings.merchant_key,
      currency: this.settings.order_currency ?? order.currency,
      order_id: orderId,
      amount,
      return_url: this.settings.return_url ?? base,
      cancel_url: this.settings.cancel_url ?? base,
      notif_url: notifUrl(this.deps.callbackBase, order.id),
      lang: this.deps.catalogue.market(order.market)?.language ?? 'fr',
      reference: orangeReference(order.reference),
    });
    if (res.status === 201 || res.status === 200) {
      const payToken = text(res.json, 'pay_token');
      const paymentUrl = text(res.json, 'payment_url');
      const notifToken = text(res.json, 'notif_token');
      if (payToken === undefined || notifToken === undefined || paymentUrl === undefined || !isWebUrl(paymentUrl)) {
        // Nobody has this session's page, so it cannot be paid: a new session is asked for later.
        throw new ProviderError(
          `${this.name}: webpayment answered ${res.status} without a session: ${res.text.slice(0, 200)}`,
        );
      }
      await recordWebpayment(this.deps.db, order.workspaceId, this.name, {
        collection_id: order.id,
        order_id: orderId,
        amount,
        pay_token: payToken,
        payment_url: paymentUrl,
        notifTokenHash: sha256(notifToken),
      });
      return { reference: payToken, status: 'pending', redirectUrl: paymentUrl };
    }
    if (res.status >= 500 || res.status === 408 || res.status === 429)
      throw new ProviderError(`${this.name}: webpayment answered ${res.status} ${res.text.slice(0, 200)}`);
    this.deps.log.error(
      { object_type: 'collection', object_id: order.id, status: res.status, code: field(res.json, 'code') },
      `Orange refused the webpayment: ${res.text.slice(0, 200)}`,
    );
    return { reference: undefined, status: 'failed', reason: 'provider_refused' };
  }

  /**
   * Orange's Web Payment API has no refund call. The catalogue turns refunds off for orange_money, so only the system
   * refund of a late payment (workspace policy `refund`) gets here: it fails, and the payment stays credited.
   */
  initiateRefund(): Promise<ProviderAck> {
    return this.unsupported('refund');
  }

  /** Nor a payout call. */
  initiatePayout(): Promise<ProviderAck> {
    return this.unsupported('payout');
  }

  /**
   * A collection is asked about by the session Orange opened for it, which we keep under our id: an initiation whose
   * answer never came has none, and is sent again (a session nobody has the page of cannot be paid).
   */
  findsByOurId(objectType: NoticeObjectType): boolean {
    return objectType === 'collection';
  }

  async queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
    reference: string,
  ): Promise<ProviderStatus | undefined> {
    if (objectType !== 'collection') return undefined;
    const session =
      reference === ''
        ? await latestWebpayment(this.deps.db, this.name, objectId)
        : await webpaymentByPayToken(this.deps.db, this.name, objectId, reference);
    if (!session) return undefined;
    const res = await this.call('/transactionstatus', {
      order_id: session.order_id,
      amount: session.amount,
      pay_token: session.pay_token,
    });
    if (res.status === 404) return undefined;
    if (res.status !== 200 && res.status !== 201)
      throw new ProviderError(`${this.name}: transactionstatus answered ${res.status} ${res.text.slice(0, 200)}`);
    if (text(res.json, 'order_id') !== undefined && text(res.json, 'order_id') !== session.order_id)
      throw new ProviderError(`${this.name}: transactionstatus answered about another order_id`);
    return { objectType, objectId, ...this.sessionView(session), ...this.reading(objectId, res.json) };
  }

  /**
   * A notification, at notif_url (`notif/{our id in base 36}`): believed to come from Orange only when its notif_token
   * is the one Orange gave us for that collection's session, and even then only once the status call agrees.
   */
  async readCallback(path: string, body: unknown): Promise<CallbackReading> {
    const [kind, part, ...rest] = path.split('/');
    const id = kind === NOTIF_PATH && rest.length === 0 ? idFromOrangePart(part ?? '') : undefined;
    if (id === undefined) throw new ApiError('not_found', 'No Orange Money notification is received at this address.');
    const token = text(body, 'notif_token');
    if (token === undefined || text(body, 'status') === undefined)
      throw new ApiError('validation_failed', 'An Orange Money notification carries status and notif_token.');
    const session = await webpaymentByNotifToken(this.deps.db, this.name, id, sha256(token));
    // A wrong notif_token is answered as a wrong address: nothing is asked, nothing changes.
    if (!session)
      throw new ApiError('not_found', 'No Orange Money notification with this notif_token is expected here.');
    return {
      claim: { objectType: 'collection', objectId: id, reference: session.pay_token, ...this.reading(id, body) },
      reply: {},
    };
  }

  /** An amount Orange can take: whole units of the currency. */
  amountProblem(amount: number, currency: string, exponent: number): string | undefined {
    const unit = 10 ** exponent;
    return amount % unit === 0
      ? undefined
      : `Orange Money takes whole ${currency}: the amount must be a multiple of ${unit}.`;
  }

  private sessionView(session: Webpayment): Pick<ProviderStatus, 'reference' | 'redirectUrl'> {
    return { reference: session.pay_token, redirectUrl: session.payment_url };
  }

  /** Orange's statuses (of the status call and of a notification) in our terms. */
  private reading(objectId: string, body: unknown): Pick<ProviderStatus, 'status' | 'reason' | 'receipt'> {
    const status = text(body, 'status');
    switch (status ?? '') {
      case 'SUCCESS':
        return { status: 'successful', receipt: text(body, 'txnid') };
      // Orange does not say why a payment failed (a wrong code, a balance too low, a limit).
      case 'FAILED':
        return { status: 'failed', reason: 'provider_error' };
      // The payer confirmed after the session's time ran out.
      case 'EXPIRED':
        return { status: 'failed', reason: 'prompt_expired' };
      // The payer confirmed; Orange is moving the money.
      case 'PENDING':
        return { status: 'processing' };
      case 'INITIATED':
        return { status: 'pending' };
      default:
        this.deps.log.warn(
          { object_type: 'collection', object_id: objectId, status },
          'Orange reported a status it does not document; taken as pending',
        );
        return { status: 'pending' };
    }
  }

  private unsupported(kind: 'refund' | 'payout'): Promise<ProviderAck> {
    this.deps.log.error(
      { kind },
      `Orange Money Web Payment has no ${kind} call: turn ${kind}s off for this rail in the catalogue`,
    );
    return Promise.resolve({ reference: undefined, status: 'failed', reason: 'provider_refused' });
  }

  /** One call to the Web Payment API with the token; a token Orange refuses (41, 42): one new token, one retry. */
  private call(path: string, body: unknown): Promise<OperatorResponse> {
    const send = (token: string) =>
      callOperator(this.name, {
        method: 'POST',
        url: `${this.webpay}${path}`,
        headers: { authorization: `Bearer ${token}` },
        body,
        timeoutMs: this.deps.timeoutMs,
      });
    return withToken(
      this.tokens,
      send,
      (res) => res.status === 401 && TOKEN_REFUSED.has(Number(field(res.json, 'code'))),
    );
  }
}

function isWebUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

export const ORANGE_MONEY: ConnectorKind<OrangeSettings> = {
  type: 'orange_money',
  schema: Entry,
  railProblem: (settings, market, currency, rail) => {
    if (rail !== 'orange_money') return 'an orange_money connector runs orange_money rails only';
    if (market !== settings.country || currency !== settings.currency)
      return `this connector serves ${settings.country} in ${settings.currency} (its merchant key's country and currency)`;
    return undefined;
  },
  check: (settings, callbackBase) => {
    const longest = notifUrl(callbackBase, '00000000-0000-0000-0000-000000000000');
    if (longest.length > ORANGE_LIMITS.url)
      return `field callback_token: the notif_url Orange is sent (${longest.length} characters: PUBLIC_BASE_URL, the name and the callback_token) must be at most ${ORANGE_LIMITS.url}; shorten the callback_token or the name`;
    const base = publicBase(callbackBase);
    if ((settings.return_url === undefined || settings.cancel_url === undefined) && base.length > ORANGE_LIMITS.url)
      return `fields return_url and cancel_url: PUBLIC_BASE_URL is longer than ${ORANGE_LIMITS.url} characters; set both`;
    return undefined;
  },
  create: (settings, deps) => new OrangeConnector(settings, deps),
};
