// What every call does around the wire: an Idempotency-Key made per call and kept across its retries, retries with
// backoff where they are safe, a timeout per attempt, and problems turned into PaymentsError.

/** An RFC 9457 problem document as the service sends it. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  request_id?: string;
  errors?: { field: string; message: string }[];
}

/** A call the service answered with a problem (4xx or 5xx): its `code` is stable, its `requestId` helps support. */
export class PaymentsError extends Error {
  readonly status: number;
  readonly code: string;
  readonly problem: Problem;
  /** The `X-Request-Id` of the answer. */
  readonly requestId: string | undefined;

  constructor(problem: Problem, requestId: string | undefined) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`);
    this.name = 'PaymentsError';
    this.status = problem.status;
    this.code = problem.code;
    this.problem = problem;
    this.requestId = requestId ?? problem.request_id;
  }
}

export interface RetryOptions {
  /** Attempts after the first (default 3). */
  maxRetries: number;
  /** No retry starts once this much time has passed since the call began, in ms (default 60,000). */
  maxRetryTimeMs: number;
  /** One attempt may take this long before it is abandoned, in ms (default 30,000). */
  timeoutMs: number;
  /** First backoff, doubled each retry (with jitter), in ms (default 250; at most 5,000). */
  backoffMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxRetries: 3, maxRetryTimeMs: 60_000, timeoutMs: 30_000, backoffMs: 250 };

/** The header through which one call's own options reach the fetch below (removed before sending). */
export const CALL_TIMEOUT_HEADER = 'x-sdk-timeout-ms';
/** Marks a write whose body makes a repeat harmless (a bulk commit: each item has its key); removed before sending. */
export const CALL_REPEATABLE_HEADER = 'x-sdk-repeatable';

/**
 * A retry cannot do harm when the request is a read, or carries an Idempotency-Key (the service answers a repeat with
 * the stored response). Anything else is sent once.
 */
function safeToRepeat(request: Request): boolean {
  return (
    request.method === 'GET' ||
    request.method === 'HEAD' ||
    request.headers.has('idempotency-key') ||
    request.headers.has(CALL_REPEATABLE_HEADER)
  );
}

/** Whether this answer is worth another attempt: too many requests; the same key still running; a server error. */
async function retryable(request: Request, response: Response, repeatable = false): Promise<boolean> {
  if (response.status === 429) return true;
  if (response.status === 409) {
    const problem = (await response
      .clone()
      .json()
      .catch(() => undefined)) as Partial<Problem> | undefined;
    return problem?.code === 'idempotency_key_in_use';
  }
  return response.status >= 500 && (repeatable || safeToRepeat(request));
}

/** How long to wait before attempt `attempt + 1`: the service's Retry-After, else an exponential backoff with jitter. */
function delayMs(attempt: number, response: Response | undefined, options: RetryOptions): number {
  const after = Number(response?.headers.get('retry-after'));
  if (Number.isFinite(after) && after >= 0) return after * 1000;
  const cap = Math.min(5000, options.backoffMs * 2 ** attempt);
  return cap / 2 + Math.random() * (cap / 2);
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

/**
 * A fetch that retries: network errors and 5xx only when repeating is safe (see safeToRepeat), 429 and 409
 * `idempotency_key_in_use` always; at most `maxRetries` times and never past `maxRetryTimeMs`. Each attempt sends the
 * same request (the same Idempotency-Key) and is abandoned after the timeout; the caller's AbortSignal stops it all.
 */
export function retryingFetch(base: typeof fetch, options: RetryOptions): (request: Request) => Promise<Response> {
  return async (original: Request) => {
    const started = Date.now();
    const timeoutMs = Number(original.headers.get(CALL_TIMEOUT_HEADER)) || options.timeoutMs;
    const headers = new Headers(original.headers);
    headers.delete(CALL_TIMEOUT_HEADER);
    const repeatable = headers.has(CALL_REPEATABLE_HEADER);
    headers.delete(CALL_REPEATABLE_HEADER);
    const request = new Request(original, { headers });
    for (let attempt = 0; ; attempt++) {
      const signal = AbortSignal.any([request.signal, AbortSignal.timeout(timeoutMs)]);
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await base(request.clone(), { signal });
      } catch (err) {
        if (request.signal.aborted) throw err;
        failure = err;
      }
      const again = response ? await retryable(request, response, repeatable) : repeatable || safeToRepeat(request);
      const wait = delayMs(attempt, response, options);
      if (!again || attempt >= options.maxRetries || Date.now() - started + wait > options.maxRetryTimeMs) {
        if (response) return response;
        throw failure;
      }
      await sleep(wait, request.signal);
    }
  };
}

/** A fresh Idempotency-Key: a UUID v4. */
export const newIdempotencyKey = (): string => crypto.randomUUID();
