// The committed openapi.json as an integrator who does not use our SDK meets it: a third-party generator
// (@hey-api/openapi-ts) makes a client of it, tsc compiles that client and a tour written against it in strict mode,
// and the tour runs against a started service: create, replay, poll, refund (driven by the sandbox), list, and one
// problem of each kind. A change that leaves the document less useful (a field typed `unknown`, a problem code
// missing from its response, an operation renamed) fails here, not in an integrator's build.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { FAST_LIFECYCLE, startTestApp, type TestApp } from './helpers/harness.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * The tour, as an integrator writes it against the generated client. Its types are half the test: each typed
 * binding below compiles only while the document gives that field its shape, and each `satisfies` only while the
 * code a user branches on is declared on that operation's response of that status.
 */
const TOUR = `
import { createClient } from './client/client/index.js';
import {
  createCollection,
  getCollection,
  getRefund,
  listCollections,
  refundCollection,
  simulateRefund,
} from './client/sdk.gen.js';
import type {
  Collection,
  CreateCollectionErrors,
  GetCollectionErrors,
  ListCollectionsErrors,
  Refund,
  RefundCollectionErrors,
} from './client/types.gen.js';

export interface ProblemSeen {
  status: number;
  code: string;
  contentType: string | null;
  requestId: string;
}

export interface TourResult {
  created: { status: number; id: string; amount: number; currency: string; collectionStatus: Collection['status'] };
  replay: { status: number; id: string; replayed: string | null };
  settled: Collection['status'];
  refund: { id: string; amount: number; status: Refund['status']; afterSimulate: Refund['status'] };
  listed: { status: Collection['status'] } | undefined;
  problems: Record<'400' | '401' | '404' | '409' | '422', ProblemSeen>;
}

// The codes each problem below is about, declared on that operation's response of that status.
'invalid_market' satisfies CreateCollectionErrors[400]['code'];
'unauthorized' satisfies ListCollectionsErrors[401]['code'];
'not_found' satisfies GetCollectionErrors[404]['code'];
'collection_not_refundable' satisfies RefundCollectionErrors[409]['code'];
'idempotency_key_reused' satisfies CreateCollectionErrors[422]['code'];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function problem(
  result: { error?: { code: string; request_id: string } | undefined; response?: Response },
): ProblemSeen {
  const { error, response } = result;
  if (!error || !response) throw new Error('expected a problem, got a success');
  return {
    status: response.status,
    code: error.code,
    contentType: response.headers.get('content-type'),
    requestId: error.request_id,
  };
}

export async function tour(baseUrl: string, token: string, key: string): Promise<TourResult> {
  const client = createClient({ baseUrl, auth: token });
  const body = {
    amount: 1500,
    currency: 'KES',
    reference: 'order-1001',
    customer: { phone_number: '+254712345678' },
    metadata: { order_id: '1001' },
  };
  const path = { market: 'KE', rail: 'mpesa' };

  // 1. Take KES 15.00 by M-Pesa.
  const first = await createCollection({ client, path, body, headers: { 'Idempotency-Key': key } });
  if (!first.data) throw new Error('create failed: ' + JSON.stringify(first.error));
  const id: string = first.data.collection_id;
  const amount: number = first.data.amount;
  const currency: string = first.data.currency;

  // 2. The same request again: answered from the stored outcome.
  const again = await createCollection({ client, path, body, headers: { 'Idempotency-Key': key } });
  if (!again.data) throw new Error('replay failed: ' + JSON.stringify(again.error));

  // 3. Poll until the sandbox settles it.
  let settled: Collection['status'] = first.data.status;
  for (let i = 0; i < 600 && settled !== 'successful'; i += 1) {
    await sleep(50);
    const read = await getCollection({ client, path: { id } });
    if (!read.data) throw new Error('read failed: ' + JSON.stringify(read.error));
    settled = read.data.status;
  }

  // 4. Refund in full, and drive the refund to successful by hand.
  const refunded = await refundCollection({
    client,
    path: { id },
    body: { amount: 1500 },
    headers: { 'Idempotency-Key': 'refund-' + key },
  });
  if (!refunded.data) throw new Error('refund failed: ' + JSON.stringify(refunded.error));
  const refund: Refund = refunded.data;
  const simulated = await simulateRefund({ client, path: { id: refund.refund_id }, body: { outcome: 'successful' } });
  if (simulated.error) throw new Error('simulate failed: ' + JSON.stringify(simulated.error));
  let afterSimulate: Refund['status'] = refund.status;
  for (let i = 0; i < 100 && afterSimulate !== 'successful'; i += 1) {
    const read = await getRefund({ client, path: { id: refund.refund_id } });
    if (!read.data) throw new Error('refund read failed: ' + JSON.stringify(read.error));
    afterSimulate = read.data.status;
    if (afterSimulate !== 'successful') await sleep(50);
  }

  // 5. List, newest first.
  const page = await listCollections({ client, query: { limit: 3 } });
  if (!page.data) throw new Error('list failed: ' + JSON.stringify(page.error));
  const listed = page.data.data.find((c) => c.collection_id === id);

  // One problem of each kind.
  const unknownMarket = await createCollection({
    client,
    path: { market: 'ZZ', rail: 'mpesa' },
    body,
    headers: { 'Idempotency-Key': 'zz-' + key },
  });
  const stranger = createClient({ baseUrl, auth: 'not-a-token' });
  const refused = await listCollections({ client: stranger });
  const missing = await getCollection({ client, path: { id: '00000000-0000-4000-8000-000000000000' } });
  const waiting = await createCollection({
    client,
    path,
    body: { ...body, customer: { phone_number: '+254712340003' } },
    headers: { 'Idempotency-Key': 'waiting-' + key },
  });
  if (!waiting.data) throw new Error('create failed: ' + JSON.stringify(waiting.error));
  const notRefundable = await refundCollection({
    client,
    path: { id: waiting.data.collection_id },
    body: { amount: 1500 },
    headers: { 'Idempotency-Key': 'refund-waiting-' + key },
  });
  const reused = await createCollection({
    client,
    path,
    body: { ...body, amount: 2500 },
    headers: { 'Idempotency-Key': key },
  });

  return {
    created: { status: first.response.status, id, amount, currency, collectionStatus: first.data.status },
    replay: {
      status: again.response.status,
      id: again.data.collection_id,
      replayed: again.response.headers.get('idempotent-replayed'),
    },
    settled,
    refund: { id: refund.refund_id, amount: refund.amount, status: refund.status, afterSimulate },
    listed: listed && { status: listed.status },
    problems: {
      '400': problem(unknownMarket),
      '401': problem(refused),
      '404': problem(missing),
      '409': problem(notRefundable),
      '422': problem(reused),
    },
  };
}
`;

/**
 * Strict as a careful integrator's build: everything strict, indexed access possibly undefined. Not
 * exactOptionalPropertyTypes: the generator's own runtime (client/client/*.gen.ts) does not compile under it, whatever
 * the document says.
 */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2023', 'DOM'],
    types: ['node'],
    typeRoots: [path.join(ROOT, 'node_modules', '@types')],
    strict: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    noFallthroughCasesInSwitch: true,
    skipLibCheck: false,
    outDir: 'out',
  },
  include: ['tour.ts', 'client/**/*.ts'],
};

interface Run {
  status: number | null;
  output: string;
}

/** A child process, awaited without blocking the event loop (the service under test answers from this process). */
function run(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, timeout: 180_000, killSignal: 'SIGKILL' });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, output }));
  });
}

interface ProblemSeen {
  status: number;
  code: string;
  contentType: string | null;
  requestId: string;
}

interface TourResult {
  created: { status: number; id: string; amount: number; currency: string; collectionStatus: string };
  replay: { status: number; id: string; replayed: string | null };
  settled: string;
  refund: { id: string; amount: number; status: string; afterSimulate: string };
  listed: { status: string } | undefined;
  problems: Record<'400' | '401' | '404' | '409' | '422', ProblemSeen>;
}

describe('a client generated from openapi.json by @hey-api/openapi-ts', () => {
  let dir: string;
  let t: TestApp;
  let tour: ((baseUrl: string, token: string, key: string) => Promise<TourResult>) | undefined;
  let result: TourResult | undefined;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'generated-client-'));
    // The simulator's default pace (a step every 2 s), so the refund is still open when the tour drives it.
    t = await startTestApp({ WORKER_INTERVAL_MS: FAST_LIFECYCLE.WORKER_INTERVAL_MS }, { workers: true });
  });
  after(async () => {
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('is generated from the committed document', async () => {
    // The document as committed now, read at run time (another change may be rewriting it).
    const generated = await run(
      [
        path.join(ROOT, 'node_modules', '@hey-api', 'openapi-ts', 'bin', 'run.js'),
        '--input',
        path.join(ROOT, 'openapi.json'),
        '--output',
        path.join(dir, 'client'),
      ],
      dir,
    );
    assert.equal(generated.status, 0, generated.output);
  });

  it('compiles, with the tour written against it, under tsc in strict mode', async () => {
    await writeFile(path.join(dir, 'tour.ts'), TOUR);
    await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const compiled = await run([path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], dir);
    assert.equal(compiled.status, 0, `tsc refused the generated client or the tour:\n${compiled.output}`);
    ({ tour } = (await import(pathToFileURL(path.join(dir, 'out', 'tour.js')).href)) as { tour: typeof tour });
  });

  it('runs the README tour against a started service', async () => {
    assert.ok(tour, 'the tour did not compile');
    result = await tour(t.baseUrl, t.demoToken, `order-1001-${Date.now()}`);

    assert.equal(result.created.status, 201);
    assert.match(result.created.id, /^[0-9a-f-]{36}$/);
    assert.equal(result.created.amount, 1500);
    assert.equal(result.created.currency, 'KES');
    assert.equal(result.created.collectionStatus, 'created');

    // The replay is the same collection, told apart only by its header.
    assert.equal(result.replay.status, 201);
    assert.equal(result.replay.id, result.created.id);
    assert.equal(result.replay.replayed, 'true');

    assert.equal(result.settled, 'successful');
    assert.equal(result.refund.amount, 1500);
    assert.notEqual(result.refund.status, 'successful', 'the refund was already settled before it was driven');
    assert.equal(result.refund.afterSimulate, 'successful');
    assert.deepEqual(result.listed, { status: 'refunded' });
  });

  it('reads a problem of each kind as the typed Problem its response declares', async () => {
    assert.ok(result, 'the tour did not run');
    const { problems } = result;
    const expected = {
      '400': 'invalid_market',
      '401': 'unauthorized',
      '404': 'not_found',
      '409': 'collection_not_refundable',
      '422': 'idempotency_key_reused',
    } as const;
    for (const [status, code] of Object.entries(expected)) {
      const seen = problems[status as keyof typeof expected];
      assert.equal(seen.status, Number(status), `${status}: ${JSON.stringify(seen)}`);
      assert.equal(seen.code, code, `${status}: ${JSON.stringify(seen)}`);
      assert.match(seen.contentType ?? '', /^application\/problem\+json/);
      assert.ok(seen.requestId.length > 0, `${status}: a problem names its request`);
    }
  });
});
