// HTTP load on loopback: a fixed number of connections, each sending its next request as soon as the last is answered,
// for a fixed time (the maximum rate), with autocannon; where the service may push back (503 with Retry-After), with a
// loop of our own whose connections wait as told. A fixed rate is paced.ts.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders } from 'node:http';
import autocannon from 'autocannon';

/** Both cores' time since boot, busy and in all, from /proc/stat (zeros where there is none). */
function cpuTimes(): { busy: number; total: number } {
  try {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((a, b) => a + b, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/** Runs `work` and tells how busy the whole machine was meanwhile, in percent of all its cores. */
export async function withCpu<T>(work: () => Promise<T>): Promise<T & { machine_busy_pct: number }> {
  const before = cpuTimes();
  const result = await work();
  const after = cpuTimes();
  const total = after.total - before.total;
  return { ...result, machine_busy_pct: total > 0 ? Math.round(((after.busy - before.busy) / total) * 100) : 0 };
}

export interface LoadResult {
  requests: number;
  seconds: number;
  per_second: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** How busy the whole machine (load generator, service, database) was during the run. */
  machine_busy_pct: number;
  /** Answers of the `pushedBack` status (503 `overloaded`: the service refused work it could not carry in time). */
  refused: number;
}

/** Count, rate and percentiles (ms, one decimal) of latencies measured over `seconds`. */
export function summarise(
  latencies: number[],
  seconds: number,
): { count: number; seconds: number; per_second: number; p50_ms: number; p99_ms: number; max_ms: number } {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number): number =>
    Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0) * 10) / 10;
  return {
    count: sorted.length,
    seconds: Math.round(seconds * 10) / 10,
    per_second: Math.round(sorted.length / seconds),
    p50_ms: at(0.5),
    p99_ms: at(0.99),
    max_ms: at(1),
  };
}

export interface LoadOptions {
  url: string;
  connections: number;
  seconds: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** A fresh `Idempotency-Key` (UUID v4) on every request. */
  freshKey?: boolean;
  /** `Authorization` values: each request takes one of them at random (load spread over several workspaces). */
  authorizations?: string[];
  /** The status every response must have; anything else fails the run. */
  expect: number;
  /** A status counted as the service pushing back (not a failure): `refused` in the result, left out of the rate. */
  pushedBack?: number;
}

const round = (n: number, places = 1): number => Math.round(n * 10 ** places) / 10 ** places;

export function load(options: LoadOptions): Promise<LoadResult> {
  return withCpu(() => (options.pushedBack === undefined ? run(options) : politely(options)));
}

/**
 * The same closed loop as `run` (each connection sends its next request once the last is answered), for a route that
 * may push back: a connection answered `pushedBack` waits the `Retry-After` it was given before its next request, as
 * the API's clients are told to (docs/reference/api-conventions.md). Without that pause, 64 connections would spend
 * the service's two cores on answering refusals at thousands a second. Latencies are of the accepted requests.
 */
async function politely(options: LoadOptions): Promise<Omit<LoadResult, 'machine_busy_pct'>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const url = new URL(options.url);
  const latencies: number[] = [];
  let refused = 0;
  let unexpected: string | undefined;
  const began = performance.now();
  const until = began + options.seconds * 1000;
  const connection = async (): Promise<void> => {
    while (performance.now() < until && unexpected === undefined) {
      const start = performance.now();
      const res = await request(agent, url, options);
      if (res.status === options.expect) latencies.push(performance.now() - start);
      else if (res.status === options.pushedBack) {
        refused++;
        const retryAfterMs = Number(res.headers['retry-after'] ?? 1) * 1000;
        await new Promise((r) => setTimeout(r, Math.min(retryAfterMs, Math.max(0, until - performance.now()))));
      } else unexpected = `${res.status} ${res.body.slice(0, 300)}`;
    }
  };
  try {
    await Promise.all(Array.from({ length: options.connections }, connection));
  } finally {
    agent.destroy();
  }
  if (unexpected !== undefined)
    throw new Error(
      `${options.method ?? 'GET'} ${options.url}: a response other than ${options.expect}: ${unexpected}`,
    );
  const seconds = (performance.now() - began) / 1000;
  const summary = summarise(latencies, seconds);
  return {
    requests: summary.count,
    seconds: summary.seconds,
    per_second: summary.per_second,
    p50_ms: summary.p50_ms,
    p99_ms: summary.p99_ms,
    max_ms: summary.max_ms,
    refused,
  };
}

async function run(options: LoadOptions): Promise<Omit<LoadResult, 'machine_busy_pct'>> {
  let unexpected = 0;
  let refused = 0;
  let firstUnexpected: string | undefined;
  const { freshKey, authorizations } = options;
  const perRequest = (headers: IncomingHttpHeaders | undefined): IncomingHttpHeaders => ({
    ...headers,
    ...(freshKey ? { 'idempotency-key': randomUUID() } : {}),
    ...(authorizations?.length
      ? { authorization: authorizations[Math.floor(Math.random() * authorizations.length)] }
      : {}),
  });
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.seconds,
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
    requests: [
      {
        ...(freshKey || authorizations?.length
          ? { setupRequest: (req) => ({ ...req, headers: perRequest(req.headers) }) }
          : {}),
        onResponse: (status, body) => {
          if (status === options.expect) return;
          if (status === options.pushedBack) {
            refused++;
            return;
          }
          unexpected++;
          firstUnexpected ??= `${status} ${body.slice(0, 300)}`;
        },
      },
    ],
  });
  if (result.errors > 0 || unexpected > 0) {
    throw new Error(
      `${options.method ?? 'GET'} ${options.url}: ${result.errors} connection errors, ${unexpected} responses other than ${options.expect} (first: ${firstUnexpected})`,
    );
  }
  const requests = result['2xx'];
  return {
    requests,
    seconds: result.duration,
    per_second: Math.round(requests / result.duration),
    p50_ms: round(result.latency.p50),
    p99_ms: round(result.latency.p99),
    max_ms: round(result.latency.max),
    refused,
  };
}

/**
 * One request of `options` on `agent`: a fresh Idempotency-Key when asked, one of the `authorizations` at random, the
 * body; answers once the whole response has arrived. Both HTTP loops of our own (`politely`, `paced`) send with it.
 */
export function request(
  agent: http.Agent,
  url: URL,
  options: LoadOptions,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.freshKey) headers['idempotency-key'] = randomUUID();
    if (options.authorizations?.length)
      headers.authorization = options.authorizations[
        Math.floor(Math.random() * options.authorizations.length)
      ] as string;
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const req = http.request(
      {
        agent,
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: options.method ?? 'GET',
        headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
