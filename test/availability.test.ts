// Rail availability through HTTP: GET /v1/availability, the admin's planned maintenance, the judgement from traffic
// (operator errors count, payers' outcomes do not, too few attempts are not judged), 503 `rail_unavailable` on new
// collections from the snapshot the worker refreshes (no statement on the create path), and the
// `rail.availability_changed` event to the workspaces that use the rail.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  newKey,
  request,
  startTestApp,
  waitFor,
  tokenSession,
  validCollection,
  type TestApp,
} from './helpers/harness.js';
import { isWrite, statementsSent } from './helpers/statements.js';
import { loadConfig } from '../src/config.js';
import { poolSettings } from '../src/db/open.js';
import { createPool } from '../src/db/pool.js';
import { createService } from '../src/service.js';
import { startWorkers } from '../src/workers/index.js';

let t: TestApp;
before(async () => {
  t = await startTestApp(
    {
      ...FAST_LIFECYCLE,
      AVAILABILITY_JUDGE_TRAFFIC: 'true',
      AVAILABILITY_MIN_ATTEMPTS: '4',
      // The worker judges once at start; the tests judge when they have made their traffic (as its next run would).
      AVAILABILITY_INTERVAL_MS: '3600000',
      AVAILABILITY_REFRESH_MS: '100',
      AVAILABILITY_RETRY_AFTER_SECONDS: '2',
    },
    { workers: true },
  );
});
after(async () => t.close());

const availability = async (token = t.demoToken) => {
  const res = await request(t, 'GET', '/v1/availability', { token });
  assert.equal(res.status, 200, res.text);
  return res.body as { data: Record<string, any>[]; window_seconds: number; computed_at: string | null };
};
const railOf = async (market: string, rail: string) => {
  const found = (await availability()).data.find((r) => r.market === market && r.rail === rail);
  assert.ok(found, `${market}/${rail} is listed`);
  return found;
};
const maintenance = (market: string, rail: string, body: unknown, token = t.adminToken) =>
  request(t, 'PUT', `/v1/admin/maintenance/${market}/${rail}`, { token, body });
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

/** A collection on a rail, failed by the simulator with `reason`. */
async function failedCollection(
  token: string,
  path: string,
  phone: string,
  reason: string,
  currency = 'KES',
): Promise<string> {
  const res = await createCollection(t, token, { currency, amount: 20_000, customer: { phone_number: phone } }, path);
  assert.equal(res.status, 201, res.text);
  const id = res.body.collection_id as string;
  const driven = await request(t, 'POST', `/v1/sandbox/collections/${id}/simulate`, {
    token,
    body: { outcome: 'failed', reason },
  });
  assert.ok(driven.status < 300, driven.text);
  return id;
}

describe('GET /v1/availability', () => {
  it('lists every rail of the catalogue by direction: operational, why and since when', async () => {
    const body = await availability();
    assert.equal(body.window_seconds, 900);
    const mpesa = body.data.find((r) => r.market === 'KE' && r.rail === 'mpesa');
    assert.ok(mpesa);
    for (const direction of ['collections', 'payouts', 'refunds']) {
      assert.equal(mpesa[direction].status, 'operational');
      assert.equal(typeof mpesa[direction].since, 'string');
      assert.equal(typeof mpesa[direction].detail, 'string');
    }
    assert.equal(mpesa.maintenance, null);
    assert.ok(body.data.some((r) => r.market === 'CI' && r.rail === 'wave'));
  });

  it('401 without a token', async () => {
    assertProblem(await request(t, 'GET', '/v1/availability'), 401, 'unauthorized');
  });
});

describe('planned maintenance', () => {
  it('an integrator may not set it: 403 forbidden', async () => {
    assertProblem(
      await maintenance(
        'GH',
        'vodafone_cash',
        { starts_at: new Date().toISOString(), ends_at: inAnHour() },
        t.demoToken,
      ),
      403,
      'forbidden',
    );
  });

  it('bad input is a problem with a stable code', async () => {
    const now = new Date().toISOString();
    assertProblem(await maintenance('XX', 'mpesa', { starts_at: now, ends_at: inAnHour() }), 404, 'not_found');
    assertProblem(await maintenance('KE', 'wave', { starts_at: now, ends_at: inAnHour() }), 404, 'not_found');
    const backwards = await maintenance('GH', 'vodafone_cash', { starts_at: inAnHour(), ends_at: now });
    assertProblem(backwards, 400, 'validation_failed');
    assert.deepEqual(
      backwards.body.errors.map((e: { field: string }) => e.field),
      ['ends_at', 'ends_at'],
    );
    assertProblem(await maintenance('GH', 'vodafone_cash', { ends_at: inAnHour() }), 400, 'validation_failed');
    assertProblem(
      await maintenance('GH', 'vodafone_cash', { starts_at: now, ends_at: inAnHour(), extra: 1 }),
      400,
      'validation_failed',
    );
    assertProblem(
      await request(t, 'DELETE', '/v1/admin/maintenance/GH/vodafone_cash', { token: t.adminToken }),
      404,
      'not_found',
    );
  });

  it('puts the rail down in every direction until it is cleared; new collections get 503 rail_unavailable with Retry-After', async () => {
    const ends = inAnHour();
    const set = await maintenance('GH', 'vodafone_cash', {
      starts_at: new Date().toISOString(),
      ends_at: ends,
      note: 'Operator upgrade',
    });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.ends_at, ends);
    const rail = await railOf('GH', 'vodafone_cash');
    for (const direction of ['collections', 'payouts', 'refunds']) {
      assert.equal(rail[direction].status, 'down');
      assert.equal(rail[direction].reason, 'maintenance');
      assert.match(rail[direction].detail, /Operator upgrade/);
    }
    assert.equal(rail.maintenance.note, 'Operator upgrade');
    // Another rail of the market is untouched.
    assert.equal((await railOf('GH', 'mtn_momo')).collections.status, 'operational');

    const refused = await createCollection(
      t,
      t.demoToken,
      { currency: 'GHS', customer: { phone_number: '+233201234567' } },
      '/v1/collections/GH/rails/vodafone_cash',
    );
    assertProblem(refused, 503, 'rail_unavailable');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter > 3500 && retryAfter <= 3600, `Retry-After runs to the end of the maintenance: ${retryAfter}`);

    // A hosted checkout's attempt on the rail is refused the same way; the session stays open for another rail.
    const session = await request(t, 'POST', '/v1/checkout/sessions', {
      token: t.demoToken,
      body: { amount: 5_000, currency: 'GHS', market: 'GH', redirect_url: 'https://shop.example/thanks' },
    });
    assert.equal(session.status, 201, session.text);
    const attempt = await request(
      t,
      'POST',
      `/v1/checkout/by-token/${String(session.body.session_url).split('/').pop()}/pay`,
      {
        body: { rail: 'vodafone_cash', customer: { phone_number: '+233201234567' } },
        idempotencyKey: newKey(),
      },
    );
    assertProblem(attempt, 503, 'rail_unavailable');
    assert.ok(Number(attempt.headers.get('retry-after')) > 3500);

    const cleared = await request(t, 'DELETE', '/v1/admin/maintenance/GH/vodafone_cash', { token: t.adminToken });
    assert.equal(cleared.status, 204, cleared.text);
    assert.equal((await railOf('GH', 'vodafone_cash')).collections.status, 'operational');
    const accepted = await createCollection(
      t,
      t.demoToken,
      { currency: 'GHS', customer: { phone_number: '+233201234567' } },
      '/v1/collections/GH/rails/vodafone_cash',
    );
    assert.equal(accepted.status, 201, accepted.text);
  });
});

describe('a retry while the rail is down', () => {
  it('of a collection created before gets its replay, not the 503; a new key, or the key with another body, does not', async () => {
    const body = validCollection({ currency: 'GHS', amount: 5_000, customer: { phone_number: '+233201234567' } });
    const path = '/v1/collections/GH/rails/vodafone_cash';
    const key = newKey();
    const created = await request(t, 'POST', path, { token: t.demoToken, body, idempotencyKey: key });
    assert.equal(created.status, 201, created.text);
    // The same rail's checkout attempt, made before the maintenance too.
    const session = await request(t, 'POST', '/v1/checkout/sessions', {
      token: t.demoToken,
      body: { amount: 5_000, currency: 'GHS', market: 'GH', redirect_url: 'https://shop.example/thanks' },
    });
    assert.equal(session.status, 201, session.text);
    const payPath = `/v1/checkout/by-token/${String(session.body.session_url).split('/').pop()}/pay`;
    const attemptBody = { rail: 'vodafone_cash', customer: { phone_number: '+233201234567' } };
    const attemptKey = newKey();
    const attempt = await request(t, 'POST', payPath, { body: attemptBody, idempotencyKey: attemptKey });
    assert.equal(attempt.status, 201, attempt.text);

    const set = await maintenance('GH', 'vodafone_cash', { starts_at: new Date().toISOString(), ends_at: inAnHour() });
    assert.equal(set.status, 200, set.text);
    try {
      // The answer to the first request was lost; its retry is answered as it was, and nothing is created again.
      const retried = await request(t, 'POST', path, { token: t.demoToken, body, idempotencyKey: key });
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.headers.get('idempotent-replayed'), 'true');
      assert.equal(retried.body.collection_id, created.body.collection_id);
      const { rows } = await t.db.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [key]);
      assert.equal(rows[0].n, 1);
      const again = await request(t, 'POST', payPath, { body: attemptBody, idempotencyKey: attemptKey });
      assert.equal(again.status, 201, again.text);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.body, attempt.body);
      // A new request is refused; the key with another body is the key's misuse, as at any other time.
      assertProblem(
        await request(t, 'POST', path, { token: t.demoToken, body, idempotencyKey: newKey() }),
        503,
        'rail_unavailable',
      );
      assertProblem(
        await request(t, 'POST', path, { token: t.demoToken, body: { ...body, amount: 5_001 }, idempotencyKey: key }),
        422,
        'idempotency_key_reused',
      );
    } finally {
      const cleared = await request(t, 'DELETE', '/v1/admin/maintenance/GH/vodafone_cash', { token: t.adminToken });
      assert.equal(cleared.status, 204, cleared.text);
    }
  });
});

describe('the create path consults memory, refreshed by the worker', () => {
  it('a judgement written by another node reaches this one by the refresh, and the create sends no statement for it', async () => {
    // Another node's judgement: written to the table, not through this node's service.
    await t.db.query(
      `INSERT INTO rail_availability (market, rail, direction, id, status, reason, detail, since, attempts, failures,
         median_ms, computed_at)
       VALUES ('UG', 'airtel_money', 'collections', gen_random_uuid(), 'down', 'operator_errors', 'Judged elsewhere.',
         now(), 10, 9, NULL, now())
       ON CONFLICT (market, rail, direction) DO UPDATE SET status = 'down', detail = 'Judged elsewhere.'`,
    );
    const before = t.services.availability.refreshes;
    await waitFor('the worker to refresh the snapshot', async () =>
      t.services.availability.refreshes >= before + 2 ? true : undefined,
    );
    const body = { currency: 'UGX', amount: 5000, customer: { phone_number: '+256701234567' } };
    const counted = t.services.availability.refreshes;
    const { result: refused, statements } = await statementsSent(t.db, () =>
      createCollection(t, t.demoToken, body, '/v1/collections/UG/rails/airtel_money'),
    );
    assertProblem(refused, 503, 'rail_unavailable');
    assert.equal(refused.headers.get('retry-after'), '2');
    assert.match(refused.body.detail, /Judged elsewhere/);
    const own = statements.filter((s) => !/rate_limit_buckets/.test(s.text));
    assert.equal(
      own.filter((s) => /rail_availability|rail_maintenance/.test(s.text)).length,
      0,
      'no availability read',
    );
    assert.equal(own.filter((s) => isWrite(s.text)).length, 0, 'nothing written');
    assert.ok(t.services.availability.refreshes - counted <= 1, 'the request did not refresh the snapshot itself');

    // Back up by the same path: the next refresh lets collections through again.
    await t.db.query(
      `UPDATE rail_availability SET status = 'operational', reason = 'normal' WHERE market = 'UG' AND rail = 'airtel_money'`,
    );
    await waitFor('the refreshed snapshot to let collections through', async () => {
      const res = await createCollection(t, t.demoToken, body, '/v1/collections/UG/rails/airtel_money');
      return res.status === 201 ? true : undefined;
    });
  });
});

describe('several nodes', () => {
  it("an admin's change on one node reaches another node's create path by that node's refresh", async () => {
    // A second node of the same deployment: its own process state (snapshot, pools, workers), the same database.
    const config = loadConfig({
      DATABASE_URL: t.config.databaseUrl,
      DATA_DIR: t.config.dataDir,
      PORT: '0',
      LOG_LEVEL: 'silent',
      AVAILABILITY_REFRESH_MS: '100',
      AVAILABILITY_INTERVAL_MS: '3600000',
      INITIATION_MAX_WAIT_MS: '600000',
    });
    const db = createPool(t.config.databaseUrl ?? '', 4, poolSettings(config));
    const workerDb = createPool(t.config.databaseUrl ?? '', 4, poolSettings(config));
    const other = await createService(config, db, { logger: false, workerDb });
    await other.app.listen({ port: 0, host: '127.0.0.1' });
    const workers = startWorkers(other.services, config, workerDb, other.app.log);
    try {
      const address = other.app.server.address();
      const node2 = { baseUrl: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
      const body = { currency: 'TZS', amount: 20_000, customer: { phone_number: '+255754123456' } };
      const create = () => createCollection(node2, t.demoToken, body, '/v1/collections/TZ/rails/airtel_money');
      assert.equal((await create()).status, 201, 'the rail is up on the second node');

      // The change is made on the first node; the second learns it only by reading the table again.
      const refreshes = other.services.availability.refreshes;
      const set = await maintenance('TZ', 'airtel_money', { starts_at: new Date().toISOString(), ends_at: inAnHour() });
      assert.equal(set.status, 200, set.text);
      const refused = await waitFor('the second node to refuse', async () => {
        const res = await create();
        return res.status === 503 ? res : undefined;
      });
      assertProblem(refused, 503, 'rail_unavailable');
      assert.ok(other.services.availability.refreshes > refreshes, "by its worker's refresh");

      const cleared = await request(t, 'DELETE', '/v1/admin/maintenance/TZ/airtel_money', { token: t.adminToken });
      assert.equal(cleared.status, 204);
      await waitFor('the second node to accept again', async () =>
        (await create()).status === 201 ? true : undefined,
      );
    } finally {
      await workers.stop();
      await other.app.close();
      await db.end();
      await workerDb.end();
    }
  });
});

describe('judged from traffic', () => {
  it('one node judges at a time: while another holds the judgement lock, a run skips (and an admin change waits)', async () => {
    const other = await t.db.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock(3600036)');
      assert.equal(await t.services.availability.judgeAll(false), false, 'skipped while another node judges');
      await other.query('COMMIT');
    } finally {
      other.release();
    }
    assert.equal(await t.services.availability.judgeAll(false), true, 'judged once the lock is free');
  });

  it('one operator failure is not enough to judge (fewer attempts than AVAILABILITY_MIN_ATTEMPTS)', async () => {
    await failedCollection(t.demoToken, '/v1/collections/TZ/rails/mpesa', '+255712345678', 'provider_error', 'TZS');
    assert.equal(await t.services.availability.judgeAll(true), true);
    const rail = await railOf('TZ', 'mpesa');
    assert.equal(rail.collections.status, 'operational');
    assert.equal(rail.collections.reason, 'insufficient_traffic');
    assert.equal(rail.collections.attempts, 1);
    assert.equal(rail.collections.failures, 1);
  });

  it("payers' outcomes (declined, insufficient funds) are answers, not operator failures", async () => {
    for (const reason of ['payer_declined', 'insufficient_funds', 'payer_declined', 'insufficient_funds'])
      await failedCollection(t.demoToken, '/v1/collections/ZM/rails/airtel_money', '+260971234567', reason, 'ZMW');
    await t.services.availability.judgeAll(true);
    const rail = await railOf('ZM', 'airtel_money');
    assert.equal(rail.collections.attempts, 4);
    assert.equal(rail.collections.failures, 0);
    assert.equal(rail.collections.status, 'operational');
    assert.equal(rail.collections.reason, 'normal');
  });

  it('operator errors over the threshold put the rail down; the workspaces that use it get rail.availability_changed', async () => {
    const user = await createWorkspace(t, 'availability-user');
    const bystander = await createWorkspace(t, 'availability-bystander');
    for (let i = 0; i < 4; i++)
      await failedCollection(user.token, '/v1/collections/KE/rails/airtel_money', '+254733123456', 'provider_error');
    assert.equal(await t.services.availability.judgeAll(true), true);
    const rail = await railOf('KE', 'airtel_money');
    assert.equal(rail.collections.status, 'down');
    assert.equal(rail.collections.reason, 'operator_errors');
    assert.equal(rail.collections.failures, 4);
    assert.match(rail.collections.detail, /4 of 4 attempts/);
    // Payouts and refunds on the rail saw no traffic: not judged.
    assert.equal(rail.payouts.status, 'operational');
    const since = rail.collections.since;

    const events = await request(t, 'GET', '/v1/events?type=rail.availability_changed', { token: user.token });
    assert.equal(events.status, 200, events.text);
    assert.equal(events.body.data.length, 1);
    assert.deepEqual(events.body.data[0].data, rail, 'the event carries the rail as GET /v1/availability shows it');
    const none = await request(t, 'GET', '/v1/events?type=rail.availability_changed', { token: bystander.token });
    assert.equal(none.body.data.length, 0, 'a workspace that never used the rail is not told');

    // A second judgement with nothing new changes nothing and tells nobody again.
    await t.services.availability.judgeAll(true);
    assert.equal((await railOf('KE', 'airtel_money')).collections.since, since);
    const again = await request(t, 'GET', '/v1/events?type=rail.availability_changed', { token: user.token });
    assert.equal(again.body.data.length, 1);

    // The judgement reached this node's snapshot: new collections on the rail are refused.
    assertProblem(
      await createCollection(
        t,
        user.token,
        { customer: { phone_number: '+254733123456' } },
        '/v1/collections/KE/rails/airtel_money',
      ),
      503,
      'rail_unavailable',
    );
  });
});

describe('payouts on a rail that is down', () => {
  it('are accepted, held (never sent, the try not counted) while it is down, and sent when it is back', async () => {
    const ws = await createWorkspace(t, 'availability-payouts');
    // Funds: a collection on RW/mtn_momo driven to successful.
    const funded = await createCollection(
      t,
      ws.token,
      { currency: 'RWF', amount: 50_000, customer: { phone_number: '+250781234567' } },
      '/v1/collections/RW/rails/mtn_momo',
    );
    assert.equal(funded.status, 201, funded.text);
    const paid = await request(t, 'POST', `/v1/sandbox/collections/${funded.body.collection_id}/simulate`, {
      token: ws.token,
      body: { outcome: 'successful' },
    });
    assert.equal(paid.status, 200, paid.text);
    const route = await request(t, 'POST', '/v1/api/routes', {
      token: await liquidityProviderToken(t),
      body: { source: 'RWF', market: 'RW', rail: 'mtn_momo', min_amount: 100, max_amount: 20_000_000 },
    });
    assert.equal(route.status, 201, route.text);
    const beneficiary = await request(t, 'POST', '/v1/api/beneficiaries', {
      token: ws.token,
      body: { name: 'Aline Uwase', market: 'RW', rail: 'mtn_momo', phone_number: '+250781234568' },
    });
    assert.equal(beneficiary.status, 201, beneficiary.text);

    const set = await maintenance('RW', 'mtn_momo', { starts_at: new Date().toISOString(), ends_at: inAnHour() });
    assert.equal(set.status, 200, set.text);
    assert.equal((await railOf('RW', 'mtn_momo')).payouts.status, 'down');
    const committed = await request(t, 'POST', '/api/transactions/commit', {
      token: ws.token,
      body: {
        route_id: route.body.route_id,
        beneficiary_id: beneficiary.body.beneficiary_id,
        amount: 10_000,
        reference: 'held-1',
      },
      idempotencyKey: newKey(),
    });
    assert.equal(committed.status, 201, committed.text);
    const id = committed.body.transaction_id as string;
    const row = async () =>
      (
        await t.db.query<{ status: string; submitted_at: Date | null; sent_at: Date | null; submit_attempts: number }>(
          'SELECT status, submitted_at, sent_at, submit_attempts FROM payouts WHERE workspace_id = $1 AND id = $2',
          [ws.id, id],
        )
      ).rows[0];
    // Held: claimed and put back, several times over (the hold is 2 s here; the sweep runs every 20 ms).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const held = await row();
    assert.equal(held?.status, 'created');
    assert.equal(held?.submitted_at, null, 'its provider was never called');
    assert.equal(held?.sent_at, null, 'never marked as about to be sent');
    assert.equal(held?.submit_attempts, 0, 'a hold is not a try: a long outage never makes it give up');
    const { rows: simulated } = await t.db.query('SELECT 1 FROM sandbox_operations WHERE object_id = $1', [id]);
    assert.equal(simulated.length, 0, 'the simulator never saw it');

    const cleared = await request(t, 'DELETE', '/v1/admin/maintenance/RW/mtn_momo', { token: t.adminToken });
    assert.equal(cleared.status, 204, cleared.text);
    await waitFor(
      'the held payout to be sent once the rail is back',
      async () => ((await row())?.submitted_at ? true : undefined),
      10_000,
    );
  });
});

describe('the dashboard home', () => {
  it('shows the rails that are not operational, why and since when, and the maintenance planned', async () => {
    const cookie = await tokenSession(t.baseUrl, t.demoToken);
    const home = async () => {
      const res = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie } });
      assert.equal(res.status, 200);
      return res.text();
    };

    const set = await maintenance('CI', 'wave', {
      starts_at: new Date().toISOString(),
      ends_at: inAnHour(),
      note: 'Wave API migration',
    });
    assert.equal(set.status, 200, set.text);
    const page = await home();
    assert.match(page, /<h2 id="availability-title">Rail availability<\/h2>/);
    // KE airtel_money is down by its traffic (the test above), CI wave for its maintenance.
    assert.match(page, /<td>KE airtel_money<\/td>\s*<td>collections<\/td>\s*<td><strong>down<\/strong><\/td>/);
    assert.match(page, /<td>CI wave<\/td>\s*<td>payouts<\/td>\s*<td><strong>down<\/strong><\/td>/);
    assert.match(page, /<td>Wave API migration<\/td>/);

    const cleared = await request(t, 'DELETE', '/v1/admin/maintenance/CI/wave', { token: t.adminToken });
    assert.equal(cleared.status, 204);
    assert.doesNotMatch(await home(), /CI wave/);
  });
});
