// Open-loop load at a fixed rate: requests go out evenly spaced (one every 1/rate s) whether or not earlier ones have
// been answered, over at most `connections` kept-alive connections. Latency runs from when a request was due, not
// when it could be sent, so a stall counts against every request it delayed (no coordinated omission).
// autocannon's own rate limit is not used here: it sends each connection's quota for a second back to back at the
// start of that second, which measures bursts at the maximum rate rather than a steady half of it.
import http from 'node:http';
import { request, summarise, withCpu, type LoadOptions, type LoadResult } from './load.js';

export interface PacedOptions extends LoadOptions {
  rate: number;
  /** Told of every answer: when its request was due or sent (the later; `performance.now()`), and its latency. */
  onAnswer?: (from: number, ms: number) => void;
}

export function paced(options: PacedOptions): Promise<LoadResult> {
  return withCpu(() => run(options));
}

async function run(options: PacedOptions): Promise<Omit<LoadResult, 'machine_busy_pct'>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const url = new URL(options.url);
  const interval = 1000 / options.rate;
  const total = Math.round(options.rate * options.seconds);
  const latencies: number[] = [];
  let unexpected = 0;
  let refused = 0;
  let errors = 0;
  let first: string | undefined;
  const pending = new Set<Promise<void>>();

  const fire = async (due: number): Promise<void> => {
    // A timer can fire a little early: latency runs from the later of when it was due and when it was sent.
    const from = Math.max(due, performance.now());
    try {
      const res = await request(agent, url, options);
      // A push-back (the open loop does not wait for it: the next request is due regardless) is counted apart.
      const ms = performance.now() - from;
      if (res.status === options.pushedBack) refused++;
      else latencies.push(ms);
      options.onAnswer?.(from, ms);
      if (res.status !== options.expect && res.status !== options.pushedBack) {
        unexpected++;
        first ??= `${res.status} ${res.body.slice(0, 300)}`;
      }
    } catch (err) {
      errors++;
      first ??= (err as Error).message;
    }
  };

  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const p = fire(due).finally(() => pending.delete(p));
    pending.add(p);
  }
  await Promise.all(pending);
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  if (errors > 0 || unexpected > 0) {
    throw new Error(
      `${options.method ?? 'GET'} ${options.url} at ${options.rate}/s: ${errors} errors, ${unexpected} responses other than ${options.expect} (first: ${first})`,
    );
  }
  const { count, ...summary } = summarise(latencies, seconds);
  return { requests: count, ...summary, refused };
}
