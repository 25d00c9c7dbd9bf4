// A backlog for one slow endpoint must not hold up anyone else's webhooks: the relay leaves an endpoint
// that already has its share of attempts in flight out of the window it claims from.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createWorkspace, request, startTestApp, waitFor, type TestApp } from './helpers/harness.js';
import { recordEvents } from './helpers/events.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

describe('a slow endpoint with a deep backlog', () => {
  let t: TestApp;
  let slow: Receiver;
  let fast: Receiver;

  before(async () => {
    t = await startTestApp(
      { WEBHOOK_TIMEOUT_MS: '4000', WEBHOOK_POLL_MS: '20', WEBHOOK_ENDPOINT_CONCURRENCY: '8' },
      { workers: true },
    );
    slow = await startReceiver(() => ({ hang: true }));
    fast = await startReceiver(() => ({ status: 200 }));
  });
  after(async () => {
    await slow.close();
    await fast.close();
    await t.close();
  });

  it('another workspace still gets its events at once while 1,200 wait for an endpoint that never answers', async () => {
    const stuck = await createWorkspace(t, 'stuck');
    const healthy = await createWorkspace(t, 'healthy');
    const slowEndpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: stuck.token,
      body: { url: slow.url },
    });
    assert.equal(slowEndpoint.status, 201);
    await new Promise((r) => setTimeout(r, 5));
    await recordEvents(t.db, stuck.id, 'collection.created', 1200, { metadata: {} });
    await waitFor(
      '8 attempts hanging at the slow endpoint',
      async () => (slow.requests.length >= 8 ? true : undefined),
      15_000,
    );

    const fastEndpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: healthy.token,
      body: { url: fast.url },
    });
    assert.equal(fastEndpoint.status, 201);
    await new Promise((r) => setTimeout(r, 5));
    const sent = Date.now();
    await recordEvents(t.db, healthy.id, 'collection.created', 3, { metadata: {} });
    // The slow endpoint's 1,192 waiting deliveries are all older than these three.
    await waitFor('the healthy workspace’s 3 events', async () => (fast.requests.length >= 3 ? true : undefined), 3000);
    assert.ok(Date.now() - sent < 3000, `took ${Date.now() - sent} ms`);
    assert.equal(slow.requests.length, 8, 'the slow endpoint still has only its 8 slots');
  });
});

// Every slot taken is the relay's normal state under load: the polls and kicks that arrive then must not stop it
// from claiming once slots free again, and attempts that finish together are written together, each correctly.
describe('a relay with every slot taken', () => {
  let t: TestApp;
  let receiver: Receiver;

  before(async () => {
    t = await startTestApp(
      {
        WEBHOOK_TIMEOUT_MS: '4000',
        WEBHOOK_POLL_MS: '20',
        WEBHOOK_CONCURRENCY: '4',
        WEBHOOK_ENDPOINT_CONCURRENCY: '4',
        WEBHOOK_RETRY_SCHEDULE: '0s,200ms',
      },
      { workers: true },
    );
    // Each answer takes 300 ms, so all 4 slots are held through many polls; every third event fails its first attempt.
    receiver = await startReceiver((req, index) => {
      const n = (JSON.parse(req.body) as { data: { metadata: { n: number } } }).data.metadata.n;
      const first = receiver.requests.findIndex((r) => r.body === req.body) === index;
      return { status: n % 3 === 0 && first ? 503 : 200, delayMs: 300 };
    });
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  it('goes on claiming when slots free, and records each attempt of a busy batch against its own delivery', async () => {
    const ws = await createWorkspace(t, 'full');
    const endpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: receiver.url },
    });
    assert.equal(endpoint.status, 201);
    await new Promise((r) => setTimeout(r, 5));
    await t.db.query(
      `WITH e AS (INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
         SELECT gen_random_uuid(), $1, 'collection.created', 'collection', gen_random_uuid(), jsonb_build_object('metadata', jsonb_build_object('n', n)), $2
         FROM generate_series(1, 24) AS n RETURNING id, workspace_id, created_at)
       INSERT INTO outbox (workspace_id, event_id, created_at) SELECT workspace_id, id, created_at FROM e`,
      [ws.id, new Date()],
    );
    // 24 events, 8 of them twice: 32 attempts of 300 ms through 4 slots, about 2.4 s when the relay never stalls.
    await waitFor(
      'all 24 events delivered',
      async () => {
        const { rows } = await t.db.query<{ n: string }>(
          `SELECT count(*) AS n FROM webhook_deliveries WHERE workspace_id = $1 AND status = 'succeeded'`,
          [ws.id],
        );
        return Number(rows[0]!.n) === 24 ? true : undefined;
      },
      15_000,
    );
    assert.equal(receiver.requests.length, 32);

    const { rows } = await t.db.query<{
      n: number;
      attempts: number;
      codes: number[];
      numbers: number[];
      last_error: string | null;
      leased: boolean;
    }>(
      `SELECT (e.data->'metadata'->>'n')::int AS n, d.attempts, d.last_error, d.lease_token IS NOT NULL AS leased,
              array_agg(a.status_code ORDER BY a.attempt) AS codes, array_agg(a.attempt ORDER BY a.attempt) AS numbers
       FROM webhook_deliveries d JOIN events e ON e.id = d.event_id JOIN webhook_attempts a ON a.delivery_id = d.id
       WHERE d.workspace_id = $1 GROUP BY e.data, d.attempts, d.last_error, d.lease_token ORDER BY 1`,
      [ws.id],
    );
    assert.equal(rows.length, 24);
    for (const row of rows) {
      const failedFirst = row.n % 3 === 0;
      assert.deepEqual(row.codes, failedFirst ? [503, 200] : [200], `event ${row.n}`);
      assert.deepEqual(row.numbers, failedFirst ? [1, 2] : [1], `event ${row.n}`);
      assert.equal(row.attempts, failedFirst ? 2 : 1, `event ${row.n}`);
      assert.equal(row.last_error, null, `event ${row.n}`);
      assert.equal(row.leased, false, `event ${row.n}`);
    }
  });
});

// A relay that stops mid-backlog leaves nothing leased: the attempts in flight are written first, and a delivery's
// `attempts` counts only the attempts it had, so another worker takes the rest as they were.
describe('a relay stopped under load', () => {
  let t: TestApp;
  let receiver: Receiver;

  before(async () => {
    t = await startTestApp({ WEBHOOK_POLL_MS: '20', WEBHOOK_ENDPOINT_CONCURRENCY: '8' }, { workers: true });
    receiver = await startReceiver(async () => {
      await new Promise((r) => setTimeout(r, 40));
      return { status: 200 };
    });
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  it('leaves no delivery leased, and none counts an attempt it did not have', async () => {
    const ws = await backlogFor(t, 'stopped relay', receiver.url, 200);
    await waitFor('the backlog under way', async () => (receiver.requests.length >= 20 ? true : undefined));
    await t.workers?.stop();
    const rows = await assertSettled(t, ws.id);
    assert.equal(rows.length, 200);
    const sent = rows.filter((r) => r.status === 'succeeded').length;
    assert.ok(sent >= 20 && sent < 200, `${sent} of 200 were sent before the stop`);
    assert.equal(
      new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size,
      receiver.requests.length,
      'none sent twice',
    );
  });
});

/** A workspace with one endpoint at `url`, created just before `count` events it then receives. */
async function backlogFor(t: TestApp, name: string, url: string, count: number): Promise<{ id: string }> {
  const ws = await createWorkspace(t, name);
  const endpoint = await request(t, 'POST', '/v1/webhooks/endpoints', { token: ws.token, body: { url } });
  assert.equal(endpoint.status, 201, endpoint.text);
  await new Promise((r) => setTimeout(r, 5));
  await recordEvents(t.db, ws.id, 'collection.created', count);
  return ws;
}

/** Once the relay has stopped: nothing of the workspace is leased, and each delivery's `attempts` is the attempts made. */
async function assertSettled(
  t: TestApp,
  workspaceId: string,
): Promise<{ id: string; status: string; attempts: number; made: number }[]> {
  const { rows } = await t.db.query<{
    id: string;
    status: string;
    attempts: number;
    made: number;
    lease_token: string | null;
  }>(
    `SELECT d.id, d.status, d.attempts, d.lease_token, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS made
     FROM webhook_deliveries d WHERE d.workspace_id = $1`,
    [workspaceId],
  );
  for (const row of rows) {
    assert.equal(row.lease_token, null, `delivery ${row.id} still leased`);
    assert.equal(row.attempts, row.made, `delivery ${row.id} (${row.status})`);
  }
  return rows;
}

// Under load the relay leases up to a share of an endpoint's deliveries ahead of its free slots, so a freed slot sends
// the next at once. Those it never sent go back when it stops: another worker can claim them, and a delivery's
// `attempts` counts only the attempts it had.
