// The service and a database that goes away under it: a connection killed inside a transaction, a request
// caught by it, a COMMIT cut off after it committed, and a PostgreSQL restarted under load. The process never ends,
// nothing answers 500, and an Idempotency-Key retried afterwards gets the stored outcome or makes the write once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { isDatabaseUnavailable } from '../src/db/errors.js';
import { createPool, withTransaction } from '../src/db/pool.js';
import { DarajaFake } from '../fakes/mpesa-daraja.js';
import * as relayRepo from '../src/modules/webhooks/relay.repository.js';
import { recordEvents } from './helpers/events.js';
import { DARAJA_FAKE_ENTRY, startConnectorApp } from './helpers/connectors.js';
import { privateServer, startService, steadyCreates, type PrivateServer } from './helpers/db-faults.js';
import {
  assertProblem,
  createTestDatabase,
  newKey,
  request,
  startTestApp,
  validCollection,
  waitFor,
  within,
  type TestApp,
} from './helpers/harness.js';

const CREATE = '/v1/collections/KE/rails/mpesa';

/** A connection of the test's own to the database `url` names. */
async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/**
 * Sets `synchronous_standby_names` for the whole server and returns once the postmaster has reloaded it (a new
 * session shows the value): pg_reload_conf() only signals the postmaster, and on a loaded machine a request sent at
 * once could still commit under the old value. The postmaster signals every backend as it reloads, and an idle one
 * applies the new value before it runs its next command.
 */
async function setStandbyNames(serverUrl: string, value: string | null): Promise<void> {
  const settings = await connect(serverUrl);
  try {
    await settings.query(
      value === null
        ? 'ALTER SYSTEM RESET synchronous_standby_names'
        : `ALTER SYSTEM SET synchronous_standby_names = '${value}'`,
    );
    await settings.query('SELECT pg_reload_conf()');
  } finally {
    await settings.end();
  }
  await waitFor(`synchronous_standby_names to be ${value ?? 'reset'}`, async () => {
    const fresh = await connect(serverUrl);
    try {
      const { rows } = await fresh.query<{ v: string }>('SELECT current_setting($1) AS v', [
        'synchronous_standby_names',
      ]);
      return rows[0]?.v === (value ?? '') ? true : undefined;
    } finally {
      await fresh.end();
    }
  });
}

/** The service's backends on `database` that wait as `waitEvent` says (a lock, synchronous replication). */
async function serviceBackendsWaiting(admin: pg.Client, database: string, waitEventType: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
     WHERE datname = $1 AND application_name = 'payments-service' AND wait_event_type = $2`,
    [database, waitEventType],
  );
  return rows.map((r) => r.pid);
}

/**
 * Ends the service's sessions on `database` (those of `pids` only, when given), as a restart or failover does: each
 * gets FATAL 57P01 and its socket closes.
 */
async function endServiceSessions(admin: pg.Client, database: string, pids?: number[]): Promise<void> {
  await admin.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
     WHERE datname = $1 AND application_name = 'payments-service' AND ($2::int[] IS NULL OR pid = ANY($2))`,
    [database, pids ?? null],
  );
}

async function collectionsWithReference(admin: pg.Client, reference: string): Promise<number> {
  const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM collections WHERE reference = $1', [
    reference,
  ]);
  return rows[0]?.n ?? 0;
}

describe('a connection that dies', () => {
  test('inside a transaction fails that transaction with a database error; the process and the pool carry on', async () => {
    const database = await createTestDatabase();
    const pool = createPool(database.url, 2);
    const admin = await connect(database.url);
    try {
      let pid = 0;
      let resume: () => void = () => undefined;
      const killed = new Promise<void>((resolve) => (resume = resolve));
      // The connection dies between two statements, while the client is checked out: the moment at which pg-pool
      // has taken its own error listener off the client. With none of ours, the socket's close ends this process.
      const running = withTransaction(pool, async (tx) => {
        pid = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
        await killed;
        await tx.query('SELECT 1');
      });
      await waitFor('the transaction to start', async () => (pid > 0 ? true : undefined));
      // What a server restart or a failover does to each session: FATAL 57P01, then the socket closes.
      const terminated = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [pid]);
      assert.equal(terminated.rows[0]?.ok, true);
      await waitFor('the backend to be gone', async () => {
        const { rows } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
        return rows.length === 0 ? true : undefined;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      resume();
      const err = await running.then(
        () => assert.fail('the transaction should have failed'),
        (e: unknown) => e,
      );
      assert.ok(isDatabaseUnavailable(err), `not taken for a database fault: ${String(err)}`);
      // The dead client was dropped, not handed out again: the next transactions get live connections.
      for (let i = 0; i < 3; i++) {
        const live = await withTransaction(pool, async (tx) => (await tx.query('SELECT 1 AS one')).rows[0]);
        assert.deepEqual(live, { one: 1 });
      }
    } finally {
      await admin.end();
      await pool.end();
      await database.drop();
    }
  });
});

describe('a request caught by a lost connection', () => {
  let t: TestApp;
  let admin: pg.Client;
  before(async () => {
    t = await startTestApp();
    admin = await connect(t.config.databaseUrl as string);
  });
  after(async () => {
    await admin.end();
    await t.close();
  });

  test('gets 503 database_unavailable with Retry-After; the same key then makes the collection once', async () => {
    const key = newKey();
    const body = validCollection();
    // The create waits on a lock the test holds, inside its transaction, when its connection is killed.
    const locker = await connect(t.config.databaseUrl as string);
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE collections IN EXCLUSIVE MODE');
    const pending = request(t, 'POST', CREATE, { token: t.demoToken, body, idempotencyKey: key });
    const waiting = await waitFor('the create to wait on the lock', async () => {
      const pids = await serviceBackendsWaiting(admin, t.databaseName, 'Lock');
      return pids.length > 0 ? pids : undefined;
    });
    await endServiceSessions(admin, t.databaseName, waiting);
    const cut = await pending;
    await locker.query('ROLLBACK');
    await locker.end();
    assertProblem(cut, 503, 'database_unavailable');
    assert.equal(cut.headers.get('retry-after'), '2');
    assert.equal(await collectionsWithReference(admin, body.reference), 0, 'nothing was committed');

    const retried = await request(t, 'POST', CREATE, { token: t.demoToken, body, idempotencyKey: key });
    assert.equal(retried.status, 201, retried.text);
    assert.equal(retried.headers.get('idempotent-replayed'), null, 'made now, not replayed');
    const replay = await request(t, 'POST', CREATE, { token: t.demoToken, body, idempotencyKey: key });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.collection_id, retried.body.collection_id);
    assert.equal(await collectionsWithReference(admin, body.reference), 1);
  });

  test('a write on a server that takes no writes (a demoted primary) gets 503 database_unavailable', async () => {
    // New sessions on the database are read-only, as on a standby; the pool's live sessions are ended.
    await admin.query(`ALTER DATABASE ${t.databaseName} SET default_transaction_read_only = on`);
    await endServiceSessions(admin, t.databaseName);
    const body = validCollection();
    const key = newKey();
    try {
      // The first request may meet a connection ended under it, the next ones a read-only session: both are 503.
      for (let i = 0; i < 3; i++) {
        const write = await request(t, 'POST', CREATE, { token: t.demoToken, body, idempotencyKey: key });
        assertProblem(write, 503, 'database_unavailable');
      }
    } finally {
      await admin.query(`ALTER DATABASE ${t.databaseName} RESET default_transaction_read_only`);
      await endServiceSessions(admin, t.databaseName);
    }
    // A pooled connection ended a moment ago may still be handed out once (503 again); the retries then succeed.
    const retried = await waitFor('the write to succeed', async () => {
      const res = await request(t, 'POST', CREATE, { token: t.demoToken, body, idempotencyKey: key });
      if (res.status === 503) return undefined;
      return res;
    });
    assert.equal(retried.status, 201, retried.text);
    assert.equal(await collectionsWithReference(admin, body.reference), 1);
  });
});

describe('on a PostgreSQL of the test its own', () => {
  let server: PrivateServer;
  before(async () => {
    server = await privateServer('faults');
  });
  after(async () => {
    await server.stop();
  });

  test('a COMMIT cut off after it committed: 503, then the same key answers the stored outcome', async () => {
    const t = await startTestApp({}, { server: server.url });
    const admin = await connect(t.config.databaseUrl as string);
    try {
      const key = newKey();
      const body = validCollection();
      // A synchronous standby that never answers: every COMMIT is written locally, then waits for it.
      await setStandbyNames(server.url, 'nobody');
      const pending = request(t, 'POST', CREATE, { token: t.demoToken, body, idempotencyKey: key });
      const waiting = await waitFor('the COMMIT to wait for the standby', async () => {
        const pids = await serviceBackendsWaiting(admin, t.databaseName, 'IPC');
        return pids.length > 0 ? pids : undefined;
      });
      // A failover now: the session ends with its commit made but never acknowledged to the service.
      await endServiceSessions(admin, t.databaseName, waiting);
      const cut = await pending;
      await setStandbyNames(server.url, null);
      assertProblem(cut, 503, 'database_unavailable');
      assert.equal(await collectionsWithReference(admin, body.reference), 1, 'the commit was made');

      const retried = await request(t, 'POST', CREATE, { token: t.demoToken, body, idempotencyKey: key });
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.headers.get('idempotent-replayed'), 'true', 'answered from the stored outcome');
      assert.equal(await collectionsWithReference(admin, body.reference), 1, 'and not made twice');
    } finally {
      await setStandbyNames(server.url, null).catch(() => undefined);
      await admin.end();
      await t.close();
    }
  });

  test("a webhook claim's lease commits without waiting for the standby; the next write on its connection waits again", async () => {
    const t = await startTestApp({}, { server: server.url });
    const admin = await connect(t.config.databaseUrl as string);
    // One connection: the claims and the write after them share it, so a setting that outlived its statement would show.
    const pool = createPool(t.config.databaseUrl as string, 1);
    try {
      const endpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
        token: t.demoToken,
        body: { url: 'https://hooks.example/payments', enabled_events: ['payout.created'] },
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      const endpointId = endpoint.body.id as string;
      await recordEvents(t.db, t.demoWorkspaceId, 'payout.created', 2);
      const { rows: events } = await admin.query<{ id: string }>(
        "SELECT id FROM events WHERE workspace_id = $1 AND type = 'payout.created' ORDER BY id",
        [t.demoWorkspaceId],
      );
      const ids = events.map(() => randomUUID());
      await relayRepo.insertDeliveries(
        pool,
        {
          ids,
          workspaces: events.map(() => t.demoWorkspaceId),
          events: events.map((e) => e.id),
          endpoints: events.map(() => endpointId),
        },
        5,
        new Date(Date.now() - 1000),
      );
      const { rows: pidRows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const pid = pidRows[0]!.pid;

      // A synchronous standby that never answers: a synchronous COMMIT would wait for it for ever.
      await setStandbyNames(server.url, 'nobody');
      const lease = { leaseMs: 60_000, token: randomUUID() };
      const own = await within(
        'the claim for the endpoint to commit without waiting for the standby',
        relayRepo.claimForEndpoint(pool, { endpointId, slots: 1, ...lease }),
        10_000,
      );
      const across = await within(
        'the claim across endpoints to commit without waiting for the standby',
        relayRepo.claimAcrossEndpoints(pool, { busy: {}, share: 8, slots: 8, excluded: [], ...lease }),
        10_000,
      );
      assert.deepEqual([...own, ...across].map((d) => d.id).sort(), [...ids].sort());
      // Committed: another session sees both leases.
      const { rows: leased } = await admin.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhook_deliveries WHERE lease_token = $1 AND attempts = 1',
        [lease.token],
      );
      assert.equal(leased[0]!.n, 2);

      // The setting ended with each claim's own transaction: the next write on that connection waits for the standby.
      const handedBack = relayRepo.handBack(pool, [...own, ...across]);
      await waitFor('the hand-back to wait for the standby', async () => {
        const { rows } = await admin.query<{ w: string | null }>(
          'SELECT wait_event_type AS w FROM pg_stat_activity WHERE pid = $1',
          [pid],
        );
        return rows[0]?.w === 'IPC' ? true : undefined;
      });
      await setStandbyNames(server.url, null);
      await handedBack;
    } finally {
      await setStandbyNames(server.url, null).catch(() => undefined);
      await pool.end();
      await admin.end();
      await t.close();
    }
  });

  test("an operator's answer that comes back while the database is down is written once it is back: one prompt", async () => {
    // The payer never acts within the test: only the initiation and its answer matter here.
    const fake = new DarajaFake({ actAfterMs: 60_000 });
    const app = await startConnectorApp(
      fake,
      DARAJA_FAKE_ENTRY,
      { OPERATOR_TIMEOUT_MS: '5000' },
      { server: server.url },
    );
    const admin = await connect(app.t.config.databaseUrl as string);
    try {
      const phone = '+254722000777';
      const pushes = (): number =>
        fake
          .requests('POST', '/mpesa/stkpush/v1/processrequest')
          .filter((r) => (r.json as any)?.PhoneNumber === phone.slice(1)).length;
      // Daraja takes 2.5 s to answer this push; the database goes down while it does.
      await fetch(`${fake.url}/__fake/control`, {
        method: 'POST',
        body: JSON.stringify({ fault: { path: '/stkpush', delayMs: 2500 } }),
      });
      const created = await request(app.t, 'POST', CREATE, {
        token: app.t.demoToken,
        body: validCollection({ customer: { phone_number: phone } }),
        idempotencyKey: newKey(),
      });
      assert.equal(created.status, 201, created.text);
      await waitFor('the push to reach Daraja', async () => (pushes() === 1 ? true : undefined));
      await admin.end();
      await server.down();
      // Daraja answers (CheckoutRequestID) while nothing can be written; the sender holds the answer.
      await new Promise((resolve) => setTimeout(resolve, 3500));
      await server.up();
      const recorded = await waitFor(
        'the answer to be written',
        async () => {
          const c = await connect(app.t.config.databaseUrl as string).catch(() => undefined);
          if (!c) return undefined;
          try {
            const { rows } = await c.query<{ status: string; provider_reference: string | null }>(
              'SELECT status, provider_reference FROM collections WHERE id = $1',
              [created.body.collection_id],
            );
            return rows[0]?.status === 'pending' ? rows[0] : undefined;
          } finally {
            await c.end();
          }
        },
        10_000,
      );
      // The reference is the one Daraja gave that push (not a second push's): the sweep did not send it again.
      assert.match(recorded.provider_reference ?? '', new RegExp(`^ws_CO_\\d{17}${phone.slice(4)}$`));
      assert.equal(pushes(), 1, 'the payer was prompted once');
    } finally {
      await app.close();
    }
  });

  test('/readyz answers 503 database_unavailable while the server is down, and 200 once it is back', async () => {
    const t = await startTestApp({}, { server: server.url });
    try {
      assert.equal((await request(t, 'GET', '/readyz')).status, 200);
      await server.down();
      try {
        const down = await request(t, 'GET', '/readyz');
        assertProblem(down, 503, 'database_unavailable');
        assert.equal(down.headers.get('retry-after'), '2');
        const read = await request(t, 'GET', '/v1/collections', { token: t.demoToken });
        assertProblem(read, 503, 'database_unavailable');
      } finally {
        await server.up();
      }
      const back = await waitFor('/readyz to answer 200', async () => {
        const res = await request(t, 'GET', '/readyz');
        return res.status === 200 ? res : undefined;
      });
      assert.equal(back.body.status, 'ready');
    } finally {
      await t.close();
    }
  });

  test('a restart under steady creates: no 500, nothing acknowledged lost, one collection per key, service recovers', async (c) => {
    const t = await startTestApp({}, { server: server.url, workers: true });
    try {
      const load = steadyCreates(t.baseUrl, t.demoToken, { clients: 4 });
      await load.until(20);
      const restartedAt = Date.now();
      await server.restart();
      await load.untilSuccessAfter(restartedAt, 30_000);
      await load.until(load.acknowledged().length + 20);
      const result = await load.stop();
      c.diagnostic(
        `restart: ${result.acknowledged.length} created, ${result.statuses[503] ?? 0} answered 503, outage ${load.outageAfter(restartedAt)} ms`,
      );
      assert.deepEqual(
        Object.keys(result.statuses).filter((s) => s !== '201' && s !== '503'),
        [],
        `only 201 and 503 answers: ${JSON.stringify(result.statuses)}`,
      );
      assert.ok((result.statuses[503] ?? 0) > 0, 'the restart was felt (some requests got 503)');
      await load.assertNothingLost(t.config.databaseUrl as string);
    } finally {
      await t.close();
    }
  });
});

describe('npm start while its database is not up yet', () => {
  let server: PrivateServer;
  before(async () => {
    server = await privateServer('start');
  });
  after(async () => {
    await server.stop();
  });

  test('waits, trying again with a growing pause and saying so, and serves once the database is up', async () => {
    await server.down();
    // The database comes up once the service has tried three times (however long a loaded machine takes to get there).
    const service = await startService(
      { DATABASE_URL: server.url, DB_START_TIMEOUT_MS: '60000' },
      { pattern: /database not ready \(try \d+\)/, count: 3, then: () => server.up() },
    );
    try {
      const tries = [...service.output().matchAll(/database not ready \(try (\d+)\).*trying again in (\d+) ms/g)];
      assert.ok(tries.length >= 3, `each try is logged:\n${service.output()}`);
      const pauses = tries.map((m) => Number(m[2]));
      assert.ok(pauses[1]! > pauses[0]!, `the pause grows: ${pauses.join(', ')}`);
      const created = await request(service, 'POST', CREATE, {
        token: service.token,
        body: validCollection(),
        idempotencyKey: newKey(),
      });
      assert.equal(created.status, 201, created.text);
    } finally {
      await service.stop();
    }
  });

  test('gives up after DB_START_TIMEOUT_MS, exiting with a clear message', async () => {
    await server.down();
    try {
      const started = Date.now();
      const attempt = await startService({ DATABASE_URL: server.url, DB_START_TIMEOUT_MS: '1500' }).then(
        () => assert.fail('the start should have given up'),
        (err: unknown) => err as Error,
      );
      assert.match(attempt.message, /exited while starting/);
      assert.match(attempt.message, /cannot reach the database after \d+ tries over 2 s \(DB_START_TIMEOUT_MS\)/);
      assert.ok(Date.now() - started < 30_000);
    } finally {
      await server.up();
    }
  });
});

describe('npm start on its embedded PostgreSQL', () => {
  test('the postmaster killed with kill -9: the service starts it again and serves, in the same process', async (c) => {
    const service = await startService();
    try {
      const clusterDir = service.clusterDir;
      const pidOf = async (): Promise<number> =>
        Number((await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      const first = await pidOf();
      const load = steadyCreates(service.baseUrl, service.token, { clients: 3 });
      await load.until(15);
      const killedAt = Date.now();
      process.kill(first, 'SIGKILL');
      await load.untilSuccessAfter(killedAt, 60_000);
      const result = await load.stop();
      c.diagnostic(
        `embedded kill -9: outage ${load.outageAfter(killedAt)} ms, ${result.acknowledged.length} created, statuses ${JSON.stringify(result.statuses)}`,
      );
      assert.notEqual(await pidOf(), first, 'a new postmaster runs');
      assert.equal(service.exitCode(), null, `the service process is still running:\n${service.output()}`);
      assert.match(service.output(), /embedded PostgreSQL server exited/);
      assert.match(service.output(), /embedded PostgreSQL server is back/);
      assert.deepEqual(
        Object.keys(result.statuses).filter((s) => s !== '201' && s !== '503'),
        [],
        `only 201 and 503 answers: ${JSON.stringify(result.statuses)}`,
      );
      await load.assertNothingLost(service.databaseUrl());
    } finally {
      await service.stop();
    }
  });
});
