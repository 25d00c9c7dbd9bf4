// What the operator fakes share: an HTTP server on loopback, the faults a test (or a person, through
// POST /__fake/control) can inject, and callbacks that can be delayed, dropped or sent twice. Each fake
// (mpesa-daraja.ts, mtn-momo.ts, airtel-money.ts, wave.ts) follows its operator's published API and refuses what the
// operator refuses. A test tool: it never stands in for the real integration.
import { randomBytes } from 'node:crypto';
import http from 'node:http';

export interface FakeRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** The raw body. */
  raw: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

export interface FakeResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Handler = (req: FakeRequest) => FakeResponse | Promise<FakeResponse>;

/** A fault for the next matching requests (to the API, not the token endpoint unless it names it). */
export interface Fault {
  /** Only requests whose path contains this. */
  path?: string;
  /**
   * Only requests of this method: `POST` keeps a fault on an initiation from being taken by a status query of another
   * payment on the same path (`GET /requesttopay/{id}` under `/requesttopay`).
   */
  method?: string;
  /** Answer this HTTP status (with the operator's own error body for it, or `body`) instead of the handler's answer. */
  status?: number;
  body?: unknown;
  /** With `status`: act on the request first, then answer the error (an operator failing after it acted). */
  processed?: boolean;
  /**
   * Never answer (until the client gives up). `processed: true` acts on the request first, as an operator whose
   * answer was lost on the way back; false drops it before it is seen.
   */
  timeout?: { processed: boolean };
  /** Answer as usual, but only after this many ms (an operator that is slow to answer). */
  delayMs?: number;
  /** How many requests it applies to (default 1). */
  times?: number;
}

/** What happens to the next callbacks: delayed, dropped (never sent) or sent twice. */
export interface CallbackPlan {
  delayMs: number;
  drop: number;
  duplicate: number;
}

export interface SentCallback {
  url: string;
  method: string;
  body: unknown;
  /** The receiver's HTTP status, or 0 when it could not be reached. */
  status: number;
}

export interface FakeOptions {
  port?: number;
  /** How long the payer (or the recipient) takes to act, in ms. */
  actAfterMs?: number;
  log?: (line: string) => void;
}

/** A control command, as POST /__fake/control takes it (the CLI's way to inject faults). */
export interface ControlCommand {
  fault?: Fault;
  callbacks?: Partial<CallbackPlan>;
  expire_tokens?: boolean;
  /** Operator-specific: each fake reads the rest (outcomes by number, business errors…). */
  [key: string]: unknown;
}

export abstract class FakeOperator {
  readonly received: FakeRequest[] = [];
  readonly callbacks: SentCallback[] = [];
  /** The callbacks the plan dropped (never sent): what a test of a lost callback checks was really lost. */
  readonly dropped: { url: string; body: unknown }[] = [];
  protected faults: (Fault & { left: number })[] = [];
  protected plan: CallbackPlan = { delayMs: 0, drop: 0, duplicate: 0 };
  protected readonly actAfterMs: number;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stalled = new Set<http.ServerResponse>();
  private server: http.Server | undefined;
  url = '';

  constructor(protected readonly options: FakeOptions = {}) {
    this.actAfterMs = options.actAfterMs ?? 200;
  }

  /** The operator's routes: `METHOD /path` → handler (a path may end in `/*` for an id). */
  protected abstract routes(): Record<string, Handler>;

  /** The operator's error answer for an injected status. */
  protected abstract faultBody(status: number): FakeResponse;

  /** Invalidates every access token issued so far (the next API call is refused as the operator refuses a stale token). */
  abstract expireTokens(): void;

  /** Operator-specific control commands. */
  protected control(_command: ControlCommand): void {}

  async start(): Promise<string> {
    const server = http.createServer((req, res) => void this.serve(req, res));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(this.options.port ?? 0, '127.0.0.1', resolve));
    const address = server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    return this.url;
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    for (const res of this.stalled) res.destroy();
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  inject(fault: Fault): void {
    this.faults.push({ ...fault, left: fault.times ?? 1 });
  }

  clearFaults(): void {
    this.faults = [];
  }

  callbacksPlan(plan: Partial<CallbackPlan>): void {
    this.plan = { ...this.plan, ...plan };
  }

  /** Requests received on a path (for tests: how many STK pushes reached a payer, say). */
  requests(method: string, pathPart: string): FakeRequest[] {
    return this.received.filter((r) => r.method === method && r.path.includes(pathPart));
  }

  /** Runs `work` after `ms`, unless the fake stops first. */
  protected later(ms: number, work: () => void | Promise<void>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void Promise.resolve(work()).catch((err: unknown) => this.log(`deferred work failed: ${(err as Error).message}`));
    }, ms);
    this.timers.add(timer);
  }

  /**
   * Sends a callback as the operator would: once (no retry), unless the plan drops or repeats it. `sign` gives the
   * headers of an operator that signs its callbacks, made from the raw body at the moment each is sent.
   */
  protected sendCallback(
    url: string,
    body: unknown,
    method = 'POST',
    sign?: (raw: string) => Record<string, string>,
  ): void {
    if (this.plan.drop > 0) {
      this.plan.drop -= 1;
      this.dropped.push({ url, body });
      this.log(`callback to ${url} dropped`);
      return;
    }
    const times = this.plan.duplicate > 0 ? 2 : 1;
    if (times === 2) this.plan.duplicate -= 1;
    for (let i = 0; i < times; i += 1) {
      this.later(this.plan.delayMs + i * 50, async () => {
        let status: number;
        try {
          const raw = JSON.stringify(body);
          const res = await fetch(url, {
            method,
            headers: { 'content-type': 'application/json', ...sign?.(raw) },
            body: raw,
            signal: AbortSignal.timeout(10_000),
          });
          status = res.status;
          await res.arrayBuffer();
        } catch {
          status = 0;
        }
        this.callbacks.push({ url, method, body, status });
        this.log(`callback ${method} ${url} → ${status}`);
      });
    }
  }

  protected log(line: string): void {
    this.options.log?.(line);
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    let json: unknown;
    try {
      json = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      json = undefined;
    }
    const request: FakeRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      raw,
      json,
    };
    if (request.path === '/__fake/control' && request.method === 'POST') return this.answer(res, this.runControl(json));
    this.received.push(request);
    const fault = this.faults.find(
      (f) =>
        f.left > 0 &&
        (f.path === undefined || request.path.includes(f.path)) &&
        (f.method === undefined || f.method.toUpperCase() === request.method),
    );
    if (fault) fault.left -= 1;
    this.faults = this.faults.filter((f) => f.left > 0);
    if (fault?.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
    if (fault?.timeout) {
      if (fault.timeout.processed) await this.handle(request);
      this.stalled.add(res);
      res.on('close', () => this.stalled.delete(res));
      return;
    }
    if (fault?.status !== undefined) {
      if (fault.processed) await this.handle(request);
      return this.answer(
        res,
        fault.body === undefined ? this.faultBody(fault.status) : { status: fault.status, body: fault.body },
      );
    }
    this.answer(res, await this.handle(request));
  }

  private async handle(request: FakeRequest): Promise<FakeResponse> {
    const routes = this.routes();
    const exact = routes[`${request.method} ${request.path}`];
    if (exact) return exact(request);
    for (const [key, handler] of Object.entries(routes)) {
      const [method, pattern = ''] = key.split(' ');
      if (
        method === request.method &&
        pattern.endsWith('/*') &&
        request.path.startsWith(pattern.slice(0, -1)) &&
        !request.path.slice(pattern.length - 1).includes('/')
      ) {
        return handler(request);
      }
    }
    return this.notFound(request);
  }

  /** The operator's answer to an unknown path. */
  protected notFound(_request: FakeRequest): FakeResponse {
    return { status: 404, body: { error: 'not found' } };
  }

  private runControl(json: unknown): FakeResponse {
    if (typeof json !== 'object' || json === null)
      return { status: 400, body: { error: 'send a JSON control command' } };
    const command = json as ControlCommand;
    if (command.fault) this.inject(command.fault);
    if (command.callbacks) this.callbacksPlan(command.callbacks);
    if (command.expire_tokens) this.expireTokens();
    this.control(command);
    return { status: 200, body: { ok: true } };
  }

  private answer(res: http.ServerResponse, response: FakeResponse): void {
    const headers: Record<string, string> = { ...response.headers };
    if (response.body !== undefined && headers['content-type'] === undefined)
      headers['content-type'] = 'application/json;charset=UTF-8';
    res.writeHead(response.status, headers);
    res.end(
      response.body === undefined
        ? ''
        : typeof response.body === 'string'
          ? response.body
          : JSON.stringify(response.body),
    );
  }
}

/** A random id of `length` characters from `alphabet`. */
export function newId(length: number, alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'): string {
  return Array.from(randomBytes(length), (b) => alphabet[b % alphabet.length]).join('');
}

/** A field of a JSON body, or undefined. */
export function get(value: unknown, ...path: string[]): unknown {
  let at = value;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** The bearer token of a request, or undefined. */
export function bearer(req: FakeRequest): string | undefined {
  const header = req.headers.authorization;
  return typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : undefined;
}

/** Basic credentials of a request, or undefined. */
export function basic(req: FakeRequest): { user: string; password: string } | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string' || !header.startsWith('Basic ')) return undefined;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** Whether a value is an absolute http(s) URL. */
export function isUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
