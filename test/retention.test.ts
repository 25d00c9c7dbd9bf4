// Retention: what is past its retention is deleted by batched purges, each batch one short
// statement. Rows are made through the app where it makes them (deliveries and their attempts, provider notices,
// idempotency outcomes, outbox rows), aged by moving their timestamps back, and the purge functions run directly;
// the Daraja queries and the batch counts are seeded with SQL. The purges span workspaces, so each test leaves no
// purgeable row behind for the next.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Registry } from 'prom-client';
import { ConfigError, loadConfig } from '../src/config.js';
import type { Db } from '../src/db/pool.js';
import { IdempotencyEngine } from '../src/platform/idempotency.js';
import type { PurgeResult } from '../src/platform/purge.js';
import { startWorkers } from '../src/workers/index.js';
import {
  purgeConnectorQueries,
  purgeOrangeWebpayments,
  purgeOutbox,
  purgeProviderNotices,
  purgeWebhookDeliveries,
} from '../src/workers/retention.js';
import {
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  newKey,
  request,
  startTestApp,
  type TestApp,
  waitFor,
} from './helpers/harness.js';
import { startReceiver } from './helpers/receiver.js';

let t: TestApp;
before(async () => {
  // A failed attempt is retried only after an hour: a delivery to an endpoint that answers 500 stays pending.
  // The workers' own purges run once at start (on an empty database) and then not again during the file.
  t = await startTestApp(
    { ...FAST_LIFECYCLE, WEBHOOK_POLL_MS: '20', WEBHOOK_RETRY_SCHEDULE: '1h', PURGE_INTERVAL_MS: '86400000' },
    { workers: true },
  );
});
after(async () => t.close());

const SUCCESS_PHONE = '+254712340000';

async function successfulCollection(token: string, idempotencyKey?: string): Promise<string> {
  const res =
    idempotencyKey === undefined
      ? await createCollection(t, token, { customer: { phone_number: SUCCESS_PHONE } })
      : await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
          token,
          idempotencyKey,
          body: { amount: 1500, currency: 'KES', reference: idempotencyKey, customer: { phone_number: SUCCESS_PHONE } },
        });
  assert.equal(res.status, 201, res.text);
  const id = res.body.collection_id as string;
  await waitFor(`collection ${id} successful`, async () => {
    const c = await request(t, 'GET', `/v1/collections/${id}`, { token });
    return c.body.status === 'successful' ? true : undefined;
  });
  return id;
}

async function addEndpoint(token: string, url: string, events = ['collection.successful']): Promise<string> {
  const res = await request(t, 'POST', '/v1/webhooks/endpoints', { token, body: { url, enabled_events: events } });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

const count = async (sql: string, values: unknown[]): Promise<number> =>
  (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, values)).rows[0]?.n ?? -1;

describe('configuration', () => {
  it('defaults: deliveries 30 days, notices 90 days, hourly, 1,000 rows a statement; bad values stop the start', () => {
    const config = loadConfig({});
    assert.equal(config.webhookDeliveryRetentionDays, 30);
    assert.equal(config.providerNoticeRetentionDays, 90);
    assert.equal(config.purgeIntervalMs, 3_600_000);
    assert.equal(config.purgeBatchSize, 1000);
    assert.equal(config.idempotencyRetentionSeconds, 86_400);
    const custom = loadConfig({ WEBHOOK_DELIVERY_RETENTION_DAYS: '7', PROVIDER_NOTICE_RETENTION_DAYS: '365' });
    assert.equal(custom.webhookDeliveryRetentionDays, 7);
    assert.equal(custom.providerNoticeRetentionDays, 365);
    for (const [name, value, message] of [
      ['WEBHOOK_DELIVERY_RETENTION_DAYS', '0', /WEBHOOK_DELIVERY_RETENTION_DAYS must be between 1 and 3650/],
      // Notice ids de-duplicate repeated callbacks: never forgotten within a week.
      ['PROVIDER_NOTICE_RETENTION_DAYS', '6', /PROVIDER_NOTICE_RETENTION_DAYS must be between 7 and 3650/],
      ['PURGE_INTERVAL_MS', '999', /PURGE_INTERVAL_MS must be between 1000 and 86400000/],
      ['PURGE_BATCH_SIZE', 'lots', /PURGE_BATCH_SIZE must be a whole number/],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, message);
          return true;
        },
      );
    }
  });
});

describe('purges', () => {
  it('webhook deliveries: finished ones past the retention go with their attempts; pending, recent and mid-attempt ones stay', async () => {
    const ws = await createWorkspace(t, 'retention-deliveries');
    const ok = await startReceiver(() => ({ status: 200, body: 'ok' }));
    const down = await startReceiver(() => ({ status: 500, body: 'down' }));
    try {
      const okEndpoint = await addEndpoint(ws.token, ok.url);
      const downEndpoint = await addEndpoint(ws.token, down.url);
      const stoppedEndpoint = await addEndpoint(ws.token, down.url);
      await successfulCollection(ws.token);
      // One attempt each, answered: succeeded at `ok`, pending at the two others (their retry is an hour away).
      await waitFor('the first attempts', async () => {
        const { rows } = await t.db.query<{ endpoint_id: string; status: string }>(
          `SELECT endpoint_id, status FROM webhook_deliveries
           WHERE workspace_id = $1 AND attempts = 1 AND lease_until IS NULL
             AND id IN (SELECT delivery_id FROM webhook_attempts)`,
          [ws.id],
        );
        return rows.length === 3 ? rows : undefined;
      });
      // Disabling an endpoint stops (fails) its pending delivery.
      const stopped = await request(t, 'PATCH', `/v1/webhooks/endpoints/${stoppedEndpoint}`, {
        token: ws.token,
        body: { status: 'disabled' },
      });
      assert.equal(stopped.status, 200, stopped.text);
      const initial = (
        await t.db.query<{ id: string; endpoint_id: string; status: string; event_id: string }>(
          'SELECT id, endpoint_id, status, event_id FROM webhook_deliveries WHERE workspace_id = $1',
          [ws.id],
        )
      ).rows;
      const statusAt = (endpoint: string) => initial.find((d) => d.endpoint_id === endpoint)?.status;
      assert.deepEqual(
        [statusAt(okEndpoint), statusAt(downEndpoint), statusAt(stoppedEndpoint)],
        ['succeeded', 'pending', 'failed'],
      );
      // All three finished (or last changed) 31 days ago.
      await t.db.query(
        `UPDATE webhook_deliveries SET updated_at = now() - interval '31 days' WHERE workspace_id = $1`,
        [ws.id],
      );
      // A failed delivery 31 days old whose attempt is still in progress (its endpoint was disabled mid-attempt): the
      // attempt's log row is still to be written, and it references the delivery.
      const midAttempt = randomUUID();
      await t.db.query(
        `INSERT INTO webhook_deliveries (id, workspace_id, event_id, endpoint_id, kind, status, attempts, max_attempts,
                                         lease_until, lease_token, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'resend', 'failed', 1, 1, now() + interval '1 minute', $5,
                 now() - interval '31 days', now() - interval '31 days')`,
        [midAttempt, ws.id, initial[0]?.event_id, stoppedEndpoint, randomUUID()],
      );
      // And one finished just now.
      await successfulCollection(ws.token);
      await waitFor('the recent delivery', async () =>
        (await count(`webhook_deliveries WHERE workspace_id = $1 AND status = 'succeeded'`, [ws.id])) === 2
          ? true
          : undefined,
      );

      // With a retention of 40 days, nothing is old enough.
      assert.deepEqual(await purgeWebhookDeliveries(t.db, 40, 1000), { deleted: 0, batches: 1, attempts: 0 });
      // With 30 days: the succeeded and the failed one go, with their one attempt each.
      assert.deepEqual(await purgeWebhookDeliveries(t.db, 30, 1000), { deleted: 2, batches: 1, attempts: 2 });

      const left = (
        await t.db.query<{ id: string; endpoint_id: string; status: string }>(
          'SELECT id, endpoint_id, status FROM webhook_deliveries WHERE workspace_id = $1 ORDER BY created_at',
          [ws.id],
        )
      ).rows;
      const gone = initial.filter((d) => d.status !== 'pending').map((d) => d.id);
      assert.ok(gone.every((id) => !left.some((d) => d.id === id)));
      // Left: both pending deliveries to the endpoint that answers 500 (the old event's and the new one's), the new
      // delivery to `ok`, and the one mid-attempt.
      assert.deepEqual(
        left.map((d) => `${d.endpoint_id} ${d.status}`).sort(),
        [
          `${downEndpoint} pending`,
          `${downEndpoint} pending`,
          `${okEndpoint} succeeded`,
          `${stoppedEndpoint} failed`,
        ].sort(),
      );
      assert.ok(left.some((d) => d.id === midAttempt));
      assert.equal(await count('webhook_attempts WHERE delivery_id = ANY($1::uuid[])', [gone]), 0);
      const pending = initial.find((d) => d.status === 'pending');
      assert.equal(await count('webhook_attempts WHERE delivery_id = $1', [pending?.id]), 1, 'its attempt log stays');
      // The events API shows what is left of the old event's deliveries: the pending one, and the one mid-attempt.
      const deliveries = await request(t, 'GET', `/v1/events/${pending?.event_id}/deliveries`, { token: ws.token });
      assert.equal(deliveries.status, 200, deliveries.text);
      assert.deepEqual(
        deliveries.body.data.map((d: { status: string; attempts: unknown[] }) => [d.status, d.attempts.length]),
        [
          ['pending', 1],
          ['failed', 0],
        ],
      );
      // Once its attempt has ended (the lease is over), the mid-attempt delivery goes on the next run.
      await t.db.query('UPDATE webhook_deliveries SET lease_until = NULL, lease_token = NULL WHERE id = $1', [
        midAttempt,
      ]);
      assert.deepEqual(await purgeWebhookDeliveries(t.db, 30, 1000), { deleted: 1, batches: 1, attempts: 0 });
    } finally {
      await ok.close();
      await down.close();
    }
  });

  it('provider notices past the retention go; recent ones stay', async () => {
    const ws = await createWorkspace(t, 'retention-notices');
    const old = await successfulCollection(ws.token);
    const recent = await successfulCollection(ws.token);
    const notices = (id: string) => count('provider_notices WHERE object_id = $1', [id]);
    const oldNotices = await notices(old);
    assert.ok(oldNotices >= 1, 'the sandbox provider reported the collection through notices');
    const recentNotices = await notices(recent);
    await t.db.query(`UPDATE provider_notices SET received_at = now() - interval '91 days' WHERE object_id = $1`, [
      old,
    ]);
    assert.equal((await purgeProviderNotices(t.db, 100, 1000)).deleted, 0, '91 days is within a retention of 100');
    assert.deepEqual(await purgeProviderNotices(t.db, 90, 1000), { deleted: oldNotices, batches: 1 });
    assert.equal(await notices(old), 0);
    assert.equal(await notices(recent), recentNotices);
  });

  it('idempotency outcomes past their retention go; live ones stay and still replay', async () => {
    const ws = await createWorkspace(t, 'retention-idempotency');
    const [expired, live] = [newKey(), newKey()];
    await successfulCollection(ws.token, expired);
    const liveId = await successfulCollection(ws.token, live);
    await t.db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE workspace_id = $1 AND key = $2`,
      [ws.id, expired],
    );
    assert.deepEqual(await t.services.idempotency.purgeExpired(1000), { deleted: 1, batches: 1 });
    assert.equal(await count('idempotency_keys WHERE workspace_id = $1', [ws.id]), 1);
    const replay = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: ws.token,
      idempotencyKey: live,
      body: { amount: 1500, currency: 'KES', reference: live, customer: { phone_number: SUCCESS_PHONE } },
    });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.collection_id, liveId);
  });

  it('published outbox rows go a day after publication; Daraja queries a day after they were made', async () => {
    const ws = await createWorkspace(t, 'retention-outbox');
    await successfulCollection(ws.token);
    await waitFor('the outbox rows published', async () =>
      (await count('outbox WHERE workspace_id = $1 AND published_at IS NULL', [ws.id])) === 0 ? true : undefined,
    );
    const rows = await count('outbox WHERE workspace_id = $1', [ws.id]);
    const others = await count('outbox WHERE workspace_id <> $1', [ws.id]);
    assert.ok(rows >= 1);
    await t.db.query(`UPDATE outbox SET published_at = now() - interval '25 hours' WHERE workspace_id = $1`, [ws.id]);
    assert.deepEqual(await purgeOutbox(t.db, 1000), { deleted: rows, batches: 1 });
    assert.equal(await count('outbox WHERE workspace_id = $1', [ws.id]), 0);
    assert.equal(await count('outbox WHERE workspace_id <> $1', [ws.id]), others, 'recently published rows stay');

    await t.db.query(
      `INSERT INTO connector_queries (provider, query_id, workspace_id, object_type, object_id, created_at)
       VALUES ('mpesa_daraja', 'AG_old', $1, 'collection', $2, now() - interval '25 hours'),
              ('mpesa_daraja', 'AG_new', $1, 'collection', $2, now() - interval '23 hours')`,
      [ws.id, randomUUID()],
    );
    assert.deepEqual(await purgeConnectorQueries(t.db, 1000), { deleted: 1, batches: 1 });
    assert.deepEqual(
      (await t.db.query('SELECT query_id FROM connector_queries WHERE workspace_id = $1', [ws.id])).rows,
      [{ query_id: 'AG_new' }],
    );
  });

  it('Orange Money sessions go 30 days after they were opened; younger ones stay', async () => {
    const ws = await createWorkspace(t, 'retention-orange');
    await t.db.query(
      `INSERT INTO orange_webpayments (workspace_id, provider, collection_id, order_id, amount, pay_token, payment_url, notif_token_hash, created_at)
       VALUES ($1, 'orange', $2, 'o1', 1500, 'old', 'https://p.example/old', '\\x00', now() - interval '31 days'),
              ($1, 'orange', $2, 'o2', 1500, 'new', 'https://p.example/new', '\\x00', now() - interval '29 days')`,
      [ws.id, randomUUID()],
    );
    assert.deepEqual(await purgeOrangeWebpayments(t.db, 1000), { deleted: 1, batches: 1 });
    assert.deepEqual(
      (await t.db.query('SELECT pay_token FROM orange_webpayments WHERE workspace_id = $1', [ws.id])).rows,
      [{ pay_token: 'new' }],
    );
    await t.db.query('DELETE FROM orange_webpayments WHERE workspace_id = $1', [ws.id]);
  });
});

/** A pool that notes each statement it sends, so the batches are counted where they run, not only as reported. */
function notingPool(statements: { text: string; values: unknown[] }[]): Db {
  class NotingClient extends pg.Client {
    // pg's overloads cannot be re-declared one by one; the arguments pass through unchanged.
    override query(config: any, values?: any, callback?: any): any {
      statements.push(
        typeof config === 'string' ? { text: config, values: values ?? [] } : { text: config.text, values: [] },
      );
      return super.query(config, values, callback);
    }
  }
  return new pg.Pool({ connectionString: t.config.databaseUrl, max: 1, Client: NotingClient });
}

describe('batches', () => {
  it('with a batch size of 2, five old rows go in three statements, none of them in a transaction, each by an index', async () => {
    const ws = await createWorkspace(t, 'retention-batches');
    await successfulCollection(ws.token);
    // Subscribed to nothing this workspace does: the only deliveries are the ones seeded here.
    const endpoint = await addEndpoint(ws.token, 'https://hooks.example/retention', ['refund.successful']);
    const event = (await t.db.query<{ id: string }>('SELECT id FROM events WHERE workspace_id = $1 LIMIT 1', [ws.id]))
      .rows[0]?.id;
    const at = (interval: string) => `now() - interval '${interval}'`;
    // Five old rows in each table (and one young one that stays), with SQL: the app's paths were shown above.
    for (let i = 0; i < 6; i++) {
      const young = i === 5;
      const delivery = randomUUID();
      await t.db.query(
        `INSERT INTO webhook_deliveries (id, workspace_id, event_id, endpoint_id, kind, status, attempts, max_attempts,
                                         created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'resend', $5, 1, 1, ${at(young ? '29 days' : '31 days')}, ${at(young ? '29 days' : '31 days')})`,
        [delivery, ws.id, event, endpoint, i % 2 === 0 ? 'succeeded' : 'failed'],
      );
      for (const attempt of [1, 2])
        await t.db.query(
          `INSERT INTO webhook_attempts (id, workspace_id, delivery_id, attempt, url, status_code, duration_ms, succeeded, created_at)
           VALUES ($1, $2, $3, $4, 'https://hooks.example/retention', 200, 12, true, now())`,
          [randomUUID(), ws.id, delivery, attempt],
        );
      await t.db.query(
        `INSERT INTO provider_notices (provider, notice_id, workspace_id, object_type, object_id, status, outcome, received_at)
         VALUES ('sandbox', $1, $2, 'collection', $3, 'successful', 'applied', ${at(young ? '89 days' : '91 days')})`,
        [`retention-${i}`, ws.id, randomUUID()],
      );
      await t.db.query(
        `INSERT INTO idempotency_keys (workspace_id, key, fingerprint, response_status, response_headers, response_body, created_at, expires_at)
         VALUES ($1, $2, 'f', 201, '{}', '{}', now() - interval '2 days', ${young ? "now() + interval '1 hour'" : at('1 hour')})`,
        [ws.id, `retention-${i}`],
      );
      await t.db.query(
        `INSERT INTO outbox (workspace_id, event_id, created_at, published_at) VALUES ($1, $2, ${at('2 days')}, ${at(young ? '23 hours' : '25 hours')})`,
        [ws.id, event],
      );
      await t.db.query(
        `INSERT INTO connector_queries (provider, query_id, workspace_id, object_type, object_id, created_at)
         VALUES ('mpesa_daraja', $1, $2, 'collection', $3, ${at(young ? '23 hours' : '25 hours')})`,
        [`retention-${i}`, ws.id, randomUUID()],
      );
    }

    const statements: { text: string; values: unknown[] }[] = [];
    const db = notingPool(statements);
    try {
      const purges: { index: string; run: () => Promise<PurgeResult & { attempts?: number }> }[] = [
        { index: 'webhook_deliveries_finished', run: () => purgeWebhookDeliveries(db, 30, 2) },
        { index: 'provider_notices_received', run: () => purgeProviderNotices(db, 90, 2) },
        { index: 'idempotency_keys_expiry', run: () => new IdempotencyEngine(db, 86_400, t.box).purgeExpired(2) },
        { index: 'outbox_published', run: () => purgeOutbox(db, 2) },
        { index: 'connector_queries_created', run: () => purgeConnectorQueries(db, 2) },
      ];
      for (const purge of purges) {
        statements.length = 0;
        const result = await purge.run();
        assert.equal(result.deleted, 5, purge.index);
        assert.equal(result.batches, 3, `${purge.index}: 2 + 2 + 1`);
        assert.equal(statements.length, 3, `${purge.index}: one statement a batch, no BEGIN or COMMIT around them`);
        assert.ok(statements.every((s) => /^\s*(WITH|DELETE)/.test(s.text)));
        if (purge.index === 'webhook_deliveries_finished') assert.equal(result.attempts, 10, 'two attempts each');
        // Each batch finds its rows by the index in the order they age (forced, as the table is too small for the
        // planner to bother; a real table gets this plan by itself).
        const [batch] = statements;
        const client = await db.connect();
        try {
          await client.query('BEGIN');
          await client.query('SET LOCAL enable_seqscan = off');
          await client.query('SET LOCAL enable_bitmapscan = off');
          await client.query('SET LOCAL enable_sort = off');
          const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${batch?.text}`, batch?.values);
          await client.query('ROLLBACK');
          assert.match(
            plan.rows.map((r) => r['QUERY PLAN']).join('\n'),
            new RegExp(`Index Scan using ${purge.index}`),
            purge.index,
          );
        } finally {
          client.release();
        }
      }
    } finally {
      await db.end();
    }
    // The young row of each table stays.
    assert.equal(await count('webhook_deliveries WHERE workspace_id = $1', [ws.id]), 1);
    assert.equal(await count('webhook_attempts WHERE workspace_id = $1', [ws.id]), 2);
    assert.equal(await count("provider_notices WHERE notice_id LIKE 'retention-%'", []), 1);
    assert.equal(await count("idempotency_keys WHERE key LIKE 'retention-%'", []), 1);
    assert.equal(await count("connector_queries WHERE query_id LIKE 'retention-%'", []), 1);
  });
});

describe('the workers', () => {
  it('run every purge on PURGE_INTERVAL_MS (the first run at start)', async () => {
    const ws = await createWorkspace(t, 'retention-workers');
    const collection = await successfulCollection(ws.token);
    await t.db.query(`UPDATE provider_notices SET received_at = now() - interval '91 days' WHERE object_id = $1`, [
      collection,
    ]);
    // A second set of workers, as a second process would run (its own metrics registry).
    const workers = startWorkers({ ...t.services, metrics: new Registry() }, t.config, t.db, t.app.log);
    try {
      await waitFor('the notices purged', async () =>
        (await count('provider_notices WHERE object_id = $1', [collection])) === 0 ? true : undefined,
      );
    } finally {
      await workers.stop();
    }
  });
});
