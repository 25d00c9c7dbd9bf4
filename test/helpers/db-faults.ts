// For the database-fault tests: a PostgreSQL of the test's own (restartable, unlike the suite's shared server), a
// steady load of collection creates that retries each key on 503 as an integrator would, and `npm start` on its
// embedded database as a process of its own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, startEmbedded, type EmbeddedServer } from '../../src/db/embedded.js';
import { FAST_LIFECYCLE } from './harness.js';
import { killGroup, spawnGroup, type Child } from './processes.js';
import { npmStartArgs } from './start-command.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface PrivateServer {
  /** A URL of the server's `postgres` database (test databases are made beside it). */
  readonly url: string;
  /** Where its cluster lives (its log files are in log/ there). */
  readonly clusterDir: string;
  /** A plain restart: a fast shutdown (sessions ended), then a start on the same port. */
  restart(): Promise<void>;
  /** The two halves of a restart, for a test that looks in between. */
  down(): Promise<void>;
  up(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A PostgreSQL server for one test file: the embedded binaries, a cluster in a temporary folder, a free port. `log`
 * hears what the server says on its own output (see `EmbeddedOptions`).
 */
export async function privateServer(
  name: string,
  log: (line: string) => void = () => undefined,
): Promise<PrivateServer> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `pg-${name}-`));
  const options = { dataDir, port: 0, database: 'postgres', log };
  let server: EmbeddedServer = await startEmbedded(options);
  const port = server.port;
  const down = (): Promise<void> => server.stop();
  const up = async (): Promise<void> => {
    server = await startEmbedded({ ...options, port });
    if (server.port !== port) throw new Error(`the server came back on port ${server.port}, not ${port}`);
  };
  return {
    url: server.url,
    clusterDir: server.clusterDir,
    async restart() {
      await down();
      await up();
    },
    down,
    up,
    async stop() {
      await server.stop();
      await rm(server.clusterDir, { recursive: true, force: true });
      await rm(`${server.clusterDir}.password`, { force: true });
      await rm(`${server.clusterDir}.owner`, { force: true });
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

interface Acknowledged {
  key: string;
  reference: string;
  id: string;
  /** When the 201 arrived, and when its last try was sent. */
  at: number;
  sentAt: number;
}

export interface LoadResult {
  acknowledged: Acknowledged[];
  /** Every answer by status (`network` for a request that got none). */
  statuses: Record<string, number>;
}

/**
 * `clients` loops, each creating collections one after another; a 503 (or no answer) is retried with the same key
 * and body after its Retry-After, as the docs tell integrators to. Each key is retried until it gets 201, for at most
 * 60 s; any other answer is counted and the loop moves on.
 */
export function steadyCreates(baseUrl: string, token: string, options: { clients: number }) {
  const acknowledged: Acknowledged[] = [];
  const statuses: Record<string, number> = {};
  let stopping = false;
  const count = (status: string): void => {
    statuses[status] = (statuses[status] ?? 0) + 1;
  };
  const createOne = async (): Promise<void> => {
    const key = `fault-${randomBytes(8).toString('hex')}`;
    const reference = `fault-${randomBytes(6).toString('hex')}`;
    const body = JSON.stringify({
      amount: 1500,
      currency: 'KES',
      reference,
      customer: { phone_number: '+254712345678' },
    });
    const giveUpAt = Date.now() + 60_000;
    while (Date.now() < giveUpAt) {
      const sentAt = Date.now();
      let wait = 250;
      try {
        const res = await fetch(`${baseUrl}/v1/collections/KE/rails/mpesa`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
          body,
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        count(String(res.status));
        if (res.status === 201) {
          acknowledged.push({
            key,
            reference,
            id: (JSON.parse(text) as { collection_id: string }).collection_id,
            at: Date.now(),
            sentAt,
          });
          return;
        }
        if (res.status !== 503) return;
        wait = Math.min(2000, Number(res.headers.get('retry-after') ?? '1') * 1000);
      } catch {
        count('network');
      }
      await sleep(wait);
    }
    throw new Error(`key ${key} got no 201 within 60 s`);
  };
  const loops = Array.from({ length: options.clients }, async () => {
    while (!stopping) await createOne();
  });
  const failed = Promise.all(loops).then(
    () => undefined,
    (err: unknown) => err,
  );
  const waitUntil = async (what: string, done: () => boolean, timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(statuses)}`);
      await sleep(20);
    }
  };
  const firstAfter = (t: number): Acknowledged | undefined => acknowledged.find((a) => a.sentAt >= t);
  return {
    acknowledged: (): Acknowledged[] => acknowledged,
    /** Until `n` creates in all were acknowledged. */
    until: (n: number, timeoutMs = 60_000) => waitUntil(`${n} creates`, () => acknowledged.length >= n, timeoutMs),
    /** Until a create sent after `t` was acknowledged. */
    untilSuccessAfter: (t: number, timeoutMs: number) =>
      waitUntil('a create after the fault', () => firstAfter(t) !== undefined, timeoutMs),
    /** From `t` to the first 201 of a create sent after it, in ms. */
    outageAfter: (t: number): number => (firstAfter(t)?.at ?? Number.NaN) - t,
    /** Stops the loops once each has its current key acknowledged. */
    async stop(): Promise<LoadResult> {
      stopping = true;
      const err = await failed;
      if (err) throw err;
      return { acknowledged, statuses };
    },
    /** Every acknowledged collection is in the database, once per key (each key's reference is its own). */
    async assertNothingLost(databaseUrl: string): Promise<void> {
      const client = new pg.Client({ connectionString: databaseUrl });
      client.on('error', () => undefined);
      await client.connect();
      try {
        const { rows } = await client.query<{ id: string; reference: string }>(
          'SELECT id, reference FROM collections WHERE reference = ANY($1)',
          [acknowledged.map((a) => a.reference)],
        );
        const found = new Map<string, string[]>();
        for (const r of rows) found.set(r.reference, [...(found.get(r.reference) ?? []), r.id]);
        const lost = acknowledged.filter((a) => !found.get(a.reference)?.includes(a.id));
        assert.deepEqual(lost, [], 'acknowledged collections missing');
        const twice = [...found].filter(([, ids]) => ids.length > 1);
        assert.deepEqual(twice, [], 'a key made more than one collection');
      } finally {
        await client.end();
      }
    },
  };
}

export interface ServiceProcess {
  baseUrl: string;
  dataDir: string;
  /** The embedded cluster's folder (its postmaster.pid names the server's process); '' with DATABASE_URL. */
  clusterDir: string;
  token: string;
  exitCode(): number | null;
  output(): string;
  /** The embedded database's URL, read from its cluster (port and password). */
  databaseUrl(): string;
  stop(): Promise<void>;
}

/** `npm start`'s command in a process of its own, in a temporary DATA_DIR: on its embedded PostgreSQL, or `env`'s DATABASE_URL. */
/** Something to do while the service starts, once its output has matched `pattern` `count` times. */
export interface WhileStarting {
  pattern: RegExp;
  count: number;
  then: () => Promise<void>;
}

export async function startService(
  env: Record<string, string> = {},
  whileStarting?: WhileStarting,
): Promise<ServiceProcess> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'payments-faults-'));
  const port = await freePort();
  const child: Child = spawnGroup(process.execPath, npmStartArgs(), {
    ...process.env,
    DATABASE_URL: '',
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    EMBEDDED_PG_PORT: '0',
    LOG_LEVEL: 'info',
    ...FAST_LIFECYCLE,
    ...env,
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  let pending = whileStarting;
  for (;;) {
    if (child.child.exitCode !== null) throw new Error(`the service exited while starting:\n${child.output()}`);
    if (pending && [...child.output().matchAll(new RegExp(pending.pattern, 'g'))].length >= pending.count) {
      await pending.then();
      pending = undefined;
    }
    const ready = await fetch(`${baseUrl}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      killGroup(child.child);
      throw new Error(`the service was not ready within 120 s:\n${child.output()}`);
    }
    await sleep(100);
  }
  const credentials = JSON.parse(await readFile(path.join(dataDir, 'credentials.json'), 'utf8')) as {
    workspaces: { integrator: { token: string } }[];
  };
  // As root, the cluster may live outside DATA_DIR (src/db/embedded.ts): the start's log says where, and on which port.
  const serving = /embedded PostgreSQL is serving (\S+) on 127\.0\.0\.1:(\d+)/.exec(child.output());
  const clusterDir = serving?.[1] ?? '';
  const password = serving ? (await readFile(`${clusterDir}.password`, 'utf8')).trim() : '';
  const databaseUrl = (): string => {
    if (env.DATABASE_URL) return env.DATABASE_URL;
    if (!serving) throw new Error(`the service did not say where its database is:\n${child.output()}`);
    return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${serving[2]}/payments`;
  };
  return {
    baseUrl,
    dataDir,
    clusterDir,
    token: credentials.workspaces[0]?.integrator.token ?? '',
    exitCode: () => child.child.exitCode,
    output: child.output,
    databaseUrl,
    async stop() {
      if (child.child.exitCode === null) {
        child.child.kill('SIGTERM');
        const timer = setTimeout(() => killGroup(child.child), 30_000);
        await child.exited;
        clearTimeout(timer);
      }
      await rm(dataDir, { recursive: true, force: true });
      if (clusterDir === '') return;
      await rm(clusterDir, { recursive: true, force: true });
      await rm(`${clusterDir}.password`, { force: true });
      await rm(`${clusterDir}.owner`, { force: true });
    },
  };
}
