// `npm test`: runs every *.test.ts under src/ and test/ with node's test runner, against DATABASE_URL
// or, when it is unset, against an embedded PostgreSQL started here for the run and stopped after.
// `npm run test:fast` (`--fast`) leaves out the files that drive a browser, run property checks, or wait on real time
// (operator fakes, crashes, fairness, process starts): the inner loop. CI runs everything.
import { spawn } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...findTests(full));
    else if (name.endsWith('.test.ts')) out.push(full);
  }
  return out;
}

/** The slow files `--fast` leaves out (each 15 to 90 s on 2 cores, most of the suite's time). */
const SLOW = [
  /\.browser\.test\.ts$/, // Chromium
  /\.property\.test\.ts$/, // randomised runs of the lifecycle and conversion
  /connectors\.(daraja|momo|airtel|wave)\.test\.ts$/, // operator fakes acting in real time, sweeps, time-outs
  /webhooks\.(crash|fairness|delivery)\.test\.ts$/, // killed processes, retry schedules, bursts
  /startup\.test\.ts$/, // npm start in child processes
  /multinode\.test\.ts$/, // three service processes behind HAProxy, restarted one by one
  /pgbouncer\.test\.ts$/, // PgBouncer and the service in child processes, the sandbox's lifecycle in real time
  /failover\.test\.ts$/, // a Patroni pair (etcd, HAProxy) whose primary is killed twice and switched over under load
];

const args = process.argv.slice(2);
const fast = args.includes('--fast');
const only = args.filter((a) => a !== '--fast');
const all = only.length > 0 ? only : [...findTests('src'), ...findTests('test')].sort();
const files = fast ? all.filter((f) => !SLOW.some((slow) => slow.test(f))) : all;
let embedded: EmbeddedServer | undefined;
let databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  // One folder per run, so two runs at once never share (or wipe) a cluster.
  const dataDir = path.resolve(`.data-test-${process.pid}`);
  rmSync(dataDir, { recursive: true, force: true });
  embedded = await startEmbedded({ dataDir, port: 0, database: 'test', log: () => undefined });
  databaseUrl = embedded.url;
  process.stdout.write(`# tests run against an embedded PostgreSQL on port ${embedded.port}\n`);
} else {
  process.stdout.write(`# tests run against DATABASE_URL (${new URL(databaseUrl).host})\n`);
}

/**
 * The fault suites that bring up clusters of their own and measure the service's recovery under a load they make
 * themselves: run after the rest, one at a time, so that another file sharing the 2 cores does not change the load
 * they measure (a failover under a second suite's load took longer than its settle window in CI).
 */
const ALONE = [/failover\.test\.ts$/, /multinode\.test\.ts$/];

function runFiles(list: string[], concurrency: number): Promise<number> {
  if (list.length === 0) return Promise.resolve(0);
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...list], {
    stdio: 'inherit',
    env: { ...process.env, TEST_DATABASE_URL: databaseUrl },
  });
  return new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
}

const alone = files.filter((f) => ALONE.some((a) => a.test(f)));
const shared = await runFiles(
  files.filter((f) => !alone.includes(f)),
  2,
);
const single = await runFiles(alone, 1);
const code = shared !== 0 ? shared : single;
if (embedded) {
  await embedded.stop();
  // The cluster may live outside the folder (see src/db/embedded.ts): remove it by its own path too.
  rmSync(embedded.clusterDir, { recursive: true, force: true });
  rmSync(`${embedded.clusterDir}.password`, { force: true });
  rmSync(path.resolve(`.data-test-${process.pid}`), { recursive: true, force: true });
}
process.exit(code);
