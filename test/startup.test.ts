// `npm start` as a newcomer runs it: no DATABASE_URL, the embedded PostgreSQL in DATA_DIR, bootstrap, drain on SIGTERM.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import { npmStartArgs } from './helpers/start-command.js';
import { freePort } from '../src/db/embedded.js';
import { keyId } from '../src/platform/secret-box.js';

// Under the repository (not a 0700 temp folder) so the postgres user can reach it when tests run as root.
const dataDir = path.resolve('.tmp', `startup-${randomBytes(4).toString('hex')}`);

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.DATABASE_URL;
  delete env.TEST_DATABASE_URL;
  delete env.SECRETS_KEY;
  delete env.SECRETS_KEY_PREVIOUS;
  return env;
}

interface Running {
  child: ChildProcess;
  base: string;
  output: () => string;
}

async function start(dir = dataDir, env: Record<string, string> = {}): Promise<Running> {
  const port = await freePort();
  const child = spawn(process.execPath, npmStartArgs(), {
    env: cleanEnv({ DATA_DIR: dir, PORT: String(port), EMBEDDED_PG_PORT: '0', LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited early: ${out}`);
    try {
      const res = await fetch(`${base}/readyz`);
      if (res.status === 200) return { child, base, output: () => out };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`service did not become ready: ${out}`);
}

const fallbackClusters = new Set<string>();

/** Where the service put the cluster: DATA_DIR/postgres, or the folder it logged when the postgres user could not reach DATA_DIR. */
function clusterOf(running: Running, dir = dataDir): string {
  const folder = /keeping the database cluster for it in ([^"\s]+)/.exec(running.output())?.[1];
  if (folder) fallbackClusters.add(folder);
  return folder ?? path.join(dir, 'postgres');
}

async function stop(running: Running): Promise<number | null> {
  running.child.kill('SIGTERM');
  return new Promise((resolve) => running.child.once('exit', (code) => resolve(code)));
}

before(async () => {
  await mkdir(dataDir, { recursive: true });
});
after(async () => {
  await rm(dataDir, { recursive: true, force: true });
  for (const folder of fallbackClusters) {
    await rm(folder, { recursive: true, force: true });
    await rm(`${folder}.password`, { force: true });
  }
});

describe('npm start on the embedded database', () => {
  let collectionId = '';
  let credentialsText = '';

  it('first start creates the cluster in DATA_DIR, bootstraps credentials.json (0600) and serves', async () => {
    const running = await start();
    try {
      assert.ok(
        existsSync(path.join(clusterOf(running), 'PG_VERSION')),
        'the cluster is in DATA_DIR/postgres (or the logged fallback)',
      );
      // WAL in 1 MB segments (src/db/embedded.ts says why).
      const segments = readdirSync(path.join(clusterOf(running), 'pg_wal')).filter((f) => /^[0-9A-F]{24}$/.test(f));
      assert.ok(segments.length > 0);
      for (const f of segments) assert.equal(statSync(path.join(clusterOf(running), 'pg_wal', f)).size, 1024 * 1024, f);
      const file = path.join(dataDir, 'credentials.json');
      assert.equal(statSync(file).mode & 0o777, 0o600);
      credentialsText = readFileSync(file, 'utf8');
      const creds = JSON.parse(credentialsText);
      assert.match(running.output(), /credentials\.json/);
      // The secrets key: created in DATA_DIR (0600) without SECRETS_KEY; the log names it by its id, never its value.
      const keyFile = path.join(dataDir, 'secrets.key');
      assert.equal(statSync(keyFile).mode & 0o777, 0o600);
      const key = readFileSync(keyFile, 'utf8').trim();
      assert.match(
        running.output(),
        new RegExp(
          `secrets at rest are sealed under key ${keyId(Buffer.from(key, 'base64'))} from \\S+secrets\\.key \\(created now\\)`,
        ),
      );
      assert.ok(!running.output().includes(key), 'the key is never logged');
      const token: string = creds.workspaces[0].integrator.token;
      const admin = await fetch(`${running.base}/v1/admin/workspaces`, {
        headers: { authorization: `Bearer ${creds.admin.token}` },
      });
      assert.equal(admin.status, 200);
      const created = await fetch(`${running.base}/v1/collections/KE/rails/mpesa`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'idempotency-key': 'startup-1',
        },
        body: JSON.stringify({
          amount: 1500,
          currency: 'KES',
          reference: 'boot',
          customer: { phone_number: '+254712345678' },
        }),
      });
      assert.equal(created.status, 201);
      collectionId = ((await created.json()) as { collection_id: string }).collection_id;
    } finally {
      const code = await stop(running);
      assert.equal(code, 0, running.output());
    }
    assert.match(running.output(), /stopped cleanly/);
    assert.ok(
      !existsSync(path.join(clusterOf(running), 'postmaster.pid')),
      'the embedded server was shut down with the service',
    );
  });

  it('a second start reuses the data and leaves credentials.json alone', async () => {
    const running = await start();
    try {
      assert.equal(readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'), credentialsText);
      const token: string = JSON.parse(credentialsText).workspaces[0].integrator.token;
      const res = await fetch(`${running.base}/v1/collections/${collectionId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.status, 200);
      assert.doesNotMatch(running.output(), /first start/);
      assert.match(running.output(), /secrets at rest are sealed under key [0-9a-f]{16} from /);
      assert.doesNotMatch(running.output(), /created now/);

      // `npm run migrate` beside a running service uses the server that service runs, and leaves it running.
      const migrate = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/migrate.ts'], {
        env: cleanEnv({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: '0' }),
        encoding: 'utf8',
      });
      assert.equal(migrate.status, 0, migrate.stderr);
      assert.match(migrate.stdout, /up to date/);
      assert.equal((await fetch(`${running.base}/readyz`)).status, 200);
      const again = await fetch(`${running.base}/v1/collections/${collectionId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(again.status, 200);
    } finally {
      assert.equal(await stop(running), 0);
    }
  });

  it('the migrate command reports an up-to-date database', () => {
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/migrate.ts'], {
      env: cleanEnv({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: '0' }),
      encoding: 'utf8',
    });
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /up to date/);
  });

  it('as root, a DATA_DIR the postgres user cannot enter still works: the cluster goes to a reachable folder, and is reused', async (t) => {
    if (process.getuid?.() !== 0) return t.skip('only root hands the server to the postgres user');
    const closed = path.join(dataDir, 'closed');
    await mkdir(closed, { mode: 0o700 });
    const inner = path.join(closed, 'data');
    const first = await start(inner);
    let token: string | undefined;
    try {
      clusterOf(first, inner);
      assert.match(
        first.output(),
        /cannot reach .*closed\/data; keeping the database cluster for it in \/var\/tmp\/payments-embedded-pg\/data-/,
      );
      token = JSON.parse(readFileSync(path.join(inner, 'credentials.json'), 'utf8')).workspaces[0].integrator.token;
    } finally {
      assert.equal(await stop(first), 0);
    }
    const second = await start(inner);
    try {
      assert.ok(token);
      const res = await fetch(`${second.base}/v1/collections`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
    } finally {
      assert.equal(await stop(second), 0);
    }
  });

  it('SIGTERM with a client stalled mid-body: its connection is closed after SHUTDOWN_DRAIN_MS and the stop is clean (exit 0)', async () => {
    const running = await start(dataDir, { SHUTDOWN_DRAIN_MS: '1000', REQUEST_TIMEOUT_MS: '600000' });
    const token: string = JSON.parse(credentialsText).workspaces[0].integrator.token;
    const { port } = new URL(running.base);
    const socket = net.connect(Number(port), '127.0.0.1');
    let closedAt = 0;
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve(void (closedAt = Date.now()))));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.on('connect', resolve));
    socket.write(
      'POST /v1/collections/KE/rails/mpesa HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${token}\r\nIdempotency-Key: stalled-1\r\nContent-Length: 200\r\n\r\n{"amount": 15`,
    );
    await new Promise((r) => setTimeout(r, 300));
    const stopped = Date.now();
    const code = await stop(running);
    const took = Date.now() - stopped;
    await closed;
    assert.equal(code, 0, running.output());
    assert.match(running.output(), /requests still open after 1000 ms/);
    assert.ok(closedAt - stopped >= 900, `the stalled connection was closed ${closedAt - stopped} ms after SIGTERM`);
    // The drain time, then the workers and the embedded database stop: well under the 30 s of before.
    assert.ok(took < 15_000, `stopping took ${took} ms`);
    process.stdout.write(`# SIGTERM with a stalled client: exited 0 after ${took} ms (SHUTDOWN_DRAIN_MS 1000)\n`);
  });

  it('a bad setting stops the start with a clear message', () => {
    const res = spawnSync(process.execPath, npmStartArgs(), {
      env: cleanEnv({ DATA_DIR: dataDir, PAYMENTS_ENV: 'staging' }),
      encoding: 'utf8',
    });
    assert.equal(res.status, 1);
    assert.match(res.stderr, /PAYMENTS_ENV must be 'sandbox' or 'production'/);
  });
});
