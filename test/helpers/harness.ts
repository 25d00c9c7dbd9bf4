// Test harness: a fresh database per test file on TEST_DATABASE_URL, the real app listening on loopback,
// and a small HTTP client. Everything goes through HTTP and a real PostgreSQL.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Services } from '../../src/app.js';
import { bootstrap } from '../../src/bootstrap.js';
import { loadConfig, type Config } from '../../src/config.js';
import { DEFAULT_CATALOGUE } from '../../src/modules/catalogue/default-catalogue.js';
import { poolSettings } from '../../src/db/open.js';
import { createPool, type Db } from '../../src/db/pool.js';
import type { App } from '../../src/platform/http.js';
import type { SecretBox } from '../../src/platform/secret-box.js';
import { createService } from '../../src/service.js';
import { startWorkers, type Workers } from '../../src/workers/index.js';
import type { LookUpAddresses } from '../../src/modules/webhooks/url-guard.js';
import { nonConformance } from './conformance.js';
import { createScratchDatabase, type ScratchDatabase } from './database.js';

export interface TestApp {
  baseUrl: string;
  app: App;
  db: Db;
  /** The pool of the background's writes (the batcher's transactions: providers' answers, notices). */
  workerDb: Db;
  services: Services;
  config: Config;
  /** The app's secrets key (DATA_DIR/secrets.key in the app's temporary DATA_DIR, unless the test set SECRETS_KEY). */
  box: SecretBox;
  adminToken: string;
  demoToken: string;
  demoWorkspaceId: string;
  databaseName: string;
  /** Puts the app in draining mode, as SIGTERM does. */
  drain: () => void;
  /** The background workers, when started (`{ workers: true }`). */
  workers: Workers | undefined;
  close(): Promise<void>;
}

function baseDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!url) throw new Error('run the tests with `npm test` (it provides a database), or set DATABASE_URL');
  return url;
}

/** Creates an empty database on the test server and returns its URL. */
export function createTestDatabase(): Promise<ScratchDatabase> {
  return createScratchDatabase(baseDatabaseUrl());
}

export interface TestAppOptions {
  /** Run the background workers (provider initiations, simulator, expiry, reconciliation) as `npm start` does. */
  workers?: boolean;
  /**
   * Rails whose collections expire sooner, e.g. `{ 'KE/mpesa': 2 }` (seconds): the app runs on the built-in
   * catalogue with those changed, written as its CATALOGUE_FILE.
   */
  expirySeconds?: Record<string, number>;
  /** Name resolution for the production webhook address guard (a fixed table instead of DNS). */
  lookUpAddresses?: LookUpAddresses;
  /** The PostgreSQL server to make the test's database on (a URL of any database on it); TEST_DATABASE_URL's by default. */
  server?: string;
  /** The URL the workers' pool connects to, from the database's (a fault proxy in front of it); the database's own by default. */
  workerDatabaseUrl?: (databaseUrl: string) => string;
}

/** Fast lifecycle settings for tests that run the workers: simulator steps of 50 ms, polled every 20 ms. */
export const FAST_LIFECYCLE = { SANDBOX_STEP_MS: '50', WORKER_INTERVAL_MS: '20' };

export async function startTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.server ? await createScratchDatabase(options.server) : await createTestDatabase();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'payments-test-'));
  if (options.expirySeconds) env = { ...env, CATALOGUE_FILE: await writeCatalogue(dataDir, options.expirySeconds) };
  const config = loadConfig({
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    // Every test request comes from 127.0.0.1, and many present refused tokens on purpose: the per-address limit on
    // those is tested on its own (http-hardening.test.ts, with its own value).
    AUTH_FAILURES_PER_MINUTE: '1000000',
    // Two test files share two cores, so a burst of creates can find prompts waiting for the machine: the push-back
    // (503 overloaded) is tested on its own (collections.overload.test.ts, with its own value).
    INITIATION_MAX_WAIT_MS: '600000',
    DB_POOL_SIZE: '20',
    ...env,
  });
  const db = createPool(database.url, config.dbPoolSize, poolSettings(config));
  // As `npm start` runs: the background work on connections of its own.
  const workerDb = createPool(
    options.workerDatabaseUrl?.(database.url) ?? database.url,
    config.workerDbPoolSize,
    poolSettings(config),
  );
  const { app, services, drain } = await createService(config, db, {
    logger: false,
    workerDb,
    ...(options.lookUpAddresses ? { lookUpAddresses: options.lookUpAddresses } : {}),
  });
  const boot = await bootstrap(db, config, services.credentials);
  if (!boot) throw new Error('bootstrap did not run on a fresh database');
  // PORT is 0 (any free port) unless the test fixed one, as it must when PUBLIC_BASE_URL has to name it.
  await app.listen({ port: config.port, host: '127.0.0.1' });
  const workers = options.workers
    ? startWorkers(
        services,
        config,
        workerDb,
        app.log,
        options.lookUpAddresses ? { lookUpAddresses: options.lookUpAddresses } : {},
      )
    : undefined;
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    app,
    db,
    workerDb,
    services,
    config,
    box: services.box,
    adminToken: boot.adminToken,
    demoToken: boot.demoToken,
    demoWorkspaceId: boot.demoWorkspaceId,
    databaseName: database.name,
    drain,
    workers,
    async close() {
      await workers?.stop();
      await app.close();
      await db.end();
      await workerDb.end();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function writeCatalogue(dir: string, expirySeconds: Record<string, number>): Promise<string> {
  const catalogue = structuredClone(DEFAULT_CATALOGUE);
  for (const [key, seconds] of Object.entries(expirySeconds)) {
    const [market = '', rail = ''] = key.split('/');
    const found = catalogue.markets[market]?.rails[rail];
    if (!found) throw new Error(`the built-in catalogue has no rail ${key}`);
    found.expiry_seconds = seconds;
  }
  const file = path.join(dir, 'catalogue.json');
  await writeFile(file, JSON.stringify(catalogue));
  return file;
}

/** Polls `probe` every 20 ms until it returns something other than undefined; fails after `timeoutMs`. */
/** The cookie `name` a response set, as a browser sends it back (`name=value`), or undefined. */
export function cookieSet(res: Response, name: string): string | undefined {
  return res.headers
    .getSetCookie()
    .find((c) => c.startsWith(`${name}=`))
    ?.split(';')[0];
}

/** A dashboard sign-in form drawn as a browser draws it: its one-time value, the cookie it set, and its status. */
export async function signInForm(
  baseUrl: string,
  path = '/dashboard/sign-in',
  headers: Record<string, string> = {},
): Promise<{ csrf: string; cookie: string; status: number }> {
  const res = await fetch(`${baseUrl}${path}`, { headers });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await res.text())?.[1] ?? '';
  return { csrf, cookie: cookieSet(res, 'dashboard_signin') ?? '', status: res.status };
}

/** A dashboard session opened with a token (a workspace with no owner member yet: the break-glass path); its cookie. */
export async function tokenSession(baseUrl: string, token: string): Promise<string> {
  const form = await signInForm(baseUrl);
  const res = await fetch(`${baseUrl}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: form.cookie },
    body: new URLSearchParams({ csrf: form.csrf, token, next: '/dashboard' }).toString(),
  });
  const session = cookieSet(res, 'dashboard_session');
  assert.ok(session, `signed in with a token (${res.status})`);
  return session;
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `promise`, or a failure naming `what` after `ms` (the promise is left running; the timer never keeps the process alive). */
export async function within<T>(what: string, promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Sent as-is instead of JSON-encoding `body`. */
  rawBody?: string;
  headers?: Record<string, string>;
  idempotencyKey?: string;
}

export async function request<T = any>(
  t: { baseUrl: string },
  method: string,
  url: string,
  options: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(t.baseUrl + url, { method, headers, body });
  const text = await response.text();
  // Every response the suite receives is checked against the committed OpenAPI document (test/helpers/conformance.ts).
  const problem = nonConformance(method, url, response.status, response.headers, text);
  if (problem !== undefined) {
    if (process.env.CONFORMANCE_LOG) appendFileSync(process.env.CONFORMANCE_LOG, `${problem}\n`);
    else assert.fail(`the response does not conform to openapi.json: ${problem}`);
  }
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON (HTML, Prometheus text): callers read `text`
  }
  return { status: response.status, headers: response.headers, text, body: parsed as T };
}

/** A workspace of its own, made through the admin API, with its integrator token. */
export async function createWorkspace(t: TestApp, name: string): Promise<{ id: string; token: string }> {
  const res = await request(t, 'POST', '/v1/admin/workspaces', { token: t.adminToken, body: { name } });
  if (res.status !== 201) throw new Error(`workspace creation failed: ${res.status} ${res.text}`);
  return { id: res.body.workspace.id, token: res.body.credential.token };
}

/** A liquidity-provider token for a workspace (the demo one unless named), minted through the admin API. */
export async function liquidityProviderToken(t: TestApp, workspaceId = t.demoWorkspaceId): Promise<string> {
  const res = await request(t, 'POST', `/v1/admin/workspaces/${workspaceId}/credentials`, {
    token: t.adminToken,
    body: { audience: 'liquidity_provider' },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.token as string;
}

export const validCollection = (overrides: Record<string, unknown> = {}) => ({
  amount: 1500,
  currency: 'KES',
  reference: `order-${randomBytes(4).toString('hex')}`,
  customer: { phone_number: '+254712345678' },
  metadata: { order_id: '42', cart: { items: 2 } },
  ...overrides,
});

export const newKey = (): string => `key-${randomBytes(8).toString('hex')}`;

export async function createCollection(
  t: { baseUrl: string },
  token: string,
  overrides: Record<string, unknown> = {},
  path = '/v1/collections/KE/rails/mpesa',
) {
  return request(t, 'POST', path, { token, body: validCollection(overrides), idempotencyKey: newKey() });
}

/** `count` collections created at once with this payer's number (each 201, or the test fails); their ids. */
export async function createCollectionsAtOnce(t: { baseUrl: string }, token: string, count: number, phone: string) {
  const created = await Promise.all(
    Array.from({ length: count }, () => createCollection(t, token, { customer: { phone_number: phone } })),
  );
  return created.map((res) => {
    assert.equal(res.status, 201, res.text);
    return (res.body as { collection_id: string }).collection_id;
  });
}

/** A refund of `amount` requested for the collection under a new Idempotency-Key; the answer, whatever it is. */
export function requestRefund(t: { baseUrl: string }, token: string, collectionId: string, amount: number) {
  return request(t, 'POST', `/v1/collections/${collectionId}/refund`, {
    token,
    body: { amount },
    idempotencyKey: newKey(),
  });
}

/** The contract's error shape: RFC 9457 problem+json with the stable code, matching status and the request id. */
export function assertProblem(res: ApiResponse, status: number, code: string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.code, code);
  assert.equal(res.body.status, status);
  assert.equal(res.body.type, `https://payments.example/errors/${code}`);
  assert.equal(typeof res.body.title, 'string');
  assert.equal(typeof res.body.detail, 'string');
  assert.ok(typeof res.body.request_id === 'string' && res.body.request_id.length > 0);
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
}
