// The service under test, started with `npm start`'s own command (workers included) in a child process of
// its own, so that its CPU, its memory (peak RSS) and its profile are its own and not the load generator's.
import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '../../src/db/embedded.js';
import { npmStartArgs, PROJECT_ROOT as ROOT } from '../../test/helpers/start-command.js';
import { load, type LoadResult } from './load.js';

export interface RunningService {
  url: string;
  pid: number;
  /** The database the service runs on, reachable by the benchmark (the embedded server's URL with its password). */
  databaseUrl: string;
  /** Its DATA_DIR: the secrets key file there is what an app on the same database must open its secrets with. */
  dataDir: string;
  demoToken: string;
  demoWorkspaceId: string;
  /** The operator's admin token (creates workspaces through the admin API). */
  adminToken: string;
  /** The child's peak resident set size so far, from /proc (VmHWM), in bytes. */
  peakRss(): Promise<number>;
  /** Freezes the service process (SIGSTOP; an embedded database, a process of its own, keeps running) and thaws it. */
  pause(): void;
  resume(): void;
  /** SIGINT, as an operator stops it; resolves once the process has exited (a CPU profile is written then). */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** A PostgreSQL URL, or undefined for the embedded database in `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Where `node --cpu-prof` writes the service's profile; no profiling when unset. */
  profileDir?: string;
  /** Extra environment for the service. */
  env?: Record<string, string>;
  /** The checkout of the project to start (`--compare` starts another commit's); this one by default. */
  root?: string;
}

/** Node's own command line for one of our TypeScript files (the hello server), as the package scripts run them. */
export function nodeArgs(entry: string): string[] {
  return ['--import', 'tsx', path.join(ROOT, entry)];
}

/**
 * Loads a bare server of ours (`node <args>`; it prints `{"port": n}` and serves until SIGINT), in a process of its
 * own: `route` for `seconds` with 64 connections, after `warmSeconds` of the same. The server is stopped after.
 */
export async function loadServer(args: string[], route: string, seconds: number, warmSeconds = 1): Promise<LoadResult> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (b: Buffer) => resolve((JSON.parse(b.toString()) as { port: number }).port));
      child.once('exit', (code) => reject(new Error(`the server (${args.join(' ')}) exited (${code})`)));
    });
    const url = `http://127.0.0.1:${port}${route}`;
    await load({ url, connections: 64, seconds: warmSeconds, expect: 200 });
    return await load({ url, connections: 64, seconds, expect: 200 });
  } finally {
    child.kill('SIGINT');
  }
}

export async function startService(options: StartOptions): Promise<RunningService> {
  const port = await freePort();
  // Both ports are only found free, not held, until the service binds them: the second must not be the first again
  // (the embedded database once took the HTTP port, and the service failed to start).
  let databasePort = await freePort();
  while (databasePort === port) databasePort = await freePort();
  const logFile = path.join(options.dataDir, 'service.log');
  const out = openSync(logFile, 'a');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: options.dataDir,
    EMBEDDED_PG_PORT: String(databasePort),
    // The load comes from one client address: the per-client rate limit would answer 429 to almost all of it.
    RATE_LIMIT_PER_SECOND: '1000000',
    RATE_LIMIT_BURST: '1000000',
    ...options.env,
  };
  if (options.databaseUrl === undefined) delete env.DATABASE_URL;
  else env.DATABASE_URL = options.databaseUrl;
  // Exactly what `npm start` runs (its node flags and script), with the profiler's flags when asked. The log goes
  // straight to a file: the benchmark process spends nothing reading it.
  const args = [
    ...(options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : []),
    ...npmStartArgs(options.root),
  ];
  const child = spawn(process.execPath, args, { cwd: options.root ?? ROOT, env, stdio: ['ignore', out, out] });
  closeSync(out);
  let exited: number | null | undefined;
  const exit = new Promise<void>((resolve) => child.on('exit', (code) => ((exited = code), resolve())));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (exited !== undefined)
      throw new Error(
        `the service exited (${exited}) while starting; see ${logFile}:\n${await readFile(logFile, 'utf8')}`,
      );
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the service did not become ready in 180 s; see ${logFile}`);
    }
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    await new Promise((r) => setTimeout(r, 200));
  }

  try {
    return await describeStarted(child, url, options, logFile, exit, () => exited);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}

async function describeStarted(
  child: ReturnType<typeof spawn>,
  url: string,
  options: StartOptions,
  logFile: string,
  exit: Promise<void>,
  exited: () => number | null | undefined,
): Promise<RunningService> {
  const credentials = JSON.parse(await readFile(path.join(options.dataDir, 'credentials.json'), 'utf8')) as {
    admin: { token: string };
    workspaces: { id: string; name: string; integrator: { token: string } }[];
  };
  const demo = credentials.workspaces.find((w) => w.name === 'demo');
  if (!demo) throw new Error('credentials.json has no demo workspace');

  let databaseUrl = options.databaseUrl;
  if (databaseUrl === undefined) {
    // The embedded server says where it runs; its password sits beside its cluster.
    const serving = /embedded PostgreSQL is serving (\S+) on 127\.0\.0\.1:(\d+)/.exec(await readFile(logFile, 'utf8'));
    if (!serving?.[1] || !serving[2])
      throw new Error(`the service did not report its embedded database; see ${logFile}`);
    const password = (await readFile(`${serving[1]}.password`, 'utf8')).trim();
    databaseUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${serving[2]}/payments`;
  }

  return {
    url,
    pid: child.pid ?? 0,
    databaseUrl,
    dataDir: options.dataDir,
    demoToken: demo.integrator.token,
    demoWorkspaceId: demo.id,
    adminToken: credentials.admin.token,
    async peakRss() {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
      return kb === undefined ? 0 : Number(kb) * 1024;
    },
    pause() {
      child.kill('SIGSTOP');
    },
    resume() {
      child.kill('SIGCONT');
    },
    async stop() {
      if (exited() !== undefined) return;
      child.kill('SIGCONT');
      child.kill('SIGINT');
      const force = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await exit;
      clearTimeout(force);
    },
  };
}
