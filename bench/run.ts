// `npm run bench`: the hot paths measured against this machine's own ceilings, in one run, on loopback only.
// A bare Fastify "hello" route first; then, on the machine's PostgreSQL (DATABASE_URL, else 127.0.0.1:5432) and
// on the embedded database, the service started as `npm start` starts it, and: (a) create collection, a fresh
// Idempotency-Key per request, 64 connections; (g) the same at half that rate; (c) list with limit=100; (b) the
// exact statements of a create and of its provider initiation replayed over raw pg connections (and the create's
// alone, and the list's); (e) webhook deliveries; (f) the service's peak RSS.
// With (a), how long its collections waited for their provider initiation (work a run leaves for later shows there).
// Prints a table, checks the targets (ratios within this run), writes bench/results/latest.{md,json}.
//
//   npm run bench                       the full run (about 8 minutes)
//   npm run bench -- --seconds 2        a short run (the smoke check); results go to a temporary folder
//   npm run bench -- --only embedded    one database (pg | embedded)
//   npm run bench -- --profile          the service runs under `node --cpu-prof`; profiles in bench/profiles/
//   npm run bench -- --compare REV      that commit and this tree side by side (HTTP measurements; compare.md)
import { execFileSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createScratchDatabase } from '../test/helpers/database.js';
import { load, type LoadResult } from './lib/load.js';
import { paced } from './lib/paced.js';
import { captureCreate, captureList, describe, replay, type ReplayResult } from './lib/replay.js';
import { loadServer, nodeArgs, startService, type RunningService } from './lib/service.js';
import { measureWebhooks, type WebhookResult } from './lib/webhooks.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
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

const CREATE_PATH = '/v1/collections/KE/rails/mpesa';
const LIST_PATH = '/v1/collections?limit=100';
// A payer number ending 0003: the sandbox accepts the prompt and the payer never answers (it would expire after the
// rail's 10 minutes), as a real provider leaves a collection pending until the payer acts. Each create costs its
// submission too, and no later step spills into the next measurement.
const CREATE_BODY = JSON.stringify({
  amount: 1500,
  currency: 'KES',
  reference: 'bench-order-42',
  customer: { phone_number: '+254712340003' },
  metadata: { order_id: '42', cart: { items: 2 } },
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

type Pass = ServicePass & Ceilings;

const log = (m: string): void => void process.stderr.write(`bench: ${m}\n`);

function hello(): Promise<LoadResult> {
  return loadServer(nodeArgs('bench/hello.ts'), '/hello', SHORT);
}

/** Runs `work` on a connection of its own to the service's database, closed afterwards. */
async function withClient<T>(databaseUrl: string, work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/** Waits until the service has handed every new collection to its provider and published every event. */
function settle(databaseUrl: string): Promise<void> {
  return withClient(databaseUrl, async (db) => {
    const until = Date.now() + 120_000;
    for (;;) {
      const { rows } = await db.query<{ backlog: string }>(
        `SELECT (SELECT count(*) FROM collections WHERE submitted_at IS NULL) + (SELECT count(*) FROM outbox WHERE published_at IS NULL) AS backlog`,
      );
      if (Number(rows[0]?.backlog) === 0) return;
      if (Date.now() > until)
        throw new Error(`the service still had ${rows[0]?.backlog} collections or events to process after 120 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
  });
}

async function measure(label: string, service: RunningService): Promise<ServicePass> {
  const auth = { authorization: `Bearer ${service.demoToken}` };
  const createLoad = (seconds: number) => ({
    url: `${service.url}${CREATE_PATH}`,
    method: 'POST' as const,
    headers: { ...auth, 'content-type': 'application/json' },
    body: CREATE_BODY,
    freshKey: true,
    connections: CONNECTIONS,
    seconds,
    expect: 201,
  });
  const create = (seconds: number, rate?: number) =>
    rate === undefined ? load(createLoad(seconds)) : paced({ ...createLoad(seconds), rate });
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

/**
 * (b) and the list's ceiling, last, with the service frozen (SIGSTOP; the embedded database runs on): its workers
 * would otherwise hand the replayed collections to the provider during the replay, and the backlog would spill into
 * later runs.
 */
async function ceilings(label: string, service: RunningService): Promise<Ceilings> {
  log(
    `${label}: (b) the statements of a create and its initiation over raw pg, ${CONNECTIONS} connections, ${SECONDS} s`,
  );
  service.pause();
  try {
    const capture = await captureCreate(
      service.databaseUrl,
      service.dataDir,
      service.demoToken,
      CREATE_PATH,
      CREATE_BODY,
    );
    const raw = await replay(service.databaseUrl, capture, CONNECTIONS, SECONDS, true);
    log(`${label}: (b) the create request's statements alone over raw pg, ${CONNECTIONS} connections, ${SECONDS} s`);
    const rawHandler = await replay(service.databaseUrl, capture, CONNECTIONS, SECONDS, false);
    log(`${label}: (c) the list request's statements over raw pg, ${CONNECTIONS} connections, ${SHORT} s`);
    const rawList = await replay(
      service.databaseUrl,
      await captureList(service.databaseUrl, service.dataDir, service.demoToken, LIST_PATH),
      CONNECTIONS,
      SHORT,
      false,
    );
    return { raw_list: rawList, raw_create: { ...raw, statements: describe(capture) }, raw_create_handler: rawHandler };
  } finally {
    service.resume();
  }
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

async function analyze(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, (db) => db.query('ANALYZE'));
}

/** Starts the service of `root` (this tree by default) on a fresh database, runs `work` on it, and cleans up. */
async function pass<T>(
  label: string,
  base: string | undefined,
  work: (service: RunningService) => Promise<T>,
  root?: string,
): Promise<T> {
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
      ...(profileDir ? { profileDir } : {}),
      ...(root ? { root } : {}),
    });
    return await work(service);
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

function markdown(at: string, helloResult: LoadResult, passes: Pass[], checks: Target[]): string {
  const ms = (r: { p50_ms: number; p99_ms: number; machine_busy_pct: number }) =>
    `${r.p50_ms} / ${r.p99_ms} ms | ${r.machine_busy_pct}%`;
  const rows = passes.flatMap((p) => [
    `| ${p.database} | (a) create collection, fresh key, ${CONNECTIONS} connections | ${p.create.per_second}/s | ${ms(p.create)} |`,
    `| ${p.database} | (a) its collections' creation → provider initiation | | ${p.create_to_initiation.p50_ms} / ${p.create_to_initiation.p99_ms} ms | |`,
    `| ${p.database} | (b) the statements of a create and its initiation, over raw pg, ${CONNECTIONS} connections | ${p.raw_create.per_second}/s | ${ms(p.raw_create)} |`,
    `| ${p.database} | (b) the create request's statements alone, over raw pg, ${CONNECTIONS} connections | ${p.raw_create_handler.per_second}/s | ${ms(p.raw_create_handler)} |`,
    `| ${p.database} | (g) create at a steady ${p.create_at_half_rate.rate}/s (half of (a)), open loop | ${p.create_at_half_rate.per_second}/s | ${ms(p.create_at_half_rate)} |`,
    `| ${p.database} | (c) list collections, limit=100 | ${p.list.per_second}/s | ${ms(p.list)} |`,
    `| ${p.database} | (c) the list request's statements alone, over raw pg, ${CONNECTIONS} connections | ${p.raw_list.per_second}/s | ${ms(p.raw_list)} |`,
    `| ${p.database} | (e) webhook deliveries (burst of ${p.webhooks.burst_events}); change→delivery over ${p.webhooks.paced_events} paced | ${p.webhooks.deliveries_per_second}/s | ${p.webhooks.change_to_delivery_p50_ms} / ${p.webhooks.change_to_delivery_p99_ms} ms | ${p.webhooks.machine_busy_pct}% |`,
    `| ${p.database} | (f) service peak RSS | ${p.peak_rss_mb} MB | | |`,
  ]);
  return [
    '# Benchmark',
    '',
    `${at}; Node ${process.version}; ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}); ${SECONDS} s runs (${SHORT} s for (c), (d), (g)); load from autocannon on loopback.`,
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
      before.push(await pass(`${s.label} (${other.name})`, s.base, (service) => measure(s.label, service), other.root));
      after.push(await pass(`${s.label} (${here})`, s.base, (service) => measure(s.label, service)));
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
      await pass(s.label, s.base, async (service) => ({
        ...(await measure(s.label, service)),
        ...(await ceilings(s.label, service)),
      })),
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
