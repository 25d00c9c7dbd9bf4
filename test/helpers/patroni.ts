// A highly-available PostgreSQL 15 on loopback, for the failover test: one etcd (v3 API), two PostgreSQL nodes managed
// by Patroni in synchronous mode (a commit is acknowledged once the standby has it, so a failover loses no
// acknowledged write) and HAProxy routing a front port to whichever node Patroni's REST API calls the primary. All of
// it from Debian's packages (patroni, etcd-server, haproxy, postgresql-15), in a fresh folder under /var/tmp, every
// process in a process group of its own with its output kept for failure messages. PostgreSQL refuses to run as root:
// as root, Patroni (and so PostgreSQL) runs as the `postgres` user. Without the binaries the test is skipped with the
// reason, unless REQUIRE_BROWSER=1 (CI sets it), when it fails.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/db/embedded.js';
import { HAPROXY_PATH } from './multinode.js';
import { killGroup, spawnGroup, type Child } from './processes.js';

export const PATRONI_PATH = process.env.PATRONI_PATH ?? '/usr/bin/patroni';
export const PATRONICTL_PATH = process.env.PATRONICTL_PATH ?? '/usr/bin/patronictl';
export const ETCD_PATH = process.env.ETCD_PATH ?? '/usr/bin/etcd';
export const PG_BIN_DIR = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin';
const SETPRIV_PATH = '/usr/bin/setpriv';

/**
 * Patroni's timings (bootstrap.dcs). Patroni wants loop_wait + 2 × retry_timeout <= ttl; with a 1 s loop a crashed
 * primary is noticed within a second. primary_start_timeout 0: a crashed primary is failed over at once instead of
 * restarted in place (safe here: synchronous mode means the standby has every acknowledged commit).
 */
export const TIMINGS = { ttl: 10, loop_wait: 1, retry_timeout: 4, primary_start_timeout: 0 };

/** The Patroni-managed nodes. */
const NODE_NAMES = ['pg1', 'pg2'] as const;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const asRoot = (): boolean => process.getuid?.() === 0;

/** The postgres user's uid and gid, from /etc/passwd. */
function postgresUser(): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : undefined;
}

/** The interpreter on a script's #! line (Debian's patroni: /usr/bin/python3, not whichever python3 is first on PATH). */
function interpreterOf(script: string): string {
  const first = readFileSync(script, 'utf8').split('\n', 1)[0] ?? '';
  return first.startsWith('#!') ? (first.slice(2).trim().split(/\s+/)[0] ?? 'python3') : 'python3';
}

function whyMissing(): string | undefined {
  const needed: [string, string, string][] = [
    ['Patroni', PATRONI_PATH, 'patroni'],
    ['patronictl', PATRONICTL_PATH, 'patroni'],
    ['etcd', ETCD_PATH, 'etcd-server'],
    ['HAProxy', HAPROXY_PATH, 'haproxy'],
    ['PostgreSQL 15 server', path.join(PG_BIN_DIR, 'postgres'), 'postgresql-15'],
  ];
  for (const [what, file, pkg] of needed)
    if (!existsSync(file)) return `no ${what} at ${file} (install it with \`apt-get install -y ${pkg}\`)`;
  // Patroni's etcd3 client is its own, but it takes its exceptions from python-etcd (the v2 client), and it talks to
  // PostgreSQL through psycopg2: a Patroni installed without them starts and then fails.
  const probe = spawnSync(interpreterOf(PATRONI_PATH), ['-c', 'import patroni.dcs.etcd3, patroni.psycopg, yaml'], {
    encoding: 'utf8',
  });
  if (probe.status !== 0) {
    const last = (probe.stderr || String(probe.error ?? '')).trim().split('\n').pop();
    return `Patroni's Python modules do not load (${last}; \`apt-get install -y python3-etcd python3-psycopg2 python3-yaml\`)`;
  }
  if (asRoot() && !postgresUser()) return 'running as root and there is no postgres user for PostgreSQL to run as';
  if (asRoot() && !existsSync(SETPRIV_PATH)) return `running as root and no ${SETPRIV_PATH} to run Patroni as postgres`;
  return undefined;
}

/** Why the failover test cannot run here, or undefined when it can. */
export function patroniMissing(): string | undefined {
  const reason = whyMissing();
  if (reason && process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${reason}`);
  return reason;
}

/** A member as Patroni's REST API (`GET /cluster`) describes it. */
export interface Member {
  name: string;
  /** leader, sync_standby or replica. */
  role: string;
  /** running, streaming, starting, stopped, crashed, ... */
  state: string;
  host: string;
  port: number;
  timeline?: number;
  lag?: number | string;
}

export interface LeaderInfo {
  name: string;
  pgPort: number;
  /** PostgreSQL's timeline: one more after each promotion. */
  timeline: number;
  /** From the leader's postmaster.pid. */
  postmasterPid: number;
}

export interface NewLeader {
  leader: LeaderInfo;
  /** From `since` (the kill, or the switchover's start) until the new leader accepted writes on its own port. */
  promotedMs: number;
  /** From `since` until a connection through HAProxy's front reached the new leader, writable. */
  routedMs: number;
}

export interface Rejoined {
  member: Member;
  /** As the leader's pg_stat_replication shows it: sync once Patroni has made it the synchronous standby. */
  syncState: string;
  tookMs: number;
}

interface Node {
  name: string;
  dataDir: string;
  config: string;
  pgPort: number;
  restPort: number;
  proc: Child;
  /** Patroni's log lines about failing over, promoting, rewinding or re-copying, all of them (output() keeps the end). */
  events: string[];
}

const NOTABLE = /pg_rewind|promoted self|Failing over|crash|removing data directory|bootstrap from leader|demot/i;

/** A client that gives up quickly: the polls below must not hang on a dead or recovering server. */
async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000, query_timeout: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The process behind a pid is the postmaster of this data folder (a pid from a stale postmaster.pid may be reused). */
function isPostmasterOf(pid: number, dataDir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(dataDir);
  } catch {
    return false;
  }
}

/** A signal to a process that may have exited meanwhile. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class Cluster {
  private constructor(
    private readonly dir: string,
    private readonly etcd: Child,
    private readonly nodes: Node[],
    private readonly haproxy: Child,
    private readonly frontPort: number,
  ) {}

  /** The PostgreSQL server through HAProxy's front: always the current primary. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.frontPort}/postgres`;
  }

  /** A node's PostgreSQL directly (not through HAProxy). */
  nodeUrl(name: string): string {
    return `postgres://postgres@127.0.0.1:${this.node(name).pgPort}/postgres`;
  }

  private node(name: string): Node {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name} in the cluster`);
    return node;
  }

  /** What Patroni on `name` said about failing over, promoting, rewinding and re-copying since it started. */
  events(name: string): string[] {
    return this.node(name).events;
  }

  /** Everything the cluster's processes wrote (the end of each), for a failure message. */
  output(): string {
    return [
      `--- etcd\n${this.etcd.output().slice(-4000)}`,
      ...this.nodes.map((n) => `--- patroni ${n.name}\n${n.proc.output().slice(-8000)}`),
      `--- haproxy\n${this.haproxy.output().slice(-4000)}`,
    ].join('\n');
  }

  /** The members as the first Patroni that answers sees them (the REST API of a node whose PostgreSQL died still answers). */
  async members(): Promise<Member[]> {
    let last: unknown;
    for (const node of this.nodes) {
      try {
        const res = await fetch(`http://127.0.0.1:${node.restPort}/cluster`, { signal: AbortSignal.timeout(2000) });
        if (res.ok) return ((await res.json()) as { members: Member[] }).members;
        last = `${res.status} ${await res.text()}`;
      } catch (err) {
        last = err;
      }
    }
    throw new Error(`no Patroni answered GET /cluster: ${String(last)}`);
  }

  /** The leader's postmaster pid, from its data folder's postmaster.pid; undefined when PostgreSQL is not running there. */
  async postmasterPid(name: string): Promise<number | undefined> {
    const node = this.node(name);
    const text = await readFile(path.join(node.dataDir, 'postmaster.pid'), 'utf8').catch(() => '');
    const pid = Number(text.split('\n', 1)[0]);
    return pid > 0 && isPostmasterOf(pid, node.dataDir) ? pid : undefined;
  }

  /** The current leader: running as Patroni sees it, and taking writes on its own port. */
  async leader(): Promise<LeaderInfo> {
    const members = await this.members();
    const leader = members.find((m) => m.role === 'leader' && m.state === 'running');
    if (!leader) throw new Error(`no running leader: ${JSON.stringify(members)}`);
    // The timeline from PostgreSQL itself (the one in /cluster lags behind a promotion by a loop or more): the first
    // eight hex digits of the current WAL file's name. Null while still in recovery.
    const [row] = await query<{ timeline: number | null }>(
      this.nodeUrl(leader.name),
      `SELECT CASE WHEN pg_is_in_recovery() THEN NULL
              ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END AS timeline`,
    );
    if (row?.timeline == null) throw new Error(`${leader.name} leads but is still in recovery`);
    const postmasterPid = await this.postmasterPid(leader.name);
    if (postmasterPid === undefined) throw new Error(`${leader.name} is the leader but its postmaster is not running`);
    return { name: leader.name, pgPort: leader.port, timeline: row.timeline, postmasterPid };
  }

  /**
   * The current leader, asked again for up to `timeoutMs`: before a kill or a switchover the cluster is healthy, but a
   * loaded machine may take longer than one poll's 1 s to open a connection.
   */
  async steadyLeader(timeoutMs = 20_000): Promise<LeaderInfo> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await this.leader();
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(200);
      }
    }
  }

  /** kill -9 of the leader's postmaster: its backends die with it, Patroni on that node notices within loop_wait. */
  async killPrimaryPostmaster(): Promise<{ killedAt: number; oldLeader: LeaderInfo }> {
    const oldLeader = await this.steadyLeader();
    process.kill(oldLeader.postmasterPid, 'SIGKILL');
    return { killedAt: Date.now(), oldLeader };
  }

  /** Waits until another member leads, accepts writes on its own port, and HAProxy's front reaches it. */
  async waitForNewLeader(old: string, since = Date.now(), timeoutMs = 60_000): Promise<NewLeader> {
    const deadline = Date.now() + timeoutMs;
    let promotedAt: number | undefined;
    let leader: LeaderInfo | undefined;
    let last = '';
    while (Date.now() < deadline) {
      try {
        if (!leader) {
          const found = await this.leader();
          if (found.name !== old) {
            promotedAt = Date.now();
            leader = found;
          }
        }
        if (leader && promotedAt !== undefined) {
          const [row] = await query<{ recovery: boolean; port: number }>(
            this.url,
            'SELECT pg_is_in_recovery() AS recovery, inet_server_port() AS port',
          );
          if (row && !row.recovery && row.port === leader.pgPort)
            return { leader, promotedMs: promotedAt - since, routedMs: Date.now() - since };
        }
      } catch (err) {
        last = String(err);
      }
      await sleep(50);
    }
    throw new Error(
      `no new leader (other than ${old}) reachable through HAProxy within ${timeoutMs} ms (${last}):\n${this.output()}`,
    );
  }

  /**
   * Waits until `name` runs as a replica streaming from the leader (pg_rewind or a new base backup having brought it
   * back), and, unless `sync` is false, until Patroni has made it the synchronous standby again.
   */
  async waitForRejoin(name: string, { sync = true, timeoutMs = 90_000 } = {}): Promise<Rejoined> {
    const began = Date.now();
    let last = '';
    while (Date.now() - began < timeoutMs) {
      try {
        const members = await this.members();
        const member = members.find((m) => m.name === name);
        const leader = members.find((m) => m.role === 'leader' && m.state === 'running');
        last = JSON.stringify(members);
        if (member && leader && member.role !== 'leader' && ['running', 'streaming'].includes(member.state)) {
          const rows = await query<{ state: string; sync_state: string }>(
            this.nodeUrl(leader.name),
            'SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1',
            [name],
          );
          const row = rows[0];
          if (row?.state === 'streaming' && (!sync || (row.sync_state === 'sync' && member.role === 'sync_standby')))
            return { member, syncState: row.sync_state, tookMs: Date.now() - began };
          last += ` pg_stat_replication: ${JSON.stringify(rows)}`;
        }
      } catch (err) {
        last = String(err);
      }
      await sleep(100);
    }
    throw new Error(
      `${name} did not rejoin as a streaming replica within ${timeoutMs} ms (${last}):\n${this.output()}`,
    );
  }

  /** A planned switchover to the other member (`patronictl switchover --force`), waited for as a failover is. */
  async switchover(): Promise<NewLeader & { from: string; output: string }> {
    const from = await this.steadyLeader();
    const candidate = this.nodes.find((n) => n.name !== from.name)?.name ?? '';
    const since = Date.now();
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const ctl = spawn(
        PATRONICTL_PATH,
        ['-c', this.nodes[0]?.config ?? '', 'switchover', '--leader', from.name, '--candidate', candidate, '--force'],
        { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 },
      );
      let output = '';
      ctl.stdout.on('data', (c: Buffer) => (output += c.toString()));
      ctl.stderr.on('data', (c: Buffer) => (output += c.toString()));
      ctl.on('close', (code) => resolve({ code, output }));
    });
    if (result.code !== 0) throw new Error(`patronictl switchover exited ${result.code}:\n${result.output}`);
    return { ...(await this.waitForNewLeader(from.name, since)), from: from.name, output: result.output.trim() };
  }

  /** Kills every process (Patroni first, so none restarts its PostgreSQL) and removes the folder. */
  async stop(): Promise<void> {
    for (const node of this.nodes) killGroup(node.proc.child);
    await Promise.all(this.nodes.map((n) => n.proc.exited));
    // Patroni starts each postmaster in a session of its own: it outlives Patroni and is stopped by its pid. SIGQUIT is
    // PostgreSQL's immediate shutdown (its children go with it); SIGKILL if it lingers.
    for (const node of this.nodes) {
      const pid = await this.postmasterPid(node.name);
      if (pid === undefined) continue;
      signal(pid, 'SIGQUIT');
      for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
      if (alive(pid)) signal(pid, 'SIGKILL');
    }
    killGroup(this.haproxy.child);
    killGroup(this.etcd.child);
    await Promise.all([this.haproxy.exited, this.etcd.exited]);
    await rm(this.dir, { recursive: true, force: true });
  }

  /**
   * Builds the cluster: etcd, then the two Patronis (the first to take the leader key initialises the database, the
   * other clones it with pg_basebackup), then HAProxy; resolves once a node leads, the other is its synchronous
   * standby, and HAProxy's front reaches the leader.
   */
  static async start(): Promise<Cluster> {
    // Under /var/tmp, searchable by everyone: the postgres user must reach its folders when the test runs as root.
    const dir = await mkdtemp('/var/tmp/payments-patroni-');
    await chmod(dir, 0o755);
    const ports = new Set<number>();
    while (ports.size < 7) ports.add(await freePort());
    const [etcdClient, etcdPeer, frontPort, pg1, rest1, pg2, rest2] = [...ports] as number[];
    const processes: Child[] = [];
    const nodes: Node[] = [];
    let cluster: Cluster | undefined;
    try {
      const etcd = spawnGroup(ETCD_PATH, etcdArgs(dir, etcdClient as number, etcdPeer as number), {
        PATH: process.env.PATH,
      });
      processes.push(etcd);
      await waitUntil('etcd to be healthy', 20_000, [etcd], async () => {
        const res = await fetch(`http://127.0.0.1:${etcdClient}/health`, { signal: AbortSignal.timeout(1000) });
        return res.ok && ((await res.json()) as { health: string }).health === 'true';
      });

      const owner = asRoot() ? postgresUser() : undefined;
      for (const [i, name] of NODE_NAMES.entries()) {
        const [pgPort, restPort] = (i === 0 ? [pg1, rest1] : [pg2, rest2]) as [number, number];
        const nodeDir = path.join(dir, name);
        await mkdir(nodeDir, { mode: 0o700 });
        const dataDir = path.join(nodeDir, 'data');
        const config = path.join(nodeDir, 'patroni.yml');
        await writeFile(config, JSON.stringify(patroniConfig(name, nodeDir, pgPort, restPort, etcdClient as number)));
        if (owner) {
          await chown(nodeDir, owner.uid, owner.gid);
          await chown(config, owner.uid, owner.gid);
        }
        // Patroni reads YAML; JSON is YAML. As root, it runs as postgres (setpriv execs: the group is still one process).
        const [command, args] = asRoot()
          ? [SETPRIV_PATH, ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', PATRONI_PATH, config]]
          : [PATRONI_PATH, [config]];
        const proc = spawnGroup(command, args, {
          PATH: process.env.PATH,
          HOME: nodeDir,
          LANG: 'C.UTF-8',
          LC_ALL: 'C.UTF-8',
          PYTHONUNBUFFERED: '1',
        });
        processes.push(proc);
        const events: string[] = [];
        const notable = (chunk: Buffer): void => {
          for (const line of chunk.toString().split('\n')) if (NOTABLE.test(line)) events.push(line.trim());
        };
        proc.child.stdout?.on('data', notable);
        proc.child.stderr?.on('data', notable);
        nodes.push({ name, dataDir, config, pgPort, restPort, proc, events });
      }

      const haproxyFile = path.join(dir, 'haproxy.cfg');
      await writeFile(haproxyFile, haproxyConfig(frontPort as number, nodes));
      // -db: stay in the foreground (no daemon), so the test owns the process.
      const haproxy = spawnGroup(HAPROXY_PATH, ['-db', '-f', haproxyFile], { PATH: process.env.PATH });
      processes.push(haproxy);
      cluster = new Cluster(dir, etcd, nodes, haproxy, frontPort as number);
      const ready = cluster;
      await waitUntil('a leader and its synchronous standby', 120_000, processes, async () => {
        const members = await ready.members();
        return (
          members.length === 2 &&
          members.some((m) => m.role === 'leader' && m.state === 'running') &&
          members.some((m) => m.role === 'sync_standby' && ['running', 'streaming'].includes(m.state))
        );
      });
      const leader = await cluster.leader();
      await cluster.waitForRejoin(nodes.find((n) => n.name !== leader.name)?.name ?? '', { timeoutMs: 30_000 });
      await waitUntil('HAProxy to reach the leader', 20_000, processes, async () => {
        const [row] = await query<{ port: number }>(ready.url, 'SELECT inet_server_port() AS port');
        return row?.port === leader.pgPort;
      });
      return cluster;
    } catch (err) {
      if (cluster) await cluster.stop().catch(() => undefined);
      else {
        for (const p of processes) killGroup(p.child);
        await rm(dir, { recursive: true, force: true });
      }
      throw err;
    }
  }
}

/** Starts the cluster (Cluster.start). */
export function startCluster(): Promise<Cluster> {
  return Cluster.start();
}

/** Polls `probe` (errors count as not yet) every 100 ms; fails when one of `procs` exits, or after `timeoutMs`. */
async function waitUntil(
  what: string,
  timeoutMs: number,
  procs: Child[],
  probe: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const outputs = (): string => procs.map((p) => `--- ${p.child.spawnargs.join(' ')}\n${p.output()}`).join('\n');
  let last: unknown;
  while (Date.now() < deadline) {
    const exited = procs.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
    if (exited) throw new Error(`${exited.child.spawnfile} exited while waiting for ${what}:\n${outputs()}`);
    try {
      if (await probe()) return;
    } catch (err) {
      last = err;
    }
    await sleep(100);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${String(last)}):\n${outputs()}`);
}

function etcdArgs(dir: string, client: number, peer: number): string[] {
  const peerUrl = `http://127.0.0.1:${peer}`;
  const clientUrl = `http://127.0.0.1:${client}`;
  return [
    '--name=etcd0',
    `--data-dir=${path.join(dir, 'etcd')}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=etcd0=${peerUrl}`,
    '--initial-cluster-state=new',
    '--initial-cluster-token=payments-failover-test',
    '--logger=zap',
    '--log-level=warn',
  ];
}

/** One node's Patroni configuration: loopback only, trust for the postgres user (test infrastructure, nothing else). */
function patroniConfig(name: string, dir: string, pgPort: number, restPort: number, etcdPort: number): object {
  return {
    scope: 'payments-failover',
    namespace: '/payments-test/',
    name,
    log: { level: 'INFO', format: '%(asctime)s %(levelname)s: %(message)s' },
    restapi: { listen: `127.0.0.1:${restPort}`, connect_address: `127.0.0.1:${restPort}` },
    // Patroni's own v3 client over etcd's gRPC gateway (no python-etcd3 or grpc module needed).
    etcd3: { hosts: [`127.0.0.1:${etcdPort}`] },
    bootstrap: {
      dcs: {
        ...TIMINGS,
        maximum_lag_on_failover: 1_048_576,
        synchronous_mode: true,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: {
            max_connections: 200,
            max_wal_senders: 10,
            max_replication_slots: 10,
            wal_keep_size: '256MB',
            hot_standby: 'on',
          },
        },
      },
      initdb: [{ encoding: 'UTF8' }, { locale: 'C' }, 'data-checksums'],
    },
    postgresql: {
      listen: `127.0.0.1:${pgPort}`,
      connect_address: `127.0.0.1:${pgPort}`,
      data_dir: path.join(dir, 'data'),
      bin_dir: PG_BIN_DIR,
      pgpass: path.join(dir, 'pgpass'),
      authentication: {
        superuser: { username: 'postgres' },
        replication: { username: 'postgres' },
        rewind: { username: 'postgres' },
      },
      // The old primary rejoins by pg_rewind; if that cannot work, by a fresh copy rather than not at all.
      remove_data_directory_on_rewind_failure: true,
      remove_data_directory_on_diverged_timelines: true,
      parameters: { unix_socket_directories: dir },
      pg_hba: [
        'local all all trust',
        'host all all 127.0.0.1/32 trust',
        'local replication all trust',
        'host replication all 127.0.0.1/32 trust',
      ],
    },
    watchdog: { mode: 'off' },
  };
}

/**
 * The front: TCP to whichever node answers 200 to Patroni's `OPTIONS /primary` (checked every second, down after two
 * failures, up after one success); the sessions of a node marked down are cut, so no client stays on an old primary.
 */
function haproxyConfig(frontPort: number, nodes: Node[]): string {
  return [
    'global',
    '  maxconn 1000',
    '',
    'defaults',
    '  mode tcp',
    '  timeout connect 1s',
    '  timeout client 30m',
    '  timeout server 30m',
    '  timeout check 1s',
    '',
    'listen postgres',
    `  bind 127.0.0.1:${frontPort}`,
    '  option httpchk OPTIONS /primary',
    '  http-check expect status 200',
    '  default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions',
    ...nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.pgPort} maxconn 500 check port ${n.restPort}`),
    '',
  ].join('\n');
}
