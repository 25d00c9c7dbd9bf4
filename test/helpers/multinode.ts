// Several service processes on one database behind HAProxy (Debian's package), for the multi-node test: each node is
// `npm start`'s command in a process group of its own; HAProxy runs in the foreground on a generated config. Without
// HAProxy the test is skipped with the reason, unless REQUIRE_BROWSER=1 (CI sets it), when it fails.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '../../src/db/embedded.js';
import { killGroup, spawnGroup, type Child } from './processes.js';
import { npmStartArgs } from './start-command.js';

export const HAPROXY_PATH = process.env.HAPROXY_PATH ?? '/usr/sbin/haproxy';

/** Why the multi-node test cannot run here, or undefined when it can. */
export function haproxyMissing(): string | undefined {
  if (existsSync(HAPROXY_PATH)) return undefined;
  const reason = `no HAProxy at ${HAPROXY_PATH} (install it with \`apt-get install -y haproxy\`, or set HAPROXY_PATH)`;
  if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${reason}`);
  return reason;
}

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

export class ServiceNode {
  private current: Child | undefined;

  constructor(
    readonly name: string,
    readonly port: number,
    private env: NodeJS.ProcessEnv,
  ) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  output(): string {
    return this.current?.output() ?? '';
  }

  /** Starts the node (with `env` changed, if given) and waits until /readyz answers 200. */
  async start(env: Record<string, string> = {}): Promise<void> {
    this.env = { ...this.env, ...env };
    const started = spawnGroup(process.execPath, npmStartArgs(), { ...this.env, PORT: String(this.port) });
    this.current = started;
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      if (started.child.exitCode !== null) throw new Error(`${this.name} exited early:\n${started.output()}`);
      try {
        if ((await fetch(`${this.baseUrl}/readyz`)).status === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`${this.name} was not ready within 120 s:\n${started.output()}`);
  }

  /** SIGTERM, as a supervisor stops it; resolves with the exit code. */
  async stop(): Promise<number | null> {
    const running = this.current;
    if (!running) return null;
    running.child.kill('SIGTERM');
    const code = await running.exited;
    this.current = undefined;
    return code;
  }

  kill(): void {
    if (this.current) killGroup(this.current.child);
  }

  async exited(): Promise<void> {
    await this.current?.exited;
  }
}

/** Ports for `count` nodes, and the environment every node shares (the database, the secrets key, DATA_DIR…). */
export async function makeNodes(count: number, env: NodeJS.ProcessEnv): Promise<ServiceNode[]> {
  const nodes: ServiceNode[] = [];
  for (let i = 1; i <= count; i++) nodes.push(new ServiceNode(`node${i}`, await freePort(), env));
  return nodes;
}

/**
 * The balancer: round-robin over the nodes, each checked on /readyz every 250 ms (down after 2 failures, up after 2
 * successes). A request refused by a node (connection refused, closed without an answer, or 503 while it drains) is
 * tried again on another node, up to 3 times. The config is the one docs/operations.md shows.
 */
export function haproxyConfig(frontPort: number, statsPort: number, nodes: ServiceNode[]): string {
  return [
    'global',
    '  maxconn 2000',
    '',
    'defaults',
    '  mode http',
    '  timeout connect 1s',
    '  timeout client 30s',
    '  timeout server 30s',
    '  timeout check 2s',
    '  retries 3',
    '  option redispatch 1',
    '  retry-on conn-failure empty-response 503',
    '',
    'frontend api',
    `  bind 127.0.0.1:${frontPort}`,
    '  default_backend nodes',
    '',
    'backend nodes',
    '  balance roundrobin',
    '  option httpchk',
    '  http-check send meth GET uri /readyz',
    '  http-check expect status 200',
    '  default-server inter 250ms fall 2 rise 2',
    ...nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.port} check`),
    '',
    'frontend stats',
    `  bind 127.0.0.1:${statsPort}`,
    '  stats enable',
    '  stats uri /stats',
    '',
  ].join('\n');
}

export interface ServerStats {
  name: string;
  status: string;
  /** Requests this server answered (stot), retries on it (wretr) and requests sent elsewhere after it failed (wredis). */
  total: number;
  retries: number;
  redispatches: number;
}

export class Balancer {
  private constructor(
    private readonly proc: Child,
    readonly baseUrl: string,
    private readonly statsUrl: string,
  ) {}

  static async start(dir: string, nodes: ServiceNode[]): Promise<Balancer> {
    const frontPort = await freePort();
    const statsPort = await freePort();
    const file = path.join(dir, 'haproxy.cfg');
    await writeFile(file, haproxyConfig(frontPort, statsPort, nodes));
    // -db: stay in the foreground (no daemon), so the test owns the process.
    const proc = spawnGroup(HAPROXY_PATH, ['-db', '-f', file], process.env);
    const balancer = new Balancer(proc, `http://127.0.0.1:${frontPort}`, `http://127.0.0.1:${statsPort}/stats`);
    await balancer.waitAllUp(nodes.length);
    return balancer;
  }

  output(): string {
    return this.proc.output();
  }

  /** The backend's servers as HAProxy's stats page shows them (its CSV form). */
  async servers(): Promise<ServerStats[]> {
    const csv = await (await fetch(`${this.statsUrl};csv`)).text();
    const [header = '', ...lines] = csv.split('\n');
    const columns = header.replace(/^# /, '').split(',');
    const at = (name: string): number => columns.indexOf(name);
    return lines
      .map((line) => line.split(','))
      .filter((f) => f[at('pxname')] === 'nodes' && f[at('svname')] !== 'BACKEND' && f[at('svname')] !== 'FRONTEND')
      .map((f) => ({
        name: f[at('svname')] ?? '',
        status: f[at('status')] ?? '',
        total: Number(f[at('stot')] ?? 0),
        retries: Number(f[at('wretr')] ?? 0),
        redispatches: Number(f[at('wredis')] ?? 0),
      }));
  }

  /** Waits until HAProxy's health checks see `count` servers up. */
  async waitAllUp(count: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      if (this.proc.child.exitCode !== null) throw new Error(`haproxy exited:\n${this.proc.output()}`);
      try {
        const servers = await this.servers();
        last = servers.map((s) => `${s.name} ${s.status}`).join(', ');
        if (servers.length === count && servers.every((s) => s.status === 'UP')) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`HAProxy did not see ${count} servers up within ${timeoutMs} ms (${last}):\n${this.proc.output()}`);
  }

  async stop(): Promise<void> {
    killGroup(this.proc.child);
    await this.proc.exited;
  }
}
