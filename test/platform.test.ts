// The platform every route shares: request ids, version header, problem documents, health, metrics, rate limits, logs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Writable } from 'node:stream';
import pino from 'pino';
import { loggerOptions, maskPhone, maskUrl } from '../src/platform/logging.js';
import { TokenBuckets } from '../src/platform/rate-limit.js';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bootstrap } from '../src/bootstrap.js';
import { loadConfig } from '../src/config.js';
import type { PoolClient } from 'pg';
import { createPool, withTransaction } from '../src/db/pool.js';
import { createService } from '../src/service.js';
import {
  createCollection,
  createTestDatabase,
  newKey,
  request,
  startTestApp,
  validCollection,
  waitFor,
  type TestApp,
} from './helpers/harness.js';

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
        await t.db.query(
          'INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)',
          [row.version, row.name, row.checksum, row.applied_at],
        );
      }
    }
    assert.equal((await request(t, 'GET', '/readyz')).status, 200);
  });

  it('/metrics is Prometheus text with request counts per route', async () => {
    await createCollection(t, t.demoToken);
    const res = await request(t, 'GET', '/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    assert.match(
      res.text,
      /http_requests_total\{method="POST",route="\/v1\/collections\/:market\/rails\/:rail",status_code="201"\} \d+/,
    );
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
    assert.equal(
      maskUrl('/v1/providers/mkopo/callbacks/cb_0123456789abcdef/stk/0196'),
      '/v1/providers/mkopo/callbacks/[token]/stk/0196',
    );
    assert.equal(
      maskUrl('/v1/providers/airtel/callbacks/cb_0123456789abcdef'),
      '/v1/providers/airtel/callbacks/[token]',
    );
    assert.equal(maskUrl('/v1/checkout/sessions/0190-id'), '/v1/checkout/sessions/0190-id');
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const options = loggerOptions('info') as pino.LoggerOptions;
    const log = pino(options, sink);
    log.info(
      {
        customer: { phone_number: '+254712345678' },
        token: 'eyJsecret',
        req: { headers: { authorization: 'Bearer eyJsecret' } },
      },
      'x',
    );
    const line = lines.join('');
    assert.doesNotMatch(line, /eyJsecret/);
    assert.doesNotMatch(line, /712345678/);
    assert.match(line, /\+254\*\*\*\*\*\*678/);
  });
});

describe('hardening: odd requests get problem documents, never 500', () => {
  it('400 validation_failed for a URL with broken percent-encoding, with the usual headers', async () => {
    const res = await request(t, 'GET', '/v1/collections/%E0%A4%A', { token: t.demoToken });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    assert.ok(res.headers.get('x-request-id'));
    assert.equal(res.headers.get('api-version'), '2.5.0');
  });

  it('404 not_found for an over-long path segment', async () => {
    const res = await request(t, 'GET', `/v1/collections/${'a'.repeat(300)}`, { token: t.demoToken });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'not_found');
  });

  it('400 invalid_market (not validation_failed) for an over-long market code', async () => {
    const res = await request(t, 'POST', `/v1/collections/${'X'.repeat(20)}/rails/mpesa`, {
      token: t.demoToken,
      body: validCollection(),
      idempotencyKey: newKey(),
    });
    assert.equal(res.body.code, 'invalid_market');
  });

  it('the Bearer scheme is case-insensitive', async () => {
    const res = await request(t, 'GET', '/v1/collections', { headers: { authorization: `bearer ${t.demoToken}` } });
    assert.equal(res.status, 200);
  });

  it('a body-less POST that says Content-Type: application/json is accepted as having no body', async () => {
    const created = await request(t, 'POST', '/v1/credentials', { token: t.demoToken, body: { name: 'rotate me' } });
    const res = await request(t, 'POST', `/v1/credentials/${created.body.id}/rotate`, {
      token: created.body.token,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 200, res.text);
  });

  it('400 invalid_json naming reserved keys for a __proto__ key; 400 validation_failed for a metadata key over 40 characters', async () => {
    const proto = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: t.demoToken,
      idempotencyKey: newKey(),
      headers: { 'content-type': 'application/json' },
      rawBody: JSON.stringify(validCollection()).replace('"metadata":{', '"metadata":{"__proto__":{"x":1},'),
    });
    assert.equal(proto.status, 400);
    assert.equal(proto.body.code, 'invalid_json');
    assert.match(proto.body.detail, /__proto__/);
    const longKey = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: t.demoToken,
      idempotencyKey: newKey(),
      body: validCollection({ metadata: { ['k'.repeat(41)]: 1 } }),
    });
    assert.equal(longKey.status, 400);
    assert.equal(longKey.body.code, 'validation_failed');
  });

  it('while draining, requests get 503 service_unavailable with Connection: close; /healthz still answers', async () => {
    const draining = await startTestApp();
    try {
      draining.drain();
      const res = await request(draining, 'GET', '/v1/collections', { token: draining.demoToken });
      assert.equal(res.status, 503);
      assert.equal(res.body.code, 'service_unavailable');
      assert.equal(res.headers.get('retry-after'), '1');
      assert.equal((await request(draining, 'GET', '/healthz')).status, 200);
    } finally {
      await draining.close();
    }
  });
});

describe('bootstrap', () => {
  it('creates nothing when credentials.json cannot be written, so the next start can try again', async () => {
    const database = await createTestDatabase();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'boot-'));
    await mkdir(path.join(dir, 'credentials.json')); // a folder where the file should go
    const db = createPool(database.url, 2);
    try {
      const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: dir });
      const { services } = await createService(config, db, { logger: false });
      await assert.rejects(bootstrap(db, config, services.credentials));
      const { rows } = await db.query('SELECT count(*)::int AS n FROM workspaces');
      assert.equal(rows[0].n, 0);
      await rm(path.join(dir, 'credentials.json'), { recursive: true });
      const boot = await bootstrap(db, config, services.credentials);
      assert.ok(boot);
      assert.equal((await stat(boot.file)).mode & 0o777, 0o600);
    } finally {
      await db.end();
      await database.drop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the connection pool', () => {
  it('prepares a statement with parameters once per connection and runs it again by name; a statement without parameters is not prepared', async () => {
    const database = await createTestDatabase();
    const db = createPool(database.url, 1);
    try {
      const client = await db.connect();
      try {
        const sql = 'SELECT $1::int + $2::int AS sum';
        assert.equal((await client.query(sql, [2, 3])).rows[0].sum, 5);
        assert.equal((await client.query(sql, [40, 2])).rows[0].sum, 42);
        await client.query('SELECT 1 AS one');
        const { rows } = await client.query<{ statement: string; from_sql: boolean }>(
          `SELECT statement, from_sql FROM pg_prepared_statements WHERE statement IN ($1, 'SELECT 1 AS one')`,
          [sql],
        );
        assert.deepEqual(rows, [{ statement: sql, from_sql: false }]);
        // A failing run leaves the prepared statement usable: the next run answers.
        await assert.rejects(client.query(sql, ['not a number', 1]), /invalid input syntax/);
        assert.equal((await client.query(sql, [1, 1])).rows[0].sum, 2);
      } finally {
        client.release();
      }
    } finally {
      await db.end();
      await database.drop();
    }
  });
});

describe('withTransaction', () => {
  const ID = '01a2b3c4-0000-7000-8000-000000000001';

  it('runs every statement of the work in one transaction, with parameters prepared as usual', async () => {
    const database = await createTestDatabase();
    const db = createPool(database.url, 1);
    try {
      const first = 'SELECT now() AS t, $1::int AS n, $2::text AS v';
      for (const value of [ID, 'some text']) {
        const [a, b] = await withTransaction(db, async (tx) => {
          const one = (await tx.query<{ t: Date; n: number; v: string }>(first, [7, value])).rows[0];
          await new Promise((r) => setTimeout(r, 20));
          const two = (await tx.query<{ t: Date }>('SELECT now() AS t')).rows[0];
          return [one, two];
        });
        assert.equal(a?.n, 7);
        assert.equal(a?.v, value);
        // now() is the transaction's start: the same in both statements only if they ran in one transaction.
        assert.equal(a?.t.getTime(), b?.t.getTime(), `both statements in one transaction (${value})`);
      }
      const { rows } = await db.query('SELECT 1 FROM pg_prepared_statements WHERE statement = $1', [first]);
      assert.equal(rows.length, 1);
    } finally {
      await db.end();
      await database.drop();
    }
  });

  it('what the first statement did is undone when a later one fails, and a failure leaves the connection usable', async () => {
    const database = await createTestDatabase();
    const db = createPool(database.url, 1);
    try {
      await db.query('CREATE TABLE opened (id uuid PRIMARY KEY, label text)');
      await assert.rejects(
        withTransaction(db, async (tx) => {
          await tx.query('INSERT INTO opened (id) VALUES ($1)', [ID]);
          await tx.query('SELECT 1 / $1::int', [0]);
        }),
        /division by zero/,
      );
      assert.equal((await db.query('SELECT count(*)::int AS n FROM opened')).rows[0].n, 0);
      await assert.rejects(
        withTransaction(db, (tx) => tx.query('SELECT 1 / $1', [0])),
        /division by zero/,
      );
      assert.equal(await withTransaction(db, async () => 42), 42);
      await withTransaction(db, (tx) => tx.query('INSERT INTO opened (id) VALUES ($1)', [ID]));
      const { rows } = await db.query<{ n: number; idle: boolean }>(
        `SELECT (SELECT count(*)::int FROM opened) AS n, now() = statement_timestamp() AS idle`,
      );
      assert.deepEqual(rows[0], { n: 1, idle: true });
    } finally {
      await db.end();
      await database.drop();
    }
  });
});

describe('background work has connections of its own', () => {
  it('a new collection is still handed to its provider while API requests hold every API connection', async () => {
    const app = await startTestApp(); // no workers: the test kicks the submitter itself
    const held: PoolClient[] = [];
    try {
      const created = await createCollection(app, app.demoToken);
      assert.equal(created.status, 201);
      const id = created.body.collection_id as string;
      for (let i = 0; i < app.config.dbPoolSize; i++) held.push(await app.db.connect());
      const [reader] = held as [PoolClient];
      app.services.submitter.kick('collection', app.demoWorkspaceId, id);
      const status = await waitFor(
        'the initiation while the API pool is exhausted',
        async () => {
          const { rows } = await reader.query<{ status: string; submitted_at: Date | null }>(
            'SELECT status, submitted_at FROM collections WHERE id = $1',
            [id],
          );
          return rows[0]?.submitted_at ? rows[0].status : undefined;
        },
        5000,
      );
      assert.equal(status, 'pending');
    } finally {
      for (const client of held) client.release();
      await app.close();
    }
  });
});
