// (h) The baseline: PostgreSQL's own rate for the durable SQL of a collection's life, measured by pgbench with the
// scripts of bench/pgbench on the service's own schema (a scratch database migrated with the service's migrations),
// at the HTTP runs' 64 connections. A create alone (create.sql), and a whole lifecycle (create.sql then
// transitions.sql, run as one script: a create and its moves to pending, processing and successful), each over
// 1,000 workspaces (a random one per transaction) and over one (every transaction on the same balance rows).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { createScratchDatabase } from '../../test/helpers/database.js';
import { roomFor } from './connections.js';
import type { ReplayResult } from './replay.js';
import { summarise, withCpu } from './load.js';
import { sampleWaits, type WaitSample } from './waits.js';

const SCRIPTS = path.join(import.meta.dirname, '..', 'pgbench');
/** pgbench from PostgreSQL's client package; PGBENCH names another. */
const PGBENCH = process.env.PGBENCH ?? '/usr/bin/pgbench';
/** How many workspaces the "many workspaces" runs spread over. */
export const PGBENCH_WORKSPACES = 1000;

/** `transactions` are script transactions: a create, or a whole lifecycle (four durable transactions). */
export interface PgbenchResult extends ReplayResult {
  /** PostgreSQL's wait events during the run (with `--waits`). */
  waits?: WaitSample;
}

export interface PgbenchBaseline {
  create_many: PgbenchResult;
  create_hot: PgbenchResult;
  lifecycle_many: PgbenchResult;
  lifecycle_hot: PgbenchResult;
}

/**
 * Runs the four baseline measurements in a scratch database on the server `serverUrl` names (dropped after):
 * `seconds` each, `clients` connections over 2 pgbench threads, prepared statements.
 */
export async function pgbenchBaseline(
  serverUrl: string,
  clients: number,
  seconds: number,
  waits: boolean,
  log: (m: string) => void,
): Promise<PgbenchBaseline> {
  const scratch = await createScratchDatabase(serverUrl, 'pgbench');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'payments-pgbench-'));
  try {
    const pool = createPool(scratch.url, 1);
    try {
      await migrate(pool);
      await pool.query(
        `INSERT INTO workspaces (id, name, display_name, environment, kind, created_at)
         SELECT lpad(to_hex(n), 32, '0')::uuid, 'bench-' || n, 'bench-' || n, 'sandbox', 'integrator', now()
         FROM generate_series(1, $1::int) AS n`,
        [PGBENCH_WORKSPACES],
      );
    } finally {
      await pool.end();
    }
    const create = path.join(SCRIPTS, 'create.sql');
    // pgbench runs a script's commands in order, but picks among several -f scripts at random: the lifecycle is
    // the two files as one script.
    const lifecycle = path.join(dir, 'lifecycle.sql');
    await writeFile(
      lifecycle,
      `${await readFile(create, 'utf8')}\n${await readFile(path.join(SCRIPTS, 'transitions.sql'), 'utf8')}`,
    );
    const run = async (label: string, script: string, workspaces: number) => {
      log(`${label}, ${clients} clients, ${seconds} s`);
      await roomFor(scratch.url, clients, log);
      return runPgbench(
        scratch.url,
        script,
        workspaces,
        clients,
        seconds,
        path.join(dir, label.replace(/\W+/g, '-')),
        waits,
      );
    };
    return {
      create_many: await run(`(h) pgbench create, ${PGBENCH_WORKSPACES} workspaces`, create, PGBENCH_WORKSPACES),
      create_hot: await run('(h) pgbench create, one workspace', create, 1),
      lifecycle_many: await run(
        `(h) pgbench lifecycle, ${PGBENCH_WORKSPACES} workspaces`,
        lifecycle,
        PGBENCH_WORKSPACES,
      ),
      lifecycle_hot: await run('(h) pgbench lifecycle, one workspace', lifecycle, 1),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await scratch.drop();
  }
}

/** One pgbench run; each transaction's latency comes from pgbench's own log (`-l`), written under `logPrefix`. */
async function runPgbench(
  url: string,
  script: string,
  workspaces: number,
  clients: number,
  seconds: number,
  logPrefix: string,
  waits: boolean,
): Promise<PgbenchResult> {
  const args = [
    '--no-vacuum',
    `--client=${clients}`,
    '--jobs=2',
    `--time=${seconds}`,
    '--protocol=prepared',
    `--define=workspaces=${workspaces}`,
    `--file=${script}`,
    '--log',
    `--log-prefix=${logPrefix}`,
    url,
  ];
  const pgbench = () => withCpu(() => exec(PGBENCH, args, path.dirname(logPrefix)));
  const database = new URL(url).pathname.slice(1);
  const { result, waits: sampled } = waits
    ? await sampleWaits(url, database, pgbench)
    : { result: await pgbench(), waits: undefined };
  const processed = Number(/number of transactions actually processed: (\d+)/.exec(result.stdout)?.[1] ?? NaN);
  const failed = Number(/number of failed transactions: (\d+)/.exec(result.stdout)?.[1] ?? 0);
  // pgbench's own rate, over the time after its clients had connected (its -T counts their connecting too).
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(result.stdout)?.[1] ?? NaN);
  if (result.code !== 0 || !Number.isFinite(processed) || !Number.isFinite(tps) || failed > 0)
    throw new Error(
      `pgbench ${path.basename(script)} failed (exit ${result.code}):\n${result.stdout}\n${result.stderr}`,
    );
  if (processed === 0)
    throw new Error(
      `pgbench ${path.basename(script)} finished no transaction in ${seconds} s: connecting its ${clients} clients took all of it; give it more --seconds`,
    );
  const { p50_ms, p99_ms } = summarise(await transactionLatencies(logPrefix), seconds);
  return {
    transactions: processed,
    seconds: Math.round((processed / tps) * 10) / 10,
    per_second: Math.round(tps),
    p50_ms,
    p99_ms,
    machine_busy_pct: result.machine_busy_pct,
    ...(sampled ? { waits: sampled } : {}),
  };
}

/** Latencies (ms) from pgbench's per-transaction logs: `client transaction latency_us script epoch epoch_us`. */
async function transactionLatencies(logPrefix: string): Promise<number[]> {
  const dir = path.dirname(logPrefix);
  const base = path.basename(logPrefix);
  const latencies: number[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.startsWith(`${base}.`))) {
    for (const line of (await readFile(path.join(dir, file), 'utf8')).split('\n')) {
      const us = line.split(' ')[2];
      if (us !== undefined) latencies.push(Number(us) / 1000);
    }
  }
  return latencies;
}

function exec(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
