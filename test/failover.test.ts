// The service survives losing its database: one service process on a Patroni-managed PostgreSQL pair in
// synchronous mode behind HAProxy (test/helpers/patroni.ts). Under steady creates from concurrent clients, each
// retrying its own Idempotency-Key on 503, the primary's postmaster is killed with -9, twice (the old primary rejoining
// in between); then a planned switchover. Each time: the same process keeps serving, nothing is answered 500, every
// key ends 201 with one collection, every acknowledged collection is there afterwards, its payer prompted once by the
// operator (M-Pesa's Daraja fake, whose STK Push has no idempotency key), its webhook delivered, and the ledger
// verifies. The outage (kill to the first 201 after it) is printed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import pg from 'pg';
import { DarajaFake } from '../fakes/mpesa-daraja.js';
import { freePort } from '../src/db/embedded.js';
import { DARAJA_FAKE_ENTRY } from './helpers/connectors.js';
import { createScratchDatabase, type ScratchDatabase } from './helpers/database.js';
import { FAST_LIFECYCLE, request, validCollection, waitFor } from './helpers/harness.js';
import { patroniMissing, startCluster, TIMINGS, type Cluster } from './helpers/patroni.js';
import { killGroup, spawnGroup, type Child } from './helpers/processes.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { npmStartArgs, PROJECT_ROOT } from './helpers/start-command.js';

/** Times the primary's postmaster is killed (the old primary rejoins before the next). */
const FAILOVER_RUNS = 2;
const CLIENT_LOOPS = 4;
/** Each loop sends a new key at most this often. */
const PACE_MS = 120;
/** Steady load before the kill or the switchover, and after the first 201 that follows it. */
const STEADY_MS = 1500;
/** How long one key is retried (on 503, or 409 while an earlier attempt with it is still in flight), at most. */
const KEY_RETRY_MS = 45_000;
const KEY_RETRY_ATTEMPTS = 100;
/** Keys per loop and run, at most: a bound on the load whatever happens. */
const MAX_KEYS_PER_LOOP = 400;
/** After the kill, how long the service has to answer 201 again. */
const RECOVERY_MS = 60_000;
const SETTLE_MS = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

let payers = 0;
/** A Kenyan number of its own for each collection (none of the fake's test numbers, 25471100xxxx). */
const nextPayer = (): string => `2547220${String(10_000 + (payers += 1)).slice(-5)}`;

/** The rail's operator: M-Pesa's Daraja API, as the fake documents it; payers approve 200 ms after the prompt. */
const daraja = new DarajaFake({ actAfterMs: 200 });
const CALLBACK_TOKEN = 'cb_failover_0123456789abcdef';

interface Answer {
  status: number;
  text: string;
  sentAt: number;
  at: number;
  retryAfter: string | null;
}

/** A create that never throws: status 0 when the service could not be reached at all. */
async function post(base: string, token: string, key: string, body: unknown): Promise<Answer> {
  const sentAt = Date.now();
  try {
    const res = await fetch(`${base}/v1/collections/KE/rails/mpesa`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    return {
      status: res.status,
      text: await res.text(),
      sentAt,
      at: Date.now(),
      retryAfter: res.headers.get('retry-after'),
    };
  } catch (err) {
    return { status: 0, text: String((err as Error).cause ?? err), sentAt, at: Date.now(), retryAfter: null };
  }
}

interface KeyOutcome {
  key: string;
  /** The last answer's status: 201 when the key made (or found) its collection. */
  status: number;
  collectionId: string | undefined;
  attempts: number;
  last: string;
}

/** What the clients saw during one part: every answer, and each key's outcome. */
class Load {
  readonly answers: Answer[] = [];
  readonly outcomes: KeyOutcome[] = [];
  /** Problem codes of the 503 answers. */
  readonly codes = new Map<string, number>();
  /** Each key's payer (MSISDN as Daraja writes it). */
  readonly phones = new Map<string, string>();
  private running = true;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly base: string,
    private readonly token: string,
    private readonly prefix: string,
  ) {}

  start(): void {
    this.loops = Array.from({ length: CLIENT_LOOPS }, (_, loop) => this.loop(loop));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  statuses(): Map<number, number> {
    const counts = new Map<number, number>();
    for (const a of this.answers) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
    return counts;
  }

  /** The longest time between two consecutive 201 answers received in [from, to]. */
  longestGap(from: number, to: number): number {
    const times = this.answers
      .filter((a) => a.status === 201)
      .map((a) => a.at)
      .filter((at) => at >= from && at <= to)
      .sort((a, b) => a - b);
    return times.slice(1).reduce((gap, at, i) => Math.max(gap, at - (times[i] as number)), 0);
  }

  /** The first 201 to a request sent at or after `t`. */
  firstCreatedAfter(t: number): Answer | undefined {
    return this.answers.filter((a) => a.status === 201 && a.sentAt >= t).sort((a, b) => a.at - b.at)[0];
  }

  private async loop(loop: number): Promise<void> {
    for (let i = 0; this.running && i < MAX_KEYS_PER_LOOP; i++) {
      const paced = sleep(PACE_MS);
      const key = `${this.prefix}-${loop}-${i}`;
      // The reference is the key: a second collection made for one key would show as a repeated reference. Each key
      // has a payer of its own, so the operator's prompts can be counted per collection.
      const phone = nextPayer();
      this.phones.set(key, phone);
      this.outcomes.push(
        await this.createWithRetries(key, validCollection({ reference: key, customer: { phone_number: `+${phone}` } })),
      );
      await paced;
    }
  }

  /** One key until it is answered 201 or something that is not worth retrying, within the bounds above. */
  private async createWithRetries(key: string, body: unknown): Promise<KeyOutcome> {
    const began = Date.now();
    let attempts = 0;
    for (;;) {
      attempts += 1;
      const answer = await post(this.base, this.token, key, body);
      this.answers.push(answer);
      if (answer.status === 503) {
        const code = problemCode(answer.text);
        this.codes.set(code, (this.codes.get(code) ?? 0) + 1);
      }
      const retryable =
        answer.status === 503 || (answer.status === 409 && problemCode(answer.text) === 'idempotency_key_in_use');
      if (!retryable || attempts >= KEY_RETRY_ATTEMPTS || Date.now() - began > KEY_RETRY_MS) {
        const collectionId =
          answer.status === 201 ? (JSON.parse(answer.text) as { collection_id: string }).collection_id : undefined;
        return {
          key,
          status: answer.status,
          collectionId,
          attempts,
          last: `${answer.status} ${answer.text.slice(0, 300)}`,
        };
      }
      // Retry-After honoured, within bounds: never sooner than 100 ms, never later than 2 s.
      const seconds = Number(answer.retryAfter);
      await sleep(Number.isFinite(seconds) && seconds > 0 ? Math.min(2000, seconds * 1000) : 100);
    }
  }
}

function problemCode(text: string): string {
  try {
    return String((JSON.parse(text) as { code?: unknown }).code);
  } catch {
    return `(not JSON: ${text.slice(0, 80)})`;
  }
}

const missing = patroniMissing();
if (missing) process.stdout.write(`# failover test skipped: ${missing}\n`);

describe('the service on a Patroni pair losing its primary', { skip: missing }, () => {
  let cluster: Cluster | undefined;
  let database: ScratchDatabase;
  let db: pg.Pool;
  let dir = '';
  let receiver: Receiver;
  let service: Child | undefined;
  let servicePid = 0;
  let base = '';
  let adminToken = '';
  let env: NodeJS.ProcessEnv = {};
  /** Kill to the first 201 after it, per run. */
  const outages: number[] = [];

  /** The service's errors (and anything not JSON it printed), the last of them, then the cluster's processes. */
  const output = (): string => {
    const lines = (service?.output() ?? '')
      .split('\n')
      .filter((line) => !/^\{"level":(10|20|30|40),/.test(line))
      .slice(-30)
      .map((line) => line.slice(0, 800));
    return `--- service (pid ${servicePid}), its errors\n${lines.join('\n')}\n${cluster?.output() ?? ''}`;
  };

  before(async () => {
    const began = Date.now();
    cluster = await startCluster();
    const clusterMs = Date.now() - began;
    database = await createScratchDatabase(cluster.url, 'failover');
    db = new pg.Pool({ connectionString: database.url, max: 4 });
    // Its connections die with the primary: an error on an idle one is not a test failure.
    db.on('error', () => undefined);
    dir = await mkdtemp(path.join(os.tmpdir(), 'payments-failover-'));
    receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
    const port = await freePort();
    await daraja.start();
    const providersFile = path.join(dir, 'providers.json');
    await writeFile(
      providersFile,
      JSON.stringify({
        connectors: [{ ...DARAJA_FAKE_ENTRY, base_url: daraja.url, callback_token: CALLBACK_TOKEN }],
      }),
    );
    env = { ...process.env };
    for (const name of ['TEST_DATABASE_URL', 'PAYMENTS_ENV', 'PROVIDERS_FILE', 'SECRETS_KEY_PREVIOUS'])
      delete env[name];
    env = {
      ...env,
      ...FAST_LIFECYCLE,
      DATABASE_URL: database.url,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dir,
      // KE/mpesa goes to the Daraja fake; its callbacks come back here. A callback lost to the failover (Daraja sends
      // each once) is made up for by the status query of the reconciliation, after 2 s of quiet.
      PROVIDERS_FILE: providersFile,
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      RECONCILE_AFTER_SECONDS: '2',
      SECRETS_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
      DB_POOL_SIZE: '6',
      WORKER_DB_POOL_SIZE: '10',
      WEBHOOK_POLL_MS: '50',
      // A delivery attempt cut off by the failover is tried again within seconds, not the default's minutes.
      WEBHOOK_RETRY_SCHEDULE: '0s,1s,2s,5s,10s,20s',
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
      AUTH_FAILURES_PER_MINUTE: '1000000',
    };
    service = spawnGroup(process.execPath, npmStartArgs(), env);
    servicePid = service.child.pid ?? 0;
    base = `http://127.0.0.1:${port}`;
    const started = service;
    await waitFor(
      'the service to be ready',
      async () => {
        if (started.child.exitCode !== null) throw new Error(`the service exited:\n${output()}`);
        return (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined;
      },
      120_000,
    );
    adminToken = JSON.parse(await readFile(path.join(dir, 'credentials.json'), 'utf8')).admin.token;
    process.stdout.write(
      `# Patroni pair (ttl ${TIMINGS.ttl} s, loop_wait ${TIMINGS.loop_wait} s) and HAProxy ready in ${clusterMs} ms; service ready in ${Date.now() - began - clusterMs} ms\n`,
    );
  });

  after(async () => {
    if (service) killGroup(service.child);
    await service?.exited;
    await receiver?.close();
    await db?.end();
    await cluster?.stop();
    await daraja.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A workspace of its own for each part, with a webhook endpoint on the receiver. */
  async function workspace(name: string): Promise<{ id: string; token: string }> {
    assert.ok(service);
    // An earlier part may have left the service dead: say so rather than fail on a refused connection.
    assert.equal(service.child.exitCode ?? service.child.signalCode, null, `the service had exited:\n${output()}`);
    const res = await request({ baseUrl: base }, 'POST', '/v1/admin/workspaces', { token: adminToken, body: { name } });
    assert.equal(res.status, 201, res.text);
    const token: string = res.body.credential.token;
    const endpoint = await request({ baseUrl: base }, 'POST', '/v1/webhooks/endpoints', {
      token,
      body: { url: receiver.url },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    return { id: res.body.workspace.id, token };
  }

  /** The same process, never exited, still ready. */
  async function assertServiceAlive(): Promise<void> {
    assert.ok(service);
    assert.equal(service.child.exitCode, null, `the service exited:\n${output()}`);
    assert.equal(service.child.signalCode, null, `the service was killed:\n${output()}`);
    assert.equal(service.child.pid, servicePid);
    process.kill(servicePid, 0);
    await waitFor(
      'the service ready again',
      async () => ((await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined),
      30_000,
    );
  }

  /**
   * What every part checks once its load has stopped: no 500 (nor any answer but 201, 503 database_unavailable and
   * 409 key in use), every key 201 with one collection, each acknowledged collection readable, initiated once, its
   * events recorded once each and its collection.created delivered; the ledger verifies through HAProxy.
   */
  async function checkAfter(t: TestContext, load: Load, ws: { id: string; token: string }): Promise<void> {
    await assertServiceAlive();
    // What the clients were answered: gathered and reported together at the end, after the checks on what was
    // acknowledged, so that one failing run says everything it found.
    const problems: string[] = [];
    const statuses = load.statuses();
    for (const status of [...statuses.keys()].filter((s) => ![201, 503, 409].includes(s))) {
      const examples = load.answers.filter((a) => a.status === status).slice(0, 3);
      problems.push(
        `${statuses.get(status)} answers ${status}, e.g. ${examples.map((a) => a.text.slice(0, 300)).join(' | ')}`,
      );
    }
    const otherCodes = [...load.codes].filter(([code]) => code !== 'database_unavailable');
    if (otherCodes.length > 0) problems.push(`503 answers with another code than database_unavailable: ${otherCodes}`);
    const failed = load.outcomes.filter((o) => o.status !== 201);
    if (failed.length > 0)
      problems.push(
        `${failed.length} of ${load.outcomes.length} keys did not end 201: ` +
          failed
            .slice(0, 5)
            .map((o) => `${o.key} after ${o.attempts} attempts: ${o.last}`)
            .join(' | '),
      );
    for (const problem of problems) t.diagnostic(`problem: ${problem}`);
    const created = load.outcomes.filter((o) => o.status === 201);
    const acked = new Map(created.map((o) => [o.collectionId as string, o.key]));
    assert.equal(acked.size, created.length, 'each key its own collection');
    const unanswered = new Set(failed.map((o) => o.key));

    // One collection per key; every acknowledged one there; any other is a key whose outcome the client never learnt.
    const { rows: collections } = await db.query<{ id: string; reference: string }>(
      'SELECT id, reference FROM collections WHERE workspace_id = $1',
      [ws.id],
    );
    const byReference = new Map<string, string[]>();
    for (const c of collections) byReference.set(c.reference, [...(byReference.get(c.reference) ?? []), c.id]);
    assert.deepEqual(
      [...byReference].filter(([, ids]) => ids.length > 1),
      [],
      'a key made more than one collection',
    );
    const stored = new Set(collections.map((c) => c.id));
    assert.deepEqual(
      [...acked.keys()].filter((id) => !stored.has(id)),
      [],
      'acknowledged collections missing from the database',
    );
    for (const c of collections)
      if (acked.has(c.id)) assert.equal(c.reference, acked.get(c.id), `collection ${c.id} is its key's`);
      else assert.ok(unanswered.has(c.reference), `collection ${c.id} (${c.reference}) was never acknowledged`);

    // Every acknowledged collection read back through the API.
    const ids = [...acked.keys()];
    for (let i = 0; i < ids.length; i += 16) {
      const reads = await Promise.all(
        ids
          .slice(i, i + 16)
          .map((id) => request({ baseUrl: base }, 'GET', `/v1/collections/${id}`, { token: ws.token })),
      );
      for (const [k, read] of reads.entries()) {
        assert.equal(read.status, 200, `GET ${ids[i + k]}: ${read.text}`);
        assert.equal(read.body.collection_id, ids[i + k]);
      }
    }

    // Daraja's payers approve: each collection reaches successful; its collection.created reaches the receiver.
    const delivered = (): Set<string> => {
      const seen = new Set<string>();
      for (const r of receiver.requests) {
        const body = JSON.parse(r.body) as { type: string; data: { collection_id?: string } };
        if (body.type === 'collection.created' && body.data.collection_id) seen.add(body.data.collection_id);
      }
      return seen;
    };
    /** What a collection that did not settle looks like here and at the fake: for the failure's message. */
    const unsettled = async (): Promise<string> => {
      const { rows } = await db.query<Record<string, unknown>>(
        `SELECT c.id AS collection_id, c.reference, c.status, c.provider_reference, c.claimed_reference, c.created_at,
                c.updated_at, (SELECT string_agg(e.type, ',' ORDER BY e.id) FROM events e
                                WHERE e.workspace_id = c.workspace_id AND e.object_id = c.id) AS events
           FROM collections c WHERE c.workspace_id = $1 AND c.status <> 'successful'`,
        [ws.id],
      );
      return rows
        .map((r) => {
          const phone = load.phones.get(String(r.reference)) ?? '';
          const pushes = [...daraja.stk.values()].filter((p) => p.phone === phone);
          const sent = daraja.callbacks.filter((c) =>
            JSON.stringify(c.body).includes(pushes[0]?.checkoutRequestId ?? '-'),
          );
          return `--- not settled: ${JSON.stringify(r)}\n    pushes ${JSON.stringify(pushes)}\n    callbacks ${JSON.stringify(
            sent.map((c) => ({ status: c.status, url: c.url })),
          )}, status queries ${daraja.requests('POST', 'stkpushquery').length}`;
        })
        .join('\n');
    };
    let progress = '';
    await waitFor(
      'every acknowledged collection successful and its collection.created delivered',
      async () => {
        const { rows } = await db.query<{ n: number; successful: number }>(
          `SELECT count(*)::int AS n, (count(*) FILTER (WHERE status = 'successful'))::int AS successful
           FROM collections WHERE workspace_id = $1`,
          [ws.id],
        );
        const seen = delivered();
        const arrived = ids.filter((id) => seen.has(id)).length;
        progress = `${rows[0]?.successful} of ${rows[0]?.n} successful, ${arrived} of ${ids.length} acknowledged ones' collection.created delivered`;
        return rows[0]?.successful === rows[0]?.n && arrived === ids.length ? true : undefined;
      },
      SETTLE_MS,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message} (${progress})\n${await unsettled()}\n${output()}`);
    });

    // Initiated once: each collection's payer was prompted by exactly one STK push, and the collection recorded that
    // push's CheckoutRequestID (Daraja's STK Push has no idempotency key: a push sent again is a second prompt).
    const prompted = new Map<string, string[]>();
    for (const push of daraja.stk.values())
      prompted.set(push.phone, [...(prompted.get(push.phone) ?? []), push.checkoutRequestId]);
    // The push's own answer may be written after its callback moved the collection on (the answer held while the
    // database was away): the CheckoutRequestID is then the one the callback claimed, and confirmed.
    const { rows: references } = await db.query<{ reference: string; provider_reference: string | null }>(
      `SELECT reference, coalesce(provider_reference, claimed_reference) AS provider_reference
       FROM collections WHERE workspace_id = $1`,
      [ws.id],
    );
    const pushedTwice: string[] = [];
    for (const c of references) {
      const pushes = prompted.get(load.phones.get(c.reference) ?? '') ?? [];
      if (pushes.length !== 1 || pushes[0] !== c.provider_reference)
        pushedTwice.push(`${c.reference}: ${pushes.length} pushes, recorded ${c.provider_reference}`);
    }
    assert.deepEqual(pushedTwice, [], 'each payer prompted once, by the push its collection recorded');
    const { rows: repeated } = await db.query<{ object_id: string; type: string; n: number }>(
      `SELECT object_id, type, count(*)::int AS n FROM events WHERE workspace_id = $1 AND object_type = 'collection'
       GROUP BY object_id, type HAVING count(*) > 1`,
      [ws.id],
    );
    assert.deepEqual(repeated, [], 'no collection event recorded twice (no transition made twice)');

    // npm run ledger:verify, through HAProxy to the current primary.
    const verify = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/ledger-verify.ts'], {
      cwd: PROJECT_ROOT,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(verify.status, 0, `${verify.stdout}${verify.stderr}`);
    assert.match(verify.stdout, /the ledger is sound/);

    const answers = [...statuses].map(([s, n]) => `${n}×${s}`).join(', ');
    const slowest = Math.max(...load.answers.map((a) => a.at - a.sentAt));
    const retried = load.outcomes.filter((o) => o.attempts > 1).length;
    const summary = `${load.outcomes.length} keys, ${ids.length} acknowledged (all found, initiated once, delivered), ${collections.length} collections; answers ${answers}; ${retried} keys retried; slowest answer ${slowest} ms`;
    t.diagnostic(summary);
    assert.deepEqual(problems, [], `${summary}\n${problems.join('\n')}\n${output()}`);
  }

  /** Runs `action` under the clients' load, after STEADY_MS of it; the load stops when the action is done. */
  async function underLoad<T>(load: Load, action: () => Promise<T>): Promise<T> {
    load.start();
    try {
      await sleep(STEADY_MS);
      assert.ok(load.firstCreatedAfter(0), `no 201 under steady load: ${JSON.stringify([...load.statuses()])}`);
      return await action();
    } finally {
      await load.stop();
    }
  }

  /** Waits for a 201 to a request sent at or after `t`, then lets the load run on for STEADY_MS. */
  async function recovered(load: Load, t: number, what: string): Promise<void> {
    const probe = async (): Promise<Answer | undefined> => {
      if (service?.child.exitCode !== null || service.child.signalCode !== null)
        throw new Error(`the service exited (${service?.child.exitCode ?? service?.child.signalCode})`);
      return load.firstCreatedAfter(t);
    };
    await waitFor(what, probe, RECOVERY_MS).catch((err: Error) => {
      throw new Error(`${err.message}; answers ${JSON.stringify([...load.statuses()])}\n${output()}`);
    });
    await sleep(STEADY_MS);
  }

  for (let run = 1; run <= FAILOVER_RUNS; run++) {
    it(`kill -9 of the primary's postmaster under load (run ${run}): the same process serves on, no 500, every key 201 once, nothing lost, the old primary rejoins`, async (t) => {
      assert.ok(cluster);
      const ha = cluster;
      const ws = await workspace(`failover-${run}`);
      const load = new Load(base, ws.token, `kill${run}-${randomBytes(3).toString('hex')}`);
      const { killedAt, oldLeader, promoted, seen } = await underLoad(load, async () => {
        const already = ha.events((await ha.steadyLeader()).name).length;
        const killed = await ha.killPrimaryPostmaster();
        const newLeader = await ha.waitForNewLeader(killed.oldLeader.name, killed.killedAt);
        // A promotion, not the old primary restarted in place: the new leader is on the next timeline.
        assert.ok(newLeader.leader.timeline > killed.oldLeader.timeline, JSON.stringify([killed, newLeader]));
        await recovered(load, killed.killedAt, 'a 201 after the kill');
        return { killedAt: killed.killedAt, oldLeader: killed.oldLeader.name, promoted: newLeader, seen: already };
      });
      const first = load.firstCreatedAfter(killedAt);
      assert.ok(first);
      const outage = first.at - killedAt;
      outages.push(outage);
      const gap = load.longestGap(killedAt - STEADY_MS, Date.now());
      const rejoined = await ha.waitForRejoin(oldLeader);
      const how = ha
        .events(oldLeader)
        .slice(seen)
        .filter((line) => /pg_rewind exit code|removing data directory|bootstrap from leader/i.test(line));
      t.diagnostic(
        `run ${run}: ${oldLeader}'s postmaster killed; ${promoted.leader.name} promoted after ${promoted.promotedMs} ms, ` +
          `reached through HAProxy after ${promoted.routedMs} ms; first 201 after ${outage} ms (longest time ` +
          `without a 201: ${gap} ms); ${oldLeader} back as ${rejoined.member.role} (${rejoined.syncState}) ` +
          `${rejoined.tookMs} ms later (${how.length > 0 ? how.join('; ') : 'no pg_rewind needed'})`,
      );
      t.diagnostic(`outages so far, kill to the first 201: ${outages.map((ms) => `${ms} ms`).join(', ')}`);
      await checkAfter(t, load, ws);
    });
  }

  // A switchover's fast shutdown cuts the commits waiting for the synchronous standby: committed, their answers lost.
  // An initiation claim among them once left its collection marked maybe sent and never pushed (one of ~140 unsettled
  // here, in CI); its sender now releases such a claim (connectors.daraja.test.ts tests that on its own).
  it('a planned switchover under load (patronictl switchover): no failed operation, every key 201, nothing lost', async (t) => {
    assert.ok(cluster);
    const ha = cluster;
    const ws = await workspace('switchover');
    const load = new Load(base, ws.token, `switch-${randomBytes(3).toString('hex')}`);
    const began = Date.now();
    const switched = await underLoad(load, async () => {
      const done = await ha.switchover();
      await recovered(load, Date.now(), 'a 201 after the switchover');
      return done;
    });
    const gap = load.longestGap(began, Date.now());
    const rejoined = await ha.waitForRejoin(switched.from);
    const slowest = Math.max(...load.outcomes.map((o) => o.attempts));
    t.diagnostic(
      `switchover ${switched.from} → ${switched.leader.name}: promoted ${switched.promotedMs} ms after patronictl ` +
        `started, reached through HAProxy after ${switched.routedMs} ms; ${switched.from} back as ` +
        `${rejoined.member.role} ${rejoined.tookMs} ms later; longest time without a 201: ${gap} ms; at most ` +
        `${slowest} attempts for a key`,
    );
    await checkAfter(t, load, ws);
  });
});
