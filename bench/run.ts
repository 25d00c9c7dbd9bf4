// `npm run bench`: the hot paths measured against this machine's own ceilings, in one run, on loopback only.
// A bare Fastify "hello" route first; then, on the machine's PostgreSQL (DATABASE_URL, else 127.0.0.1:5432) and
// on the embedded database, the service started as `npm start` starts it, and: (a) create collection, a fresh
// Idempotency-Key per request, 64 connections; (g) the same at half that rate; (c) list with limit=100; (b) the
// exact statements of a create and of its provider initiation replayed over raw pg connections (and the create's
// alone, and the list's); (e) webhook deliveries; (f) the service's peak RSS.
// With (a), how long its collections waited for their provider initiation (work a run leaves for later shows there).
// (i) collections reaching `successful` per second through the service (the sandbox simulator completing them), over
// 50 workspaces and over one; (h) pgbench's rate for the same durable SQL at its minimum (bench/pgbench), over 1,000
// workspaces and over one; and the statements each step of a collection's life sends, counted.
// Prints a table, checks the targets (ratios within this run), writes bench/results/latest.{md,json}.
//
//   npm run bench                       the full run (about 15 minutes)
//   npm run bench -- --seconds 2        a short run (the smoke check); results go to a temporary folder
//   npm run bench -- --only embedded    one database (pg | embedded)
//   npm run bench -- --profile          the service runs under `node --cpu-prof`; profiles in bench/profiles/
//   npm run bench -- --waits            PostgreSQL's wait events sampled every 10 ms during (h) and (i)
//   npm run bench -- --compare REV      that commit and this tree side by side (HTTP measurements; compare.md)
import { execFileSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createScratchDatabase } from '../test/helpers/database.js';
import { load, type LoadResult } from './lib/load.js';
import { paced } from './lib/paced.js';
import { makeWorkspaces, measureLifecycle, SUCCEEDING_PHONE, type LifecycleResult } from './lib/lifecycle.js';
import { pgbenchBaseline, PGBENCH_WORKSPACES, type PgbenchBaseline } from './lib/pgbench.js';
import {
  captureCreate,
  captureLifecycle,
  captureList,
  describe,
  replay,
  type Capture,
  type ReplayResult,
  type StepCost,
} from './lib/replay.js';
import { loadServer, nodeArgs, startService, type RunningService } from './lib/service.js';
import { roomFor } from './lib/connections.js';
import { describeWaits, type WaitSample } from './lib/waits.js';
import { CREATE_BODY, CREATE_PATH, createLoad, LIST_PATH, SERVICE_ENV } from './lib/requests.js';
import { analyze, settle, withClient } from './lib/settle.js';
import { measureWebhooks, type WebhookResult } from './lib/webhooks.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
    waits: { type: 'boolean', default: false },
    out: { type: 'string' },
    compare: { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);
if (!Number.isFinite(SECONDS) || SECONDS < 1) throw new Error('--seconds must be a number of seconds, at least 1');
const SHORT = Math.max(1, Math.round(SECONDS / 2));
const CONNECTIONS = 64;
const FULL = SECONDS >= 20;
const OUT =
  args.out ??
  (FULL ? path.join(import.meta.dirname, 'results') : await mkdtemp(path.join(os.tmpdir(), 'payments-bench-results-')));
const PROFILES = path.join(import.meta.dirname, 'profiles');
const ROOT = path.resolve(import.meta.dirname, '..');
const MACHINE_PG = 'postgres://postgres@127.0.0.1:5432/postgres';
/** (i): the workspaces the "many" run spreads its creates over. */
const LIFECYCLE_WORKSPACES = 50;
/** (i): how long the collections of a run may take to finish after its load stops. */
const DRAIN_SECONDS = Math.min(120, Math.max(30, 3 * SECONDS));
/** The same create with a payer number the sandbox takes to successful: a collection's whole life, for (i)'s counts. */
const LIFECYCLE_BODY = JSON.stringify({
  ...(JSON.parse(CREATE_BODY) as object),
  customer: { phone_number: SUCCEEDING_PHONE },
});

/** What the service does over HTTP: measured for this tree, and for both trees with `--compare`. */
interface ServicePass {
  database: string;
  create: LoadResult;
  /** From a collection's creation to its provider initiation (the payer's prompt), over the warm-up and (a). */
  create_to_initiation: { p50_ms: number; p99_ms: number };
  create_at_half_rate: LoadResult & { rate: number };
  list: LoadResult;
  webhooks: WebhookResult;
  peak_rss_mb: number;
}

/** The database's own ceilings (b), captured with this tree's code: not measured for a `--compare` commit. */
interface Ceilings {
  /** The list request's statements (token check, page query) replayed: the database's own ceiling for (c). */
  raw_list: ReplayResult;
  /** The create request's statements and its provider initiation's, replayed: the same work (a) does per collection. */
  raw_create: ReplayResult & { statements: { handler: string[]; initiation: string[] } };
  /** The create request's statements alone, replayed. */
  raw_create_handler: ReplayResult;
}

/** (i) Collections reaching successful through the service, over many workspaces and over one. */
interface Lifecycles {
  lifecycle_many: LifecycleResult;
  lifecycle_hot: LifecycleResult;
}

/** (h), and the statements of a collection's life. */
interface Baselines {
  pgbench: PgbenchBaseline;
  /** The statements each step of a collection's life sent through the real app. */
  lifecycle_cost: StepCost[];
}

type Pass = ServicePass & Lifecycles & Ceilings & Baselines;

const log = (m: string): void => void process.stderr.write(`bench: ${m}\n`);

function hello(): Promise<LoadResult> {
  return loadServer(nodeArgs('bench/hello.ts'), '/hello', SHORT);
}

async function measure(label: string, service: RunningService): Promise<ServicePass> {
  const auth = { authorization: `Bearer ${service.demoToken}` };
  const create = (seconds: number, rate?: number) =>
    rate === undefined
      ? load(createLoad(service, CONNECTIONS, seconds))
      : paced({ ...createLoad(service, CONNECTIONS, seconds), rate });
  const rss = async () => `peak RSS so far ${Math.round((await service.peakRss()) / 1048576)} MB`;
  log(`${label}: warming up; ${await rss()}`);
  await create(Math.min(3, SHORT));
  await settle(service.databaseUrl);
  log(`${label}: ${await rss()}; (a) create, ${CONNECTIONS} connections, ${SECONDS} s`);
  const max = await create(SECONDS);
  await settle(service.databaseUrl);
  const initiation = await createToInitiation(service.databaseUrl);
  // Statistics as autovacuum would have them a minute later. A table filled within seconds still has the planner's
  // guess for an empty one, and lists then read and sort every row of the workspace (12.5 ms for 20,000 rows)
  // instead of walking the index for the newest 101 (0.07 ms).
  await analyze(service.databaseUrl);
  const rate = Math.max(1, Math.round(max.per_second / 2));
  log(`${label}: ${await rss()}; (g) create at ${rate}/s, ${SHORT} s`);
  const half = await create(SHORT, rate);
  await settle(service.databaseUrl);
  log(`${label}: ${await rss()}; (c) list, limit=100, ${SHORT} s`);
  const list = await load({
    url: `${service.url}${LIST_PATH}`,
    headers: auth,
    connections: CONNECTIONS,
    seconds: SHORT,
    expect: 200,
  });
  log(`${label}: ${await rss()}; (e) webhook deliveries`);
  const webhooks = await measureWebhooks(service, FULL ? 5000 : 2000, FULL ? 300 : 100);
  const peak = await service.peakRss();
  log(`${label}: peak RSS ${Math.round(peak / 1048576)} MB`);
  return {
    database: label,
    create: max,
    create_to_initiation: initiation,
    create_at_half_rate: { ...half, rate },
    list,
    webhooks,
    peak_rss_mb: Math.round(peak / 1024 / 1024),
  };
}

/** (b) and the list's ceiling, with the service out of the way (see `pass`). */
async function ceilings(label: string, db: ServiceDatabase): Promise<Ceilings> {
  // On a shared server, once other processes leave room for the 64 connections.
  const raw = async (capture: Capture, seconds: number, withInitiation: boolean) => {
    await roomFor(db.databaseUrl, CONNECTIONS, (m) => log(`${label}: ${m}`));
    return replay(db.databaseUrl, capture, CONNECTIONS, seconds, withInitiation);
  };
  log(
    `${label}: (b) the statements of a create and its initiation over raw pg, ${CONNECTIONS} connections, ${SECONDS} s`,
  );
  const capture = await captureCreate(db.databaseUrl, db.dataDir, db.demoToken, CREATE_PATH, CREATE_BODY);
  const rawCreate = await raw(capture, SECONDS, true);
  log(`${label}: (b) the create request's statements alone over raw pg, ${CONNECTIONS} connections, ${SECONDS} s`);
  const rawHandler = await raw(capture, SECONDS, false);
  log(`${label}: (c) the list request's statements over raw pg, ${CONNECTIONS} connections, ${SHORT} s`);
  const rawList = await raw(await captureList(db.databaseUrl, db.dataDir, db.demoToken, LIST_PATH), SHORT, false);
  return {
    raw_list: rawList,
    raw_create: { ...rawCreate, statements: describe(capture) },
    raw_create_handler: rawHandler,
  };
}

/**
 * (i) Collections reaching successful through the service: creates at the maximum rate for SECONDS, spread over
 * LIFECYCLE_WORKSPACES workspaces made through the admin API, then the same on one workspace of its own.
 */
async function lifecycles(label: string, service: RunningService): Promise<Lifecycles> {
  const [hot = '', ...many] = await makeWorkspaces(service, LIFECYCLE_WORKSPACES + 1, 'bench-lifecycle');
  const run = async (what: string, authorizations: string[], reference: string) => {
    log(
      `${label}: (i) collections to successful, ${what}, ${CONNECTIONS} connections, ${SECONDS} s, then up to ${DRAIN_SECONDS} s to finish`,
    );
    const result = await measureLifecycle(
      service,
      `${service.url}${CREATE_PATH}`,
      authorizations,
      reference,
      CONNECTIONS,
      SECONDS,
      DRAIN_SECONDS,
      args.waits,
    );
    await settle(service.databaseUrl);
    return result;
  };
  return {
    lifecycle_many: await run(`${LIFECYCLE_WORKSPACES} workspaces`, many, 'bench-lifecycle-many'),
    lifecycle_hot: await run('one workspace', [hot], 'bench-lifecycle-hot'),
  };
}

/**
 * With the service out of the way (see `pass`): (b) and the list's ceiling; the statements of one collection's whole
 * life through the real app; (h) pgbench's baseline, in a scratch database on the same server.
 */
async function quiet(label: string, db: ServiceDatabase): Promise<Ceilings & Baselines> {
  const measured = await ceilings(label, db);
  log(`${label}: the statements of a collection's life, from its create to successful`);
  const cost = await captureLifecycle(db.databaseUrl, db.dataDir, db.demoToken, CREATE_PATH, LIFECYCLE_BODY);
  const pgbench = await pgbenchBaseline(db.databaseUrl, CONNECTIONS, SECONDS, args.waits, (m) => log(`${label}: ${m}`));
  return { ...measured, lifecycle_cost: cost, pgbench };
}

/** How long collections waited between creation and their provider initiation: work (a) left for later shows here. */
function createToInitiation(databaseUrl: string): Promise<{ p50_ms: number; p99_ms: number }> {
  return withClient(databaseUrl, async (db) => {
    const { rows } = await db.query<{ p: number[] }>(
      `SELECT percentile_disc(array[0.5, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM submitted_at - created_at) * 1000) AS p FROM collections`,
    );
    const [p50 = 0, p99 = 0] = rows[0]?.p ?? [];
    return { p50_ms: Math.round(p50), p99_ms: Math.round(p99) };
  });
}

/** What the measurements made with the service out of the way need: its database, its DATA_DIR, the demo token. */
type ServiceDatabase = Pick<RunningService, 'databaseUrl' | 'dataDir' | 'demoToken'>;

/**
 * Starts the service of `root` (this tree by default) on a fresh database and runs `work` on it; then `quiet`, the
 * measurements that want the service out of the way (its workers would compete, and would hand replayed collections
 * to the provider). On the machine's PostgreSQL they run once the service has stopped: its pools, open, would leave
 * too few of the server's 100 connections for 64 raw ones beside whatever else runs there. The embedded database
 * stops with the service, so there they run with the service frozen (SIGSTOP; the database runs on). Cleans up after.
 */
async function pass<T, Q>(
  label: string,
  base: string | undefined,
  work: (service: RunningService) => Promise<T>,
  quietWork: (db: ServiceDatabase) => Promise<Q>,
  root?: string,
): Promise<T & Q> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'payments-bench-'));
  const scratch = base === undefined ? undefined : await createScratchDatabase(base, 'bench');
  let service: RunningService | undefined;
  try {
    const profileDir = args.profile ? path.join(PROFILES, label === 'embedded' ? 'embedded' : 'postgresql') : undefined;
    if (profileDir) await mkdir(profileDir, { recursive: true });
    log(`${label}: starting the service${root ? ` of ${root}` : ''}`);
    service = await startService({
      databaseUrl: scratch?.url,
      dataDir,
      env: SERVICE_ENV,
      ...(profileDir ? { profileDir } : {}),
      ...(root ? { root } : {}),
    });
    const measured = await work(service);
    const db: ServiceDatabase = { databaseUrl: service.databaseUrl, dataDir, demoToken: service.demoToken };
    if (scratch === undefined) {
      service.pause();
      try {
        return { ...measured, ...(await quietWork(db)) };
      } finally {
        service.resume();
      }
    }
    await service.stop();
    return { ...measured, ...(await quietWork(db)) };
  } finally {
    await service?.stop();
    await scratch?.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

interface Target {
  database: string;
  target: string;
  measured: string;
  met: boolean;
}

function targets(helloRate: number, passes: Pass[]): Target[] {
  return passes.flatMap((p) => {
    const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 100) / 100);
    const t: Target[] = [
      {
        database: p.database,
        target: 'create ≥ 0.6 × raw SQL (create + initiation)',
        measured: `${ratio(p.create.per_second, p.raw_create.per_second)} ×`,
        met: p.create.per_second >= 0.6 * p.raw_create.per_second,
      },
      {
        database: p.database,
        target: 'create ≥ 0.5 × pgbench create',
        measured: `${ratio(p.create.per_second, p.pgbench.create_many.per_second)} ×`,
        met: p.create.per_second >= 0.5 * p.pgbench.create_many.per_second,
      },
      {
        database: p.database,
        target: 'lifecycle ≥ 0.33 × pgbench lifecycle',
        measured: `${ratio(p.lifecycle_many.per_second, p.pgbench.lifecycle_many.per_second)} ×`,
        met: p.lifecycle_many.per_second >= 0.33 * p.pgbench.lifecycle_many.per_second,
      },
      {
        database: p.database,
        target: 'one hot workspace ≥ 0.8 × many workspaces (lifecycles)',
        measured: `${ratio(p.lifecycle_hot.per_second, p.lifecycle_many.per_second)} × (pgbench: ${ratio(p.pgbench.lifecycle_hot.per_second, p.pgbench.lifecycle_many.per_second)} ×)`,
        met: p.lifecycle_hot.per_second >= 0.8 * p.lifecycle_many.per_second,
      },
      {
        database: p.database,
        target: 'p99 ≤ 25 ms at half the max create rate',
        measured: `${p.create_at_half_rate.p99_ms} ms`,
        met: p.create_at_half_rate.p99_ms <= 25,
      },
      {
        database: p.database,
        target: 'list ≥ 0.25 × hello',
        measured: `${ratio(p.list.per_second, helloRate)} × (the database alone: ${ratio(p.raw_list.per_second, helloRate)} ×)`,
        met: p.list.per_second >= 0.25 * helloRate,
      },
      {
        database: p.database,
        target: 'deliveries ≥ 1,000/s',
        measured: `${p.webhooks.deliveries_per_second}/s`,
        met: p.webhooks.deliveries_per_second >= 1000,
      },
      {
        database: p.database,
        target: 'p99 change→delivery ≤ 1 s',
        measured: `${p.webhooks.change_to_delivery_p99_ms} ms`,
        met: p.webhooks.change_to_delivery_p99_ms <= 1000,
      },
      { database: p.database, target: 'peak RSS ≤ 200 MB', measured: `${p.peak_rss_mb} MB`, met: p.peak_rss_mb <= 200 },
    ];
    if (p.database === 'embedded') {
      t.splice(1, 0, {
        database: p.database,
        target: 'embedded ≥ 500 creates/s',
        measured: `${p.create.per_second}/s`,
        met: p.create.per_second >= 500,
      });
    }
    return t;
  });
}

/** (i)'s two rows: collections reaching successful (created → successful), and the create requests that made them. */
function lifecycleRows(database: string, over: string, r: LifecycleResult): string[] {
  const left = r.still_open > 0 ? `; ${r.still_open} still open after ${DRAIN_SECONDS} s` : '';
  return [
    `| ${database} | (i) collections reaching successful, ${over} (${r.successful} of ${r.created} in ${r.seconds} s${left}); created → successful | ${r.per_second}/s | ${r.p50_ms} / ${r.p99_ms} ms | |`,
    `| ${database} | (i) their create requests, ${over}, ${CONNECTIONS} connections | ${r.create.per_second}/s | ${r.create.p50_ms} / ${r.create.p99_ms} ms | ${r.create.machine_busy_pct}% |`,
  ];
}

/** Per step of a collection's life: what the service sent (captured) against pgbench's one statement per step. */
function costTable(p: Pass): string[] {
  const total = p.lifecycle_cost.reduce(
    (t, s) => ({
      round_trips: t.round_trips + s.round_trips,
      statements: t.statements + s.statements,
      commits: t.commits + s.commits,
      simulator_round_trips: t.simulator_round_trips + s.simulator_round_trips,
    }),
    { round_trips: 0, statements: 0, commits: 0, simulator_round_trips: 0 },
  );
  const row = (step: string, c: typeof total, pgbench: string) =>
    `| ${step} | ${c.round_trips} / ${c.statements} / ${c.commits} | ${c.simulator_round_trips} | ${pgbench} |`;
  return [
    "Per step of a collection's life: round trips / statements / committed write transactions.",
    '',
    "| step | the service | of its round trips, the sandbox simulator's | pgbench (h) |",
    '|---|---|---|---|',
    ...p.lifecycle_cost.map((c) => row(c.step, c, '1 / 1 / 1')),
    row('the whole life', total, '4 / 4 / 4'),
    '',
    ...p.lifecycle_cost.map((c) => `- ${c.step}: ${c.names.join('; ')}`),
    '',
  ];
}

/** With `--waits`: PostgreSQL's backends of the measured database by wait event, on average over each run. */
function waitRows(passes: Pass[]): string[] {
  const runs = (p: Pass): [string, WaitSample | undefined][] => [
    ['(h) pgbench create, many workspaces', p.pgbench.create_many.waits],
    ['(h) pgbench create, one workspace', p.pgbench.create_hot.waits],
    ['(h) pgbench lifecycle, many workspaces', p.pgbench.lifecycle_many.waits],
    ['(h) pgbench lifecycle, one workspace', p.pgbench.lifecycle_hot.waits],
    ['(i) the service, many workspaces', p.lifecycle_many.waits],
    ['(i) the service, one workspace', p.lifecycle_hot.waits],
  ];
  const rows = passes.flatMap((p) =>
    runs(p).flatMap(([what, w]) => (w ? [`| ${p.database} | ${what} | ${describeWaits(w)} |`] : [])),
  );
  if (rows.length === 0) return [];
  return [
    'PostgreSQL backends by wait event, sampled every 10 ms: average backends in each state (share of all active).',
    '',
    '| database | run | top wait events |',
    '|---|---|---|',
    ...rows,
    '',
  ];
}

function markdown(at: string, helloResult: LoadResult, passes: Pass[], checks: Target[]): string {
  const ms = (r: { p50_ms: number; p99_ms: number; machine_busy_pct: number }) =>
    `${r.p50_ms} / ${r.p99_ms} ms | ${r.machine_busy_pct}%`;
  const rows = passes.flatMap((p) => [
    `| ${p.database} | (a) create collection, fresh key, ${CONNECTIONS} connections${p.create.refused ? ` (and ${Math.round(p.create.refused / p.create.seconds)}/s refused: 503 overloaded)` : ''} | ${p.create.per_second}/s | ${ms(p.create)} |`,
    `| ${p.database} | (a) its collections' creation → provider initiation | | ${p.create_to_initiation.p50_ms} / ${p.create_to_initiation.p99_ms} ms | |`,
    `| ${p.database} | (b) the statements of a create and its initiation, over raw pg, ${CONNECTIONS} connections | ${p.raw_create.per_second}/s | ${ms(p.raw_create)} |`,
    `| ${p.database} | (b) the create request's statements alone, over raw pg, ${CONNECTIONS} connections | ${p.raw_create_handler.per_second}/s | ${ms(p.raw_create_handler)} |`,
    `| ${p.database} | (h) pgbench create, ${PGBENCH_WORKSPACES} workspaces, ${CONNECTIONS} clients | ${p.pgbench.create_many.per_second}/s | ${ms(p.pgbench.create_many)} |`,
    `| ${p.database} | (h) pgbench create, one workspace, ${CONNECTIONS} clients | ${p.pgbench.create_hot.per_second}/s | ${ms(p.pgbench.create_hot)} |`,
    `| ${p.database} | (h) pgbench lifecycle (create, pending, processing, successful), ${PGBENCH_WORKSPACES} workspaces, ${CONNECTIONS} clients | ${p.pgbench.lifecycle_many.per_second}/s | ${ms(p.pgbench.lifecycle_many)} |`,
    `| ${p.database} | (h) pgbench lifecycle, one workspace, ${CONNECTIONS} clients | ${p.pgbench.lifecycle_hot.per_second}/s | ${ms(p.pgbench.lifecycle_hot)} |`,
    ...lifecycleRows(p.database, `${p.lifecycle_many.workspaces} workspaces`, p.lifecycle_many),
    ...lifecycleRows(p.database, 'one workspace', p.lifecycle_hot),
    `| ${p.database} | (g) create at a steady ${p.create_at_half_rate.rate}/s (half of (a)), open loop${p.create_at_half_rate.refused ? ` (${p.create_at_half_rate.refused} refused: 503 overloaded)` : ''} | ${p.create_at_half_rate.per_second}/s | ${ms(p.create_at_half_rate)} |`,
    `| ${p.database} | (c) list collections, limit=100 | ${p.list.per_second}/s | ${ms(p.list)} |`,
    `| ${p.database} | (c) the list request's statements alone, over raw pg, ${CONNECTIONS} connections | ${p.raw_list.per_second}/s | ${ms(p.raw_list)} |`,
    `| ${p.database} | (e) webhook deliveries (burst of ${p.webhooks.burst_events}); change→delivery over ${p.webhooks.paced_events} paced | ${p.webhooks.deliveries_per_second}/s | ${p.webhooks.change_to_delivery_p50_ms} / ${p.webhooks.change_to_delivery_p99_ms} ms | ${p.webhooks.machine_busy_pct}% |`,
    `| ${p.database} | (f) service peak RSS | ${p.peak_rss_mb} MB | | |`,
  ]);
  return [
    '# Benchmark',
    '',
    `${at}; Node ${process.version}; ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}); ${SECONDS} s runs (${SHORT} s for (c), (d), (g)); load from autocannon on loopback (creates: connections that wait out Retry-After).`,
    '',
    '| database | measurement | rate | p50 / p99 | machine busy |',
    '|---|---|---|---|---|',
    `| — | (d) bare Fastify hello, ${CONNECTIONS} connections | ${helloResult.per_second}/s | ${ms(helloResult)} |`,
    ...rows,
    '',
    '| database | target | measured | met |',
    '|---|---|---|---|',
    ...checks.map((c) => `| ${c.database} | ${c.target} | ${c.measured} | ${c.met ? 'yes' : '**no**'} |`),
    '',
    `(b) replays, per create, the statements one real create request sent: ${passes[0]?.raw_create.statements.handler.join('; ') ?? ''}; ` +
      `then those of its provider initiation: ${passes[0]?.raw_create.statements.initiation.join('; ') ?? ''}. ` +
      'The service makes each initiation as its collection is created, on connections of its own, so (a) does both; the target compares (a) with the replay of both.',
    '',
    // The same code on either database: counted once.
    ...(passes[0] ? costTable(passes[0]) : []),
    ...waitRows(passes),
  ].join('\n');
}

const servers: { label: string; base: string | undefined }[] = [];
if (args.only === undefined || args.only === 'pg')
  servers.push({ label: 'PostgreSQL', base: process.env.DATABASE_URL || MACHINE_PG });
if (args.only === undefined || args.only === 'embedded') servers.push({ label: 'embedded', base: undefined });
if (servers.length === 0) throw new Error("--only takes 'pg' or 'embedded'");

/**
 * `--compare REV`: that commit, checked out beside this tree (a git worktree sharing this tree's node_modules), is
 * measured the same way just before this tree, database by database, so both stand side by side in one run.
 */
function checkoutOf(rev: string): { root: string; name: string; remove(): void } {
  const git = (...argv: string[]): string => execFileSync('git', argv, { cwd: ROOT, encoding: 'utf8' }).trim();
  const name = git('rev-parse', '--short', rev);
  const root = path.join(os.tmpdir(), `payments-bench-${name}-${process.pid}`);
  git('worktree', 'add', '--detach', root, name);
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'));
  return { root, name, remove: () => void git('worktree', 'remove', '--force', root) };
}

function comparison(at: string, name: string, here: string, before: ServicePass[], after: ServicePass[]): string {
  const change = (b: number, a: number) => (b === 0 ? '' : `${a >= b ? '+' : ''}${Math.round(((a - b) / b) * 100)}%`);
  const row = (database: string, what: string, b: number, a: number, unit: string) =>
    `| ${database} | ${what} | ${b}${unit} | ${a}${unit} | ${change(b, a)} |`;
  const rows = before.flatMap((b, i) => {
    const a = after[i];
    if (!a) return [];
    const d = b.database;
    return [
      row(d, `(a) create collection, ${CONNECTIONS} connections`, b.create.per_second, a.create.per_second, '/s'),
      row(d, '(a) create p50', b.create.p50_ms, a.create.p50_ms, ' ms'),
      row(d, '(a) create p99', b.create.p99_ms, a.create.p99_ms, ' ms'),
      row(
        d,
        '(a) creation → provider initiation p99',
        b.create_to_initiation.p99_ms,
        a.create_to_initiation.p99_ms,
        ' ms',
      ),
      row(
        d,
        '(g) create p99 at half of (a), open loop',
        b.create_at_half_rate.p99_ms,
        a.create_at_half_rate.p99_ms,
        ' ms',
      ),
      row(d, '(c) list collections, limit=100', b.list.per_second, a.list.per_second, '/s'),
      row(d, '(e) webhook deliveries, burst', b.webhooks.deliveries_per_second, a.webhooks.deliveries_per_second, '/s'),
      row(
        d,
        '(e) change → delivery p99',
        b.webhooks.change_to_delivery_p99_ms,
        a.webhooks.change_to_delivery_p99_ms,
        ' ms',
      ),
      row(d, '(f) service peak RSS', b.peak_rss_mb, a.peak_rss_mb, ' MB'),
    ];
  });
  return [
    `# Benchmark: ${name} and ${here} side by side`,
    '',
    `${at}; Node ${process.version}; ${os.cpus().length} cores; ${SECONDS} s runs (${SHORT} s for (c), (g)); each database: ${name} first, then ${here}.`,
    '',
    `| database | measurement | ${name} | ${here} | change |`,
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

const at = new Date().toISOString();
if (args.compare !== undefined) {
  const other = checkoutOf(args.compare);
  const here = execFileSync('git', ['describe', '--always', '--dirty'], { cwd: ROOT, encoding: 'utf8' }).trim();
  try {
    const before: ServicePass[] = [];
    const after: ServicePass[] = [];
    for (const s of servers) {
      const nothing = () => Promise.resolve({});
      before.push(
        await pass(`${s.label} (${other.name})`, s.base, (service) => measure(s.label, service), nothing, other.root),
      );
      after.push(await pass(`${s.label} (${here})`, s.base, (service) => measure(s.label, service), nothing));
    }
    const report = comparison(at, other.name, here, before, after);
    process.stdout.write(`${report}\n`);
    await mkdir(OUT, { recursive: true });
    await writeFile(path.join(OUT, 'compare.md'), report);
    await writeFile(
      path.join(OUT, 'compare.json'),
      `${JSON.stringify({ at, base: other.name, here, before, after }, null, 2)}\n`,
    );
    log(`written to ${path.join(OUT, 'compare.md')} and compare.json`);
  } finally {
    other.remove();
  }
} else {
  log(`(d) bare Fastify hello, ${CONNECTIONS} connections, ${SHORT} s`);
  const helloResult = await hello();
  const passes: Pass[] = [];
  for (const s of servers)
    passes.push(
      await pass(
        s.label,
        s.base,
        async (service) => ({ ...(await measure(s.label, service)), ...(await lifecycles(s.label, service)) }),
        (db) => quiet(s.label, db),
      ),
    );
  const checks = targets(helloResult.per_second, passes);
  const report = markdown(at, helloResult, passes, checks);
  process.stdout.write(`${report}\n`);
  await mkdir(OUT, { recursive: true });
  await writeFile(path.join(OUT, 'latest.md'), report);
  await writeFile(
    path.join(OUT, 'latest.json'),
    `${JSON.stringify({ at, node: process.version, cpus: os.cpus().length, seconds: SECONDS, connections: CONNECTIONS, hello: helloResult, passes, targets: checks }, null, 2)}\n`,
  );
  log(`written to ${path.join(OUT, 'latest.md')} and latest.json${args.profile ? `; profiles in ${PROFILES}` : ''}`);
}
