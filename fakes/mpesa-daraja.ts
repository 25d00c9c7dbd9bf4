// A local fake of Safaricom's M-Pesa Daraja API, written from its published documentation (summarised, with
// sources, in docs/connectors/mpesa-daraja.md): OAuth, STK Push and its query, B2C (v1 and v3), Reversal,
// Transaction Status and Account Balance, with their validation, error envelopes and result callbacks; the initiator's
// SecurityCredential is decrypted with the fake's own test key. Daraja signs no callback and retries none. Payer outcomes: the fake's own test numbers 25471100XXXX answer ResultCode XXXX (254711001032:
// cancelled by the payer); any other number pays; `outcomes` sets one per number.
import { constants, privateDecrypt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  FakeOperator,
  basic,
  bearer,
  isUrl,
  newId,
  type ControlCommand,
  type FakeOptions,
  type FakeRequest,
  type FakeResponse,
  type Handler,
} from './fake-server.js';

export interface DarajaFakeOptions extends FakeOptions {
  consumerKey?: string;
  consumerSecret?: string;
  /** The Lipa na M-Pesa Online shortcode and passkey (Safaricom's sandbox ones by default). */
  shortcode?: string;
  passkey?: string;
  b2cShortcode?: string;
  initiatorName?: string;
  /** The initiator's password: what a SecurityCredential must decrypt to (with the fake's key, `DARAJA_FAKE_KEY`). */
  initiatorPassword?: string;
}

/**
 * The fake's test certificate and its key (made once with openssl; not Safaricom's). The fake publishes the
 * certificate as Safaricom publishes its own: a SecurityCredential is the initiator password encrypted with it.
 */
export const DARAJA_FAKE_CERTIFICATE = readFileSync(new URL('./daraja-test.cert.pem', import.meta.url), 'utf8');
const DARAJA_FAKE_KEY = readFileSync(new URL('./daraja-test.key.pem', import.meta.url), 'utf8');

/** The fake's initiator password by default (Safaricom's sandbox gives each app its own). */
export const FAKE_INITIATOR_PASSWORD = 'Fake-Initiator-1!';

/**
 * The initiator password inside a SecurityCredential: base64 of RSA PKCS#1 v1.5 with the certificate, as Safaricom
 * documents it. Node refuses PKCS#1 v1.5 in privateDecrypt (CVE-2023-46809), so the padding is read here; a fake
 * on loopback has no oracle to protect. Undefined when it is not such a credential.
 */
export function initiatorPasswordOf(securityCredential: string): string | undefined {
  let block: Buffer;
  try {
    block = privateDecrypt(
      { key: DARAJA_FAKE_KEY, padding: constants.RSA_NO_PADDING },
      Buffer.from(securityCredential, 'base64'),
    );
  } catch {
    return undefined;
  }
  // 0x00 0x02, at least 8 non-zero padding bytes, 0x00, then the message.
  const end = block.indexOf(0, 2);
  if (block[0] !== 0 || block[1] !== 2 || end < 10) return undefined;
  return block.subarray(end + 1).toString('utf8');
}

/** Safaricom's published sandbox shortcode and passkey. */
export const SANDBOX_SHORTCODE = '174379';
export const SANDBOX_PASSKEY = 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919';

/** Result descriptions as Daraja writes them. */
const RESULT_DESC: Record<string, string> = {
  '0': 'The service request is processed successfully.',
  '1': 'The balance is insufficient for the transaction.',
  '1001': 'Unable to lock subscriber, a transaction is already in process for the current subscriber',
  '1019': 'Transaction has expired.',
  '1025': 'An error occurred while sending a push request.',
  '1032': 'Request cancelled by user',
  '1037': 'DS timeout user cannot be reached',
  '2001': 'The initiator information is invalid.',
  '2040': "Credit Party customer type (Unregistered or Registered Customer) can't be supported by the service.",
  R000001: 'The transaction has already been reversed',
  R000002: 'The OriginalTransactionID is invalid.',
  // Not documented by Safaricom: the fake's answer to Transaction Status about a transaction it does not know.
  '2032': 'The transaction could not be found.',
};

/** Words Daraja refuses in callback URLs. */
const FORBIDDEN = /m-?pesa|safaricom|exec?|cmd|sql|query/i;

interface StkRequest {
  merchantRequestId: string;
  checkoutRequestId: string;
  phone: string;
  amount: number;
  callbackUrl: string;
  /** Undefined while the payer has not acted. */
  resultCode: string | undefined;
  receipt: string | undefined;
}

interface Movement {
  receipt: string;
  kind: 'c2b' | 'b2c' | 'reversal';
  amount: number;
  party: string;
  status: 'Completed' | 'Declined' | 'Reversed';
  originatorConversationId: string;
  /** When M-Pesa completed (or declined) it. */
  at: Date;
}

type Json = Record<string, unknown>;

export class DarajaFake extends FakeOperator {
  private readonly config: Required<Omit<DarajaFakeOptions, keyof FakeOptions>>;
  /** The valid access token (at most one: a new one invalidates the previous). */
  private readonly tokens = new Set<string>();
  /** How many API calls were refused with 404.001.03 "Invalid Access Token". */
  tokenRefusals = 0;
  readonly stk = new Map<string, StkRequest>();
  /** Money that moved, by receipt (what Reversal and Transaction Status look up). */
  readonly movements = new Map<string, Movement>();
  private readonly b2cSeen = new Set<string>();
  /** Money put into (or taken out of) each account through M-Pesa's portal, in shillings by account name. */
  readonly portal: Record<string, number> = {};
  /** Result code per payer number (overrides the test numbers). */
  readonly outcomes = new Map<string, string>();

  constructor(options: DarajaFakeOptions = {}) {
    super(options);
    this.config = {
      consumerKey: options.consumerKey ?? 'fake-consumer-key',
      consumerSecret: options.consumerSecret ?? 'fake-consumer-secret',
      shortcode: options.shortcode ?? SANDBOX_SHORTCODE,
      passkey: options.passkey ?? SANDBOX_PASSKEY,
      b2cShortcode: options.b2cShortcode ?? '600000',
      initiatorName: options.initiatorName ?? 'testapi',
      initiatorPassword: options.initiatorPassword ?? FAKE_INITIATOR_PASSWORD,
    };
  }

  expireTokens(): void {
    this.tokens.clear();
  }

  /** How many STK prompts reached this number. */
  prompts(phone: string): number {
    return [...this.stk.values()].filter((s) => s.phone === phone).length;
  }

  protected override control(command: ControlCommand): void {
    // {"portal": {"Utility Account": 50000}}: top-ups (or withdrawals) through M-Pesa's portal, in shillings.
    const portal = command.portal;
    if (typeof portal === 'object' && portal !== null) {
      for (const [account, amount] of Object.entries(portal))
        if (typeof amount === 'number') this.portal[account] = amount;
    }
    const outcomes = command.outcomes;
    if (typeof outcomes === 'object' && outcomes !== null) {
      for (const [phone, code] of Object.entries(outcomes)) this.outcomes.set(phone, String(code));
    }
    // {"answer": {"phone": "2547…", "code": "0"}}: a waiting payer (outcome `never`) answers now, late.
    const answer = command.answer as { phone?: unknown; code?: unknown } | undefined;
    if (typeof answer?.phone === 'string') {
      this.payerAnswersNow(answer.phone, answer.code === undefined ? '0' : String(answer.code));
    }
  }

  protected faultBody(status: number): FakeResponse {
    if (status >= 500) return { status, body: this.error('500.003.1001', 'Internal Server Error') };
    return { status, body: this.error(`${status}.000.00`, 'Error') };
  }

  protected override notFound(): FakeResponse {
    return { status: 404, body: this.error('404.001.01', 'Resource not found') };
  }

  protected routes(): Record<string, Handler> {
    return {
      'GET /oauth/v1/generate': (req) => this.token(req),
      'POST /mpesa/stkpush/v1/processrequest': (req) => this.api(req, (body) => this.stkPush(body)),
      'POST /mpesa/stkpushquery/v1/query': (req) => this.api(req, (body) => this.stkQuery(body)),
      'POST /mpesa/b2c/v1/paymentrequest': (req) => this.api(req, (body) => this.b2c(body, false)),
      'POST /mpesa/b2c/v3/paymentrequest': (req) => this.api(req, (body) => this.b2c(body, true)),
      'POST /mpesa/reversal/v1/request': (req) => this.api(req, (body) => this.reversal(body)),
      'POST /mpesa/transactionstatus/v1/query': (req) => this.api(req, (body) => this.transactionStatus(body)),
      'POST /mpesa/accountbalance/v1/query': (req) => this.api(req, (body) => this.accountBalance(body)),
    };
  }

  private error(
    errorCode: string,
    errorMessage: string,
    requestId = `${newId(4, '0123456789abcdef')}-${newId(30, '0123456789abcdef')}`,
  ): Json {
    return { requestId, errorCode, errorMessage };
  }

  private badRequest(field: string): FakeResponse {
    return { status: 400, body: this.error('400.002.02', `Bad Request - Invalid ${field}`) };
  }

  private token(req: FakeRequest): FakeResponse {
    if (req.query.get('grant_type') !== 'client_credentials')
      return { status: 400, body: this.error('400.008.02', 'Invalid grant type passed') };
    const credentials = basic(req);
    if (!credentials) return { status: 400, body: this.error('400.008.01', 'Invalid Authentication passed') };
    // Wrong key or secret: Daraja answers 400 with an empty body.
    if (credentials.user !== this.config.consumerKey || credentials.password !== this.config.consumerSecret)
      return { status: 400, headers: { 'content-type': 'text/plain' } };
    const token = newId(28, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789');
    // Daraja's FAQ: generating a new access token invalidates the previous one (of the same app, i.e. consumer key;
    // this fake serves one app). Integrators whose processes each fetch their own see 404.001.03 on the others.
    this.tokens.clear();
    this.tokens.add(token);
    return { status: 200, body: { access_token: token, expires_in: '3599' } };
  }

  /** Every API: a valid bearer token (else 404.001.03), a JSON body (else Daraja's "Invalid BusinessShortCode"). */
  private api(req: FakeRequest, handle: (body: Json) => FakeResponse): FakeResponse {
    const token = bearer(req);
    if (token === undefined || !this.tokens.has(token)) {
      this.tokenRefusals += 1;
      return { status: 404, body: this.error('404.001.03', 'Invalid Access Token') };
    }
    const type = req.headers['content-type'] ?? '';
    if (
      !type.startsWith('application/json') ||
      typeof req.json !== 'object' ||
      req.json === null ||
      Array.isArray(req.json)
    )
      return this.badRequest('BusinessShortCode');
    return handle(req.json as Json);
  }

  /** Shortcode, Password = base64(shortcode + passkey + timestamp) and Timestamp, as STK Push and its query check them. */
  private lipaNaMpesa(body: Json): FakeResponse | undefined {
    const shortcode = String(body.BusinessShortCode ?? '');
    const timestamp = body.Timestamp;
    if (!/^[0-9]{5,7}$/.test(shortcode)) return this.badRequest('BusinessShortCode');
    if (typeof timestamp !== 'string' || !/^20[0-9]{12}$/.test(timestamp)) return this.badRequest('Timestamp');
    if (shortcode !== this.config.shortcode)
      return { status: 500, body: this.error('500.001.1001', 'Merchant does not exist') };
    const expected = Buffer.from(`${this.config.shortcode}${this.config.passkey}${timestamp}`).toString('base64');
    if (body.Password !== expected) return { status: 500, body: this.error('500.001.1001', 'Wrong credentials') };
    return undefined;
  }

  private stkPush(body: Json): FakeResponse {
    const refused = this.lipaNaMpesa(body);
    if (refused) return refused;
    if (body.TransactionType !== 'CustomerPayBillOnline' && body.TransactionType !== 'CustomerBuyGoodsOnline')
      return this.badRequest('TransactionType');
    const amount = wholeAmount(body.Amount);
    if (amount === undefined) return this.badRequest('Amount');
    const phone = String(body.PhoneNumber ?? '');
    if (!/^254[17][0-9]{8}$/.test(phone)) return this.badRequest('PhoneNumber');
    if (!/^254[17][0-9]{8}$/.test(String(body.PartyA ?? ''))) return this.badRequest('PartyA');
    if (!/^[0-9]{5,7}$/.test(String(body.PartyB ?? ''))) return this.badRequest('PartyB');
    if (!isUrl(body.CallBackURL) || FORBIDDEN.test(body.CallBackURL)) return this.badRequest('CallBackURL');
    if (
      typeof body.AccountReference !== 'string' ||
      body.AccountReference.length === 0 ||
      body.AccountReference.length > 12
    )
      return this.badRequest('AccountReference');
    if ([...this.stk.values()].some((s) => s.phone === phone && s.resultCode === undefined)) {
      return {
        status: 500,
        body: this.error(
          '500.001.1001',
          'Unable to lock subscriber, a transaction is already in process for the current subscriber',
        ),
      };
    }
    const now = new Date();
    const push: StkRequest = {
      merchantRequestId: `${newId(4, '0123456789abcdef')}-${newId(4, '0123456789abcdef')}-${newId(12, '0123456789')}`,
      checkoutRequestId: `ws_CO_${stamp(now, 'DDMMYYYYHHmmssSSS')}${phone.slice(3)}`,
      phone,
      amount,
      callbackUrl: body.CallBackURL,
      resultCode: undefined,
      receipt: undefined,
    };
    this.stk.set(push.checkoutRequestId, push);
    const code = this.outcomeFor(phone);
    if (code !== 'never') this.later(this.actAfterMs, () => this.payerActs(push, code));
    return {
      status: 200,
      body: {
        MerchantRequestID: push.merchantRequestId,
        CheckoutRequestID: push.checkoutRequestId,
        ResponseCode: '0',
        ResponseDescription: 'Success. Request accepted for processing',
        CustomerMessage: 'Success. Request accepted for processing',
      },
    };
  }

  /** The payer answers the prompt: the outcome is recorded, money moves on success, and the callback goes out. */
  private payerActs(push: StkRequest, code: string): void {
    push.resultCode = code;
    const callback: Json = {
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: Number(code),
      ResultDesc: RESULT_DESC[code] ?? 'Failed',
    };
    if (code === '0') {
      push.receipt = receipt();
      this.movements.set(push.receipt, {
        receipt: push.receipt,
        kind: 'c2b',
        amount: push.amount,
        party: push.phone,
        status: 'Completed',
        originatorConversationId: push.merchantRequestId,
        at: new Date(),
      });
      callback.CallbackMetadata = {
        Item: [
          { Name: 'Amount', Value: push.amount },
          { Name: 'MpesaReceiptNumber', Value: push.receipt },
          { Name: 'Balance' },
          { Name: 'TransactionDate', Value: Number(stamp(new Date(Date.now() + 3 * 3_600_000), 'YYYYMMDDHHmmss')) },
          { Name: 'PhoneNumber', Value: Number(push.phone) },
        ],
      };
    }
    this.sendCallback(push.callbackUrl, { Body: { stkCallback: callback } });
  }

  private stkQuery(body: Json): FakeResponse {
    const refused = this.lipaNaMpesa(body);
    if (refused) return refused;
    const id = body.CheckoutRequestID;
    if (typeof id !== 'string' || !id.startsWith('ws_CO_')) return this.badRequest('CheckoutRequestID');
    const push = this.stk.get(id);
    if (!push) return { status: 500, body: this.error('500.001.1001', 'This transaction does not exist') };
    if (push.resultCode === undefined)
      return { status: 500, body: this.error('500.001.1001', 'The transaction is being processed', id) };
    return {
      status: 200,
      body: {
        ResponseCode: '0',
        ResponseDescription: 'The service request has been accepted successsfully',
        MerchantRequestID: push.merchantRequestId,
        CheckoutRequestID: id,
        ResultCode: push.resultCode,
        ResultDesc: RESULT_DESC[push.resultCode] ?? 'Failed',
      },
    };
  }

  /** Initiator, SecurityCredential, ResultURL and QueueTimeOutURL of B2C, Reversal and Transaction Status. */
  private initiatorFields(body: Json, initiatorField: string): FakeResponse | undefined {
    if (typeof body[initiatorField] !== 'string' || body[initiatorField] === '') return this.badRequest(initiatorField);
    if (typeof body.SecurityCredential !== 'string' || body.SecurityCredential === '')
      return this.badRequest('SecurityCredential');
    for (const url of ['ResultURL', 'QueueTimeOutURL']) {
      if (!isUrl(body[url]) || FORBIDDEN.test(body[url])) return this.badRequest(url);
    }
    return undefined;
  }

  /**
   * Whether the initiator may act: its name, and a SecurityCredential that decrypts to its password. A wrong one is
   * accepted, then answered by result callback with ResultCode 2001 "The initiator information is invalid.", as
   * Daraja does (its result codes: 2001, invalid initiator information).
   */
  private initiatorValid(body: Json, initiatorField: string): boolean {
    return (
      body[initiatorField] === this.config.initiatorName &&
      initiatorPasswordOf(String(body.SecurityCredential)) === this.config.initiatorPassword
    );
  }

  private accepted(originatorConversationId: string): { conversationId: string; response: FakeResponse } {
    const conversationId = `AG_${stamp(new Date(), 'YYYYMMDD')}_${newId(20, '0123456789abcdef')}`;
    return {
      conversationId,
      response: {
        status: 200,
        body: {
          ConversationID: conversationId,
          OriginatorConversationID: originatorConversationId,
          ResponseCode: '0',
          ResponseDescription: 'Accept the service request successfully.',
        },
      },
    };
  }

  private result(
    url: string,
    code: string,
    originatorConversationId: string,
    conversationId: string,
    transactionId: string,
    parameters?: { Key: string; Value?: unknown }[],
  ): void {
    const result: Json = {
      ResultType: 0,
      ResultCode: /^[0-9]+$/.test(code) ? Number(code) : code,
      ResultDesc: RESULT_DESC[code] ?? 'Failed',
      OriginatorConversationID: originatorConversationId,
      ConversationID: conversationId,
      TransactionID: transactionId,
      ReferenceData: {
        ReferenceItem: {
          Key: 'QueueTimeoutURL',
          Value: 'https://internalsandbox.safaricom.co.ke/mpesa/b2cresults/v1/submit',
        },
      },
    };
    if (parameters) result.ResultParameters = { ResultParameter: parameters };
    this.sendCallback(url, { Result: result });
  }

  private b2c(body: Json, v3: boolean): FakeResponse {
    const refused = this.initiatorFields(body, 'InitiatorName');
    if (refused) return refused;
    if (!['BusinessPayment', 'SalaryPayment', 'PromotionPayment'].includes(String(body.CommandID)))
      return this.badRequest('CommandID');
    const amount = wholeAmount(body.Amount);
    if (amount === undefined) return this.badRequest('Amount');
    if (String(body.PartyA ?? '') !== this.config.b2cShortcode) return this.badRequest('PartyA');
    const party = String(body.PartyB ?? '');
    if (!/^254[17][0-9]{8}$/.test(party)) return this.badRequest('PartyB');
    if (typeof body.Remarks !== 'string' || body.Remarks.length < 2 || body.Remarks.length > 100)
      return this.badRequest('Remarks');
    let originator = `${newId(4, '0123456789abcdef')}-${newId(20, '0123456789abcdef')}`;
    if (v3) {
      if (typeof body.OriginatorConversationID !== 'string' || body.OriginatorConversationID === '')
        return this.badRequest('OriginatorConversationID');
      originator = body.OriginatorConversationID;
      if (this.b2cSeen.has(originator))
        return { status: 500, body: this.error('500.002.1001', 'Duplicate OriginatorConversationID.') };
      this.b2cSeen.add(originator);
    }
    const { conversationId, response } = this.accepted(originator);
    const resultUrl = String(body.ResultURL);
    const code = this.initiatorValid(body, 'InitiatorName') ? this.outcomeFor(party) : '2001';
    this.later(this.actAfterMs, () => {
      if (code === 'never') return;
      const id = receipt();
      if (code !== '0') {
        this.movements.set(id, {
          receipt: id,
          kind: 'b2c',
          amount,
          party,
          status: 'Declined',
          originatorConversationId: originator,
          at: new Date(),
        });
        this.result(resultUrl, code, originator, conversationId, id);
        return;
      }
      this.movements.set(id, {
        receipt: id,
        kind: 'b2c',
        amount,
        party,
        status: 'Completed',
        originatorConversationId: originator,
        at: new Date(),
      });
      this.result(resultUrl, '0', originator, conversationId, id, [
        { Key: 'TransactionAmount', Value: amount },
        { Key: 'TransactionReceipt', Value: id },
        { Key: 'B2CRecipientIsRegisteredCustomer', Value: 'Y' },
        { Key: 'ReceiverPartyPublicName', Value: `${party} - Fake Recipient` },
        {
          Key: 'TransactionCompletedDateTime',
          Value: stamp(new Date(Date.now() + 3 * 3_600_000), 'DD.MM.YYYY HH:mm:ss'),
        },
      ]);
    });
    return response;
  }

  private reversal(body: Json): FakeResponse {
    const refused = this.initiatorFields(body, 'Initiator');
    if (refused) return refused;
    if (body.CommandID !== 'TransactionReversal') return this.badRequest('CommandID');
    if (typeof body.TransactionID !== 'string' || !/^[A-Z0-9]{10}$/.test(body.TransactionID))
      return this.badRequest('TransactionID');
    const amount = wholeAmount(body.Amount);
    if (amount === undefined) return this.badRequest('Amount');
    if (body.RecieverIdentifierType !== '11' && body.RecieverIdentifierType !== '4')
      return this.badRequest('RecieverIdentifierType');
    const originator = `${newId(4, '0123456789abcdef')}-${newId(20, '0123456789abcdef')}`;
    const { conversationId, response } = this.accepted(originator);
    const original = this.movements.get(body.TransactionID);
    const resultUrl = String(body.ResultURL);
    const valid = this.initiatorValid(body, 'Initiator');
    // A reversal M-Pesa refuses is still a transaction Transaction Status can report (as Declined).
    const refuse = (code: string): void => {
      const id = receipt();
      this.movements.set(id, {
        receipt: id,
        kind: 'reversal',
        amount,
        party: original?.party ?? '',
        status: 'Declined',
        originatorConversationId: originator,
        at: new Date(),
      });
      this.result(resultUrl, code, originator, conversationId, `${id.slice(0, 3)}0000000`);
    };
    this.later(this.actAfterMs, () => {
      if (!valid) return refuse('2001');
      if (!original || original.kind !== 'c2b' || original.amount !== amount) return refuse('R000002');
      if (original.status === 'Reversed') return refuse('R000001');
      original.status = 'Reversed';
      const id = receipt();
      this.movements.set(id, {
        receipt: id,
        kind: 'reversal',
        amount,
        party: original.party,
        status: 'Completed',
        originatorConversationId: originator,
        at: new Date(),
      });
      this.result(resultUrl, '0', originator, conversationId, id, [
        { Key: 'Amount', Value: amount },
        { Key: 'OriginalTransactionID', Value: original.receipt },
        { Key: 'Charge', Value: 0 },
        { Key: 'CreditPartyPublicName', Value: `${original.party} - Fake Payer` },
        { Key: 'TransCompletedTime', Value: Number(stamp(new Date(Date.now() + 3 * 3_600_000), 'YYYYMMDDHHmmss')) },
      ]);
    });
    return response;
  }

  /**
   * Transaction Status, by receipt (TransactionID) or by the OriginatorConversationID of the original request.
   * Daraja does not document its answer for a transaction it does not know: the fake answers ResultCode 2032.
   */
  private transactionStatus(body: Json): FakeResponse {
    const refused = this.initiatorFields(body, 'Initiator');
    if (refused) return refused;
    if (body.CommandID !== 'TransactionStatusQuery') return this.badRequest('CommandID');
    const byReceipt = typeof body.TransactionID === 'string' && body.TransactionID !== '';
    const byConversation = typeof body.OriginalConversationID === 'string' && body.OriginalConversationID !== '';
    if (!byReceipt && !byConversation) return this.badRequest('TransactionID');
    if (!['1', '2', '4'].includes(String(body.IdentifierType))) return this.badRequest('IdentifierType');
    const originator = `${newId(4, '0123456789')}-${newId(7, '0123456789')}-1`;
    const { conversationId, response } = this.accepted(originator);
    const resultUrl = String(body.ResultURL);
    const valid = this.initiatorValid(body, 'Initiator');
    const found = byReceipt
      ? this.movements.get(String(body.TransactionID))
      : [...this.movements.values()].find((m) => m.originatorConversationId === body.OriginalConversationID);
    this.later(this.actAfterMs, () => {
      if (!valid) return this.result(resultUrl, '2001', originator, conversationId, 'NLJ0000000');
      if (!found) return this.result(resultUrl, '2032', originator, conversationId, 'NLJ0000000');
      this.result(resultUrl, '0', originator, conversationId, `${found.receipt.slice(0, 3)}0000000`, [
        { Key: 'ReceiptNo', Value: found.receipt },
        { Key: 'TransactionStatus', Value: found.status === 'Reversed' ? 'Completed' : found.status },
        { Key: 'Amount', Value: found.amount },
        { Key: 'OriginatorConversationID', Value: found.originatorConversationId },
        { Key: 'FinalisedTime', Value: Number(stamp(new Date(Date.now() + 3 * 3_600_000), 'YYYYMMDDHHmmss')) },
        { Key: 'ReasonType', Value: found.kind === 'b2c' ? 'Business Payment to Customer via API' : 'Pay Bill Online' },
      ]);
    });
    return response;
  }

  /**
   * Account Balance (`POST /mpesa/accountbalance/v1/query`): Initiator, SecurityCredential, CommandID
   * `AccountBalance`, PartyA with its IdentifierType (4: a shortcode; 2: a till), Remarks, QueueTimeOutURL and
   * ResultURL. Accepted at once; the balances come by result callback, in the parameter `AccountBalance`: one
   * `Name|Currency|Amount|Available|Reserved|Uncleared` group per account, `&`-separated. The working account holds
   * what moved through the fake (collections in, payouts and reversals out); each account also holds what was put in
   * through M-Pesa's portal (`portal`, shillings by account name: a float top-up).
   */
  private accountBalance(body: Json): FakeResponse {
    const refused = this.initiatorFields(body, 'Initiator');
    if (refused) return refused;
    if (body.CommandID !== 'AccountBalance') return this.badRequest('CommandID');
    if (!/^[0-9]{5,7}$/.test(String(body.PartyA ?? ''))) return this.badRequest('PartyA');
    if (!['2', '4'].includes(String(body.IdentifierType))) return this.badRequest('IdentifierType');
    if (typeof body.Remarks !== 'string' || body.Remarks === '' || body.Remarks.length > 100)
      return this.badRequest('Remarks');
    const originator = `${newId(4, '0123456789')}-${newId(7, '0123456789')}-1`;
    const { conversationId, response } = this.accepted(originator);
    const resultUrl = String(body.ResultURL);
    const valid = this.initiatorValid(body, 'Initiator');
    this.later(this.actAfterMs, () => {
      if (!valid) return this.result(resultUrl, '2001', originator, conversationId, 'NLJ0000000');
      const money = (n: number) => n.toFixed(2);
      const working = this.workingBalance();
      const account = (name: string, amount: number) => `${name}|KES|${money(amount)}|${money(amount)}|0.00|0.00`;
      const accounts = [
        account('Working Account', working + (this.portal['Working Account'] ?? 0)),
        account('Float Account', this.portal['Float Account'] ?? 0),
        account('Utility Account', this.portal['Utility Account'] ?? 0),
        account('Charges Paid Account', this.portal['Charges Paid Account'] ?? 0),
        account('Organization Settlement Account', this.portal['Organization Settlement Account'] ?? 0),
      ];
      this.result(resultUrl, '0', originator, conversationId, 'NLJ0000000', [
        { Key: 'AccountBalance', Value: accounts.join('&') },
        { Key: 'BOCompletedTime', Value: Number(stamp(new Date(Date.now() + 3 * 3_600_000), 'YYYYMMDDHHmmss')) },
      ]);
    });
    return response;
  }

  /** What moved through the fake and was not declined: collections in, payouts and reversals out, in shillings. */
  workingBalance(): number {
    let balance = 0;
    for (const m of this.movements.values()) {
      if (m.status === 'Declined') continue;
      balance += m.kind === 'c2b' ? m.amount : -m.amount;
    }
    return balance;
  }

  /**
   * The organisation statement M-Pesa's portal exports as CSV: a few lines about the account, then one row per
   * transaction with Receipt No., Completion Time (Nairobi time), Initiation Time, Details, Transaction Status,
   * Paid In, Withdrawn (negative), Balance and the rest. A reversed payment keeps its own row (Completed) and its
   * reversal has another.
   */
  organisationStatement(): string {
    const header = [
      'Receipt No.',
      'Completion Time',
      'Initiation Time',
      'Details',
      'Transaction Status',
      'Paid In',
      'Withdrawn',
      'Balance',
      'Balance Confirmed',
      'Reason Type',
      'Other Party Info',
      'Linked Transaction ID',
      'A/C No.',
    ];
    const money = (n: number) => n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    const nairobi = (d: Date) => new Date(d.getTime() + 3 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
    let balance = 0;
    const rows = [...this.movements.values()]
      .sort((a, b) => a.at.getTime() - b.at.getTime())
      .map((m) => {
        const done = m.status !== 'Declined';
        const inwards = m.kind === 'c2b';
        if (done) balance += inwards ? m.amount : -m.amount;
        const details =
          m.kind === 'c2b' ? 'Pay Bill Online' : m.kind === 'b2c' ? 'Business Payment to Customer' : 'Reversal';
        return [
          m.receipt,
          nairobi(m.at),
          nairobi(m.at),
          details,
          done ? 'Completed' : 'Failed',
          inwards ? money(m.amount) : '',
          inwards ? '' : `-${money(m.amount)}`,
          money(balance),
          'true',
          details,
          `${m.party} - Fake Party`,
          '',
          '',
        ];
      });
    const cell = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
    return [
      `Account Holder:,${this.config.shortcode}`,
      'Statement Period:,all',
      '',
      ...[header, ...rows].map((r) => r.map(cell).join(',')),
    ].join('\n');
  }

  /**
   * The payer of a push still waiting (its number's outcome is `never`) answers now with `code`: a payer who approves
   * the prompt late, after the merchant's collection expired. False when no push to that number is waiting.
   */
  payerAnswersNow(phone: string, code = '0'): boolean {
    const push = [...this.stk.values()].find((s) => s.phone === phone && s.resultCode === undefined);
    if (!push) return false;
    this.payerActs(push, code);
    return true;
  }

  /** The ResultCode a payer number gets: set by `outcomes`, or by the test numbers 25471100XXXX, else success. */
  private outcomeFor(phone: string): string {
    const set = this.outcomes.get(phone);
    if (set !== undefined) return set;
    const test = /^25471100([0-9]{4})$/.exec(phone);
    return test ? String(Number(test[1])) : '0';
  }
}

/** A whole, positive amount as Daraja takes it (a number or a string of digits); undefined otherwise. */
function wholeAmount(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/** An M-Pesa receipt number: 10 characters, letters and digits. */
function receipt(): string {
  return `T${newId(9)}`;
}

/** A date in Daraja's formats, from its UTC fields. */
function stamp(at: Date, format: 'DDMMYYYYHHmmssSSS' | 'YYYYMMDDHHmmss' | 'YYYYMMDD' | 'DD.MM.YYYY HH:mm:ss'): string {
  const iso = at.toISOString();
  const [y, mo, d, h, mi, s, ms] = [
    iso.slice(0, 4),
    iso.slice(5, 7),
    iso.slice(8, 10),
    iso.slice(11, 13),
    iso.slice(14, 16),
    iso.slice(17, 19),
    iso.slice(20, 23),
  ];
  switch (format) {
    case 'DDMMYYYYHHmmssSSS':
      return `${d}${mo}${y}${h}${mi}${s}${ms}`;
    case 'YYYYMMDDHHmmss':
      return `${y}${mo}${d}${h}${mi}${s}`;
    case 'YYYYMMDD':
      return `${y}${mo}${d}`;
    case 'DD.MM.YYYY HH:mm:ss':
      return `${d}.${mo}.${y} ${h}:${mi}:${s}`;
  }
}
