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
describe('deliveries leased ahead of a free slot', () => {
  let t: TestApp;
  let receiver: Receiver;

  before(async () => {
    t = await startTestApp(
      {
        WEBHOOK_TIMEOUT_MS: '4000',
        WEBHOOK_POLL_MS: '20',
        WEBHOOK_CONCURRENCY: '16',
        WEBHOOK_ENDPOINT_CONCURRENCY: '4',
      },
      { workers: true },
    );
    receiver = await startReceiver(() => ({ status: 200, delayMs: 50 }));
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  it('are handed back when the relay stops: none stays leased, none was sent twice', async () => {
    const ws = await backlogFor(t, 'held', receiver.url, 300);
    const count = async (where: string) =>
      Number(
        (
          await t.db.query<{ n: string }>(
            `SELECT count(*) AS n FROM webhook_deliveries WHERE workspace_id = $1 AND ${where}`,
            [ws.id],
          )
        ).rows[0]!.n,
      );
    // A lease longer than one attempt's (timeout + 5 s = 9 s) is one held ahead (two timeouts + 5 s).
    await waitFor(
      'deliveries held ahead',
      async () => ((await count("lease_until > now() + interval '10 seconds'")) > 0 ? true : undefined),
      10_000,
    );
    await t.workers!.stop();

    const rows = await assertSettled(t, ws.id);
    assert.equal(rows.length, 300);
    const sent = rows.filter((r) => r.made > 0);
    assert.ok(sent.every((r) => r.status === 'succeeded' && r.made === 1));
    assert.ok(
      rows.some((r) => r.status === 'pending' && r.attempts === 0),
      'some were still waiting when the relay stopped',
    );
    assert.equal(receiver.requests.length, sent.length, 'each delivery sent once');
  });
});

// A held delivery that cannot start within one timeout of its claim goes back (lease cleared, attempt taken back),
// so every attempt sent is covered by its lease. An endpoint that never answers (timeout 400 ms) with 2 slots: the
// deliveries held ahead can only start when a hanging attempt times out, and some miss their time.
const T = 400;

describe('a held delivery that cannot start within one timeout', () => {
  let t: TestApp;
  let receiver: Receiver;

  before(async () => {
    t = await startTestApp(
      {
        WEBHOOK_TIMEOUT_MS: String(T),
        WEBHOOK_POLL_MS: '20',
        WEBHOOK_CONCURRENCY: '4',
        WEBHOOK_ENDPOINT_CONCURRENCY: '2',
        WEBHOOK_RETRY_SCHEDULE: '1h',
      },
      { workers: true },
    );
    receiver = await startReceiver(() => ({ hang: true }));
    // Every claim (attempts + 1) and every hand-back (lease cleared, attempts - 1), with the database's time.
    await t.db.query(`
      CREATE TABLE lease_log (delivery_id uuid, what text, attempt int, at timestamptz DEFAULT clock_timestamp(),
                              stmt_at timestamptz DEFAULT statement_timestamp(), lease_until timestamptz);
      CREATE FUNCTION log_lease() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        IF NEW.attempts = OLD.attempts + 1 AND NEW.lease_token IS NOT NULL THEN
          INSERT INTO lease_log (delivery_id, what, attempt, lease_until) VALUES (NEW.id, 'claim', NEW.attempts, NEW.lease_until);
        ELSIF NEW.attempts = OLD.attempts - 1 AND NEW.lease_token IS NULL AND OLD.lease_token IS NOT NULL THEN
          INSERT INTO lease_log (delivery_id, what, attempt, lease_until) VALUES (NEW.id, 'handback', OLD.attempts, OLD.lease_until);
        END IF;
        RETURN NEW; END $$;
      CREATE TRIGGER log_lease AFTER UPDATE ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION log_lease();`);
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  it('is handed back, never sent late, and attempts count only attempts made', async () => {
    const ws = await backlogFor(t, 'late', receiver.url, 40);
    await waitFor('the first attempt', async () => (receiver.requests.length > 0 ? true : undefined), 5000);
    await new Promise((r) => setTimeout(r, 8 * T));
    const stoppedAt = new Date();
    await t.workers!.stop();

    // Handed back before the stop: never sent under that claim, and only after its time to start had passed.
    const { rows: handed } = await t.db.query<{
      delivery_id: string;
      attempt: number;
      claimed: Date;
      at: Date;
      sent: number;
    }>(
      `SELECT h.delivery_id, h.attempt, c.stmt_at AS claimed, h.at,
              (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = h.delivery_id AND a.attempt = h.attempt
                 AND a.created_at >= c.stmt_at - interval '1 second' AND a.created_at <= h.at) AS sent
       FROM lease_log h
       JOIN LATERAL (SELECT * FROM lease_log c WHERE c.delivery_id = h.delivery_id AND c.what = 'claim' AND c.at <= h.at
                     ORDER BY c.at DESC LIMIT 1) c ON true
       WHERE h.what = 'handback' AND h.at < $1`,
      [stoppedAt],
    );
    for (const h of handed) {
      assert.equal(h.sent, 0, `delivery ${h.delivery_id} was sent and handed back`);
      assert.ok(
        h.at.getTime() - h.claimed.getTime() >= T - 50,
        `handed back ${h.at.getTime() - h.claimed.getTime()} ms after its claim`,
      );
    }

    // Every attempt sent started within one timeout of the claim it was sent under (so its lease covered it). The
    // relay takes its time before sending the claim and the attempt's when it begins: 50 ms allow for the difference
    // on a busy machine. A late delivery started instead of handed back shows in `handed` being empty.
    const { rows: sends } = await t.db.query<{ delivery_id: string; attempt: number; waited: number }>(
      `SELECT a.delivery_id, a.attempt, extract(epoch FROM a.created_at - c.stmt_at) * 1000 AS waited
       FROM webhook_attempts a
       JOIN LATERAL (SELECT * FROM lease_log c WHERE c.delivery_id = a.delivery_id AND c.what = 'claim' AND c.attempt = a.attempt
                       AND c.stmt_at <= a.created_at + interval '50 milliseconds' ORDER BY c.at DESC LIMIT 1) c ON true
       WHERE a.workspace_id = $1`,
      [ws.id],
    );
    assert.ok(sends.length > 0);
    for (const s of sends)
      assert.ok(
        s.waited <= T + 50,
        `delivery ${s.delivery_id} attempt ${s.attempt} started ${Math.round(s.waited)} ms after its claim`,
      );

    await assertSettled(t, ws.id);
    assert.ok(handed.length > 0, 'some held delivery went back for being late');
    // Never two attempts of one delivery at the receiver.
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    assert.equal(new Set(ids).size, ids.length, 'each delivery sent once');
  });
});
