// A local fake of Orange Money Web Payment, written from Orange Developer's published documentation (summarised, with
// what it leaves unsaid, in docs/connectors/orange-money.md): the client-credentials token (Basic client_id:client_secret,
// a form body), `webpayment` with its field rules (merchant_key, currency, order_id unique and at most 30 characters,
// an integer amount, the three URLs at most 120, lang fr or en, reference at most 30) answering 201 with pay_token,
// payment_url and notif_token; the payment page a test can pay, fail or cancel; the notification sent once to notif_url
// with the notif_token; and `transactionstatus` by order_id, amount and pay_token. Outcomes: SUCCESS unless `outcomes`
// sets FAILED or PENDING (never settled) for the payer's number.
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

export interface OrangeFakeOptions extends FakeOptions {
  clientId?: string;
  clientSecret?: string;
  merchantKey?: string;
  /** The currency the merchant key takes (Orange's sandbox: OUV). */
  currency?: string;
  /** The Web Payment API path (Orange's sandbox: /orange-money-webpay/dev/v1). */
  webpayPath?: string;
  /** How long a session (its pay_token) can be paid, in ms. */
  sessionTtlMs?: number;
}

/** What a payer's number leads to once the payer confirms on the page. */
export type OrangeOutcome = 'SUCCESS' | 'FAILED' | 'PENDING';

type Status = 'INITIATED' | 'PENDING' | 'SUCCESS' | 'FAILED' | 'EXPIRED';

export interface OrangeSession {
  payToken: string;
  notifToken: string;
  body: Record<string, unknown>;
  status: Status;
  txnid: string | undefined;
  msisdn: string | undefined;
  createdAt: number;
}

/** Orange's documented limits. */
const MAX = { order_id: 30, reference: 30, url: 120 };
const HEX = '0123456789abcdef';
const PAGE_PATH = '/payment/pay_token/';

export class OrangeFake extends FakeOperator {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly merchantKey: string;
  readonly currency: string;
  readonly webpayPath: string;
  private readonly sessionTtlMs: number;
  private readonly tokens = new Set<string>();
  private readonly expiredTokens = new Set<string>();
  /** Sessions by pay_token. */
  readonly sessions = new Map<string, OrangeSession>();
  readonly outcomes = new Map<string, OrangeOutcome>();
  /** Tokens issued so far. */
  tokensIssued = 0;

  constructor(options: OrangeFakeOptions = {}) {
    super(options);
    this.clientId = options.clientId ?? 'fake-client-id';
    this.clientSecret = options.clientSecret ?? 'fake-client-secret';
    this.merchantKey = options.merchantKey ?? 'fake-merchant-key';
    this.currency = options.currency ?? 'XOF';
    this.webpayPath = options.webpayPath ?? '/orange-money-webpay/ci/v1';
    this.sessionTtlMs = options.sessionTtlMs ?? 600_000;
  }

  expireTokens(): void {
    for (const token of this.tokens) this.expiredTokens.add(token);
    this.tokens.clear();
  }

  /** The session of an order_id, if one was opened. */
  sessionOf(orderId: string): OrangeSession | undefined {
    return [...this.sessions.values()].find((s) => s.body.order_id === orderId);
  }

  /** Sessions whose order_id starts with `prefix` (our id in base 36 starts each of a collection's order_ids). */
  sessionsFor(prefix: string): OrangeSession[] {
    return [...this.sessions.values()].filter((s) => String(s.body.order_id).startsWith(prefix));
  }

  /** A session nobody confirmed runs out of time now (as if its time limit had passed). */
  expireSession(payToken: string): void {
    const session = this.sessions.get(payToken);
    if (session?.status === 'INITIATED') session.status = 'EXPIRED';
  }

  /**
   * The payer on the payment page, over HTTP as a browser would post its form: `pay` confirms with the number and a
   * one-time code, `cancel` leaves. Answers the page's HTTP status and where it sends the payer.
   */
  async payerSubmits(
    paymentUrl: string,
    action: 'pay' | 'cancel',
    msisdn = '0700000000',
  ): Promise<{ status: number; location: string | null }> {
    const res = await fetch(paymentUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ action, msisdn, otp: '1234' }).toString(),
      redirect: 'manual',
    });
    await res.arrayBuffer();
    return { status: res.status, location: res.headers.get('location') };
  }

  protected override control(command: ControlCommand): void {
    const outcomes = command.outcomes;
    if (typeof outcomes === 'object' && outcomes !== null) {
      for (const [number, outcome] of Object.entries(outcomes)) this.outcomes.set(number, outcome as OrangeOutcome);
    }
    // {"pay": {"pay_token": "…", "action": "pay", "msisdn": "…"}}: the payer acts, for a person driving the fake.
    const pay = command.pay;
    if (typeof pay === 'object' && pay !== null) {
      const session = this.sessions.get(String(get(pay, 'pay_token')));
      if (session)
        this.act(session, get(pay, 'action') === 'cancel' ? 'cancel' : 'pay', String(get(pay, 'msisdn') ?? ''));
    }
  }

  protected faultBody(status: number): FakeResponse {
    if (status === 503)
      return {
        status,
        body: { code: 5, message: 'Service unavailable', description: 'The service is temporarily unavailable.' },
      };
    return { status, body: { code: 1, message: 'Internal error', description: 'An internal error occurred.' } };
  }

  protected override notFound(_req: FakeRequest): FakeResponse {
    return {
      status: 404,
      body: { code: 404, message: 'Resource not found', description: 'The requested URI or resource does not exist.' },
    };
  }

  protected routes(): Record<string, Handler> {
    return {
      'POST /oauth/v3/token': (req) => this.token(req),
      [`POST ${this.webpayPath}/webpayment`]: (req) => this.api(req, () => this.webpayment(req)),
      [`POST ${this.webpayPath}/transactionstatus`]: (req) => this.api(req, () => this.transactionStatus(req)),
      [`GET ${PAGE_PATH}*`]: (req) => this.page(req),
      [`POST ${PAGE_PATH}*`]: (req) => this.submit(req),
    };
  }

  private token(req: FakeRequest): FakeResponse {
    const credentials = basic(req);
    if (!credentials || credentials.user !== this.clientId || credentials.password !== this.clientSecret)
      return {
        status: 401,
        body: {
          error: 'invalid_client',
          error_description: 'The requested service needs credentials, but the ones provided were invalid.',
        },
      };
    const type = String(req.headers['content-type'] ?? '');
    if (
      !type.startsWith('application/x-www-form-urlencoded') ||
      new URLSearchParams(req.raw).get('grant_type') !== 'client_credentials'
    )
      return {
        status: 400,
        body: {
          error: 'invalid_request',
          error_description: 'grant_type=client_credentials is required, as a form body.',
        },
      };
    const token = newId(32, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789');
    this.tokens.add(token);
    this.tokensIssued += 1;
    return { status: 200, body: { token_type: 'Bearer', access_token: token, expires_in: 3600 } };
  }

  /** Orange's gateway: JSON answers only (406 without Accept: application/json), and a bearer token it issued. */
  private api(req: FakeRequest, handle: () => FakeResponse): FakeResponse {
    const accept = String(req.headers.accept ?? '');
    if (!accept.includes('application/json') && !accept.includes('*/*'))
      return {
        status: 406,
        body: { code: 406, message: 'Not Acceptable', description: 'Accept: application/json is required.' },
      };
    const token = bearer(req);
    if (token !== undefined && this.expiredTokens.has(token))
      return {
        status: 401,
        body: {
          code: 42,
          message: 'Expired credentials',
          description: 'The requested service needs credentials, but the ones provided were out-of-date.',
        },
      };
    if (token === undefined || !this.tokens.has(token))
      return {
        status: 401,
        body: {
          code: 41,
          message: 'Invalid credentials',
          description: 'The requested service needs credentials, but the ones provided were invalid.',
        },
      };
    return handle();
  }

  private webpayment(req: FakeRequest): FakeResponse {
    const body = req.json;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return badRequest('The body must be JSON.');
    const json = body as Record<string, unknown>;
    const problem = this.webpaymentProblem(json);
    if (problem) return badRequest(problem);
    if (json.merchant_key !== this.merchantKey)
      return { status: 403, body: { code: 50, message: 'Access denied', description: 'Unknown merchant_key.' } };
    if (this.sessionOf(String(json.order_id))) return badRequest('order_id must be unique: this one was used before.');
    const payToken = `v1${newId(62, HEX)}`;
    const session: OrangeSession = {
      payToken,
      notifToken: newId(32, HEX),
      body: json,
      status: 'INITIATED',
      txnid: undefined,
      msisdn: undefined,
      createdAt: Date.now(),
    };
    this.sessions.set(payToken, session);
    return {
      status: 201,
      body: {
        status: 201,
        message: 'OK',
        pay_token: payToken,
        payment_url: `${this.url}${PAGE_PATH}${payToken}`,
        notif_token: session.notifToken,
      },
    };
  }

  private webpaymentProblem(body: Record<string, unknown>): string | undefined {
    for (const name of ['merchant_key', 'currency', 'order_id', 'return_url', 'cancel_url', 'notif_url', 'lang'])
      if (typeof body[name] !== 'string' || body[name] === '') return `${name} is mandatory.`;
    if (body.currency !== this.currency) return `currency must be ${this.currency} for this merchant.`;
    if (String(body.order_id).length > MAX.order_id) return `order_id is at most ${MAX.order_id} characters.`;
    if (typeof body.amount !== 'number' || !Number.isSafeInteger(body.amount) || body.amount <= 0)
      return 'amount must be a positive integer.';
    for (const name of ['return_url', 'cancel_url', 'notif_url']) {
      if (!isUrl(body[name])) return `${name} must be a URL.`;
      if (String(body[name]).length > MAX.url) return `${name} is at most ${MAX.url} characters.`;
    }
    if (body.lang !== 'fr' && body.lang !== 'en') return 'lang must be fr or en.';
    if (body.reference !== undefined && (typeof body.reference !== 'string' || body.reference.length > MAX.reference))
      return `reference is at most ${MAX.reference} characters.`;
    const known = new Set([
      'merchant_key',
      'currency',
      'order_id',
      'amount',
      'return_url',
      'cancel_url',
      'notif_url',
      'lang',
      'reference',
    ]);
    const extra = Object.keys(body).find((k) => !known.has(k));
    return extra === undefined ? undefined : `${extra} is not a webpayment field.`;
  }

  private transactionStatus(req: FakeRequest): FakeResponse {
    const body = req.json;
    const orderId = get(body, 'order_id');
    const amount = get(body, 'amount');
    const payToken = get(body, 'pay_token');
    if (typeof orderId !== 'string' || typeof payToken !== 'string' || typeof amount !== 'number')
      return badRequest('order_id, amount and pay_token are mandatory.');
    const session = this.sessions.get(payToken);
    if (!session || session.body.order_id !== orderId || session.body.amount !== amount)
      return {
        status: 404,
        body: {
          code: 404,
          message: 'Resource not found',
          description: 'No transaction with this order_id, amount and pay_token.',
        },
      };
    this.lapse(session);
    const view: Record<string, unknown> = { status: session.status, order_id: orderId };
    if (session.txnid !== undefined) view.txnid = session.txnid;
    return { status: 201, body: view };
  }

  /** The payment page: the amount and the merchant's reference, a number and a one-time code, pay or cancel. */
  private page(req: FakeRequest): FakeResponse {
    const session = this.sessions.get(req.path.slice(PAGE_PATH.length));
    if (!session)
      return { status: 404, headers: { 'content-type': 'text/html; charset=utf-8' }, body: '<p>Unknown payment.</p>' };
    this.lapse(session);
    const html =
      session.status === 'INITIATED'
        ? `<!doctype html><title>Orange Money</title><h1>${escapeHtml(String(session.body.reference ?? ''))}</h1>` +
          `<p>${String(session.body.amount)} ${escapeHtml(String(session.body.currency))}</p>` +
          `<form method="post"><label>Numéro <input name="msisdn"></label><label>Code <input name="otp"></label>` +
          `<button name="action" value="pay">Confirmer</button><button name="action" value="cancel">Annuler</button></form>`
        : `<!doctype html><title>Orange Money</title><p>${session.status}</p>`;
    return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: html };
  }

  private submit(req: FakeRequest): FakeResponse {
    const session = this.sessions.get(req.path.slice(PAGE_PATH.length));
    if (!session)
      return { status: 404, headers: { 'content-type': 'text/html; charset=utf-8' }, body: '<p>Unknown payment.</p>' };
    const form = new URLSearchParams(req.raw);
    const action = form.get('action') === 'cancel' ? 'cancel' : 'pay';
    const msisdn = form.get('msisdn') ?? '';
    if (action === 'pay' && (!/^[0-9]{8,12}$/.test(msisdn) || !/^[0-9]{4,6}$/.test(form.get('otp') ?? '')))
      return {
        status: 400,
        headers: { 'content-type': 'text/html; charset=utf-8' },
        body: '<p>Numéro ou code invalide.</p>',
      };
    const acted = this.act(session, action, msisdn);
    if (!acted)
      return { status: 410, headers: { 'content-type': 'text/html; charset=utf-8' }, body: `<p>${session.status}</p>` };
    return {
      status: 302,
      headers: { location: String(action === 'pay' ? session.body.return_url : session.body.cancel_url) },
    };
  }

  /** The payer confirms or cancels a session still open; false when it is not (paid, failed or expired). */
  private act(session: OrangeSession, action: 'pay' | 'cancel', msisdn: string): boolean {
    this.lapse(session);
    if (session.status !== 'INITIATED') return false;
    // A payer who cancels leaves the session open until it expires: Orange notifies nothing.
    if (action === 'cancel') return true;
    session.msisdn = msisdn;
    session.status = 'PENDING';
    const outcome = this.outcomes.get(msisdn) ?? 'SUCCESS';
    if (outcome !== 'PENDING') this.later(this.actAfterMs, () => this.settle(session, outcome));
    return true;
  }

  private settle(session: OrangeSession, outcome: 'SUCCESS' | 'FAILED'): void {
    session.status = outcome;
    if (outcome === 'SUCCESS')
      session.txnid = `MP${newId(6, '0123456789')}.${newId(4, '0123456789')}.${newId(6, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')}`;
    const notification: Record<string, unknown> = { status: outcome, notif_token: session.notifToken };
    if (session.txnid !== undefined) notification.txnid = session.txnid;
    // Sent once, to notif_url; Orange documents no retry.
    this.sendCallback(String(session.body.notif_url), notification);
  }

  /** A session nobody confirmed within its time expires. */
  private lapse(session: OrangeSession): void {
    if (session.status === 'INITIATED' && Date.now() - session.createdAt > this.sessionTtlMs)
      session.status = 'EXPIRED';
  }
}

function badRequest(description: string): FakeResponse {
  // Orange does not publish webpayment's 400 bodies; the fake keeps its API gateway's error shape.
  return { status: 400, body: { code: 400, message: 'Bad Request', description } };
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
