// PgBouncer in transaction mode in front of the test database (Debian's package): migrations from several processes
// at once, then the service itself (`npm start`'s command, DB_PREPARED_STATEMENTS=false) with its workers on a pool
// of 4 server connections: concurrent idempotent creates, the sandbox completing them, a refund, every webhook
// delivered once, and the ledger verified through PgBouncer. Without pgbouncer the file is skipped with the reason,
// unless REQUIRE_BROWSER=1 (CI sets it), when it fails.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../src/db/embedded.js';
import { loadMigrations, migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import type { ScratchDatabase } from './helpers/database.js';
import { createTestDatabase, request, requestRefund, validCollection, waitFor } from './helpers/harness.js';
import { killGroup, spawnGroup, type Child } from './helpers/processes.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { npmStartArgs, PROJECT_ROOT } from './helpers/start-command.js';

const PGBOUNCER_PATH = process.env.PGBOUNCER_PATH ?? '/usr/sbin/pgbouncer';
/** The pool settings PgBouncer in transaction mode needs: no named statements, no session settings at startup. */
const BEHIND_PGBOUNCER = { prepare: false, statementTimeoutMs: 0, idleInTransactionTimeoutMs: 0 };
/** Server connections PgBouncer keeps per database: far fewer than the service's 16 client connections. */
const SERVER_POOL = 4;
const COLLECTIONS = 24;
const WAIT_MS = 30_000;

/** Why this file cannot run here, or undefined when it can. */
function pgbouncerMissing(): string | undefined {
  let reason: string | undefined;
  if (!existsSync(PGBOUNCER_PATH))
    reason = `no PgBouncer at ${PGBOUNCER_PATH} (install it with \`apt-get install -y pgbouncer\`, or set PGBOUNCER_PATH)`;
  // PgBouncer refuses to run as root; as root it is told to switch to the postgres user, which must exist.
  else if (process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0)
    reason = 'running as root and there is no postgres user for PgBouncer to run as';
  if (reason && process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${reason}`);
  return reason;
}

const skip = pgbouncerMissing();

/** The processes this file started; each killed (its whole group) in `after`. */
const children: Child[] = [];

function spawnChild(command: string, args: string[], env: NodeJS.ProcessEnv): Child {
  const started = spawnGroup(command, args, env);
  children.push(started);
  return started;
}

interface Bouncer {
  port: number;
  /** The URL of `database` through PgBouncer. */
  url(database: ScratchDatabase): string;
  output: () => string;
}

/** PgBouncer in transaction mode on a free port, in front of the server `serverUrl` names, on a generated ini. */
async function startPgBouncer(dir: string, serverUrl: string): Promise<Bouncer> {
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  const quote = (s: string): string => `'${s.replace(/'/g, "''")}'`;
  // Clients are trusted (loopback, this test only); PgBouncer logs in to PostgreSQL as the test database's user.
  await writeFile(path.join(dir, 'userlist.txt'), `"${user}" ""\n`);
  const ini = [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || '5432'} user=${user}${password ? ` password=${quote(password)}` : ''}`,
    '',
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${path.join(dir, 'userlist.txt')}`,
    'pool_mode = transaction',
    `default_pool_size = ${SERVER_POOL}`,
    'max_client_conn = 500',
    'ignore_startup_parameters = extra_float_digits',
    ...(process.getuid?.() === 0 ? ['user = postgres'] : []),
    '',
  ].join('\n');
  const file = path.join(dir, 'pgbouncer.ini');
  await writeFile(file, ini);
  const bouncer = spawnChild(PGBOUNCER_PATH, [file], process.env);
  const url = (db: ScratchDatabase): string => {
    const u = new URL(db.url);
    u.hostname = '127.0.0.1';
    u.port = String(port);
    u.password = '';
    return u.toString();
  };
  await waitFor(
    'PgBouncer to accept connections',
    async () => {
      if (bouncer.child.exitCode !== null) throw new Error(`pgbouncer exited: ${bouncer.output()}`);
      const c = new pg.Client({
        connectionString: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/postgres`,
      });
      try {
        await c.connect();
        await c.query('SELECT 1');
        return true;
      } catch {
        return undefined;
      } finally {
        await c.end().catch(() => undefined);
      }
    },
    10_000,
  );
  return { port, url, output: bouncer.output };
}

/** Server sessions PostgreSQL has open on the database (direct, not through PgBouncer). */
async function serverSessions(db: ScratchDatabase): Promise<number> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const { rows } = await c.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
    );
    return rows[0]?.n ?? 0;
  } finally {
    await c.end();
  }
}

describe('PgBouncer in transaction mode', { skip }, () => {
  let dir = '';
  let bouncer: Bouncer;
  const databases: ScratchDatabase[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'payments-pgbouncer-'));
    const first = await createTestDatabase();
    databases.push(first);
    bouncer = await startPgBouncer(dir, first.url);
  });

  after(async () => {
    for (const c of children) killGroup(c.child);
    await Promise.all(children.map((c) => c.exited));
    for (const db of databases) await db.drop().catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('three processes migrating one database at once through PgBouncer apply each migration once and leave no lock behind', async () => {
    const db = databases[0] as ScratchDatabase;
    const pools = [1, 2, 3].map(() => createPool(bouncer.url(db), 2, BEHIND_PGBOUNCER));
    try {
      const results = await Promise.all(pools.map((p) => migrate(p)));
      const all = (await loadMigrations()).map((m) => m.version);
      assert.deepEqual(
        results.flat().sort((a, b) => a - b),
        all,
        'every migration applied by exactly one of them',
      );
      const check = new pg.Client({ connectionString: db.url });
      await check.connect();
      try {
        const applied = await check.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
        assert.equal(applied.rows[0]?.n, all.length);
        const locks = await check.query(
          "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        );
        assert.equal(locks.rowCount, 0, 'no advisory lock outlives its transaction on a pooled server session');
      } finally {
        await check.end();
      }
      assert.deepEqual(await migrate(pools[0] as pg.Pool), [], 'a later run finds nothing to do');
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  describe('the service through PgBouncer', () => {
    let service: Child;
    let base = '';
    let token = '';
    let receiver: Receiver;
    let secret = '';
    let db: ScratchDatabase;
    let env: NodeJS.ProcessEnv = {};

    before(async () => {
      // A fresh database: the service migrates it itself, through PgBouncer.
      db = await createTestDatabase();
      databases.push(db);
      receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
      const port = await freePort();
      const dataDir = path.join(dir, 'data');
      env = { ...process.env };
      delete env.TEST_DATABASE_URL;
      delete env.SECRETS_KEY_PREVIOUS;
      env = {
        ...env,
        DATABASE_URL: bouncer.url(db),
        DB_PREPARED_STATEMENTS: 'false',
        // PgBouncer refuses these as startup parameters: behind it they are set on the role (docs/operations.md).
        DB_STATEMENT_TIMEOUT_MS: '0',
        DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0',
        DB_POOL_SIZE: '6',
        WORKER_DB_POOL_SIZE: '10',
        DATA_DIR: dataDir,
        SECRETS_KEY: randomBytes(32).toString('base64'),
        HOST: '127.0.0.1',
        PORT: String(port),
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        LOG_LEVEL: 'warn',
        SANDBOX_STEP_MS: '50',
        WORKER_INTERVAL_MS: '20',
        WEBHOOK_POLL_MS: '20',
        RATE_LIMIT_PER_SECOND: '100000',
        RATE_LIMIT_BURST: '100000',
      };
      service = spawnChild(process.execPath, npmStartArgs(), env);
      base = `http://127.0.0.1:${port}`;
      await waitFor(
        'the service to be ready',
        async () => {
          if (service.child.exitCode !== null) throw new Error(`the service exited: ${service.output()}`);
          return (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined;
        },
        60_000,
      );
      const credentials = JSON.parse(await readFile(path.join(dataDir, 'credentials.json'), 'utf8'));
      token = credentials.workspaces[0].integrator.token;
      const endpoint = await request({ baseUrl: base }, 'POST', '/v1/webhooks/endpoints', {
        token,
        body: { url: receiver.url },
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      secret = endpoint.body.secret;
    });

    after(async () => {
      await receiver?.close();
    });

    it('creates collections concurrently with idempotency keys, replays answer identically, the sandbox completes them, a refund goes through, every webhook arrives once and the ledger verifies', async () => {
      const t = { baseUrl: base };
      const bodies = Array.from({ length: COLLECTIONS }, () => validCollection());
      const keys = bodies.map(() => `pgb-${randomBytes(8).toString('hex')}`);
      const send = (i: number) =>
        request(t, 'POST', '/v1/collections/KE/rails/mpesa', { token, body: bodies[i], idempotencyKey: keys[i] });
      // Each key twice at once: one collection per key, both answers the same.
      const answers = await Promise.all(bodies.flatMap((_, i) => [send(i), send(i)]));
      const ids: string[] = [];
      for (let i = 0; i < COLLECTIONS; i++) {
        const [a, b] = [answers[2 * i], answers[2 * i + 1]];
        assert.ok(a && b);
        const created = [a, b].find((r) => r.status === 201);
        assert.ok(created, `key ${i}: one of the two created it (${a.status} ${a.text} / ${b.status} ${b.text})`);
        for (const r of [a, b]) {
          // The second either replays the stored answer or is told the first is still in progress.
          if (r.status === 409) assert.equal(r.body.code, 'idempotency_key_in_use', r.text);
          else assert.deepEqual([r.status, r.body], [created.status, created.body], `key ${i}: same answer`);
        }
        ids.push(created.body.collection_id);
      }
      assert.equal(new Set(ids).size, COLLECTIONS, 'one collection per key');
      for (let i = 0; i < COLLECTIONS; i++) {
        const replay = await send(i);
        assert.equal(replay.status, 201, replay.text);
        assert.equal(replay.body.collection_id, ids[i], 'a later replay names the same collection');
      }

      // The workers (through PgBouncer too) take each collection to successful.
      await waitFor(
        `${COLLECTIONS} collections to become successful`,
        async () => {
          for (const id of ids) {
            const res = await request(t, 'GET', `/v1/collections/${id}`, { token });
            assert.equal(res.status, 200, res.text);
            assert.ok(!['failed', 'expired'].includes(res.body.status), `${id}: ${res.body.status}`);
            if (res.body.status !== 'successful') return undefined;
          }
          return true;
        },
        WAIT_MS,
      );

      const refunded = ids[0] as string;
      const refund = await requestRefund(t, token, refunded, 1500);
      assert.equal(refund.status, 201, refund.text);
      await waitFor(
        'the refunded collection',
        async () => {
          const res = await request(t, 'GET', `/v1/collections/${refunded}`, { token });
          return res.body.status === 'refunded' ? true : undefined;
        },
        WAIT_MS,
      );

      // created, pending, processing, successful per collection; the refund's three and collection.refunded.
      const expected = COLLECTIONS * 4 + 4;
      await waitFor(
        `${expected} webhook deliveries`,
        async () => (receiver.requests.length >= expected ? true : undefined),
        WAIT_MS,
      );
      await new Promise((resolve) => setTimeout(resolve, 500)); // a duplicate would arrive now
      assert.equal(receiver.requests.length, expected, 'each event delivered once');
      const seen = new Map<string, string[]>();
      for (const r of receiver.requests) {
        const body = new Webhook(secret).verify(r.body, r.headers) as { type: string; data: { collection_id: string } };
        seen.set(body.data.collection_id, [...(seen.get(body.data.collection_id) ?? []), body.type]);
      }
      assert.equal(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size, expected, 'distinct ids');
      for (const id of ids) {
        const types = (seen.get(id) ?? []).filter((type) => type.startsWith('collection.'));
        for (const type of [
          'collection.created',
          'collection.pending',
          'collection.processing',
          'collection.successful',
        ])
          assert.ok(types.includes(type), `${id}: ${type} delivered (got ${types.join(', ')})`);
      }
      assert.deepEqual(
        (seen.get(refunded) ?? [])
          .filter((type) => type.startsWith('refund.') || type === 'collection.refunded')
          .sort(),
        ['collection.refunded', 'refund.pending', 'refund.requested', 'refund.successful'],
      );

      // All of it on at most SERVER_POOL server sessions: PgBouncer did the pooling.
      assert.ok((await serverSessions(db)) <= SERVER_POOL, 'at most the server pool of PostgreSQL sessions');

      // npm run ledger:verify, through PgBouncer.
      const verify = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/ledger-verify.ts'], {
        cwd: PROJECT_ROOT,
        env,
        encoding: 'utf8',
      });
      assert.equal(verify.status, 0, `${verify.stdout}${verify.stderr}`);
      assert.match(verify.stdout, /the ledger is sound/);
    });

    it('drains and stops cleanly on SIGTERM', async () => {
      service.child.kill('SIGTERM');
      assert.equal(await service.exited, 0, service.output());
      assert.doesNotMatch(service.output(), /prepared statement|"level":50/, 'no database errors were logged');
    });
  });
});
