// Per-credential token buckets, shared by every node through PostgreSQL (or Redis) in batches; RateLimit-* headers
// on every authenticated answer. The per-client limits (checkout links, refused tokens) use the same buckets, per process.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { ApiError } from './errors.js';

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export interface RateLimitOptions {
  perSecond: number;
  burst: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly options: RateLimitOptions) {}

  /** Takes one token; returns what is left and when the bucket is full again. */
  take(
    key: string,
    nowMs = Date.now(),
  ): { allowed: boolean; remaining: number; resetSeconds: number; retryAfterSeconds: number } {
    const { perSecond, burst } = this.options;
    const bucket = this.buckets.get(key) ?? { tokens: burst, updatedMs: nowMs };
    bucket.tokens = Math.min(burst, bucket.tokens + ((nowMs - bucket.updatedMs) / 1000) * perSecond);
    bucket.updatedMs = nowMs;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    if (this.buckets.size > 100_000) this.sweep(nowMs);
    return {
      allowed,
      // A shared bucket can be in debt (below 0) after several nodes spent it at once.
      remaining: Math.max(0, Math.floor(bucket.tokens)),
      resetSeconds: Math.ceil((burst - bucket.tokens) / perSecond),
      retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond)),
    };
  }

  /** Sets a bucket to `tokens` (what the shared store holds, less what was taken here since it answered). */
  set(key: string, tokens: number, nowMs = Date.now()): void {
    this.buckets.set(key, { tokens: Math.min(this.options.burst, tokens), updatedMs: nowMs });
  }

  /** Forgets buckets that have refilled completely: they are the same as new ones. */
  private sweep(nowMs: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((nowMs - b.updatedMs) / 1000) * this.options.perSecond >= this.options.burst)
        this.buckets.delete(key);
    }
  }
}

/**
 * The client a request counts against: its address, or for IPv6 its /64 (one subscriber's prefix: rotating
 * addresses within it does not buy a fresh bucket). Behind a proxy the address comes from X-Forwarded-For
 * only when TRUST_PROXY says so.
 */
export function clientKey(ip: string): string {
  const address = ip.split('%')[0] ?? ip;
  if (!address.includes(':')) return address;
  if (/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address)) return address.slice(7);
  const [head = '', tail] = address.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined
      ? front
      : [...front, ...new Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back];
  return `${groups
    .slice(0, 4)
    .map((g) => (Number.parseInt(g, 16) || 0).toString(16))
    .join(':')}::/64`;
}

/** What one node took from one credential's bucket since its last report. */
export interface BucketUsage {
  workspaceId: string;
  credentialId: string;
  used: number;
}

/**
 * Where the nodes' buckets meet. `report` adds what each credential used to its shared bucket (refilled at the
 * configured rate, by the store's clock) and answers each bucket's level after: below 0 when nodes together spent more
 * than it held, down to −burst.
 */
export interface SharedBucketStore {
  report(usage: BucketUsage[], options: RateLimitOptions): Promise<Map<string, number>>;
  close(): Promise<void>;
}

/** How often a node reports what it took and reads the shared levels back (see docs/operations.md, Several nodes). */
export const SYNC_INTERVAL_MS = 250;

/**
 * The per-credential limit. Each node answers from its own buckets, with no store call on the request's path; every
 * SYNC_INTERVAL_MS it reports what it took from each credential since the last report, in one statement, and sets
 * those buckets to the shared level the store answers. Between two reports each node may spend what it last saw, so N
 * nodes can together let through up to N times that (docs/operations.md says how far); the debt is then paid back
 * before the credential gets more. A store that fails leaves each node with its own buckets until it answers again.
 */
export class SharedRateLimit {
  readonly buckets: TokenBuckets;
  /** Taken since the last report, by credential. */
  private pending = new Map<string, BucketUsage>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failing = false;

  constructor(
    private readonly options: RateLimitOptions,
    private readonly store: SharedBucketStore,
    private readonly log: FastifyBaseLogger,
  ) {
    this.buckets = new TokenBuckets(options);
  }

  take(workspaceId: string, credentialId: string): ReturnType<TokenBuckets['take']> {
    const result = this.buckets.take(credentialId);
    if (result.allowed) {
      const entry = this.pending.get(credentialId);
      if (entry) entry.used += 1;
      else this.pending.set(credentialId, { workspaceId, credentialId, used: 1 });
    }
    return result;
  }

  start(): void {
    this.timer = setInterval(() => {
      // A report still running (a slow store) is not overlapped: its successor waits for the next tick.
      this.running ??= this.sync().finally(() => (this.running = undefined));
    }, SYNC_INTERVAL_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    await this.store.close();
  }

  /** Reports what was taken since the last report and sets those buckets to the shared levels. */
  async sync(): Promise<void> {
    if (this.pending.size === 0) return;
    const sent = this.pending;
    this.pending = new Map();
    // One order for every node, so two reports never wait on each other's rows in opposite orders.
    const usage = [...sent.values()].sort((a, b) => (a.credentialId < b.credentialId ? -1 : 1));
    let levels: Map<string, number>;
    try {
      levels = await this.store.report(usage, this.options);
    } catch (err) {
      // Kept for the next report: what was taken still counts once the store answers again.
      for (const u of usage) {
        const entry = this.pending.get(u.credentialId);
        if (entry) entry.used += u.used;
        else this.pending.set(u.credentialId, u);
      }
      if (!this.failing) this.log.warn({ err }, 'rate limits: the shared store did not answer; each node limits alone');
      this.failing = true;
      return;
    }
    if (this.failing) this.log.info('rate limits: the shared store answers again');
    this.failing = false;
    for (const [credentialId, level] of levels) {
      // What this node took while the report was on its way is not in the level yet.
      this.buckets.set(credentialId, level - (this.pending.get(credentialId)?.used ?? 0));
    }
  }
}

export function registerRateLimit(app: FastifyInstance, options: RateLimitOptions, store: SharedBucketStore): void {
  const limit = new SharedRateLimit(options, store, app.log);
  limit.start();
  app.addHook('onClose', async () => limit.stop());
  app.addHook('onRequest', async (request, reply) => {
    const auth = request.authContext;
    if (!auth) return;
    const result = limit.take(auth.workspaceId, auth.credentialId);
    reply.header('RateLimit-Limit', String(options.burst));
    reply.header('RateLimit-Remaining', String(result.remaining));
    reply.header('RateLimit-Reset', String(result.resetSeconds));
    if (!result.allowed) {
      throw new ApiError(
        'rate_limited',
        `Too many requests for this credential; retry after ${result.retryAfterSeconds} s.`,
        {
          headers: { 'Retry-After': String(result.retryAfterSeconds) },
        },
      );
    }
  });
}
