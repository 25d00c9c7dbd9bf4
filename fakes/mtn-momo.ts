// A local fake of the MTN MoMo Open API, written from its published documentation (summarised, with sources, in
// docs/connectors/mtn-momo.md): product tokens, RequestToPay, Transfer and Refund with their status reads, the
// X-Reference-Id rules (UUID v4; a second one is 409 RESOURCE_ALREADY_EXIST), and callbacks sent once, never
// retried. Outcomes: MTN's published sandbox numbers (46733123450 FAILED, 451 APPROVAL_REJECTED, 452 EXPIRED,
// 453 stays PENDING…), or any number set by `outcomes`; every other number succeeds.
import {
  FakeOperator,
  basic,
  bearer,
  get,
  isUrl,
  newId,
  type ControlCommand,
  type FakeOptions,
  type FakeRequest,
  type FakeResponse,
  type Handler,
} from './fake-server.js';

export interface MomoFakeOptions extends FakeOptions {
  /** Credentials per product. */
  collection?: { subscriptionKey: string; apiUser: string; apiKey: string };
  disbursement?: { subscriptionKey: string; apiUser: string; apiKey: string };
  /** The X-Target-Environment the API users belong to ("sandbox" takes EUR only). */
  targetEnvironment?: string;
  /** The accounts' currency outside the sandbox (the sandbox's is EUR): what the balance is given in before any payment. */
  currency?: string;
  /** The API user's providerCallbackHost: X-Callback-Url must be on it (unset: any host). */
  callbackHost?: string;
  /** MTN documents PUT for callbacks; its sandbox has been seen to POST. */
  callbackMethod?: 'POST' | 'PUT';
}

type Product = 'collection' | 'disbursement';
type Kind = 'requesttopay' | 'transfer' | 'refund';

/** An outcome: a final status with its reason, or PENDING for good. */
export interface MomoOutcome {
  status: 'SUCCESSFUL' | 'FAILED' | 'PENDING';
  reason?: string;
}

/** MTN's published sandbox numbers (the RequestToPay column; Transfer differs from 455 on). */
const TEST_NUMBERS: Record<string, MomoOutcome> = {
  '46733123450': { status: 'FAILED', reason: 'INTERNAL_PROCESSING_ERROR' },
  '46733123451': { status: 'FAILED', reason: 'APPROVAL_REJECTED' },
  '46733123452': { status: 'FAILED', reason: 'EXPIRED' },
  '46733123453': { status: 'PENDING' },
  '46733123455': { status: 'FAILED', reason: 'PAYER_NOT_FOUND' },
  '46733123456': { status: 'FAILED', reason: 'PAYEE_NOT_ALLOWED_TO_RECEIVE' },
  '46733123457': { status: 'FAILED', reason: 'NOT_ALLOWED' },
  '46733123461': { status: 'FAILED', reason: 'INTERNAL_PROCESSING_ERROR' },
  '46733123463': { status: 'FAILED', reason: 'COULD_NOT_PERFORM_TRANSACTION' },
};

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

interface Operation {
  kind: Kind;
  referenceId: string;
  body: Record<string, unknown>;
  status: 'PENDING' | 'SUCCESSFUL' | 'FAILED';
  reason: string | undefined;
  financialTransactionId: string | undefined;
  callbackUrl: string | undefined;
}

type Json = Record<string, unknown>;

export class MomoFake extends FakeOperator {
  private readonly products: Record<Product, { subscriptionKey: string; apiUser: string; apiKey: string }>;
  private readonly targetEnvironment: string;
  /** Money put into (or taken out of) each product's account through MTN's partner portal, in major units: a float top-up. */
  readonly portal: Record<Product, number> = { collection: 0, disbursement: 0 };
  private readonly tokens = new Map<string, Product>();
  readonly operations = new Map<string, Operation>();
  readonly outcomes = new Map<string, MomoOutcome>();

  constructor(private readonly settings: MomoFakeOptions = {}) {
    super(settings);
    this.products = {
      collection: settings.collection ?? {
        subscriptionKey: 'fake-collection-key',
        apiUser: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a01',
        apiKey: 'fake-collection-api-key',
      },
      disbursement: settings.disbursement ?? {
        subscriptionKey: 'fake-disbursement-key',
        apiUser: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a02',
        apiKey: 'fake-disbursement-api-key',
      },
    };
    this.targetEnvironment = settings.targetEnvironment ?? 'sandbox';
  }

  expireTokens(): void {
    this.tokens.clear();
  }

  /** How many RequestToPay prompts reached this number. */
  prompts(partyId: string): number {
    return [...this.operations.values()].filter(
      (o) => o.kind === 'requesttopay' && get(o.body, 'payer', 'partyId') === partyId,
    ).length;
  }

  protected override control(command: ControlCommand): void {
    // {"portal": {"disbursement": 5000}}: a top-up (or withdrawal) through MTN's portal, in major units.
    const portal = command.portal as Partial<Record<Product, unknown>> | undefined;
    for (const product of ['collection', 'disbursement'] as const) {
      if (typeof portal?.[product] === 'number') this.portal[product] = portal[product];
    }
    const outcomes = command.outcomes;
    if (typeof outcomes === 'object' && outcomes !== null) {
      for (const [number, outcome] of Object.entries(outcomes)) this.outcomes.set(number, outcome as MomoOutcome);
    }
  }

  protected faultBody(status: number): FakeResponse {
    if (status === 503)
      return {
        status,
        body: { message: 'Service temporarily unavailable, try again later.', code: 'SERVICE_UNAVAILABLE' },
      };
    return {
      status,
      body: { message: 'An internal error occurred while processing.', code: 'INTERNAL_PROCESSING_ERROR' },
    };
  }

  protected override notFound(req: FakeRequest): FakeResponse {
    // GET /collection/v1_0/accountholder/{accountHolderIdType}/{accountHolderId}/active: two ids in the path.
    const holder = /^\/collection\/v1_0\/accountholder\/([^/]+)\/([^/]+)\/active$/.exec(req.path);
    if (req.method === 'GET' && holder)
      return this.api(req, 'collection', () =>
        this.accountHolder(holder[1] ?? '', decodeURIComponent(holder[2] ?? '')),
      );
    return { status: 404, body: { statusCode: 404, message: 'Resource not found' } };
  }

  /** What a payer number counts as: active unless `outcomes` says PAYER_NOT_FOUND (MTN's sandbox number 455 too). */
  private accountHolder(type: string, id: string): FakeResponse {
    // MTN documents the type in small letters (msisdn, email); clients send MSISDN as their PartyIdType spells it.
    const kind = type.toLowerCase();
    if (kind !== 'msisdn' && kind !== 'email') return badRequest('accountHolderIdType must be msisdn or email.');
    if (kind === 'msisdn' && !/^[0-9]{8,15}$/.test(id)) return badRequest('accountHolderId must be an MSISDN.');
    const outcome = this.outcomes.get(id) ?? TEST_NUMBERS[id];
    return { status: 200, body: { result: outcome?.reason !== 'PAYER_NOT_FOUND' } };
  }

  /**
   * GET /{product}/v1_0/account/balance: `{availableBalance, currency}`, the amount a string as MTN's schema has it.
   * The fake keeps no ledger of its own: what succeeded in (RequestToPay) less what went out (Transfer, Refund), plus
   * what was put in (or taken out) through MTN's partner portal, `portal`.
   */
  private balance(product: Product): FakeResponse {
    let cents = Math.round(this.portal[product] * 100);
    let currency = this.targetEnvironment === 'sandbox' ? 'EUR' : this.settings.currency;
    for (const o of this.operations.values()) {
      if (o.status !== 'SUCCESSFUL') continue;
      const amount = Math.round(Number(o.body.amount) * 100);
      cents += o.kind === 'requesttopay' ? amount : -amount;
      currency ??= String(o.body.currency);
    }
    return { status: 200, body: { availableBalance: String(cents / 100), currency: currency ?? 'EUR' } };
  }

  protected routes(): Record<string, Handler> {
    return {
      'POST /collection/token/': (req) => this.token(req, 'collection'),
      'POST /disbursement/token/': (req) => this.token(req, 'disbursement'),
      'POST /collection/v1_0/requesttopay': (req) =>
        this.api(req, 'collection', () => this.create(req, 'requesttopay')),
      'GET /collection/v1_0/requesttopay/*': (req) => this.api(req, 'collection', () => this.read(req, 'requesttopay')),
      'POST /disbursement/v1_0/transfer': (req) => this.api(req, 'disbursement', () => this.create(req, 'transfer')),
      'GET /disbursement/v1_0/transfer/*': (req) => this.api(req, 'disbursement', () => this.read(req, 'transfer')),
      'POST /disbursement/v1_0/refund': (req) => this.api(req, 'disbursement', () => this.create(req, 'refund')),
      'POST /disbursement/v2_0/refund': (req) => this.api(req, 'disbursement', () => this.create(req, 'refund')),
      'GET /disbursement/v1_0/refund/*': (req) => this.api(req, 'disbursement', () => this.read(req, 'refund')),
      'GET /collection/v1_0/account/balance': (req) => this.api(req, 'collection', () => this.balance('collection')),
      'GET /disbursement/v1_0/account/balance': (req) =>
        this.api(req, 'disbursement', () => this.balance('disbursement')),
    };
  }

  /** The gateway's subscription-key check, MTN's form of it. */
  private subscription(req: FakeRequest, product: Product): FakeResponse | undefined {
    const key = req.headers['ocp-apim-subscription-key'];
    if (key === undefined) {
      return {
        status: 401,
        body: {
          statusCode: 401,
          message:
            'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.',
        },
      };
    }
    if (key !== this.products[product].subscriptionKey) {
      return {
        status: 401,
        body: {
          statusCode: 401,
          message:
            'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.',
        },
      };
    }
    return undefined;
  }

  private token(req: FakeRequest, product: Product): FakeResponse {
    const refused = this.subscription(req, product);
    if (refused) return refused;
    const credentials = basic(req);
    // MTN's sandbox answers bad API user credentials with 500 login_failed (its reference page says 401).
    if (
      !credentials ||
      credentials.user !== this.products[product].apiUser ||
      credentials.password !== this.products[product].apiKey
    ) {
      return { status: 500, body: { error: 'login_failed' } };
    }
    const payload = Buffer.from(
      JSON.stringify({
        clientId: credentials.user,
        expires: new Date(Date.now() + 3_600_000).toISOString(),
        sessionId: crypto.randomUUID(),
      }),
    ).toString('base64url');
    const token = `eyJ0eXAiOiJKV1QiLCJhbGciOiJSMjU2In0.${payload}.${newId(43, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_')}`;
    this.tokens.set(token, product);
    return { status: 200, body: { access_token: token, token_type: 'access_token', expires_in: 3600 } };
  }

  private api(req: FakeRequest, product: Product, handle: () => FakeResponse): FakeResponse {
    const refused = this.subscription(req, product);
    if (refused) return refused;
    const token = bearer(req);
    if (token === undefined || this.tokens.get(token) !== product)
      return { status: 401, body: { message: 'Authentication failed. Credentials not valid.', code: 'UNAUTHORIZED' } };
    if (req.headers['x-target-environment'] !== this.targetEnvironment) {
      return {
        status: 500,
        body: { message: 'Access to target environment is forbidden.', code: 'NOT_ALLOWED_TARGET_ENVIRONMENT' },
      };
    }
    return handle();
  }

  private create(req: FakeRequest, kind: Kind): FakeResponse {
    const referenceId = req.headers['x-reference-id'];
    if (typeof referenceId !== 'string' || !UUID_V4.test(referenceId))
      return badRequest('X-Reference-Id must be a UUID version 4.');
    const body = req.json;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return badRequest('The body must be JSON.');
    const json = body as Json;
    const problem = this.bodyProblem(kind, json);
    if (problem) return badRequest(problem);
    const callbackUrl = req.headers['x-callback-url'];
    if (callbackUrl !== undefined) {
      if (typeof callbackUrl !== 'string' || !isUrl(callbackUrl)) return badRequest('X-Callback-Url is not a URL.');
      if (this.settings.callbackHost !== undefined && new URL(callbackUrl).hostname !== this.settings.callbackHost) {
        return {
          status: 500,
          body: { message: 'Callback URL does not match the configured value.', code: 'INVALID_CALLBACK_URL_HOST' },
        };
      }
    }
    if (this.targetEnvironment === 'sandbox' && json.currency !== 'EUR')
      return { status: 500, body: { message: 'Currency not supported.', code: 'INVALID_CURRENCY' } };
    if (this.operations.has(referenceId))
      return {
        status: 409,
        body: { message: 'Duplicated reference id. Creation of resource failed.', code: 'RESOURCE_ALREADY_EXIST' },
      };
    const operation: Operation = {
      kind,
      referenceId,
      body: json,
      status: 'PENDING',
      reason: undefined,
      financialTransactionId: undefined,
      callbackUrl: callbackUrl as string | undefined,
    };
    this.operations.set(referenceId, operation);
    const outcome = this.outcomeFor(kind, json);
    if (outcome.status !== 'PENDING') this.later(this.actAfterMs, () => this.settle(operation, outcome));
    return { status: 202 };
  }

  private bodyProblem(kind: Kind, body: Json): string | undefined {
    if (typeof body.amount !== 'string' || !/^[0-9]+(\.[0-9]{1,2})?$/.test(body.amount) || Number(body.amount) <= 0)
      return 'amount must be a positive decimal string.';
    if (typeof body.currency !== 'string' || !/^[A-Z]{3}$/.test(body.currency))
      return 'currency must be an ISO 4217 code.';
    // No rule on externalId: MTN's RequestToPay and Transfer schemas list it without making it required ("used as a
    // reference to the transaction… not required to be unique"), and clients (mtn-momo) type it optional.
    if (body.externalId !== undefined && typeof body.externalId !== 'string') return 'externalId must be a string.';
    for (const note of ['payerMessage', 'payeeNote']) {
      const value = body[note];
      if (value !== undefined && (typeof value !== 'string' || value.length > 160 || value.includes("'")))
        return `${note} must be at most 160 characters, without an apostrophe.`;
    }
    if (kind === 'refund')
      return typeof body.referenceIdToRefund === 'string' && UUID_V4.test(body.referenceIdToRefund)
        ? undefined
        : 'referenceIdToRefund must be a UUID.';
    const party = kind === 'requesttopay' ? body.payer : body.payee;
    const type = get(party, 'partyIdType');
    const id = get(party, 'partyId');
    if (!['MSISDN', 'EMAIL', 'PARTY_CODE'].includes(String(type)) || typeof id !== 'string' || id === '')
      return `${kind === 'requesttopay' ? 'payer' : 'payee'} needs partyIdType and partyId.`;
    if (type === 'MSISDN' && !/^[0-9]{8,15}$/.test(id)) return 'partyId must be an MSISDN (digits, no +).';
    return undefined;
  }

  /** A refund needs a successful RequestToPay to refund; anything else follows the number's outcome. */
  private outcomeFor(kind: Kind, body: Json): MomoOutcome {
    if (kind === 'refund') {
      const original = this.operations.get(String(body.referenceIdToRefund));
      if (!original || original.kind !== 'requesttopay' || original.status !== 'SUCCESSFUL')
        return { status: 'FAILED', reason: 'PAYER_NOT_FOUND' };
      return { status: 'SUCCESSFUL' };
    }
    const number = String(get(kind === 'requesttopay' ? body.payer : body.payee, 'partyId'));
    return this.outcomes.get(number) ?? TEST_NUMBERS[number] ?? { status: 'SUCCESSFUL' };
  }

  private settle(operation: Operation, outcome: MomoOutcome): void {
    operation.status = outcome.status === 'SUCCESSFUL' ? 'SUCCESSFUL' : 'FAILED';
    operation.reason = outcome.reason;
    if (operation.status === 'SUCCESSFUL') operation.financialTransactionId = newId(10, '0123456789');
    // Sent once, never retried; only when X-Callback-Url was given.
    if (operation.callbackUrl !== undefined)
      this.sendCallback(operation.callbackUrl, this.view(operation), this.settings.callbackMethod ?? 'POST');
  }

  private read(req: FakeRequest, kind: Kind): FakeResponse {
    const operation = this.operations.get(decodeURIComponent(req.path.split('/').pop() ?? ''));
    if (!operation || operation.kind !== kind)
      return { status: 404, body: { message: 'Requested resource was not found.', code: 'RESOURCE_NOT_FOUND' } };
    return { status: 200, body: this.view(operation) };
  }

  /** An operation as GET (and the callback) shows it: amounts echoed normalised, reason a bare string. */
  private view(operation: Operation): Json {
    const { body } = operation;
    const view: Json = {};
    if (operation.financialTransactionId !== undefined) view.financialTransactionId = operation.financialTransactionId;
    view.externalId = body.externalId;
    view.amount = String(Number(body.amount));
    view.currency = body.currency;
    if (operation.kind === 'requesttopay') view.payer = body.payer;
    else if (operation.kind === 'transfer') view.payee = body.payee;
    view.payerMessage = body.payerMessage;
    view.payeeNote = body.payeeNote;
    view.status = operation.status;
    if (operation.reason !== undefined) view.reason = operation.reason;
    return view;
  }
}

function badRequest(message: string): FakeResponse {
  // MTN has not published its 400 bodies; the fake keeps MoMo's error shape.
  return { status: 400, body: { message, code: 'BAD_REQUEST' } };
}
