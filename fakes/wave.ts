// A local fake of Wave's Business APIs, written from Wave's published documentation (docs.wave.com; summarised, with
// what it leaves open, in docs/connectors/wave.md): the Checkout API (create a session, read it, search it by
// client_reference, expire it, refund it), the Payout API (a payout under an idempotency key, read it, search it),
// webhooks signed as Wave signs them (Wave-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of the timestamp and the
// body>), and the payer's side: the session's wave_launch_url is a page here that the payer (or a test) pays.
// Wave publishes no test numbers and has no sandbox: every payer pays unless `outcomes` says otherwise.
import { createHmac } from 'node:crypto';
import {
  FakeOperator,
  bearer,
  newId,
  type ControlCommand,
  type FakeOptions,
  type FakeRequest,
  type FakeResponse,
  type Handler,
} from './fake-server.js';

export interface WaveFakeOptions extends FakeOptions {
  apiKey?: string;
  /** The secret of the webhook registered in the Business Portal (signs every webhook). */
  webhookSecret?: string;
  /** The webhook URL registered in the Business Portal (unset: no webhooks). */
  webhookUrl?: string;
  /** When request signing is on for the key: every request must carry a good Wave-Signature made with it. */
  signingSecret?: string;
  /**
   * Whether payers pay by themselves `actAfterMs` after a session is made (as the other fakes' payers answer their
   * prompt), or only when the payer page (or `pay`) is used.
   */
  autoPay?: boolean;
}

/**
 * What a payer (by mobile) does with a session: pays, has an attempt refused with one of Wave's payment error codes
 * (insufficient-funds, …), or never acts. For a payout recipient: paid, failed with a payout error code, or left
 * processing.
 */
export type WaveOutcome = { pay: true } | { error: string } | { never: true };

export interface Session {
  id: string;
  amount: string;
  currency: string;
  client_reference: string | null;
  success_url: string;
  error_url: string;
  restrict_payer_mobile: string | null;
  checkout_status: 'open' | 'complete' | 'expired';
  payment_status: 'processing' | 'cancelled' | 'succeeded';
  last_payment_error: { code: string; message: string } | null;
  transaction_id: string | null;
  when_created: string;
  when_expires: string;
  when_completed: string | null;
  refunded: boolean;
}

export interface Payout {
  id: string;
  currency: string;
  receive_amount: string;
  fee: string;
  mobile: string;
  name: string | null;
  client_reference: string | null;
  status: 'processing' | 'succeeded' | 'failed' | 'reversed';
  payout_error: { error_code: string; error_message: string } | null;
  timestamp: string;
  /** The request body it was made with, to tell a retry from another payout under the same key. */
  body: string;
}

type Json = Record<string, unknown>;

const MESSAGES: Record<string, string> = {
  'insufficient-funds': 'The payer does not have enough funds in their wallet.',
  'payer-mobile-mismatch': 'The payer is not the one this session is restricted to.',
  'blocked-account': 'The account is blocked.',
  'customer-age-limit-exceeded': 'The payer is too young for this payment.',
  'kyb-limits-exceeded': 'The payment exceeds a limit of the account.',
  'payment-failure': 'The payment could not be completed.',
  'recipient-limit-exceeded': 'The recipient has reached a limit of their wallet.',
  'payout-limit-exceeded': 'The payout exceeds a limit of the business.',
  'recipient-not-found': 'No Wave account has this mobile number.',
};

const CHECKOUT_FIELDS = [
  'amount',
  'currency',
  'client_reference',
  'success_url',
  'error_url',
  'restrict_payer_mobile',
  'aggregated_merchant_id',
];
const PAYOUT_FIELDS = [
  'currency',
  'receive_amount',
  'mobile',
  'name',
  'national_id',
  'client_reference',
  'payment_reason',
  'aggregated_merchant_id',
];
/** Wave's sessions expire after 30 minutes unless expired sooner. */
const SESSION_LIFETIME_MS = 30 * 60_000;
const E164 = /^\+[1-9][0-9]{7,14}$/;

function problem(status: number, code: string, message: string, details?: unknown): FakeResponse {
  return { status, body: details === undefined ? { code, message } : { code, message, details } };
}

function invalid(loc: string[], msg: string): FakeResponse {
  return problem(400, 'request-validation-error', 'Request invalid', [{ loc, msg }]);
}

/** A whole amount of XOF (Wave takes no decimals in XOF), written as a string, above zero. */
function amountProblem(value: unknown, field: string, currency: unknown): FakeResponse | undefined {
  if (typeof value !== 'string') return invalid([field], 'must be a string');
  const pattern = currency === 'XOF' ? /^[0-9]+$/ : /^[0-9]+(\.[0-9]{1,2})?$/;
  if (!pattern.test(value) || Number(value) <= 0)
    return invalid([field], currency === 'XOF' ? 'XOF amounts have no decimals' : 'not a valid amount');
  return undefined;
}

function isHttps(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    return new URL(value).protocol === 'https:';
  } catch {
    return false;
  }
}

export class WaveFake extends FakeOperator {
  readonly sessions = new Map<string, Session>();
  readonly payouts = new Map<string, Payout>();
  /** Payouts by the idempotency key they were made under. */
  private readonly byKey = new Map<string, Payout>();
  /** What each payer (or recipient) does, by mobile. */
  readonly outcomes = new Map<string, WaveOutcome>();
  webhookUrl: string | undefined;
  private revoked = false;

  constructor(private readonly settings: WaveFakeOptions = {}) {
    super(settings);
    this.webhookUrl = settings.webhookUrl;
  }

  private get apiKey(): string {
    return this.settings.apiKey ?? 'wave_sn_prod_fake-api-key';
  }

  private get webhookSecret(): string {
    return this.settings.webhookSecret ?? 'wave_sn_WHS_fake-webhook-secret';
  }

  /** Wave's API keys do not expire: the nearest it has is a key revoked in the Business Portal. */
  expireTokens(): void {
    this.revoked = true;
  }

  /** The key made valid again (a new key pasted in, say). */
  restoreKey(): void {
    this.revoked = false;
  }

  /** Sessions made for this payer (restrict_payer_mobile): how many times a payer was asked to pay. */
  prompts(mobile: string): number {
    return [...this.sessions.values()].filter((s) => s.restrict_payer_mobile === mobile).length;
  }

  /** The session of a collection (our id is its client_reference). */
  sessionOf(clientReference: string): Session | undefined {
    return [...this.sessions.values()].find((s) => s.client_reference === clientReference);
  }

  protected override control(command: ControlCommand): void {
    const outcomes = command.outcomes;
    if (typeof outcomes === 'object' && outcomes !== null) {
      for (const [mobile, outcome] of Object.entries(outcomes)) this.outcomes.set(mobile, outcome as WaveOutcome);
    }
    if (typeof command.webhook_url === 'string') this.webhookUrl = command.webhook_url;
    if (command.restore_key === true) this.restoreKey();
    if (typeof command.pay === 'string') this.pay(command.pay);
  }

  protected faultBody(status: number): FakeResponse {
    return problem(status, status === 429 ? 'rate-limit-exceeded' : 'internal-server-error', 'Something went wrong');
  }

  /** Paths of two segments after the collection (the base router's `*` is one): a session's expire and refund. */
  protected override notFound(req: FakeRequest): FakeResponse {
    const action = /^\/v1\/checkout\/sessions\/([^/]+)\/(expire|refund)$/.exec(req.path);
    if (req.method === 'POST' && action)
      return this.api(req, () =>
        action[2] === 'expire' ? this.expire(action[1] ?? '') : this.refund(action[1] ?? ''),
      );
    return problem(404, 'not-found', 'Not found');
  }

  protected routes(): Record<string, Handler> {
    return {
      'POST /v1/checkout/sessions': (req) => this.api(req, (body) => this.createSession(body)),
      'GET /v1/checkout/sessions/search': (req) => this.api(req, () => this.searchSessions(req)),
      'GET /v1/checkout/sessions/*': (req) => this.api(req, () => this.readSession(req.path.split('/')[4] ?? '')),
      'POST /v1/payout': (req) => this.api(req, (body) => this.createPayout(req, body)),
      'GET /v1/payout/*': (req) => this.api(req, () => this.readPayout(req.path.split('/')[3] ?? '')),
      'GET /v1/payouts/search': (req) => this.api(req, () => this.searchPayouts(req)),
      'GET /c/*': (req) => this.payerPage(req.path.split('/')[2] ?? ''),
      'POST /c/*': (req) => this.payerPays(req.path.split('/')[2] ?? ''),
    };
  }

  /** The API key (and the request signature when signing is on), then the handler. */
  private api(req: FakeRequest, handle: (body: Json) => FakeResponse): FakeResponse {
    const header = req.headers.authorization;
    if (header === undefined)
      return problem(401, 'missing-auth-header', 'Your request should include an HTTP auth header.');
    const key = bearer(req);
    if (key === undefined) return problem(401, 'invalid-auth', "Your HTTP auth header can't be processed.");
    if (key !== this.apiKey) return problem(401, 'api-key-not-found', 'The API key was not found.');
    if (this.revoked) return problem(401, 'api-key-revoked', 'Your API key has been revoked.');
    if (this.settings.signingSecret !== undefined) {
      const signature = req.headers['wave-signature'];
      const t = typeof signature === 'string' ? /t=([0-9]+)/.exec(signature)?.[1] : undefined;
      const expected =
        t === undefined ? '' : createHmac('sha256', this.settings.signingSecret).update(`${t}${req.raw}`).digest('hex');
      if (t === undefined || typeof signature !== 'string' || !signature.includes(`v1=${expected}`))
        return problem(401, 'invalid-wave-signature', 'The request signature is missing or wrong.');
    }
    if (req.method === 'POST' && req.raw !== '' && !(req.headers['content-type'] ?? '').startsWith('application/json'))
      return problem(415, 'unsupported-media-type', 'Send JSON.');
    if (req.method === 'POST' && req.raw !== '' && req.json === undefined)
      return problem(400, 'request-validation-error', 'The body is not JSON.');
    return handle(typeof req.json === 'object' && req.json !== null ? (req.json as Json) : {});
  }

  private createSession(body: Json): FakeResponse {
    for (const key of Object.keys(body))
      if (!CHECKOUT_FIELDS.includes(key)) return invalid([key], 'extra fields not permitted');
    if (body.currency !== 'XOF') return invalid(['currency'], 'not a currency this wallet takes');
    const bad = amountProblem(body.amount, 'amount', body.currency);
    if (bad) return bad;
    for (const field of ['success_url', 'error_url'])
      if (!isHttps(body[field])) return invalid([field], 'must be an https URL');
    if (
      body.client_reference !== undefined &&
      (typeof body.client_reference !== 'string' || body.client_reference.length > 255)
    )
      return invalid(['client_reference'], 'at most 255 characters');
    if (
      body.restrict_payer_mobile !== undefined &&
      (typeof body.restrict_payer_mobile !== 'string' || !E164.test(body.restrict_payer_mobile))
    )
      return invalid(['restrict_payer_mobile'], 'must be a mobile number in E.164 format');
    const now = Date.now();
    const session: Session = {
      id: `cos-${newId(14, 'abcdefghijklmnopqrstuvwxyz0123456789')}`,
      amount: body.amount as string,
      currency: 'XOF',
      client_reference: (body.client_reference as string | undefined) ?? null,
      success_url: body.success_url as string,
      error_url: body.error_url as string,
      restrict_payer_mobile: (body.restrict_payer_mobile as string | undefined) ?? null,
      checkout_status: 'open',
      payment_status: 'processing',
      last_payment_error: null,
      transaction_id: null,
      when_created: new Date(now).toISOString(),
      when_expires: new Date(now + SESSION_LIFETIME_MS).toISOString(),
      when_completed: null,
      refunded: false,
    };
    this.sessions.set(session.id, session);
    if (this.settings.autoPay !== false) {
      const outcome = this.outcomes.get(session.restrict_payer_mobile ?? '') ?? { pay: true };
      if (!('never' in outcome))
        this.later(this.actAfterMs, () => {
          this.attempt(session.id, outcome);
        });
    }
    return { status: 200, body: this.show(session) };
  }

  /** The session as Wave's API shows it. */
  private show(session: Session): Json {
    const shown: Json = { ...session };
    delete shown.refunded;
    return {
      ...shown,
      business_name: 'Fake Shop',
      wave_launch_url: `${this.url}/c/${session.id}`,
    };
  }

  private readSession(id: string): FakeResponse {
    const session = this.sessions.get(id);
    return session
      ? { status: 200, body: this.show(session) }
      : problem(404, 'checkout-session-not-found', 'No such session.');
  }

  private searchSessions(req: FakeRequest): FakeResponse {
    const reference = req.query.get('client_reference');
    if (reference === null) return invalid(['client_reference'], 'field required');
    return {
      status: 200,
      body: {
        result: [...this.sessions.values()].filter((s) => s.client_reference === reference).map((s) => this.show(s)),
      },
    };
  }

  /** The payer pays the session (the payer page's button, or a test): what their outcome says happens. */
  pay(id: string): boolean {
    const session = this.sessions.get(id);
    if (!session || session.checkout_status !== 'open') return false;
    const outcome = this.outcomes.get(session.restrict_payer_mobile ?? '') ?? { pay: true };
    return this.attempt(id, 'never' in outcome ? { pay: true } : outcome);
  }

  private attempt(id: string, outcome: { pay: true } | { error: string }): boolean {
    const session = this.sessions.get(id);
    if (!session || session.checkout_status !== 'open') return false;
    if ('error' in outcome) {
      session.last_payment_error = { code: outcome.error, message: MESSAGES[outcome.error] ?? 'Payment failed.' };
      this.webhook('checkout.session.payment_failed', this.show(session));
      return false;
    }
    session.checkout_status = 'complete';
    session.payment_status = 'succeeded';
    session.last_payment_error = null;
    session.transaction_id = `T_${newId(12)}`;
    session.when_completed = new Date().toISOString();
    this.webhook('checkout.session.completed', this.show(session));
    return true;
  }

  private expire(id: string): FakeResponse {
    const session = this.sessions.get(id);
    if (!session) return problem(404, 'checkout-session-not-found', 'No such session.');
    if (session.checkout_status === 'complete')
      return problem(409, 'checkout-session-already-completed', 'The session has been paid.');
    session.checkout_status = 'expired';
    session.payment_status = 'cancelled';
    session.when_completed ??= new Date().toISOString();
    return { status: 200, body: this.show(session) };
  }

  private refund(id: string): FakeResponse {
    const session = this.sessions.get(id);
    if (!session) return problem(404, 'checkout-session-not-found', 'No such session.');
    if (session.payment_status !== 'succeeded' || session.refunded)
      return problem(409, 'checkout-refund-failed', 'Only a paid session can be refunded, once.');
    session.refunded = true;
    return { status: 200 };
  }

  private createPayout(req: FakeRequest, body: Json): FakeResponse {
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '' || key.length > 64)
      return invalid(['header', 'idempotency-key'], 'field required (at most 64 characters)');
    const earlier = this.byKey.get(key);
    if (earlier) {
      if (earlier.body !== req.raw)
        return problem(409, 'idempotency-mismatch', 'The key was used with another request.');
      return { status: 200, body: this.showPayout(earlier) };
    }
    for (const field of Object.keys(body))
      if (!PAYOUT_FIELDS.includes(field)) return invalid([field], 'extra fields not permitted');
    if (body.currency !== 'XOF') return invalid(['currency'], 'not a currency this wallet takes');
    const bad = amountProblem(body.receive_amount, 'receive_amount', body.currency);
    if (bad) return bad;
    if (typeof body.mobile !== 'string' || !E164.test(body.mobile))
      return invalid(['mobile'], 'must be a mobile number in E.164 format');
    const outcome = this.outcomes.get(body.mobile) ?? { pay: true };
    const payout: Payout = {
      id: `pt-${newId(14, 'abcdefghijklmnopqrstuvwxyz0123456789')}`,
      currency: 'XOF',
      receive_amount: body.receive_amount as string,
      fee: String(Math.ceil(Number(body.receive_amount) / 100)),
      mobile: body.mobile,
      name: typeof body.name === 'string' ? body.name : null,
      client_reference: typeof body.client_reference === 'string' ? body.client_reference : null,
      status: 'error' in outcome ? 'failed' : 'never' in outcome ? 'processing' : 'succeeded',
      payout_error:
        'error' in outcome
          ? { error_code: outcome.error, error_message: MESSAGES[outcome.error] ?? 'The payout failed.' }
          : null,
      timestamp: new Date().toISOString(),
      body: req.raw,
    };
    this.payouts.set(payout.id, payout);
    this.byKey.set(key, payout);
    return { status: 200, body: this.showPayout(payout) };
  }

  private showPayout(payout: Payout): Json {
    const shown: Json = { ...payout };
    delete shown.body;
    return shown;
  }

  private readPayout(id: string): FakeResponse {
    const payout = this.payouts.get(id);
    return payout
      ? { status: 200, body: this.showPayout(payout) }
      : problem(404, 'payout-not-found', 'No such payout.');
  }

  private searchPayouts(req: FakeRequest): FakeResponse {
    const reference = req.query.get('client_reference');
    if (reference === null) return invalid(['client_reference'], 'field required');
    return {
      status: 200,
      body: {
        result: [...this.payouts.values()]
          .filter((p) => p.client_reference === reference)
          .map((p) => this.showPayout(p)),
      },
    };
  }

  /** The page wave_launch_url opens (on a phone, the Wave app): the amount, and a button that pays. */
  private payerPage(id: string): FakeResponse {
    const session = this.sessions.get(id);
    if (!session)
      return { status: 404, headers: { 'content-type': 'text/html; charset=utf-8' }, body: '<h1>Lien invalide</h1>' };
    const open = session.checkout_status === 'open';
    const html = `<!doctype html><html lang="fr"><head><meta charset="utf-8"><title>Wave</title>
<meta name="viewport" content="width=device-width,initial-scale=1"></head><body><main>
<h1>Payer Fake Shop</h1><p id="amount">${session.amount} F CFA</p>
${open ? `<form method="post" action="/c/${session.id}"><button type="submit">Payer</button></form>` : `<p id="state">${session.checkout_status === 'complete' ? 'Paiement effectué' : 'Lien expiré'}</p>`}
${session.last_payment_error ? `<p role="alert">${session.last_payment_error.message}</p>` : ''}
</main></body></html>`;
    return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: html };
  }

  private payerPays(id: string): FakeResponse {
    const session = this.sessions.get(id);
    if (session?.checkout_status === 'open') this.pay(id);
    return this.payerPage(id);
  }

  /** A webhook as Wave sends it: an event with its id and type, the object as data, signed when sent. */
  private webhook(type: string, data: Json): void {
    if (this.webhookUrl === undefined) return;
    const event = { id: `AE_${newId(16)}`, type, data };
    this.sendCallback(this.webhookUrl, event, 'POST', (raw) => {
      const t = Math.floor(Date.now() / 1000);
      return {
        'wave-signature': `t=${t},v1=${createHmac('sha256', this.webhookSecret).update(`${t}${raw}`).digest('hex')}`,
      };
    });
  }
}
