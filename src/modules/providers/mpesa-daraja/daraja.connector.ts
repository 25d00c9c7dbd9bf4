// Safaricom M-Pesa Daraja: collections by STK Push (confirmed by STK Push Query), payouts by B2C, refunds by
// Reversal; B2C and Reversal outcomes are confirmed by Transaction Status, which Daraja answers by callback.
// Daraja signs nothing and its STK Push takes no idempotency key, so the choices below keep a payer from being
// prompted twice: see docs/connectors/mpesa-daraja.md. What Daraja sends back (its callbacks, its result codes) is read
// in daraja.callbacks.ts.
import { constants, createPublicKey, publicEncrypt } from 'node:crypto';
import { Type } from 'typebox';
import { uuidv7 } from '../../../platform/ids.js';
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
  callOperator,
  readToken,
  msisdn,
  OperatorNoAnswer,
  text,
  withToken,
  type OperatorResponse,
} from '../operator-http.js';
import { TokenCache } from '../operator-tokens.js';
import {
  ANSWER_BY_CALLBACK,
  ProviderError,
  type CallbackClaim,
  type CallbackReading,
  type CollectionOrder,
  type NoticeObjectType,
  type OperatorConnector,
  type PayoutOrder,
  type ProviderAck,
  type ProviderStatus,
  type RefundOrder,
} from '../provider.js';
import { readDarajaCallback, STK_REASONS } from './daraja.callbacks.js';
import * as repo from './daraja.repository.js';

const Entry = connectorEntry('mpesa_daraja', {
  consumer_key: Secret("The Daraja app's consumer key."),
  consumer_secret: Secret("The Daraja app's consumer secret."),
  shortcode: Type.String({
    pattern: '^[0-9]{5,7}$',
    description: 'The Lipa na M-Pesa Online shortcode (BusinessShortCode).',
  }),
  passkey: Secret('The Lipa na M-Pesa Online passkey.'),
  transaction_type: Type.Enum(['CustomerPayBillOnline', 'CustomerBuyGoodsOnline'], { description: 'Paybill or Till.' }),
  till_number: Type.Optional(
    Type.String({ pattern: '^[0-9]{5,7}$', description: 'For CustomerBuyGoodsOnline: the till (PartyB).' }),
  ),
  b2c: Type.Object(
    {
      shortcode: Type.String({ pattern: '^[0-9]{5,7}$', description: 'The B2C shortcode (PartyA of payouts).' }),
      initiator_name: Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'The API initiator of B2C, Reversal and Transaction Status.',
      }),
      // Either the credential as Safaricom's portal makes it, or the password and the certificate to make it with.
      security_credential: Type.Optional(
        Secret("The initiator's password encrypted with Safaricom's certificate, Base64, as the portal gives it."),
      ),
      initiator_password: Type.Optional(
        Secret(
          "The initiator's password: the connector encrypts it with `certificate` (instead of security_credential).",
        ),
      ),
      certificate: Type.Optional(
        Secret("M-Pesa's public certificate (PEM) for the environment, to encrypt initiator_password with."),
      ),
    },
    { additionalProperties: false },
  ),
});

export interface DarajaSettings extends ConnectorCommon {
  type: 'mpesa_daraja';
  consumer_key: string;
  consumer_secret: string;
  shortcode: string;
  passkey: string;
  transaction_type: 'CustomerPayBillOnline' | 'CustomerBuyGoodsOnline';
  till_number?: string | undefined;
  b2c: {
    shortcode: string;
    initiator_name: string;
    security_credential?: string | undefined;
    initiator_password?: string | undefined;
    certificate?: string | undefined;
  };
}

/**
 * The SecurityCredential of an initiator: given ready-made, or its password encrypted with M-Pesa's certificate as
 * Safaricom documents it (RSA PKCS#1 v1.5, Base64). PKCS#1 v1.5 is randomised: each one differs, and each decrypts
 * to the password.
 */
export function securityCredential(b2c: DarajaSettings['b2c']): string {
  if (b2c.security_credential !== undefined) return b2c.security_credential;
  if (b2c.initiator_password === undefined || b2c.certificate === undefined)
    throw new Error('b2c needs security_credential, or initiator_password with certificate');
  return publicEncrypt(
    { key: createPublicKey(b2c.certificate), padding: constants.RSA_PKCS1_PADDING },
    Buffer.from(b2c.initiator_password, 'utf8'),
  ).toString('base64');
}

/** Why the b2c block cannot make a SecurityCredential (a message naming the field), or undefined. */
function credentialProblem(b2c: DarajaSettings['b2c']): string | undefined {
  const ready = b2c.security_credential !== undefined;
  const password = b2c.initiator_password !== undefined;
  if (ready && (password || b2c.certificate !== undefined))
    return 'field b2c.security_credential is the encrypted password: give it, or b2c.initiator_password with b2c.certificate, not both';
  if (ready) return undefined;
  if (!password) return 'field b2c.security_credential (or b2c.initiator_password with b2c.certificate) is required';
  if (b2c.certificate === undefined) return 'field b2c.certificate is required with b2c.initiator_password';
  try {
    const key = createPublicKey(b2c.certificate);
    if (key.asymmetricKeyType !== 'rsa') return 'field b2c.certificate is not an RSA certificate';
  } catch {
    return 'field b2c.certificate is not a PEM certificate (-----BEGIN CERTIFICATE-----)';
  }
  return undefined;
}

const PATHS = {
  token: '/oauth/v1/generate?grant_type=client_credentials',
  stkPush: '/mpesa/stkpush/v1/processrequest',
  stkQuery: '/mpesa/stkpushquery/v1/query',
  b2c: '/mpesa/b2c/v3/paymentrequest',
  reversal: '/mpesa/reversal/v1/request',
  transactionStatus: '/mpesa/transactionstatus/v1/query',
  accountBalance: '/mpesa/accountbalance/v1/query',
};

/** Daraja's gateway refusing a request before looking at it (spike arrest, quota): safe to send again later. */
const THROTTLED = new Set(['500.003.02', '500.003.03']);

/** Words Daraja refuses in a callback URL (its URL rules; the sandbox rejects a URL with "mpesa" in it). */
export const FORBIDDEN_URL_WORDS = /m-?pesa|safaricom|exec?|cmd|sql|query/i;

/** Nairobi time (UTC+3, no daylight saving) as Daraja's YYYYMMDDHHmmss. */
export function darajaTimestamp(at: Date): string {
  return new Date(at.getTime() + 3 * 3_600_000).toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

export class DarajaConnector implements OperatorConnector {
  readonly name: string;
  readonly callbackToken: string;
  readonly pollSeconds: number | undefined;
  private readonly tokens: TokenCache;
  /** The initiator's SecurityCredential, made once. */
  private readonly credential: string;

  constructor(
    private readonly settings: DarajaSettings,
    private readonly deps: ConnectorDeps,
  ) {
    this.name = settings.name;
    this.callbackToken = settings.callback_token;
    this.pollSeconds = settings.poll_seconds;
    this.credential = securityCredential(settings.b2c);
    this.tokens = new TokenCache(
      async () => {
        const res = await callOperator(this.name, {
          method: 'GET',
          url: `${settings.base_url}${PATHS.token}`,
          headers: {
            authorization: `Basic ${Buffer.from(`${settings.consumer_key}:${settings.consumer_secret}`).toString('base64')}`,
          },
          timeoutMs: deps.timeoutMs,
        });
        return readToken(`${this.name}: the token request`, res, 3599);
      },
      { ...deps, connector: settings.name, scope: 'default' },
    );
  }

  callbackUrls(): string[] {
    return [
      'stk',
      'b2c-result',
      'b2c-timeout',
      'reversal-result',
      'reversal-timeout',
      'status-result',
      'status-timeout',
      'balance-result',
      'balance-timeout',
    ].map((k) => `${this.deps.callbackBase}/${k}/{id}`);
  }

  /** M-Pesa takes whole shillings. */
  amountProblem(amount: number, currency: string, exponent: number): string | undefined {
    if (amount % 10 ** exponent === 0) return undefined;
    return `M-Pesa moves whole ${currency} only: ${amount} minor units is ${majorUnits(amount, exponent)} ${currency}.`;
  }

  async initiateCollection(order: CollectionOrder): Promise<ProviderAck> {
    const phone = msisdn(order.customer.phone_number ?? '');
    let res: OperatorResponse;
    try {
      res = await this.call(PATHS.stkPush, {
        ...this.lipaNaMpesa(),
        TransactionType: this.settings.transaction_type,
        Amount: this.shillings(order.amount, order.currency),
        PartyA: phone,
        PartyB: this.settings.till_number ?? this.settings.shortcode,
        PhoneNumber: phone,
        CallBackURL: `${this.deps.callbackBase}/stk/${order.id}`,
        AccountReference: order.reference.replace(/[^A-Za-z0-9]/g, '').slice(0, 12) || 'Payment',
        TransactionDesc: 'Payment',
      });
    } catch (err) {
      if (!(err instanceof OperatorNoAnswer)) throw err;
      return this.waitForCallback('collection', order.id, err.message);
    }
    if (res.status === 200 && text(res.json, 'ResponseCode') === '0') {
      const reference = text(res.json, 'CheckoutRequestID');
      if (reference === undefined)
        return this.waitForCallback('collection', order.id, 'accepted without a CheckoutRequestID');
      return { reference, status: 'pending' };
    }
    const message = text(res.json, 'errorMessage') ?? res.text.slice(0, 200);
    if (/unable to lock subscriber/i.test(message))
      return { reference: undefined, status: 'failed', reason: 'payer_busy' };
    return this.unsafeToResend(res, 'collection', order.id);
  }

  /** B2C v3 carries our payout id as OriginatorConversationID: Daraja refuses a second one as a duplicate, so a retry is safe. */
  async initiatePayout(order: PayoutOrder): Promise<ProviderAck> {
    if (order.beneficiary.phone_number === null)
      return { reference: undefined, status: 'failed', reason: 'invalid_account' };
    const res = await this.call(PATHS.b2c, {
      OriginatorConversationID: order.id,
      InitiatorName: this.settings.b2c.initiator_name,
      SecurityCredential: this.credential,
      CommandID: 'BusinessPayment',
      Amount: this.shillings(order.amount, order.currency),
      PartyA: this.settings.b2c.shortcode,
      PartyB: msisdn(order.beneficiary.phone_number),
      Remarks: order.reference
        .replace(/[^A-Za-z0-9 ]/g, '')
        .slice(0, 100)
        .padEnd(2, '.'),
      QueueTimeOutURL: `${this.deps.callbackBase}/b2c-timeout/${order.id}`,
      ResultURL: `${this.deps.callbackBase}/b2c-result/${order.id}`,
      Occasion: '',
    });
    if (res.status === 200 && text(res.json, 'ResponseCode') === '0') return { reference: order.id, status: 'pending' };
    if (/duplicate originatorconversationid/i.test(text(res.json, 'errorMessage') ?? ''))
      return { reference: order.id, status: 'pending' };
    return this.refusedOrRetried(res, 'payout', order.id);
  }

  /**
   * Reversal of the collection's M-Pesa receipt. Reversal takes no idempotency key either: an unanswered one is
   * not sent again (a second reversal of the same receipt is refused with R000001, which would hide the first).
   */
  async initiateRefund(order: RefundOrder): Promise<ProviderAck> {
    if (order.collectionReceipt === null) {
      this.deps.log.error(
        { refund_id: order.id },
        'refund of a collection without an M-Pesa receipt: Reversal needs one',
      );
      return { reference: undefined, status: 'failed', reason: 'provider_refused' };
    }
    let res: OperatorResponse;
    try {
      res = await this.call(PATHS.reversal, {
        ...this.initiator(),
        CommandID: 'TransactionReversal',
        TransactionID: order.collectionReceipt,
        Amount: this.shillings(order.amount, order.currency),
        ReceiverParty: this.settings.shortcode,
        RecieverIdentifierType: '11',
        ResultURL: `${this.deps.callbackBase}/reversal-result/${order.id}`,
        QueueTimeOutURL: `${this.deps.callbackBase}/reversal-timeout/${order.id}`,
        Remarks: 'Refund',
        Occasion: '',
      });
    } catch (err) {
      if (!(err instanceof OperatorNoAnswer)) throw err;
      return this.waitForCallback('refund', order.id, err.message);
    }
    if (res.status === 200 && text(res.json, 'ResponseCode') === '0')
      return { reference: text(res.json, 'OriginatorConversationID'), status: 'pending' };
    return this.unsafeToResend(res, 'refund', order.id);
  }

  /**
   * STK Push and Reversal take no idempotency key, so a request Daraja may have acted on is never sent again: it
   * waits, pending, for its callback (whose URL names our id), or for expiry.
   */
  private waitForCallback(objectType: NoticeObjectType, id: string, why: string): ProviderAck {
    this.deps.log.warn(
      { object_type: objectType, object_id: id, why },
      'Daraja may have acted on this request; not sent again (it takes no idempotency key): waiting for its callback',
    );
    return { reference: undefined, status: 'pending' };
  }

  /**
   * The answer to an STK Push or Reversal that did not accept it. Refused for good (400, our credentials or
   * shortcode): failed. Refused before it was looked at (the gateway's throttling, or our token): tried again. Any
   * other error may come after Daraja acted (an internal error): it is not sent again.
   */
  private unsafeToResend(res: OperatorResponse, objectType: NoticeObjectType, id: string): ProviderAck {
    const code = text(res.json, 'errorCode') ?? '';
    const message = text(res.json, 'errorMessage') ?? res.text.slice(0, 200);
    if (res.status === 400 || code === '500.001.1001') {
      this.deps.log.error(
        { object_type: objectType, object_id: id, status: res.status, error: message },
        'Daraja refused the request',
      );
      return { reference: undefined, status: 'failed', reason: 'provider_refused' };
    }
    if (THROTTLED.has(code) || (res.status > 400 && res.status < 500))
      throw new ProviderError(`${this.name}: answered ${res.status} ${message}; tried again later`);
    return this.waitForCallback(objectType, id, `answered ${res.status} ${message}`);
  }

  /**
   * Collections: STK Push Query, which answers at once. Payouts and refunds: Transaction Status, which Daraja
   * answers by callback: the query is recorded under the ConversationID Daraja gives it.
   */
  /**
   * Daraja keys an STK push by its own CheckoutRequestID and a B2C or reversal by its own conversation ids: none can be
   * found by our id, so an initiation that may have reached Daraja is never sent again.
   */
  findsByOurId(): boolean {
    return false;
  }

  async queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
    reference: string,
    claim?: CallbackClaim,
  ): Promise<ProviderStatus | undefined | typeof ANSWER_BY_CALLBACK> {
    if (objectType === 'collection') {
      const answer = await this.queryStk(objectId, reference);
      // The query confirms the payment but carries no receipt or amount: the receipt the callback named is checked
      // with Transaction Status (its amount too) before the success is applied with it.
      if (answer?.status === 'successful' && claim?.status === 'successful' && claim.receipt !== undefined) {
        return this.askTransactionStatus('collection', objectId, { TransactionID: claim.receipt }, claim);
      }
      return answer;
    }
    // By our own request's OriginatorConversationID, never by what a callback names. A payout's is its id (B2C v3),
    // even when the answer to the request was lost.
    const conversation = reference || (objectType === 'payout' ? objectId : '');
    if (conversation === '')
      throw new ProviderError(`${this.name}: nothing to ask Transaction Status by for ${objectType} ${objectId}`);
    return this.askTransactionStatus(objectType, objectId, { OriginalConversationID: conversation }, claim);
  }

  /** Transaction Status, answered later at `status-result/{id}`; the query is recorded under the ConversationID Daraja gives it. */
  private async askTransactionStatus(
    objectType: NoticeObjectType,
    objectId: string,
    by: { TransactionID: string } | { OriginalConversationID: string },
    claim: CallbackClaim | undefined,
  ): Promise<typeof ANSWER_BY_CALLBACK> {
    const res = await this.call(PATHS.transactionStatus, {
      ...this.initiator(),
      CommandID: 'TransactionStatusQuery',
      ...by,
      PartyA: objectType === 'payout' ? this.settings.b2c.shortcode : this.settings.shortcode,
      IdentifierType: '4',
      ResultURL: `${this.deps.callbackBase}/status-result/${objectId}`,
      QueueTimeOutURL: `${this.deps.callbackBase}/status-timeout/${objectId}`,
      Remarks: 'Status',
      Occasion: '',
    });
    const conversationId = text(res.json, 'ConversationID');
    if (res.status !== 200 || text(res.json, 'ResponseCode') !== '0' || conversationId === undefined) {
      throw new ProviderError(`${this.name}: Transaction Status answered ${res.status} ${res.text.slice(0, 200)}`);
    }
    await repo.recordQuery(this.deps.db, this.name, conversationId, {
      object_type: objectType,
      object_id: objectId,
      claimed_status: claim?.status ?? null,
      claimed_reason: claim?.reason ?? null,
      // What the answer must name: the receipt asked about, when asked by receipt.
      claimed_receipt: 'TransactionID' in by ? by.TransactionID : null,
    });
    return ANSWER_BY_CALLBACK;
  }

  /**
   * Account Balance of the B2C shortcode (the one payouts are paid from), asked as the initiator. Daraja answers at
   * `balance-result/{ref}` later: the query is recorded with the ConversationID and OriginatorConversationID Daraja
   * gave it and our ref, and only an answer quoting all three is believed (daraja.callbacks.ts).
   */
  async readBalances(): Promise<typeof ANSWER_BY_CALLBACK> {
    const ref = uuidv7();
    const res = await this.call(PATHS.accountBalance, {
      ...this.initiator(),
      CommandID: 'AccountBalance',
      PartyA: this.settings.b2c.shortcode,
      IdentifierType: '4',
      Remarks: 'Float',
      QueueTimeOutURL: `${this.deps.callbackBase}/balance-timeout/${ref}`,
      ResultURL: `${this.deps.callbackBase}/balance-result/${ref}`,
    });
    const conversationId = text(res.json, 'ConversationID');
    const originator = text(res.json, 'OriginatorConversationID');
    if (res.status !== 200 || text(res.json, 'ResponseCode') !== '0' || !conversationId || !originator) {
      const message = text(res.json, 'errorMessage') ?? res.text.slice(0, 200);
      throw new ProviderError(`${this.name}: Account Balance answered ${res.status} ${message}`.trim());
    }
    await repo.recordBalanceQuery(this.deps.db, this.name, { conversationId, originator, ref });
    return ANSWER_BY_CALLBACK;
  }

  /** Daraja's callbacks, Transaction Status and Account Balance answers: daraja.callbacks.ts. */
  readCallback(path: string, body: unknown): Promise<CallbackReading> {
    return readDarajaCallback(
      {
        name: this.name,
        db: this.deps.db,
        log: this.deps.log,
        catalogue: this.deps.catalogue,
        balances: this.deps.balances,
      },
      path,
      body,
    );
  }

  private async queryStk(objectId: string, reference: string): Promise<ProviderStatus | undefined> {
    if (reference === '') return undefined;
    const res = await this.call(PATHS.stkQuery, { ...this.lipaNaMpesa(), CheckoutRequestID: reference });
    const code = text(res.json, 'ResultCode');
    if (res.status === 200 && code !== undefined) {
      if (code === '4999') return { objectType: 'collection', objectId, reference, status: 'pending' };
      if (code === '0') return { objectType: 'collection', objectId, reference, status: 'successful' };
      return {
        objectType: 'collection',
        objectId,
        reference,
        status: 'failed',
        reason: STK_REASONS[code] ?? 'provider_error',
      };
    }
    const message = text(res.json, 'errorMessage') ?? '';
    if (/being processed|under processing/i.test(message))
      return { objectType: 'collection', objectId, reference, status: 'pending' };
    if (/does not exist|invalid checkoutrequestid/i.test(message)) return undefined;
    throw new ProviderError(`${this.name}: STK Push Query answered ${res.status} ${message || res.text.slice(0, 200)}`);
  }

  /** A refusal Daraja gives at once (400: a field it will never take) fails the operation; a 5xx is tried again later. */
  private refusedOrRetried(res: OperatorResponse, objectType: NoticeObjectType, id: string): ProviderAck {
    const message = text(res.json, 'errorMessage') ?? res.text.slice(0, 200);
    if (res.status === 400) {
      this.deps.log.error({ object_type: objectType, object_id: id, error: message }, 'Daraja refused the request');
      return { reference: undefined, status: 'failed', reason: 'provider_refused' };
    }
    throw new ProviderError(`${this.name}: answered ${res.status} ${message}`);
  }

  /** BusinessShortCode, Password and Timestamp of STK Push and its query. */
  private lipaNaMpesa(): Record<string, string> {
    const timestamp = darajaTimestamp(new Date());
    const password = Buffer.from(`${this.settings.shortcode}${this.settings.passkey}${timestamp}`).toString('base64');
    return { BusinessShortCode: this.settings.shortcode, Password: password, Timestamp: timestamp };
  }

  /** Initiator and SecurityCredential of Reversal and Transaction Status (the b2c block's). */
  private initiator(): Record<string, string> {
    return { Initiator: this.settings.b2c.initiator_name, SecurityCredential: this.credential };
  }

  /** Whole shillings (amountProblem keeps any other amount out at creation). */
  private shillings(amount: number, currency: string): number {
    return amount / 10 ** exponentOf(this.deps.catalogue, currency);
  }

  /** One call with the token. Daraja's 404.001.03 "Invalid Access Token": one new token, one retry (the call was refused). */
  private call(path: string, body: unknown): Promise<OperatorResponse> {
    return withToken(
      this.tokens,
      (token) =>
        callOperator(this.name, {
          method: 'POST',
          url: `${this.settings.base_url}${path}`,
          headers: { authorization: `Bearer ${token}` },
          body,
          timeoutMs: this.deps.timeoutMs,
        }),
      (res) => text(res.json, 'errorCode') === '404.001.03',
    );
  }
}

export const MPESA_DARAJA: ConnectorKind<DarajaSettings> = {
  type: 'mpesa_daraja',
  schema: Entry,
  railProblem: (_settings, market, currency, rail) =>
    rail === 'mpesa' && market === 'KE' && currency === 'KES' ? undefined : 'Daraja runs KE/mpesa (KES) only',
  check: (settings, callbackBase) => {
    if (settings.transaction_type === 'CustomerBuyGoodsOnline' && settings.till_number === undefined)
      return 'field till_number is required with CustomerBuyGoodsOnline';
    const credential = credentialProblem(settings.b2c);
    if (credential) return credential;
    const word = FORBIDDEN_URL_WORDS.exec(callbackBase);
    if (word) {
      return `field name or callback_token (or PUBLIC_BASE_URL) puts '${word[0]}' in the callback URL ${callbackBase.replace(settings.callback_token, '{callback_token}')}, and Daraja refuses callback URLs with that word`;
    }
    return undefined;
  },
  create: (settings, deps) => new DarajaConnector(settings, deps),
};
