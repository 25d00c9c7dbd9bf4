// A local fake of the Airtel Money Open API, written from its published documentation (summarised, with sources,
// in docs/connectors/airtel-money.md): the OAuth2 token, USSD-push collections with their enquiry and their
// callback to the one URL registered in Airtel's portal, refunds by Airtel Money id, and disbursements with
// their enquiry. Business errors are HTTP 200 with status.success false, as Airtel sends them. Airtel publishes
// no test numbers: every number pays unless `outcomes` says otherwise.
import {
  FakeOperator,
  bearer,
  get,
  newId,
  type ControlCommand,
  type FakeOptions,
  type FakeRequest,
  type FakeResponse,
  type Handler,
} from './fake-server.js';

export interface AirtelFakeOptions extends FakeOptions {
  clientId?: string;
  clientSecret?: string;
  /** The X-Country and X-Currency the application is set up for. */
  country?: string;
  currency?: string;
  /** Digits of a number without its country code. */
  msisdnDigits?: number;
  /** The encrypted PIN disbursements must carry. */
  pin?: string;
  /** The callback URL registered in Airtel's portal (unset: no callbacks). */
  callbackUrl?: string;
}

/** An outcome: TS (paid), TF with its response code (DP00800001002 wrong PIN…), or TIP for good. */
export interface AirtelOutcome {
  status: 'TS' | 'TF' | 'TIP';
  code?: string;
}

interface Transaction {
  kind: 'payment' | 'disbursement';
  id: string;
  amount: number;
  msisdn: string;
  status: 'TS' | 'TF' | 'TIP' | 'TR';
  code: string | undefined;
  airtelMoneyId: string | undefined;
}

type Json = Record<string, unknown>;

/** Airtel's envelope for a business outcome: HTTP 200, whatever the outcome. */
function envelope(
  success: boolean,
  fields: { code?: string; message: string; result_code?: string; response_code?: string },
  data?: Json,
): FakeResponse {
  const status: Json = { code: fields.code ?? (success ? '200' : '400'), message: fields.message, success };
  if (fields.result_code !== undefined) status.result_code = fields.result_code;
  if (fields.response_code !== undefined) status.response_code = fields.response_code;
  return { status: 200, body: data === undefined ? { status } : { data, status } };
}

const MESSAGES: Record<string, string> = {
  DP00800001002: 'Incorrect Pin has been entered.',
  DP00800001003: 'The User has exceeded their wallet allowed transaction limit.',
  DP00800001005: 'User didn’t enter the pin.',
  DP00800001007: 'User wallet does not have enough money to cover the payment.',
  DP00800001008: 'The transaction was refused.',
  DP00800001024: 'The transaction was timed out.',
  DP00900001007: 'Insufficient funds.',
  DP00900001012: 'Mobile number entered is incorrect.',
};

export class AirtelFake extends FakeOperator {
  private readonly tokens = new Set<string>();
  readonly transactions = new Map<string, Transaction>();
  readonly outcomes = new Map<string, AirtelOutcome>();
  /** Business errors (result or response codes) the next POSTs answer with. */
  private readonly businessErrors: string[] = [];
  callbackUrl: string | undefined;

  /** Money put into (or taken out of) the wallet through Airtel's portal, in major units: a float top-up. */
  portalBalance = 0;

  constructor(private readonly settings: AirtelFakeOptions = {}) {
    super(settings);
    this.callbackUrl = settings.callbackUrl;
  }

  private get country(): string {
    return this.settings.country ?? 'KE';
  }

  private get currency(): string {
    return this.settings.currency ?? 'KES';
  }

  expireTokens(): void {
    this.tokens.clear();
  }

  /** The next POST answers HTTP 200 with status.success false and this code (ESB000011, DP00800001007…). */
  businessError(code: string): void {
    this.businessErrors.push(code);
  }

  /** How many USSD pushes reached this number. */
  prompts(msisdn: string): number {
    return [...this.transactions.values()].filter((t) => t.kind === 'payment' && t.msisdn === msisdn).length;
  }

  protected override control(command: ControlCommand): void {
    // {"portal": 5000}: the wallet's top-up (or withdrawal) through Airtel's portal, in major units.
    if (typeof command.portal === 'number') this.portalBalance = command.portal;
    const outcomes = command.outcomes;
    if (typeof outcomes === 'object' && outcomes !== null) {
      for (const [msisdn, outcome] of Object.entries(outcomes)) this.outcomes.set(msisdn, outcome as AirtelOutcome);
    }
    if (typeof command.business_error === 'string') this.businessError(command.business_error);
    if (typeof command.callback_url === 'string') this.callbackUrl = command.callback_url;
  }

  protected faultBody(status: number): FakeResponse {
    return {
      status,
      body: {
        status: { code: String(status), message: 'Something went wrong', success: false, result_code: 'ESB000001' },
      },
    };
  }

  protected routes(): Record<string, Handler> {
    return {
      'POST /auth/oauth2/token': (req) => this.token(req),
      'POST /merchant/v1/payments/': (req) => this.api(req, (body) => this.pay(body)),
      'GET /standard/v1/payments/*': (req) => this.api(req, () => this.enquiry(req, 'payment')),
      'POST /standard/v2/payments/refund': (req) => this.api(req, (body) => this.refund(body)),
      'POST /standard/v2/disbursements/': (req) => this.api(req, (body) => this.disburse(body)),
      'GET /standard/v2/disbursements/*': (req) => this.api(req, () => this.enquiry(req, 'disbursement')),
      'GET /standard/v1/users/balance': (req) => this.api(req, () => this.balance()),
    };
  }

  private token(req: FakeRequest): FakeResponse {
    const body = req.json;
    if (
      get(body, 'client_id') !== (this.settings.clientId ?? 'fake-client-id') ||
      get(body, 'client_secret') !== (this.settings.clientSecret ?? 'fake-client-secret')
    ) {
      return { status: 400, body: { error_description: 'Invalid client authentication', error: 'invalid_client' } };
    }
    if (get(body, 'grant_type') !== 'client_credentials')
      return { status: 400, body: { error_description: 'Invalid grant_type', error: 'unsupported_grant_type' } };
    const token = newId(32, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789');
    this.tokens.add(token);
    return { status: 200, body: { token_type: 'bearer', access_token: token, expires_in: '180' } };
  }

  /** The gateway's checks (token, X-Country, X-Currency), then a queued business error, then the handler. */
  private api(req: FakeRequest, handle: (body: Json) => FakeResponse): FakeResponse {
    const token = bearer(req);
    const challenge = { 'www-authenticate': 'Bearer realm="service"' };
    if (token === undefined)
      return {
        status: 401,
        headers: challenge,
        body: { error_description: 'The access token is missing', error: 'invalid_request' },
      };
    if (!this.tokens.has(token))
      return {
        status: 401,
        headers: challenge,
        body: { error_description: 'The access token is invalid or has expired', error: 'invalid_token' },
      };
    const country = req.headers['x-country'];
    if (country === undefined)
      return { status: 400, body: { status_message: 'Partner not found', status_code: 'ROUTER110' } };
    if (country !== this.country) return envelope(false, { message: 'Invalid Country', result_code: 'ROUTER006' });
    if (req.headers['x-currency'] !== this.currency)
      return envelope(false, { message: 'Invalid/Missing Currency', result_code: 'ROUTER119' });
    if (req.method === 'POST') {
      if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return { status: 415 };
      const queued = this.businessErrors.shift();
      if (queued !== undefined)
        return envelope(false, {
          message: MESSAGES[queued] ?? 'Failed',
          ...(queued.startsWith('DP') ? { response_code: queued } : { result_code: queued }),
        });
    }
    return handle(typeof req.json === 'object' && req.json !== null ? (req.json as Json) : {});
  }

  private msisdnProblem(msisdn: unknown): FakeResponse | undefined {
    const digits = this.settings.msisdnDigits ?? 9;
    if (typeof msisdn === 'string' && new RegExp(`^[0-9]{${digits}}$`).test(msisdn)) return undefined;
    return envelope(false, {
      message: `Invalid MSISDN Length. MSISDN Length should be ${digits}`,
      result_code: 'ESB000033',
    });
  }

  private pay(body: Json): FakeResponse {
    const reference = body.reference;
    const id = get(body, 'transaction', 'id');
    const amount = get(body, 'transaction', 'amount');
    if (
      typeof reference !== 'string' ||
      typeof id !== 'string' ||
      id === '' ||
      get(body, 'subscriber', 'msisdn') === undefined
    ) {
      return envelope(false, { message: 'Missing header/body params', result_code: 'ROUTER003' });
    }
    // No rule on the reference's characters: Airtel's collection API describes `reference` only as the reference
    // for the goods or service, and no published document was found refusing a hyphen in it.
    const msisdn = get(body, 'subscriber', 'msisdn');
    const refused = this.msisdnProblem(msisdn);
    if (refused) return refused;
    if (typeof amount !== 'number' || !(amount > 0) || !/^[0-9]+(\.[0-9]{1,3})?$/.test(String(amount))) {
      return envelope(false, { message: 'Invalid Amount', result_code: 'ESB000008', response_code: 'DP00800001004' });
    }
    if (this.transactions.has(id))
      return envelope(false, { message: 'External Transaction ID already exists.', result_code: 'ESB000041' });
    const transaction: Transaction = {
      kind: 'payment',
      id,
      amount,
      msisdn: String(msisdn),
      status: 'TIP',
      code: undefined,
      airtelMoneyId: undefined,
    };
    this.transactions.set(id, transaction);
    const outcome = this.outcomes.get(transaction.msisdn) ?? { status: 'TS' };
    if (outcome.status !== 'TIP') this.later(this.actAfterMs, () => this.settle(transaction, outcome));
    return envelope(
      true,
      { message: 'SUCCESS', result_code: 'ESB000010', response_code: 'DP00800001006' },
      { transaction: { id, status: 'SUCCESS' } },
    );
  }

  /** The payer answers the push: TS or TF, and the callback to the portal's URL (final states only). */
  private settle(transaction: Transaction, outcome: AirtelOutcome): void {
    transaction.status = outcome.status === 'TS' ? 'TS' : 'TF';
    transaction.code = outcome.status === 'TS' ? 'DP00800001001' : (outcome.code ?? 'DP00800001008');
    transaction.airtelMoneyId = `MP${newId(6, '0123456789')}.${newId(4, '0123456789')}.${newId(6)}`;
    if (this.callbackUrl === undefined) return;
    this.sendCallback(this.callbackUrl, {
      transaction: {
        id: transaction.id,
        message:
          transaction.status === 'TS'
            ? `Paid ${this.currency} ${transaction.amount}, Trans ID ${transaction.airtelMoneyId}.`
            : (MESSAGES[transaction.code] ?? 'Failed'),
        status_code: transaction.status,
        airtel_money_id: transaction.airtelMoneyId,
      },
    });
  }

  /**
   * Account balance (GET /standard/v1/users/balance, with X-Country and X-Currency): the wallet's balance as a
   * string in major units, its currency and account_status, in Airtel's envelope. What was paid in less what was
   * disbursed, plus what was put in (or taken out) through Airtel's portal, `portalBalance`.
   */
  private balance(): FakeResponse {
    let balance = this.portalBalance;
    for (const t of this.transactions.values()) {
      if (t.status !== 'TS' && t.status !== 'TR') continue;
      if (t.kind === 'payment' && t.status === 'TS') balance += t.amount;
      if (t.kind === 'disbursement') balance -= t.amount;
    }
    return envelope(
      true,
      { message: 'SUCCESS', result_code: 'ESB000010' },
      { balance: String(balance), currency: this.currency, account_status: 'ACTIVE' },
    );
  }

  private enquiry(req: FakeRequest, kind: Transaction['kind']): FakeResponse {
    const id = decodeURIComponent(req.path.split('/').pop() ?? '');
    const transaction = this.transactions.get(id);
    if (!transaction || transaction.kind !== kind) {
      const response_code = kind === 'payment' ? 'DP00800001025' : 'DP00900001015';
      return envelope(false, {
        code: '404',
        message: 'No Transaction Found With Provided Transaction Id.',
        result_code: 'ESB000045',
        response_code,
      });
    }
    const data: Json = { id: transaction.id, status: transaction.status };
    if (transaction.airtelMoneyId !== undefined) data.airtel_money_id = transaction.airtelMoneyId;
    if (transaction.status !== 'TIP')
      data.message = transaction.status === 'TF' ? (MESSAGES[transaction.code ?? ''] ?? 'Failed') : 'Success';
    const response_code =
      transaction.status === 'TIP'
        ? kind === 'payment'
          ? 'DP00800001006'
          : 'DP00900001006'
        : (transaction.code ?? 'DP00800001001');
    return envelope(true, { message: 'SUCCESS', result_code: 'ESB000010', response_code }, { transaction: data });
  }

  private refund(body: Json): FakeResponse {
    const airtelMoneyId = get(body, 'transaction', 'airtel_money_id');
    if (typeof airtelMoneyId !== 'string')
      return envelope(false, { message: 'Missing header/body params', result_code: 'ROUTER003' });
    const original = [...this.transactions.values()].find(
      (t) => t.kind === 'payment' && t.airtelMoneyId === airtelMoneyId,
    );
    if (!original)
      return envelope(false, {
        code: '404',
        message: 'No Transaction Found With Provided Transaction Id.',
        result_code: 'ESB000045',
      });
    if (original.status !== 'TS') return envelope(false, { message: 'Failed', result_code: 'ESB000011' });
    original.status = 'TR';
    return envelope(
      true,
      { message: 'SUCCESS', result_code: 'ESB000010', response_code: 'DP00800001006' },
      { transaction: { airtel_money_id: airtelMoneyId, status: 'SUCCESS' } },
    );
  }

  private disburse(body: Json): FakeResponse {
    const id = get(body, 'transaction', 'id');
    const amount = get(body, 'transaction', 'amount');
    const msisdn = get(body, 'payee', 'msisdn');
    if (
      typeof id !== 'string' ||
      id === '' ||
      msisdn === undefined ||
      typeof body.reference !== 'string' ||
      get(body, 'transaction', 'type') === undefined
    ) {
      return envelope(false, { message: 'Missing header/body params', response_code: 'DP00900001013' });
    }
    if (typeof body.pin !== 'string' || body.pin === '')
      return envelope(false, { message: 'Missing header/body params', response_code: 'DP00900001013' });
    if (this.settings.pin !== undefined && body.pin !== this.settings.pin)
      return envelope(false, { message: 'Incorrect Encrypted Pin', response_code: 'DP00900001013' });
    const refused = this.msisdnProblem(msisdn);
    if (refused) return refused;
    if (typeof amount !== 'number' || !(amount > 0))
      return envelope(false, { message: 'Invalid Amount', response_code: 'DP00900001004', result_code: 'ESB000008' });
    if (this.transactions.has(id))
      return envelope(false, { message: 'Duplicate exttRID', response_code: 'DP00900001011', result_code: '521050' });
    const outcome = this.outcomes.get(String(msisdn)) ?? { status: 'TS' };
    const transaction: Transaction = {
      kind: 'disbursement',
      id,
      amount,
      msisdn: String(msisdn),
      status: outcome.status === 'TIP' ? 'TIP' : outcome.status,
      code: outcome.status === 'TS' ? 'DP00900001001' : outcome.code,
      airtelMoneyId: outcome.status === 'TS' ? `disburs-${newId(10)}-${id}` : undefined,
    };
    if (outcome.status === 'TF')
      return envelope(false, {
        message: MESSAGES[outcome.code ?? ''] ?? 'Transaction failed',
        response_code: outcome.code ?? 'DP00900001005',
      });
    this.transactions.set(id, transaction);
    const data: Json = { reference_id: newId(12, '0123456789'), id, status: transaction.status };
    if (transaction.airtelMoneyId !== undefined) data.airtel_money_id = transaction.airtelMoneyId;
    return envelope(
      true,
      {
        message: 'SUCCESS',
        result_code: 'ESB000010',
        response_code: transaction.status === 'TS' ? 'DP00900001001' : 'DP00900001006',
      },
      { transaction: data },
    );
  }
}
