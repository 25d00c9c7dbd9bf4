// `npm run bench:webhooks`: webhook deliveries per second to a loopback receiver, and the time from a
// recorded change to its delivery. Runs the real relay (as `npm start` does) on a fresh database: on
// DATABASE_URL's server when it is set, then on a throwaway embedded PostgreSQL. Loopback only; stops by itself.
import { randomBytes } from 'node:crypto';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { bootstrap } from '../src/bootstrap.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/open.js';
import { createService } from '../src/service.js';
import { startWorkers } from '../src/workers/index.js';

const BURST = Number(process.env.BENCH_EVENTS ?? 5000);
const PACED = 300;
const PACE_MS = 10;

interface Row {
  database: string;
  endpoint_concurrency: number;
  burst_events: number;
  deliveries_per_second: number;
  change_to_delivery_p50_ms: number;
  change_to_delivery_p99_ms: number;
}

async function freshDatabase(base: string | undefined): Promise<{ env: Record<string, string>; label: string; done: () => Promise<void> }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'payments-bench-'));
  if (!base) {
    return { env: { DATA_DIR: dataDir, EMBEDDED_PG_PORT: '0' }, label: 'embedded', done: () => rm(dataDir, { recursive: true, force: true }) };
  }
  const name = `bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: url.toString() },
    label: 'PostgreSQL (DATABASE_URL)',
    done: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function run(base: string | undefined, endpointConcurrency: number): Promise<Row> {
  const target = await freshDatabase(base);
  const config = loadConfig({ ...target.env, PORT: '0', LOG_LEVEL: 'silent', WEBHOOK_ENDPOINT_CONCURRENCY: String(endpointConcurrency) });
  const database = await openDatabase(config, () => undefined);
  const { app, services } = await createService(config, database.pool, { logger: false });
  const boot = await bootstrap(database.pool, config, services.credentials);
  if (!boot) throw new Error('bootstrap did not run on a fresh database');
  const workers = startWorkers(services, config, database.pool, pino({ level: 'silent' }));

  const lags: number[] = [];
  let received = 0;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received++;
      lags.push(Date.now() - Date.parse((JSON.parse(Buffer.concat(chunks).toString()) as { timestamp: string }).timestamp));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as { port: number }).port;
  try {
    const created = await app.inject({
      method: 'POST',
      url: '/v1/webhooks/endpoints',
      headers: { authorization: `Bearer ${boot.demoToken}` },
      payload: { url: `http://127.0.0.1:${port}/` },
    });
    if (created.statusCode !== 201) throw new Error(`endpoint: ${created.statusCode} ${created.body}`);
    await new Promise((r) => setTimeout(r, 20));
    // Events recorded as the lifecycle records them: the event row and its outbox row in one statement.
    const record = (count: number) =>
      database.pool.query(
        `WITH e AS (INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
           SELECT gen_random_uuid(), $1, 'collection.created', 'collection', gen_random_uuid(), '{"metadata":{"order":"42"}}', $3
           FROM generate_series(1, $2) RETURNING id, workspace_id, created_at)
         INSERT INTO outbox (workspace_id, event_id, created_at) SELECT workspace_id, id, created_at FROM e`,
        [boot.demoWorkspaceId, count, new Date()],
      );
    const deadline = (ms: number) => Date.now() + ms;
    const waitFor = async (n: number, until: number) => {
      while (received < n) {
        if (Date.now() > until) throw new Error(`only ${received} of ${n} deliveries arrived in time`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };

    // Throughput: a burst recorded at once.
    const started = performance.now();
    await record(BURST);
    await waitFor(BURST, deadline(120_000));
    const seconds = (performance.now() - started) / 1000;

    // Latency: changes at a steady pace, well under the maximum rate.
    received = 0;
    lags.length = 0;
    for (let i = 0; i < PACED; i++) {
      await record(1);
      await new Promise((r) => setTimeout(r, PACE_MS));
    }
    await waitFor(PACED, deadline(60_000));
    lags.sort((a, b) => a - b);
    return {
      database: target.label,
      endpoint_concurrency: endpointConcurrency,
      burst_events: BURST,
      deliveries_per_second: Math.round(BURST / seconds),
      change_to_delivery_p50_ms: lags[Math.floor(lags.length * 0.5)] ?? 0,
      change_to_delivery_p99_ms: lags[Math.floor(lags.length * 0.99)] ?? 0,
    };
  } finally {
    receiver.closeAllConnections();
    receiver.close();
    await workers.stop();
    await app.close();
    await database.close();
    await target.done();
  }
}

const rows: Row[] = [];
const servers = [...(process.env.DATABASE_URL ? [process.env.DATABASE_URL] : []), undefined];
for (const base of servers) for (const concurrency of [8, 32]) rows.push(await run(base, concurrency));
const table = [
  '| database | per-endpoint slots | burst | deliveries/s | change→delivery p50 | p99 |',
  '|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.database} | ${r.endpoint_concurrency} | ${r.burst_events} | ${r.deliveries_per_second} | ${r.change_to_delivery_p50_ms} ms | ${r.change_to_delivery_p99_ms} ms |`,
  ),
].join('\n');
process.stdout.write(`${table}\n`);
const dir = path.join(import.meta.dirname, 'results');
await mkdir(dir, { recursive: true });
const stamp = { at: new Date().toISOString(), node: process.version, cpus: os.cpus().length, paced_events: PACED, pace_ms: PACE_MS, rows };
await writeFile(path.join(dir, 'webhooks-latest.json'), `${JSON.stringify(stamp, null, 2)}\n`);
await writeFile(
  path.join(dir, 'webhooks-latest.md'),
  `# Webhook deliveries\n\n${stamp.at}, Node ${stamp.node}, ${stamp.cpus} cores; one loopback endpoint; latency over ${PACED} changes ${PACE_MS} ms apart.\n\n${table}\n`,
);
