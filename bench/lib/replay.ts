// The database's own ceiling for a request: the exact statements it sends, replayed over raw `pg` connections. For a
// create collection, the exact statements one real create request sends
// (its token check, then its transaction: idempotency lock and lookup, the collection, its event and outbox row,
// the stored response, commit) and, after them, those of its provider initiation (the collection read back, the
// sandbox provider's operation, the move to pending with its event), captured from the real app and replayed over
// raw `pg` connections, with fresh ids, key and times on every replay, at the HTTP run's concurrency and for its duration. Statements the app's
// pool prepares are replayed prepared under the same names, so both send PostgreSQL the same protocol.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createPool } from '../../src/db/pool.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { runSimulatorStep } from '../../src/modules/providers/sandbox.simulator.js';
import { createService } from '../../src/service.js';
import { summarise, withCpu } from './load.js';

type Value = string | number | boolean | null | Date;

export interface Statement {
  text: string;
  values: Value[];
  /** The prepared statement's name the app's pool gave it (statements with parameters): replayed prepared too. */
  name?: string;
}

export interface Capture {
  /** The request's statements, then (a create's) its provider initiation's. */
  statements: Statement[];
  /** How many of `statements` are the request's own (the rest: a create's provider initiation). */
  handler: number;
  /** The Idempotency-Key a write was sent with (a fresh one on every replay). */
  key?: string;
  /** When the request was made: uuidv7 ids from this moment on were made by it and are replaced on every replay. */
  at: number;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}/g;
/** The sandbox provider's reference for an operation (unique): a fresh one on every replay. */
const SANDBOX_REFERENCE = /sbx_[0-9a-f]{24}/g;

interface Recording {
  app: Awaited<ReturnType<typeof createService>>['app'];
  services: Awaited<ReturnType<typeof createService>>['services'];
  /** Every statement the app's pool sent since `start`. */
  statements: Statement[];
  /** The app's pool, for set-up outside the recording. */
  pool: pg.Pool;
  start(): void;
  stop(): void;
}

/**
 * The real app (in this process, on the same database, without workers), warmed by one list request, with a
 * recorder of the statements its pool sends between `start` and `stop`. Nothing else runs on that pool meanwhile.
 * `dataDir` is the running service's: its secrets key opens the secrets stored in the database.
 */
async function withRecordingApp<T>(
  databaseUrl: string,
  dataDir: string,
  token: string,
  work: (r: Recording) => Promise<T>,
  env: Record<string, string> = {},
): Promise<T> {
  const config = loadConfig({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent', ...env });
  const pool = createPool(databaseUrl, 2);
  const { app, services } = await createService(config, pool, { logger: false });
  const statements: Statement[] = [];
  const original = pg.Client.prototype.query;
  const recording: Recording = {
    app,
    services,
    statements,
    pool,
    start() {
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const [first, second] = args;
        const text = typeof first === 'string' ? first : (first as { text: string }).text;
        const name = typeof first === 'string' ? undefined : (first as { name?: string }).name;
        const values = (Array.isArray(second) ? second : ((first as { values?: Value[] }).values ?? [])) as Value[];
        statements.push({ text, values: [...values], ...(name === undefined ? {} : { name }) });
        return (original as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof original;
    },
    stop() {
      pg.Client.prototype.query = original;
    },
  };
  try {
    await app.inject({ method: 'GET', url: '/v1/collections?limit=1', headers: { authorization: `Bearer ${token}` } }); // warm
    await new Promise((r) => setTimeout(r, 5));
    return await work(recording);
  } finally {
    recording.stop();
    await app.close();
    await pool.end();
  }
}

/** One create request, then its provider initiation, as the service makes it right after the create. */
export function captureCreate(
  databaseUrl: string,
  dataDir: string,
  token: string,
  path_: string,
  body: string,
): Promise<Capture> {
  return withRecordingApp(databaseUrl, dataDir, token, async ({ app, services, statements, start, stop }) => {
    const key = randomUUID();
    const at = Date.now();
    start();
    const res = await app.inject({
      method: 'POST',
      url: path_,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
      payload: body,
    });
    if (res.statusCode !== 201) throw new Error(`the captured create answered ${res.statusCode}: ${res.body}`);
    const created = JSON.parse(res.body) as { collection_id: string; integrator_id: string };
    const handler = statements.length;
    // The same work per collection the service does during (a), where a payer's prompt goes out as the collection is created.
    services.submitter.kick('collection', created.integrator_id, created.collection_id);
    await services.submitter.stop();
    stop();
    const initiation = statements.slice(handler);
    if (
      !statements.some((s) => /INSERT INTO collections/.test(s.text)) ||
      !statements.some((s) => /\bCOMMIT\b/.test(s.text))
    ) {
      throw new Error(
        `the capture did not see the create's transaction: ${statements.map((s) => s.text.slice(0, 40)).join(' | ')}`,
      );
    }
    if (!initiation.some((s) => /UPDATE collections/.test(s.text))) {
      throw new Error(
        `the capture did not see the provider initiation: ${initiation.map((s) => s.text.slice(0, 40)).join(' | ')}`,
      );
    }
    return { statements, handler, key, at };
  });
}

/** One list request (read only: replayed as it was). */
export function captureList(databaseUrl: string, dataDir: string, token: string, url: string): Promise<Capture> {
  return withRecordingApp(databaseUrl, dataDir, token, async ({ app, statements, start, stop }) => {
    const at = Date.now();
    start();
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    stop();
    if (res.statusCode !== 200) throw new Error(`the captured list answered ${res.statusCode}: ${res.body}`);
    if (!statements.some((s) => /FROM collections/.test(s.text))) {
      throw new Error(
        `the capture did not see the list's query: ${statements.map((s) => s.text.slice(0, 40)).join(' | ')}`,
      );
    }
    return { statements, handler: statements.length, at };
  });
}

/** The statements of one round trip (several when sent together), whitespace collapsed. */
function parts(text: string): string[] {
  return text
    .replace(/\s+/g, ' ')
    .split(/;(?=\s*(?:BEGIN|COMMIT|ROLLBACK|SELECT|INSERT|UPDATE|DELETE|WITH)\b)/)
    .map((part) => part.trim());
}

/** A short name for a statement: its verb and table, or the writes of a data-modifying WITH. */
function statementName(t: string): string {
  const table = /(?:INSERT INTO|FROM|UPDATE) (\w+)/.exec(t)?.[1];
  const verb = t.split(' ')[0] ?? '';
  if (/pg_try_advisory_xact_lock/.test(t)) return 'SELECT pg_try_advisory_xact_lock';
  if (verb === 'WITH')
    return `WITH … ${[...t.matchAll(/(INSERT INTO|(?<!DO )UPDATE) (\w+)/g)].map((m) => `${m[1]} ${m[2]}`).join(', ')}`;
  return table ? `${verb} ${table}` : verb;
}

/** A short name for each round trip (statements sent together are joined by +). */
function roundTripName(s: Statement): string {
  return parts(s.text).map(statementName).join(' + ');
}

/** A short name for each round trip (statements sent together are joined by +), for the report. */
export function describe(capture: Capture): { handler: string[]; initiation: string[] } {
  const named = capture.statements.map(roundTripName);
  return { handler: named.slice(0, capture.handler), initiation: named.slice(capture.handler) };
}

/** What one step of a collection's life costs the database: counted from the statements the service sent. */
export interface StepCost {
  step: string;
  /** Queries sent, each waiting for its answer (pg sends one at a time on a connection). */
  round_trips: number;
  /** SQL statements in them. */
  statements: number;
  /** Transactions that write, each a commit PostgreSQL makes durable: BEGIN … COMMIT blocks and writes on their own. */
  commits: number;
  /** Round trips that are the sandbox simulator's own bookkeeping (its `sandbox_operations`), not a real provider's. */
  simulator_round_trips: number;
  names: string[];
}

/** The sandbox simulator's own bookkeeping: its `sandbox_operations`. */
const simulators = (text: string): boolean => /\bsandbox_operations\b/.test(text);

/**
 * The round trips that are the simulator's: its statements, and the BEGIN and COMMIT of a transaction holding nothing
 * but its statements (its provider call's operation, written in a transaction of its own).
 */
function simulatorRoundTrips(statements: Statement[]): number {
  let count = 0;
  let block: Statement[] | undefined;
  for (const s of statements) {
    const verb = (s.text.trimStart().split(/\s/)[0] ?? '').toUpperCase();
    if (verb === 'BEGIN') block = [];
    else if ((verb === 'COMMIT' || verb === 'ROLLBACK') && block !== undefined) {
      if (block.length > 0 && block.every((b) => simulators(b.text))) count += 2;
      block = undefined;
    } else {
      block?.push(s);
      if (simulators(s.text)) count++;
    }
  }
  return count;
}

function stepCost(step: string, captured: Statement[]): StepCost {
  // The API's rate limiter writes its counters on a timer (rate_limit_buckets): a capture catches that write or not
  // by the clock, and it belongs to no collection's life, so it is left out.
  const statements = captured.filter((s) => !/\brate_limit_buckets\b/.test(s.text));
  let commits = 0;
  let inTransaction = false;
  for (const s of statements) {
    for (const part of parts(s.text)) {
      const verb = (part.split(' ')[0] ?? '').toUpperCase();
      if (verb === 'BEGIN') inTransaction = true;
      else if (verb === 'COMMIT') {
        commits++;
        inTransaction = false;
      } else if (verb === 'ROLLBACK') inTransaction = false;
      else if (!inTransaction && /\b(INSERT INTO|UPDATE|DELETE FROM)\b/.test(part)) commits++;
    }
  }
  return {
    step,
    round_trips: statements.length,
    statements: statements.reduce((n, s) => n + parts(s.text).length, 0),
    commits,
    simulator_round_trips: simulatorRoundTrips(statements),
    names: statements.map(roundTripName),
  };
}

/**
 * The statements of a collection's whole life through the real app (in this process, the running service frozen):
 * its create request; its initiation (the claim, the sandbox provider's operation, the move to pending); then each
 * step of the sandbox simulator as its worker sends it (the claim of due steps, the signed callback applied through
 * the provider-notice path, the step marked done), to processing, then to successful. `body` must name a payer
 * the sandbox takes to successful. Nothing else may be due at the simulator meanwhile: the capture checks.
 */
export function captureLifecycle(
  databaseUrl: string,
  dataDir: string,
  token: string,
  path_: string,
  body: string,
): Promise<StepCost[]> {
  return withRecordingApp(
    databaseUrl,
    dataDir,
    token,
    async ({ app, services, statements, pool, start, stop }) => {
      const simulator = services.providers.sandbox;
      if (!simulator) throw new Error('the recording app has no sandbox simulator');
      // What the measured runs left unfinished (steps the stopped service never sent) would be due at the simulator
      // with this one, older, so sent first: the run's database is thrown away after, so their scripts end here.
      await pool.query('UPDATE sandbox_operations SET next_at = NULL WHERE next_at IS NOT NULL');
      const marks: number[] = [];
      start();
      const res = await app.inject({
        method: 'POST',
        url: path_,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
        },
        payload: body,
      });
      if (res.statusCode !== 201) throw new Error(`the captured create answered ${res.statusCode}: ${res.body}`);
      const created = JSON.parse(res.body) as { collection_id: string; integrator_id: string };
      marks.push(statements.length);
      services.submitter.kick('collection', created.integrator_id, created.collection_id);
      await services.submitter.stop();
      marks.push(statements.length);
      for (let step = 0; step < 2; step++) {
        await new Promise((r) => setTimeout(r, 10)); // the step is due 1 ms after the last (SANDBOX_STEP_MS=1 here)
        await runSimulatorStep(simulator, services.notices, app.log);
        marks.push(statements.length);
      }
      stop();
      const [createdAt = 0, initiated = 0, processing = 0, successful = 0] = marks;
      const steps = [
        stepCost('create request', statements.slice(0, createdAt)),
        stepCost('initiation: to pending', statements.slice(createdAt, initiated)),
        stepCost('to processing', statements.slice(initiated, processing)),
        stepCost('to successful', statements.slice(processing, successful)),
      ];
      for (const s of steps.slice(2)) {
        const notices = s.names.filter((n) => n.includes('provider_notices')).length;
        if (notices !== 1)
          throw new Error(
            `the capture of '${s.step}' applied ${notices} provider notices, not one: ${s.names.join(' | ')}`,
          );
      }
      const after = await app.inject({
        method: 'GET',
        url: `/v1/collections/${created.collection_id}`,
        headers: { authorization: `Bearer ${token}` },
      });
      const status = (JSON.parse(after.body) as { status?: string }).status;
      if (status !== 'successful') throw new Error(`the captured collection ended ${status}, not successful`);
      return steps;
    },
    { SANDBOX_STEP_MS: '1' },
  );
}

/** The captured statements with this replay's own ids, key, sandbox references and times in place of the captured ones. */
function fresh(capture: Capture): Statement[] {
  const map = new Map<string, string>(capture.key === undefined ? [] : [[capture.key, randomUUID()]]);
  const shift = Date.now() - capture.at;
  const swap = (s: string): string => {
    let out = s.replace(UUID, (id) => {
      if (parseInt(id.replace(/-/g, '').slice(0, 12), 16) < capture.at) return id; // made before the request: kept
      let next = map.get(id);
      if (next === undefined) map.set(id, (next = uuidv7()));
      return next;
    });
    if (capture.key !== undefined && out.includes(capture.key))
      out = out.replaceAll(capture.key, map.get(capture.key) as string);
    return out.replace(SANDBOX_REFERENCE, (ref) => {
      let next = map.get(ref);
      if (next === undefined) map.set(ref, (next = `sbx_${randomBytes(12).toString('hex')}`));
      return next;
    });
  };
  // Values written as literals sit in the text itself.
  // A prepared statement's text holds no values (they are its parameters): it is replayed under its name, unchanged.
  return capture.statements.map((st) => ({
    text: st.name === undefined ? swap(st.text) : st.text,
    values: st.values.map((v) =>
      typeof v === 'string' ? swap(v) : v instanceof Date ? new Date(v.getTime() + shift) : v,
    ),
    ...(st.name === undefined ? {} : { name: st.name }),
  }));
}

export interface ReplayResult {
  transactions: number;
  seconds: number;
  per_second: number;
  p50_ms: number;
  p99_ms: number;
  machine_busy_pct: number;
}

/** Replays the capture (`withInitiation`: the create and its provider initiation; else the create request's own statements). */
export function replay(
  databaseUrl: string,
  capture: Capture,
  connections: number,
  seconds: number,
  withInitiation: boolean,
): Promise<ReplayResult> {
  return withCpu(() => replayFor(databaseUrl, capture, connections, seconds, withInitiation));
}

async function replayFor(
  databaseUrl: string,
  capture: Capture,
  connections: number,
  seconds: number,
  withInitiation: boolean,
): Promise<Omit<ReplayResult, 'machine_busy_pct'>> {
  const clients: pg.Client[] = [];
  const latencies: number[] = [];
  let started: number;
  try {
    // One after another, so that a server out of connections fails the run cleanly, closing those already open.
    for (let i = 0; i < connections; i++) {
      const c = new pg.Client({ connectionString: databaseUrl, application_name: 'payments-bench-replay' });
      c.on('error', () => undefined); // a connection the server ends fails its next query instead
      await c.connect();
      clients.push(c);
    }
    started = performance.now();
    const until = started + seconds * 1000;
    await Promise.all(
      clients.map(async (client) => {
        while (performance.now() < until) {
          const statements = withInitiation ? fresh(capture) : fresh(capture).slice(0, capture.handler);
          const t0 = performance.now();
          for (const s of statements) await client.query(s);
          latencies.push(performance.now() - t0);
        }
      }),
    );
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
  const elapsed = (performance.now() - started) / 1000;
  const { count, seconds: measured, per_second, p50_ms, p99_ms } = summarise(latencies, elapsed);
  return { transactions: count, seconds: measured, per_second, p50_ms, p99_ms };
}
