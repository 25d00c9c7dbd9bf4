// The shared rate-limit buckets in Redis (REDIS_URL): one hash per credential, refilled and charged by one script, so
// a node's whole report is one round trip and no two nodes' reports interleave.
import { Redis } from 'ioredis';
import type { BucketUsage, RateLimitOptions, SharedBucketStore } from './rate-limit.js';

// KEYS: one bucket per credential; ARGV: burst, refill per second, then what was used from each bucket. Redis's own
// clock refills, so the nodes' clocks do not matter. A bucket may go into debt down to -burst; it expires once it
// would be full again (a missing bucket is a full one). Levels go back as strings: Redis truncates Lua numbers.
const REPORT = `
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
local levels = {}
for i, key in ipairs(KEYS) do
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(state[1]) or burst
  local at = tonumber(state[2]) or now
  tokens = math.min(burst, tokens + math.max(0, now - at) * rate) - tonumber(ARGV[i + 2])
  tokens = math.max(-burst, tokens)
  redis.call('HSET', key, 'tokens', tostring(tokens), 'at', tostring(now))
  redis.call('PEXPIRE', key, math.ceil((burst - tokens) / rate * 1000) + 1000)
  levels[i] = tostring(tokens)
end
return levels`;

export function redisBucketStore(url: string): SharedBucketStore {
  // A report that cannot be sent within a second fails (and is sent again with the next one) rather than queue.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 1000 });
  // Connection errors surface as failed reports, which SharedRateLimit logs; the client reconnects by itself.
  redis.on('error', () => undefined);
  return {
    async report(usage: BucketUsage[], options: RateLimitOptions): Promise<Map<string, number>> {
      const keys = usage.map((u) => `rate-limit:${u.workspaceId}:${u.credentialId}`);
      const levels = (await redis.eval(
        REPORT,
        keys.length,
        ...keys,
        options.burst,
        options.perSecond,
        ...usage.map((u) => u.used),
      )) as string[];
      return new Map(usage.map((u, i) => [u.credentialId, Number(levels[i])]));
    },
    async close(): Promise<void> {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
