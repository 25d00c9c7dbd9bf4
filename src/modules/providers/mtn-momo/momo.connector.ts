// MTN MoMo Open API: collections by RequestToPay, payouts by Transfer and refunds by Refund, each created under an
// X-Reference-Id that is our object's id (so a retry finds it already there, 409, and never prompts twice), and
// read back by GET on that id. Callbacks are unsigned and sent once, never retried: open operations are also
// polled (`pollSeconds`). Setup, field mapping and choices: docs/connectors/mtn-momo.md.
import { Type } from 'typebox';
import { ApiError } from '../../../platform/errors.js';
import { isUuid } from '../../../platform/ids.js';
import {
  connectorEntry,
  exponentOf,
  Secret,
  type ConnectorCommon,
  type ConnectorDeps,
  type ConnectorKind,
} from '../connector-config.js';
import { majorUnits } from '../../../platform/money.js';
import {
  balanceMinorUnits,
  callOperator,
  readToken,
  field,
  msisdn,
  text,
  withToken,
  type OperatorResponse,
} from '../operator-http.js';
import { TokenCache } from '../operator-tokens.js';
import {
  ProviderError,
  type CallbackClaim,
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

const Product = (name: string) =>
  Type.Object(
    {
      subscription_key: Secret(`The ${name} product's Ocp-Apim-Subscription-Key.`),
      api_user: Type.String({ format: 'uuid', description: `The ${name} API user (a UUID).` }),
      api_key: Secret(`The ${name} API user's key.`),
    },
    { additionalProperties: false },
  );

const Entry = connectorEntry('mtn_momo', {
  target_environment: Type.String({
    pattern: '^[a-z]{3,40}$',
    description: 'X-Target-Environment: sandbox, mtnghana, mtnuganda…',
  }),
  collection: Product('collection'),
  disbursement: Product('disbursement'),
});

interface ProductCredentials {
  subscription_key: string;
  api_user: string;
  api_key: string;
}

export interface MomoSettings extends ConnectorCommon {
  type: 'mtn_momo';
  target_environment: string;
  collection: ProductCredentials;
  disbursement: ProductCredentials;
}

/** MoMo sends each callback once and never again: open operations are asked about after this many quiet seconds. */
export const MOMO_DEFAULT_POLL_SECONDS = 10;

type Product = 'collection' | 'disbursement';

/** MoMo's paths for each kind of operation, and the product it belongs to. */
const OPERATIONS: Record<NoticeObjectType, { product: Product; path: string }> = {
  collection: { product: 'collection', path: '/collection/v1_0/requesttopay' },
  payout: { product: 'disbursement', path: '/disbursement/v1_0/transfer' },
  refund: { product: 'disbursement', path: '/disbursement/v1_0/refund' },
};

/** The callback sub-path of each kind (X-Callback-Url is set per request). */
const CALLBACK_PATHS: Record<NoticeObjectType, string> = {
  collection: 'requesttopay',
  payout: 'transfer',
  refund: 'refund',
};

/** MoMo's failure reasons, as our stable codes: collections. */
const COLLECTION_REASONS: Record<string, string> = {
  APPROVAL_REJECTED: 'payer_declined',
  TRANSACTION_CANCELED: 'payer_declined',
  PAYMENT_NOT_APPROVED: 'payer_declined',
  EXPIRED: 'prompt_expired',
  COULD_NOT_PERFORM_TRANSACTION: 'prompt_expired',
  NOT_ENOUGH_FUNDS: 'insufficient_funds',
  PAYER_LIMIT_REACHED: 'payer_limit_reached',
  PAYER_NOT_FOUND: 'payer_not_found',
  SENDER_ACCOUNT_NOT_ACTIVE: 'payer_not_found',
  PAYEE_NOT_ALLOWED_TO_RECEIVE: 'provider_refused',
  NOT_ALLOWED: 'provider_refused',
  INTERNAL_PROCESSING_ERROR: 'provider_error',
};

/** … payouts (the payee is the recipient; the payer is our own account). */
const PAYOUT_REASONS: Record<string, string> = {
  APPROVAL_REJECTED: 'recipient_declined',
  PAYEE_NOT_FOUND: 'invalid_account',
  PAYEE_NOT_ALLOWED_TO_RECEIVE: 'invalid_account',
  NOT_ENOUGH_FUNDS: 'insufficient_provider_balance',
  PAYER_LIMIT_REACHED: 'recipient_limit_reached',
  NOT_ALLOWED: 'provider_refused',
  INTERNAL_PROCESSING_ERROR: 'provider_error',
};

/** … refunds. */
const REFUND_REASONS: Record<string, string> = {
  NOT_ENOUGH_FUNDS: 'insufficient_provider_balance',
  NOT_ALLOWED: 'provider_refused',
  INTERNAL_PROCESSING_ERROR: 'provider_error',
};

const REASONS: Record<NoticeObjectType, Record<string, string>> = {
  collection: COLLECTION_REASONS,
  payout: PAYOUT_REASONS,
  refund: REFUND_REASONS,
};

/** Errors MoMo answers a create with that say the request itself can never pass (our configuration, or the number). */
const REFUSALS = new Set([
  'NOT_ALLOWED',
  'NOT_ALLOWED_TARGET_ENVIRONMENT',
  'INVALID_CALLBACK_URL_HOST',
  'INVALID_CURRENCY',
  'PAYER_NOT_FOUND',
  'PAYEE_NOT_FOUND',
]);

/**
 * MoMo wants an X-Reference-Id of UUID version 4; our ids are version 7. Both have the RFC 4122 variant, so
 * writing 4 in place of the version digit is reversible and keeps every other bit: the operator-side id is
 * still our object's id, and a retry sends the same one.
 */
export function momoReferenceId(id: string): string {
  return `${id.slice(0, 14)}4${id.slice(15)}`;
}

/** `reason` is a string in MoMo's answers today, and was `{code, message}` in its published schema: both are read. */
function reasonCode(body: unknown): string | undefined {
  return text(body, 'reason') ?? text(body, 'reason', 'code');
}

/** Payer message and payee note: at most 160 characters, without the punctuation MoMo refuses (an apostrophe, say). */
function note(value: string): string {
  return (
    value
      .replace(/[^A-Za-z0-9 .,_:/#-]/g, ' ')
      .slice(0, 160)
      .trim() || 'Payment'
  );
}

export class MomoConnector implements OperatorConnector {
  readonly name: string;
  readonly callbackToken: string;
  readonly pollSeconds: number;
  private readonly tokens: Record<Product, TokenCache>;

  constructor(
    private readonly settings: MomoSettings,
    private readonly deps: ConnectorDeps,
  ) {
    this.name = settings.name;
    this.callbackToken = settings.callback_token;
    this.pollSeconds = settings.poll_seconds ?? MOMO_DEFAULT_POLL_SECONDS;
    this.tokens = { collection: this.tokenCache('collection'), disbursement: this.tokenCache('disbursement') };
  }

  callbackUrls(): string[] {
    return Object.values(CALLBACK_PATHS).map((p) => `${this.deps.callbackBase}/${p}`);
  }

  initiateCollection(order: CollectionOrder): Promise<ProviderAck> {
    return this.create('collection', order.id, order.amount, order.currency, {
      payer: { partyIdType: 'MSISDN', partyId: msisdn(order.customer.phone_number ?? '') },
      payerMessage: note(order.reference),
      payeeNote: note(order.reference),
    });
  }

  initiatePayout(order: PayoutOrder): Promise<ProviderAck> {
    if (order.beneficiary.phone_number === null)
      return Promise.resolve({ reference: undefined, status: 'failed', reason: 'invalid_account' });
    return this.create('payout', order.id, order.amount, order.currency, {
      payee: { partyIdType: 'MSISDN', partyId: msisdn(order.beneficiary.phone_number) },
      payerMessage: note(order.reference),
      payeeNote: note(order.reference),
    });
  }

  initiateRefund(order: RefundOrder): Promise<ProviderAck> {
    if (order.collectionReference === null)
      return Promise.resolve({ reference: undefined, status: 'failed', reason: 'provider_refused' });
    return this.create('refund', order.id, order.amount, order.currency, {
      payerMessage: 'Refund',
      payeeNote: 'Refund',
      referenceIdToRefund: order.collectionReference,
    });
  }

  /** Every MoMo operation is keyed by the X-Reference-Id we derive from our id (`momoReferenceId`). */
  findsByOurId(): boolean {
    return true;
  }

  async queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
    reference: string,
  ): Promise<ProviderStatus | undefined> {
    const { product, path } = OPERATIONS[objectType];
    const referenceId = reference || momoReferenceId(objectId);
    const res = await this.call(product, 'GET', `${path}/${encodeURIComponent(referenceId)}`);
    if (res.status === 404) return undefined;
    if (res.status !== 200)
      throw new ProviderError(`${this.name}: status query answered ${res.status} ${res.text.slice(0, 200)}`);
    return { objectType, objectId, reference: referenceId, ...this.reading(objectType, objectId, res.json) };
  }

  async readCallback(path: string, body: unknown): Promise<CallbackReading> {
    const objectType = (Object.keys(CALLBACK_PATHS) as NoticeObjectType[]).find((k) => CALLBACK_PATHS[k] === path);
    const objectId = text(body, 'externalId');
    if (objectType === undefined) throw new ApiError('not_found', `No MoMo callback is sent to '${path}'.`);
    if (objectId === undefined || !isUuid(objectId) || typeof field(body, 'status') !== 'string') {
      throw new ApiError('validation_failed', 'A MoMo callback carries externalId (our id) and status.');
    }
    const claim: CallbackClaim = {
      objectType,
      objectId,
      reference: momoReferenceId(objectId),
      ...this.reading(objectType, objectId, body),
    };
    return { claim, reply: {} };
  }

  /**
   * The balance of each product's account: GET /{product}/v1_0/account/balance with that product's token and
   * subscription key answers `{availableBalance, currency}`. Payouts and refunds are paid from the disbursement account.
   */
  async readBalances(): Promise<FloatReading[]> {
    return Promise.all(
      (['collection', 'disbursement'] as const).map(async (product): Promise<FloatReading> => {
        try {
          const res = await this.call(product, 'GET', `/${product}/v1_0/account/balance`);
          const currency = text(res.json, 'currency');
          const exponent = currency === undefined ? 2 : exponentOf(this.deps.catalogue, currency);
          const balance = balanceMinorUnits(field(res.json, 'availableBalance'), exponent);
          if (res.status !== 200 || currency === undefined || balance === undefined)
            return { account: product, error: `MoMo answered ${res.status} ${res.text.slice(0, 200)}` };
          return { account: product, currency, balance };
        } catch (err) {
          return { account: product, error: (err as Error).message };
        }
      }),
    );
  }

  /** A token per product (its own credentials), shared by all nodes under the scope of the product's name. */
  private tokenCache(product: Product): TokenCache {
    const credentials = this.settings[product];
    return new TokenCache(
      async () => {
        const res = await callOperator(this.name, {
          method: 'POST',
          url: `${this.settings.base_url}/${product}/token/`,
          headers: {
            authorization: `Basic ${Buffer.from(`${credentials.api_user}:${credentials.api_key}`).toString('base64')}`,
            'ocp-apim-subscription-key': credentials.subscription_key,
          },
          timeoutMs: this.deps.timeoutMs,
        });
        return readToken(`${this.name}: the ${product} token request`, res, 3600);
      },
      { ...this.deps, connector: this.name, scope: product },
    );
  }

  /**
   * One call to a product's API with its token. A 401 that is not the gateway's subscription-key refusal means
   * the token is no longer good: one new token, one retry (the request was refused, so nothing was created).
   */
  private call(
    product: Product,
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string> = {},
    body?: unknown,
  ): Promise<OperatorResponse> {
    const send = (token: string) =>
      callOperator(this.name, {
        method,
        url: `${this.settings.base_url}${path}`,
        headers: {
          authorization: `Bearer ${token}`,
          'x-target-environment': this.settings.target_environment,
          'ocp-apim-subscription-key': this.settings[product].subscription_key,
          ...headers,
        },
        body,
        timeoutMs: this.deps.timeoutMs,
      });
    return withToken(
      this.tokens[product],
      send,
      (res) => res.status === 401 && field(res.json, 'statusCode') === undefined,
    );
  }

  private async create(
    objectType: NoticeObjectType,
    id: string,
    amount: number,
    currency: string,
    fields: Record<string, unknown>,
  ): Promise<ProviderAck> {
    const { product, path } = OPERATIONS[objectType];
    const referenceId = momoReferenceId(id);
    const res = await this.call(
      product,
      'POST',
      path,
      { 'x-reference-id': referenceId, 'x-callback-url': `${this.deps.callbackBase}/${CALLBACK_PATHS[objectType]}` },
      {
        amount: majorUnits(amount, exponentOf(this.deps.catalogue, currency)),
        // MTN's sandbox takes only EUR.
        currency: this.settings.target_environment === 'sandbox' ? 'EUR' : currency,
        externalId: id,
        ...fields,
      },
    );
    // 409 RESOURCE_ALREADY_EXIST: an earlier attempt got there (its answer was lost); the payer was prompted once.
    if (res.status === 202 || res.status === 409) return { reference: referenceId, status: 'pending' };
    const code = text(res.json, 'code');
    if (res.status === 400 || (code !== undefined && REFUSALS.has(code))) {
      this.deps.log.error(
        { object_type: objectType, object_id: id, status: res.status, code },
        `MoMo refused the request: ${res.text.slice(0, 200)}`,
      );
      return {
        reference: referenceId,
        status: 'failed',
        reason: REASONS[objectType][code ?? ''] ?? 'provider_refused',
      };
    }
    throw new ProviderError(`${this.name}: ${path} answered ${res.status} ${res.text.slice(0, 200)}`);
  }

  /** A MoMo status body (an answer to GET, or a callback) in our terms; a success carries the amount MoMo says moved. */
  private reading(
    objectType: NoticeObjectType,
    objectId: string,
    body: unknown,
  ): Pick<ProviderStatus, 'status' | 'reason' | 'receipt' | 'amount'> {
    const status = text(body, 'status');
    if (status === 'SUCCESSFUL')
      return {
        status: 'successful',
        receipt: text(body, 'financialTransactionId'),
        amount: text(body, 'amount') ?? '',
      };
    if (status === 'FAILED')
      return { status: 'failed', reason: REASONS[objectType][reasonCode(body) ?? ''] ?? 'provider_error' };
    if (status === 'PENDING' || status === 'CREATED') return { status: 'pending' };
    this.deps.log.warn(
      { object_type: objectType, object_id: objectId, status },
      'MoMo reported a status it does not document; taken as pending',
    );
    return { status: 'pending' };
  }
}

export const MTN_MOMO: ConnectorKind<MomoSettings> = {
  type: 'mtn_momo',
  schema: Entry,
  railProblem: (_settings, _market, _currency, rail) =>
    rail === 'mtn_momo' ? undefined : 'an mtn_momo connector runs mtn_momo rails only',
  create: (settings, deps) => new MomoConnector(settings, deps),
};
