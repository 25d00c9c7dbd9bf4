// What the operator connectors share: one HTTP call with a time limit, read as JSON when it is JSON, and calls made
// with an access token (kept for all nodes by operator-tokens.ts).
import { minorUnits } from '../../platform/money.js';
import type { TokenCache } from './operator-tokens.js';
import { ProviderError } from './provider.js';

export interface OperatorResponse {
  status: number;
  /** The body parsed as JSON, or undefined when it is empty or not JSON (Daraja answers bad credentials with an empty 400). */
  json: unknown;
  text: string;
}

/**
 * A call whose answer never came (a time-out, or the connection lost once the request was sent): the operator may
 * or may not have acted on it. Only a call that is idempotent by our reference may be sent again after one of these.
 */
export class OperatorNoAnswer extends ProviderError {}

/** Network errors that mean the request never reached the operator. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export interface OperatorCall {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  /** A form body (application/x-www-form-urlencoded) in place of JSON: Orange's token endpoint takes only that. */
  form?: Record<string, string>;
  timeoutMs: number;
}

/** Makes one call. A refused connection or a reset is a ProviderError; no answer within the time limit is an OperatorTimeout. */
export async function callOperator(operator: string, call: OperatorCall): Promise<OperatorResponse> {
  const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  if (call.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
  const body =
    call.form !== undefined
      ? new URLSearchParams(call.form).toString()
      : call.body === undefined
        ? null
        : JSON.stringify(call.body);
  let res: Response;
  let text: string;
  try {
    res = await fetch(call.url, {
      method: call.method,
      headers,
      body,
      signal: AbortSignal.timeout(call.timeoutMs),
      redirect: 'error',
    });
    text = await res.text();
  } catch (err) {
    const what = `${operator}: ${call.method} ${new URL(call.url).pathname}`;
    if ((err as Error).name === 'TimeoutError')
      throw new OperatorNoAnswer(`${what} got no answer within ${call.timeoutMs} ms`);
    const code = ((err as Error & { cause?: { code?: string } }).cause ?? {}).code;
    if (code !== undefined && NOT_SENT.has(code)) throw new ProviderError(`${what} could not be sent: ${code}`);
    throw new OperatorNoAnswer(`${what} failed before its answer: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** A field of a JSON object, or undefined (operators' bodies are read defensively: they are not ours). */
export function field(value: unknown, ...path: string[]): unknown {
  let at = value;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** A field as text: strings as they are, numbers written out (operators send codes and receipts as either). */
export function text(value: unknown, ...path: string[]): string | undefined {
  const v = field(value, ...path);
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

/**
 * A call made with the connector's token. When `refused(answer)` says the operator refused the token itself (the call
 * was not acted on), the token is given up (operator-tokens.ts: renewed once for all nodes, or the newer one another
 * node stored is taken) and the call made once more.
 */
export async function withToken(
  tokens: TokenCache,
  send: (token: string) => Promise<OperatorResponse>,
  refused: (res: OperatorResponse) => boolean,
): Promise<OperatorResponse> {
  const token = await tokens.get();
  const res = await send(token);
  if (!refused(res)) return res;
  await tokens.invalidate(token);
  return send(await tokens.get());
}

/** An `expires_in` as operators send it: a number, or a number in a string ("3599"). */
function expiresIn(value: unknown, fallbackSeconds: number): number {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : fallbackSeconds;
}

/**
 * An OAuth token answer: its access_token and how long it lasts (`fallbackSeconds` when it does not say). Any other
 * answer is a ProviderError: `what answered 401 …`.
 */
export function readToken(
  what: string,
  res: OperatorResponse,
  fallbackSeconds: number,
): { token: string; expiresInSeconds: number } {
  const token = text(res.json, 'access_token');
  if (res.status !== 200 || token === undefined)
    throw new ProviderError(`${what} answered ${res.status} ${res.text.slice(0, 200)}`);
  return { token, expiresInSeconds: expiresIn(field(res.json, 'expires_in'), fallbackSeconds) };
}

/** A phone number in E.164 (+254712345678) as operators write it: digits only (254712345678). */
export function msisdn(phone: string): string {
  return phone.replace(/\D/g, '');
}

/** A balance in major units as operators write it ("1500.50", 1500.5, "-20") in minor units; undefined when it is not one. */
export function balanceMinorUnits(value: unknown, exponent: number): number | undefined {
  const s = typeof value === 'number' ? String(value) : value;
  if (typeof s !== 'string') return undefined;
  const negative = s.startsWith('-');
  const minor = minorUnits(negative ? s.slice(1) : s, exponent);
  if (minor === undefined || !Number.isSafeInteger(minor)) return undefined;
  return negative ? -minor : minor;
}
