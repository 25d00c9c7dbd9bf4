// `npm run bench:tail`: what the slow creates of (g) wait on (bench/README.md, "The half-load tail"). The service is
// started as `npm run bench` starts it, on the machine's PostgreSQL (or `--only embedded`), and driven as (a) then (g)
// drive it: a warm-up, the maximum create rate for `--seconds`, then half that rate (or `--rate N`), open loop, for
// `--seconds`. During (g), on one clock:
//   - every answer: when it was due, and its latency;
//   - every 10 ms, pg_stat_activity of the whole server: the measured database's backends by state and wait event,
//     and what the server's own processes (WAL writer, checkpointer, autovacuum) are doing;
//   - every 100 ms, the machine's CPU (busy, iowait) and every process's, from /proc: the service, this load
//     generator, PostgreSQL's processes, any other by name;
//   - every 250 ms, the service's event-loop delay since the last look and its garbage collection by kind (its
//     /metrics: prom-client resets the monitorEventLoopDelay histogram at each collection);
//   - pg_stat_wal, pg_stat_bgwriter and the database's transactions and rows, before and after;
//   - with `--profile`, the service under `node --cpu-prof`, each sample placed on the same clock.
// Then the slow requests (above `--slow` ms) are set beside what was happening while they were in flight, the others
// beside the same, and each of the five worst bursts alone. Prints the report; writes it with the raw timeline to
// `--out` (the temporary folder by default) as tail.json. `--root DIR` starts another checkout's service.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createScratchDatabase } from '../test/helpers/database.js';
import { load } from './lib/load.js';
import { paced } from './lib/paced.js';
import { createLoad, SERVICE_ENV } from './lib/requests.js';
import { analyze, settle } from './lib/settle.js';
import { startService, type RunningService } from './lib/service.js';
import { functionLabel, owner, readProfile, type CpuProfile } from './lib/profiles.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    only: { type: 'string', default: 'pg' },
    slow: { type: 'string', default: '25' },
    profile: { type: 'boolean', default: false },
    root: { type: 'string' },
    rate: { type: 'string' },
    out: { type: 'string', default: os.tmpdir() },
  },
});
const SECONDS = Number(args.seconds);
const SLOW_MS = Number(args.slow);
const CONNECTIONS = 64;
const ROOT = path.resolve(import.meta.dirname, '..');
const MACHINE_PG = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** performance.now() (ms) on the monotonic clock the CPU profile's times are on (µs). */
const HR_OFFSET_US = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;

const log = (m: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${m}`);
const now = () => performance.now();
const round1 = (n: number) => Math.round(n * 10) / 10;

interface Answer {
  from: number;
  ms: number;
}
interface DbSample {
  at: number;
  /** Our database's client backends that are not idle, by `state` and wait event. */
  ours: Record<string, number>;
  /** The server's own processes that are not at their idle wait, by `backend_type: wait event`. */
  server: string[];
}
interface CpuSample {
  at: number;
  busy_pct: number;
  iowait_pct: number;
  service_pct: number;
  /** Each kind of process's CPU since the previous sample, in percent of one core: the service, this load generator,
   * PostgreSQL's processes, and any other process by its name. */
  by: Record<string, number>;
}
interface LoopSample {
  at: number;
  /** The longest event-loop delay since the previous sample. */
  max_ms: number;
  /** Time in garbage collection since the previous sample, by kind (prom-client's nodejs_gc_duration_seconds). */
  gc_ms: Record<string, number>;
}

// The waits a server process sits in when it has nothing to do.
const IDLE_WAITS = new Set([
  'CheckpointerMain',
  'WalWriterMain',
  'BgWriterHibernate',
  'BgWriterMain',
  'AutoVacuumMain',
  'LogicalLauncherMain',
  'ArchiverMain',
  'SysLoggerMain',
  'WalSenderMain',
]);

/** /proc's clock ticks per second (USER_HZ). */
const TICKS = 100;

/** Every process's CPU time so far (user and system, in ticks), with its name. */
function processTicks(): Map<number, { name: string; ticks: number }> {
  const out = new Map<number, { name: string; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      out.set(pid, { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function machineCpu(): { busy: number; iowait: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), iowait: fields[4] ?? 0, total };
}

/** Runs samplers every `every` ms until `stop()`; each sampler is awaited before the next round. */
function every(ms: number, sample: () => Promise<void> | void): { stop: () => Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = now();
      await sample();
      const wait = ms - (now() - started);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** The server's WAL and checkpoint counters, and the measured database's transactions and rows. */
async function counters(db: pg.Client, database: string): Promise<Record<string, number>> {
  const { rows } = await db.query<Record<string, string>>(
    `SELECT w.wal_records, w.wal_fpi, w.wal_bytes, w.wal_buffers_full, w.wal_write, w.wal_sync,
            b.checkpoints_timed, b.checkpoints_req, b.buffers_checkpoint, b.buffers_clean, b.buffers_backend,
            b.buffers_backend_fsync, d.xact_commit, d.xact_rollback, d.tup_inserted, d.tup_updated, d.tup_deleted
     FROM pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d WHERE d.datname = $1`,
    [database],
  );
  return Object.fromEntries(Object.entries(rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
}

async function timeline(service: RunningService, database: string, rate: number) {
  // On another database of the server: pg_stat_activity shows them all, and the measured database's own counters
  // (transactions, rows) are then the service's alone.
  const elsewhere = new URL(service.databaseUrl);
  elsewhere.pathname = '/postgres';
  const db = new pg.Client({ connectionString: elsewhere.toString(), application_name: 'payments-bench-tail' });
  await db.connect();
  const answers: Answer[] = [];
  const dbSamples: DbSample[] = [];
  const cpuSamples: CpuSample[] = [];
  const loopSamples: LoopSample[] = [];
  const before = await counters(db, database);
  let lastCpu = machineCpu();
  let lastTicks = processTicks();
  const lastGc: Record<string, number> = {};
  let lastAt = now();
  const samplers = [
    every(10, async () => {
      const { rows } = await db.query<{
        ours: boolean;
        backend_type: string;
        state: string | null;
        wait: string | null;
      }>(
        `SELECT datname = $1 AND backend_type = 'client backend' AS ours, backend_type, state,
                wait_event_type || ':' || wait_event AS wait
         FROM pg_stat_activity WHERE pid <> pg_backend_pid()`,
        [database],
      );
      const sample: DbSample = { at: now(), ours: {}, server: [] };
      for (const r of rows) {
        if (r.ours) {
          if (r.state === 'idle' || r.state === null) continue;
          const key = r.state === 'idle in transaction' ? 'idle in transaction' : (r.wait ?? 'CPU');
          sample.ours[key] = (sample.ours[key] ?? 0) + 1;
        } else if (r.backend_type !== 'client backend') {
          const event = r.wait?.split(':')[1];
          if (event === undefined || !IDLE_WAITS.has(event))
            sample.server.push(`${r.backend_type}: ${r.wait ?? 'CPU'}`);
        }
      }
      dbSamples.push(sample);
    }),
    every(100, () => {
      const cpu = machineCpu();
      const ticksNow = processTicks();
      const at = now();
      const total = cpu.total - lastCpu.total;
      const seconds = (at - lastAt) / 1000;
      const by: Record<string, number> = {};
      for (const [pid, { name, ticks }] of ticksNow) {
        const used = ticks - (lastTicks.get(pid)?.ticks ?? ticks);
        if (used <= 0) continue;
        const kind =
          pid === service.pid
            ? 'service'
            : pid === process.pid
              ? 'load generator (bench)'
              : name === 'postgres'
                ? 'postgres'
                : name;
        by[kind] = (by[kind] ?? 0) + (used / TICKS / seconds) * 100;
      }
      if (total > 0)
        cpuSamples.push({
          at,
          busy_pct: ((cpu.busy - lastCpu.busy) / total) * 100,
          iowait_pct: ((cpu.iowait - lastCpu.iowait) / total) * 100,
          service_pct: by.service ?? 0,
          by,
        });
      lastCpu = cpu;
      lastTicks = ticksNow;
      lastAt = at;
    }),
    every(250, async () => {
      const text = await fetch(`${service.url}/metrics`).then((r) => r.text());
      const max = /^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(text)?.[1];
      const gc: Record<string, number> = {};
      for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} (\S+)/gm)) {
        const kind = m[1] as string;
        const total = Number(m[2]) * 1000;
        gc[kind] = total - (lastGc[kind] ?? total);
        lastGc[kind] = total;
      }
      if (max !== undefined) loopSamples.push({ at: now(), max_ms: Number(max) * 1000, gc_ms: gc });
    }),
  ];
  const started = now();
  let result;
  try {
    result = await paced({
      ...createLoad(service, CONNECTIONS, SECONDS),
      rate,
      onAnswer: (from, ms) => answers.push({ from, ms }),
    });
  } finally {
    for (const s of samplers) await s.stop();
  }
  // A backend reports its counters when idle, at most once a second.
  await new Promise((r) => setTimeout(r, 1500));
  const after = await counters(db, database);
  await db.end();
  const delta = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
  return { result, started, answers, dbSamples, cpuSamples, loopSamples, delta };
}

type Timeline = Awaited<ReturnType<typeof timeline>>;

/** Each kind of process's average CPU over `samples` (percent of one core), most first, those above 2 %. */
function cpuBy(samples: CpuSample[]): Record<string, number> {
  const sums = new Map<string, number>();
  for (const s of samples) for (const [k, v] of Object.entries(s.by)) sums.set(k, (sums.get(k) ?? 0) + v);
  return Object.fromEntries(
    [...sums.entries()]
      .map(([k, v]) => [k, Math.round(v / Math.max(1, samples.length))] as const)
      .filter(([, v]) => v > 2)
      .sort((a, b) => b[1] - a[1]),
  );
}

/** What was happening while a set of requests was in flight, averaged over the samples that fell inside them. */
function beside(t: Timeline, requests: Answer[]) {
  const within = <S extends { at: number }>(samples: S[]) =>
    samples.filter((s) => requests.some((r) => s.at >= r.from && s.at <= r.from + r.ms));
  const db = within(t.dbSamples);
  const cpu = within(t.cpuSamples);
  // The event loop's sample covers the 100 ms before it: take those whose window overlaps a request.
  const loop = t.loopSamples.filter((s) => requests.some((r) => s.at >= r.from && s.at - 250 <= r.from + r.ms));
  const waits = new Map<string, number>();
  for (const s of db) for (const [k, n] of Object.entries(s.ours)) waits.set(k, (waits.get(k) ?? 0) + n);
  const server = new Map<string, number>();
  for (const s of db) for (const k of s.server) server.set(k, (server.get(k) ?? 0) + 1);
  const avg = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const share = (n: number, of: number) => Math.round((n / Math.max(1, of)) * 1000) / 10;
  const totalBackends = [...waits.values()].reduce((a, b) => a + b, 0);
  return {
    requests: requests.length,
    db_samples: db.length,
    backends_busy_avg: Math.round((totalBackends / Math.max(1, db.length)) * 10) / 10,
    backends_by_state: [...waits.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([event, n]) => ({
        event,
        avg: Math.round((n / Math.max(1, db.length)) * 10) / 10,
        share_pct: share(n, totalBackends),
      })),
    server_processes: [...server.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([what, n]) => ({ what, in_pct_of_samples: share(n, db.length) })),
    machine_busy_pct: Math.round(avg(cpu.map((c) => c.busy_pct))),
    iowait_pct: Math.round(avg(cpu.map((c) => c.iowait_pct)) * 10) / 10,
    service_cpu_pct_of_a_core: Math.round(avg(cpu.map((c) => c.service_pct))),
    cpu_pct_of_a_core_by_process: cpuBy(cpu),
    event_loop_max_ms: Math.round(Math.max(0, ...loop.map((l) => l.max_ms)) * 10) / 10,
    // Garbage collection per second of the samples overlapping the requests, by kind.
    gc_ms_per_s: Object.fromEntries(
      ['minor', 'major', 'incremental', 'weakcb'].map((kind) => [
        kind,
        Math.round((loop.reduce((a, l) => a + (l.gc_ms[kind] ?? 0), 0) / Math.max(1, loop.length / 4)) * 10) / 10,
      ]),
    ),
    event_loop_max_ms_median: Math.round(
      [...loop.map((l) => l.max_ms)].sort((a, b) => a - b)[Math.floor(loop.length / 2)] ?? 0,
    ),
  };
}

/**
 * Where the service's CPU went while `requests` were in flight, against the whole of (g): self time by owner and by
 * function, and by the outermost function of this project's on the stack (what piece of work it was part of).
 */
function profileBeside(
  profile: CpuProfile,
  bundle: string | undefined,
  requests: Answer[],
  whole: { from: number; to: number },
  groups: Answer[][],
) {
  // `npm start` runs one bundle of src/; esbuild marks where each source file begins (`// src/x.ts`).
  const starts: [number, string][] = [];
  (bundle ?? '').split('\n').forEach((line, i) => {
    const m = /^\/\/ (src\/\S+\.ts)$/.exec(line);
    if (m) starts.push([i, m[1] as string]);
  });
  const sourceOf = (line: number): string | undefined => {
    let found: string | undefined;
    for (const [at, file] of starts) {
      if (at > line) break;
      found = file;
    }
    return found;
  };
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  // The piece of work a sample belongs to: the innermost function on its stack from src/modules (not the database
  // and platform layers every piece goes through), with its source file; else the outermost of this project's.
  const entryOf = new Map<number, string>();
  const entry = (id: number): string => {
    const known = entryOf.get(id);
    if (known !== undefined) return known;
    let outer: string | undefined;
    let label: string | undefined;
    for (let at: number | undefined = id; at !== undefined && label === undefined; at = parent.get(at)) {
      const node = byId.get(at);
      if (!node || !/\/\.build\//.test(node.callFrame.url)) continue;
      const file = sourceOf(node.callFrame.lineNumber);
      const name = `${node.callFrame.functionName || '(anonymous)'} ${file ?? 'bundle'}`;
      if (file?.startsWith('src/modules/')) label = name;
      outer = name;
    }
    const node = byId.get(id);
    const result = label ?? outer ?? owner(node?.callFrame.url ?? '', node?.callFrame.functionName ?? '');
    entryOf.set(id, result);
    return result;
  };
  const toUs = (ms: number) => ms * 1000 + HR_OFFSET_US;
  const windows = requests.map((r) => [toUs(r.from), toUs(r.from + r.ms)] as const).sort((a, b) => a[0] - b[0]);
  const inside = (t: number) => windows.some(([a, b]) => t >= a && t <= b);
  // For a write to a socket or file (a native leaf), whose code asked for it: the nearest package or project frame.
  const writerOf = (id: number): string => {
    for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
      const node = byId.get(at);
      const who = node ? owner(node.callFrame.url, node.callFrame.functionName) : '';
      if (who !== '' && who !== 'node: built-ins' && !who.startsWith('(')) return who;
    }
    return 'unknown';
  };
  const tally = () => ({
    writers: new Map<string, number>(),
    total: 0,
    owners: new Map<string, number>(),
    functions: new Map<string, number>(),
    entries: new Map<string, number>(),
  });
  const slow = tally();
  const all = tally();
  const perGroup = groups.map((g) => ({
    windows: g.map((r) => [toUs(r.from), toUs(r.from + r.ms)] as const),
    tally: tally(),
  }));
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    const micros = profile.timeDeltas[i] ?? 0;
    t += micros;
    if (t < toUs(whole.from) || t > toUs(whole.to)) return;
    const node = byId.get(id);
    if (!node) return;
    const into = inside(t) ? [slow, all] : [all];
    for (const g of perGroup) if (g.windows.some(([a, b]) => t >= a && t <= b)) into.push(g.tally);
    for (const m of into) {
      m.total += micros;
      const who = owner(node.callFrame.url, node.callFrame.functionName);
      m.owners.set(who, (m.owners.get(who) ?? 0) + micros);
      const fn = functionLabel(node);
      m.functions.set(fn, (m.functions.get(fn) ?? 0) + micros);
      const e = entry(id);
      m.entries.set(e, (m.entries.get(e) ?? 0) + micros);
      if (/^write(v|String|Buffer)$/.test(node.callFrame.functionName) && node.callFrame.url === '') {
        const w = `${node.callFrame.functionName} from ${writerOf(id)}`;
        m.writers.set(w, (m.writers.get(w) ?? 0) + micros);
      }
    }
  });
  const top = (m: Map<string, number>, total: number, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([what, us]) => `${((100 * us) / Math.max(1, total)).toFixed(1)} %  ${what}`);
  const side = (m: ReturnType<typeof tally>) => ({
    sampled_ms: Math.round(m.total / 1000),
    owners: top(m.owners, m.total, 12),
    functions: top(m.functions, m.total, 15),
    entries: top(m.entries, m.total, 15),
    writes: top(m.writers, m.total, 8),
  });
  return {
    while_slow_in_flight: side(slow),
    whole_of_g: side(all),
    worst_bursts: perGroup.map((g) => {
      const { sampled_ms, functions, entries, writes } = side(g.tally);
      return { sampled_ms, functions: functions.slice(0, 8), entries: entries.slice(0, 8), writes: writes.slice(0, 3) };
    }),
  };
}

/** Slow requests grouped into bursts: each starts within 100 ms of the previous one's start. */
function bursts(slow: Answer[]): Answer[][] {
  const sorted = [...slow].sort((a, b) => a.from - b.from);
  const groups: Answer[][] = [];
  for (const a of sorted) {
    const last = groups.at(-1);
    if (last && a.from - (last.at(-1)?.from ?? 0) <= 100) last.push(a);
    else groups.push([a]);
  }
  return groups;
}

/** (a), then (g) with its timeline; the report, the slow answers and the span of (g). */
async function measure(service: RunningService, label: string) {
  const database = new URL(service.databaseUrl).pathname.slice(1);
  // As bench/run.ts before (g): a warm-up, (a), the service caught up after each, fresh statistics.
  await load(createLoad(service, CONNECTIONS, 3));
  await settle(service.databaseUrl);
  const max = await load(createLoad(service, CONNECTIONS, SECONDS));
  // (g)'s rate is half of (a)'s, as the bench's; `--rate` holds it fixed, to set two trees side by side at one load.
  const rate = args.rate ? Number(args.rate) : Math.max(1, Math.round(max.per_second / 2));
  log(`(a) ${max.per_second}/s; waiting for the service to catch up`);
  await settle(service.databaseUrl);
  await analyze(service.databaseUrl);
  log(`(g) at ${rate}/s for ${SECONDS} s, with the timeline`);
  const t = await timeline(service, database, rate);
  const slow = t.answers.filter((a) => a.ms > SLOW_MS);
  const fast = t.answers.filter((a) => a.ms <= SLOW_MS);
  const worst = bursts(slow)
    .sort((a, b) => Math.max(...b.map((x) => x.ms)) - Math.max(...a.map((x) => x.ms)))
    .slice(0, 5);
  const report = {
    database: label,
    rate,
    result: t.result,
    slow_over_ms: SLOW_MS,
    slow: slow.length,
    slow_share_pct: Math.round((slow.length / Math.max(1, t.answers.length)) * 1000) / 10,
    bursts: bursts(slow).length,
    beside_slow: beside(t, slow),
    beside_fast: beside(t, fast),
    worst_bursts: worst.map((g) => ({
      at_s: Math.round(((g[0]?.from ?? 0) - t.started) / 100) / 10,
      max_ms: Math.round(Math.max(...g.map((x) => x.ms)) * 10) / 10,
      ...beside(t, g),
    })),
    counters: t.delta,
    // Per create of (g), with the initiation and events each causes.
    per_create: {
      transactions: round1((t.delta.xact_commit ?? 0) / Math.max(1, t.result.requests)),
      rows_written: round1(
        ((t.delta.tup_inserted ?? 0) + (t.delta.tup_updated ?? 0) + (t.delta.tup_deleted ?? 0)) /
          Math.max(1, t.result.requests),
      ),
      wal_bytes: Math.round((t.delta.wal_bytes ?? 0) / Math.max(1, t.result.requests)),
      cpu_ms: Object.fromEntries(
        Object.entries(cpuBy(t.cpuSamples)).map(([k, pct]) => [
          k,
          round1(((pct / 100) * t.result.seconds * 1000) / Math.max(1, t.result.requests)),
        ]),
      ),
    },
  };
  await writeFile(path.join(args.out, 'tail.json'), `${JSON.stringify({ ...report, timeline: t }, null, 1)}\n`);
  return { report, slow, worst, whole: { from: t.started, to: t.started + t.result.seconds * 1000 } };
}

async function main() {
  const base = args.only === 'embedded' ? undefined : MACHINE_PG;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'payments-bench-tail-'));
  const scratch = base === undefined ? undefined : await createScratchDatabase(base, 'bench');
  log(`starting the service on ${scratch ? 'the machine PostgreSQL' : 'the embedded database'}`);
  const profileDir = args.profile ? path.join(dataDir, 'profile') : undefined;
  const service = await startService({
    databaseUrl: scratch?.url,
    dataDir,
    env: SERVICE_ENV,
    ...(profileDir ? { profileDir } : {}),
    ...(args.root ? { root: args.root } : {}),
  });
  // The bundle `npm start` runs, copied while it exists (it is removed as the service exits): the profile's lines
  // are its lines.
  const bundle = profileDir
    ? readFileSync(path.join(args.root ?? ROOT, '.build', `main-${service.pid}.mjs`), 'utf8')
    : undefined;
  let measured: Awaited<ReturnType<typeof measure>> | undefined;
  try {
    measured = await measure(service, scratch ? 'PostgreSQL' : 'embedded');
  } finally {
    await service.stop(); // the profile is written as the service exits
    await scratch?.drop();
  }
  const file = profileDir && readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
  const profile =
    profileDir && file
      ? profileBeside(readProfile(path.join(profileDir, file)), bundle, measured.slow, measured.whole, measured.worst)
      : undefined;
  console.log(JSON.stringify({ ...measured.report, ...(profile ? { profile } : {}) }, null, 2));
}

await main();
