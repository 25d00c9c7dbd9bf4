// Per-credential token bucket, in memory per process; RateLimit-* headers on every authenticated answer.
import type { FastifyInstance } from 'fastify';
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
      remaining: Math.floor(bucket.tokens),
      resetSeconds: Math.ceil((burst - bucket.tokens) / perSecond),
      retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond)),
    };
  }

  /** Whether a token is there to take, without taking it; if not, in how many seconds there will be. */
  peek(key: string, nowMs = Date.now()): { allowed: boolean; retryAfterSeconds: number } {
    const bucket = this.buckets.get(key);
    const tokens = bucket
      ? Math.min(this.options.burst, bucket.tokens + ((nowMs - bucket.updatedMs) / 1000) * this.options.perSecond)
      : this.options.burst;
    return { allowed: tokens >= 1, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / this.options.perSecond)) };
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

export function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): void {
  const buckets = new TokenBuckets(options);
  app.addHook('onRequest', async (request, reply) => {
    const auth = request.authContext;
    if (!auth) return;
    const result = buckets.take(auth.credentialId);
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
