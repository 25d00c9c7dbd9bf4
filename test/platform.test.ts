// The platform every route shares: request ids, version header, problem documents, health, metrics, rate limits, logs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Writable } from 'node:stream';
import pino from 'pino';
import { loggerOptions, maskPhone, maskUrl } from '../src/platform/logging.js';
import { TokenBuckets } from '../src/platform/rate-limit.js';
import { createCollection, request, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

describe('headers on every response', () => {
  it('echoes a valid inbound X-Request-Id and generates one otherwise', async () => {
    const echoed = await request(t, 'GET', '/healthz', { headers: { 'x-request-id': 'client-abc_123' } });
    assert.equal(echoed.headers.get('x-request-id'), 'client-abc_123');
    const generated = await request(t, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
    assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('sends API-Version: 2.5.0 on success and on errors', async () => {
    assert.equal((await request(t, 'GET', '/healthz')).headers.get('api-version'), '2.5.0');
    assert.equal((await request(t, 'GET', '/v1/collections')).headers.get('api-version'), '2.5.0');
    assert.equal((await request(t, 'GET', '/nope')).headers.get('api-version'), '2.5.0');
  });

  it('an unknown route is a 404 problem document', async () => {
    const res = await request(t, 'GET', '/v1/nothing-here');
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'not_found');
    assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  });
});

describe('operations endpoints', () => {
  it('/healthz answers ok without a token', async () => {
    const res = await request(t, 'GET', '/healthz');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
  });

  it('/readyz is ready when the database is reachable and migrated, 503 when migrations are missing', async () => {
    assert.deepEqual((await request(t, 'GET', '/readyz')).body, { status: 'ready' });
    const saved = await t.db.query('SELECT * FROM schema_migrations');
    await t.db.query('DELETE FROM schema_migrations');
    try {
      const res = await request(t, 'GET', '/readyz');
      assert.equal(res.status, 503);
      assert.equal(res.body.code, 'service_unavailable');
    } finally {
      for (const row of saved.rows) {
        await t.db.query('INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)', [
          row.version, row.name, row.checksum, row.applied_at,
        ]);
      }
    }
    assert.equal((await request(t, 'GET', '/readyz')).status, 200);
  });

  it('/metrics is Prometheus text with request counts per route', async () => {
    await createCollection(t, t.demoToken);
    const res = await request(t, 'GET', '/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    assert.match(res.text, /http_requests_total\{method="POST",route="\/v1\/collections\/:market\/rails\/:rail",status_code="201"\} \d+/);
    assert.match(res.text, /process_resident_memory_bytes/);
  });
});

describe('rate limiting per credential', () => {
  it('429 rate_limited with Retry-After and RateLimit-* headers once the bucket is empty; other credentials are unaffected', async () => {
    const small = await startTestApp({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '3' });
    try {
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 4; i++) {
        last = await request(small, 'GET', '/v1/collections', { token: small.demoToken });
        statuses.push(last.status);
      }
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      assert.ok(last);
      assert.equal(last.body.code, 'rate_limited');
      assert.equal(last.headers.get('retry-after'), '1');
      assert.equal(last.headers.get('ratelimit-limit'), '3');
      assert.equal(last.headers.get('ratelimit-remaining'), '0');
      assert.ok(Number(last.headers.get('ratelimit-reset')) >= 1);
      const admin = await request(small, 'GET', '/v1/admin/workspaces', { token: small.adminToken });
      assert.equal(admin.status, 200);
    } finally {
      await small.close();
    }
  });

  it('the bucket refills at the configured rate', () => {
    const buckets = new TokenBuckets({ perSecond: 2, burst: 2 });
    assert.equal(buckets.take('c', 0).allowed, true);
    assert.equal(buckets.take('c', 0).allowed, true);
    assert.equal(buckets.take('c', 0).allowed, false);
    assert.equal(buckets.take('c', 499).allowed, false);
    assert.equal(buckets.take('c', 500).allowed, true);
  });
});

describe('logs', () => {
  it('masks phone numbers, tokens and checkout tokens in URLs', () => {
    assert.equal(maskPhone('+254712345678'), '+254******678');
    assert.equal(maskUrl('/v1/checkout/by-token/abcdef123/status'), '/v1/checkout/by-token/[token]/status');
    assert.equal(maskUrl('/checkout/abcdef123?lang=fr'), '/checkout/[token]?lang=fr');
    assert.equal(maskUrl('/v1/checkout/sessions/0190-id'), '/v1/checkout/sessions/0190-id');
    const lines: string[] = [];
    const sink = new Writable({ write(chunk: Buffer, _enc, done) { lines.push(chunk.toString()); done(); } });
    const options = loggerOptions('info') as pino.LoggerOptions;
    const log = pino(options, sink);
    log.info({ customer: { phone_number: '+254712345678' }, token: 'eyJsecret', req: { headers: { authorization: 'Bearer eyJsecret' } } }, 'x');
    const line = lines.join('');
    assert.doesNotMatch(line, /eyJsecret/);
    assert.doesNotMatch(line, /712345678/);
    assert.match(line, /\+254\*\*\*\*\*\*678/);
  });
});
