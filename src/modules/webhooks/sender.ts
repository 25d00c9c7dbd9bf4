// One webhook delivery attempt over HTTP: a POST with the signed body, a hard time limit, no redirects
// followed, the first 4 KB of the answer kept for the attempt log.
import http from 'node:http';
import https from 'node:https';
import type { PaymentsEnv } from '../../config.js';
import { guardedLookup, urlProblem, type LookUpAddresses, lookUpAddressesInDns } from './url-guard.js';

export const RESPONSE_EXCERPT_BYTES = 4096;
/** Read at most this much of an answer, so a receiver cannot keep a worker busy with a huge body. */
const MAX_READ_BYTES = 64 * 1024;

export interface AttemptResult {
  statusCode: number | undefined;
  /** The first 4 KB of the response body. */
  responseBody: string | undefined;
  error: string | undefined;
  durationMs: number;
  /** From Retry-After on a 429 or 503. */
  retryAfterMs: number | undefined;
}

// Kept-alive connections are reused across deliveries; an idle one is closed after 30 s (the agent destroys
// a free socket on its timeout; an attempt in progress is bounded by its own timer instead).
const AGENT_OPTIONS = { keepAlive: true, maxSockets: 64, maxFreeSockets: 16, maxTotalSockets: 1024, timeout: 30_000 };
const agents = {
  'http:': new http.Agent(AGENT_OPTIONS),
  'https:': new https.Agent(AGENT_OPTIONS),
};

/** The result of an attempt that never reached the network. */
export function notSent(error: string): AttemptResult {
  return {
    statusCode: undefined,
    responseBody: undefined,
    error: storable(error).slice(0, 500),
    durationMs: 0,
    retryAfterMs: undefined,
  };
}

/** Retry-After: seconds, or an HTTP date. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Text PostgreSQL can store: no NUL characters. */
export function storable(text: string): string {
  return text.replaceAll(String.fromCharCode(0), '\uFFFD');
}

function describe(err: NodeJS.ErrnoException, timeoutMs: number): string {
  switch (err.code) {
    case 'EWEBHOOKTIMEOUT':
      return `timed out after ${timeoutMs} ms`;
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset by the receiver';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host not found (${err.code})`;
    case 'EDESTINATIONREFUSED':
      return `refused: ${err.message}`;
    case undefined:
    default:
      return storable(err.code ? `${err.code}: ${err.message}` : err.message).slice(0, 500);
  }
}

export interface SendOptions {
  timeoutMs: number;
  env: PaymentsEnv;
  lookUpAddresses?: LookUpAddresses;
}

export function send(
  rawUrl: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const refused = urlProblem(rawUrl, options.env);
  if (refused) {
    return Promise.resolve(notSent(`refused: the URL ${refused}`));
  }
  const url = new URL(rawUrl);
  const transport = url.protocol === 'https:' ? https : http;
  const payload = Buffer.from(body);
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<AttemptResult, 'durationMs'>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, durationMs: elapsed() });
    };
    const fail = (err: NodeJS.ErrnoException): void =>
      finish({
        statusCode: undefined,
        responseBody: undefined,
        error: describe(err, options.timeoutMs),
        retryAfterMs: undefined,
      });

    const req = transport.request(url, {
      method: 'POST',
      agent: agents[url.protocol as 'http:' | 'https:'],
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(payload.length),
        'user-agent': 'payments-webhooks/1.0',
      },
      ...(options.env === 'production'
        ? { lookup: guardedLookup(options.lookUpAddresses ?? lookUpAddressesInDns) }
        : {}),
    });
    const timer = setTimeout(() => {
      req.destroy(Object.assign(new Error('timeout'), { code: 'EWEBHOOKTIMEOUT' }));
    }, options.timeoutMs);
    req.on('error', fail);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let read = 0;
      const done = (): void => {
        const excerpt = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES);
        const status = res.statusCode;
        finish({
          statusCode: status,
          responseBody: excerpt.length > 0 ? storable(excerpt.toString('utf8')) : undefined,
          error: undefined,
          retryAfterMs: status === 429 || status === 503 ? parseRetryAfter(res.headers['retry-after']) : undefined,
        });
      };
      res.on('data', (chunk: Buffer) => {
        if (read < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
        read += chunk.length;
        if (read > MAX_READ_BYTES) {
          res.destroy();
          done();
        }
      });
      res.on('end', done);
      res.on('error', (err) => (read > 0 ? done() : fail(err)));
      res.on('aborted', done);
    });
    req.end(payload);
  });
}
