// Operator tokens shared across nodes: three service instances on one database, each with the
// Daraja connector pointed at one Daraja fake, which (like Daraja, per its FAQ) invalidates an app's previous token
// whenever it issues a new one. The nodes share one token, sealed in operator_tokens; after the operator expires
// it, one node renews it for all. With per-process tokens each node fetched its own and the fake refused the others.
// While the database is unavailable, a process falls back to a token of its own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { DarajaFake } from '../fakes/mpesa-daraja.js';
import { loadConfig } from '../src/config.js';
import { poolSettings } from '../src/db/open.js';
import { createPool } from '../src/db/pool.js';
import { TokenCache } from '../src/modules/providers/operator-tokens.js';
import type { Services } from '../src/app.js';
import { createService } from '../src/service.js';
import { startWorkers } from '../src/workers/index.js';
import { CALLBACK_TOKEN, DARAJA_FAKE_ENTRY, freePort, startConnectorApp, waitStatus } from './helpers/connectors.js';
import { createCollection } from './helpers/harness.js';

const SECRETS_KEY = randomBytes(32).toString('base64');
const ENTRY = DARAJA_FAKE_ENTRY;

interface Node {
  name: string;
  baseUrl: string;
  services: Services;
  close(): Promise<void>;
}

const fake = new DarajaFake({ actAfterMs: 150 });
const first = await startConnectorApp(fake, ENTRY, { SECRETS_KEY });
const t = first.t;

/** Another instance of the service on the first one's database, with the same connector, key and settings. */
async function startNode(name: string): Promise<Node> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'operator-tokens-'));
  const file = path.join(dir, 'providers.json');
  await writeFile(
    file,
    JSON.stringify({ connectors: [{ callback_token: CALLBACK_TOKEN, ...ENTRY, base_url: fake.url }] }),
  );
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: t.config.databaseUrl ?? '',
    DATA_DIR: dir,
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    PROVIDERS_FILE: file,
    SECRETS_KEY,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    AUTH_FAILURES_PER_MINUTE: '1000000',
    DB_POOL_SIZE: '10',
    WORKER_INTERVAL_MS: '20',
    RECONCILE_AFTER_SECONDS: '2',
    OPERATOR_TIMEOUT_MS: '1000',
  });
  const db = createPool(config.databaseUrl ?? '', config.dbPoolSize, poolSettings(config));
  const workerDb = createPool(config.databaseUrl ?? '', config.workerDbPoolSize, poolSettings(config));
  const { app, services } = await createService(config, db, { logger: false, workerDb });
  await app.listen({ port, host: '127.0.0.1' });
  const workers = startWorkers(services, config, workerDb, app.log);
  return {
    name,
    baseUrl: `http://127.0.0.1:${port}`,
    services,
    async close() {
      await workers.stop();
      await app.close();
      await db.end();
      await workerDb.end();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const second = await startNode('B');
const third = await startNode('C');
const nodes: Node[] = [{ name: 'A', baseUrl: t.baseUrl, services: t.services, close: async () => {} }, second, third];
after(async () => {
  await third.close();
  await second.close();
  await first.close();
});

let numbers = 0;
const phone = (): string => `+2547230${String(100_000 + (numbers += 1)).slice(-5)}`;
const tokensIssued = () => fake.requests('GET', '/oauth/v1/generate').length;
/** The token the fake last saw on an API call. */
const lastBearer = () =>
  String(fake.received.filter((r) => r.path.startsWith('/mpesa/')).at(-1)?.headers.authorization ?? '').replace(
    /^Bearer /,
    '',
  );

/** A collection created through `node`'s API, once successful (any node's worker may send its STK push). */
async function collectThrough(node: Node): Promise<string> {
  const p = phone();
  const res = await createCollection(node, t.demoToken, { customer: { phone_number: p } });
  assert.equal(res.status, 201, res.text);
  await waitStatus(t, t.demoToken, 'collection', res.body.collection_id, 'successful');
  assert.equal(fake.prompts(p.slice(1)), 1, `one accepted STK push to ${p}`);
  return res.body.collection_id as string;
}

/** A call to Daraja made by `node`'s own connector (an STK Push Query of a push the fake knows): answered, not refused. */
async function queryThrough(node: Node): Promise<void> {
  const connector = node.services.providers.connector('daraja');
  assert.ok(connector);
  const push = [...fake.stk.values()].at(-1);
  assert.ok(push);
  const id = push.callbackUrl.split('/').at(-1) ?? '';
  const status = await connector.queryStatus('collection', id, push.checkoutRequestId);
  assert.notEqual(status, undefined, `${node.name}'s query answered`);
}

describe('one Daraja token shared by every node', () => {
  it('collections through the three nodes in turn: every STK push accepted, one token issued, no refusals', async () => {
    for (let i = 0; i < 9; i += 1) await collectThrough(nodes[i % 3] as Node);
    process.stdout.write(
      `# operator tokens: 3 nodes, 9 collections: ${tokensIssued()} token(s) issued, ${fake.tokenRefusals} refusal(s)\n`,
    );
    assert.equal(tokensIssued(), 1, 'one token for the three nodes');
    assert.equal(fake.tokenRefusals, 0, 'no 404.001.03 "Invalid Access Token"');
    // And each node's own connector calls Daraja with it (the workers of any node may have sent the pushes above).
    for (const node of nodes) await queryThrough(node);
    await Promise.all(nodes.flatMap((node) => [queryThrough(node), queryThrough(node)]));
    assert.equal(tokensIssued(), 1);
    assert.equal(fake.tokenRefusals, 0);
  });

  it('the token is stored sealed, with its expiry, and no renewal lease left', async () => {
    const { rows } = await t.db.query<{
      connector: string;
      scope: string;
      sealed_token: string;
      expires_in: number;
      renew_in: number;
      renewing_by: string | null;
    }>(
      `SELECT connector, scope, sealed_token, extract(epoch FROM expires_at - now())::float8 AS expires_in,
              extract(epoch FROM renew_at - now())::float8 AS renew_in, renewing_by
       FROM operator_tokens`,
    );
    assert.equal(rows.length, 1);
    const row = rows[0];
    assert.ok(row);
    assert.deepEqual([row.connector, row.scope, row.renewing_by], ['daraja', 'default', null]);
    const token = lastBearer();
    assert.match(token, /^[A-Za-z0-9]{28}$/);
    assert.match(row.sealed_token, /^sealed:v1:/);
    assert.ok(!row.sealed_token.includes(token), 'the row does not hold the token in plaintext');
    assert.equal(t.box.open(row.sealed_token), token, 'it opens to the token the nodes use');
    // Daraja's expires_in is 3599 s: renewed a minute before.
    assert.ok(row.expires_in > 3500 && row.expires_in <= 3599, String(row.expires_in));
    assert.ok(Math.abs(row.expires_in - 60 - row.renew_in) < 1, String(row.renew_in));
  });

  it('once the operator expires the token, exactly one new token is issued for all the nodes', async () => {
    const before = tokensIssued();
    const refusalsBefore = fake.tokenRefusals;
    fake.expireTokens();
    // Every node calls at once with the expired token: each is refused once, and one node renews it for all.
    await Promise.all(nodes.flatMap((node) => [queryThrough(node), queryThrough(node)]));
    const refused = fake.tokenRefusals - refusalsBefore;
    process.stdout.write(
      `# operator tokens: after expire_tokens, 3 nodes, 6 calls at once: ${tokensIssued() - before} new token(s), ${refused} refusal(s) of the expired one\n`,
    );
    assert.equal(tokensIssued(), before + 1, 'one new token, not one per node');
    assert.ok(refused >= 1 && refused <= 6, `each call refused at most once (${refused})`);
    // From then on the nodes use the new token: no more refusals.
    const settled = fake.tokenRefusals;
    for (let i = 0; i < 3; i += 1) await collectThrough(nodes[i] as Node);
    for (const node of nodes) await queryThrough(node);
    assert.equal(fake.tokenRefusals, settled);
    assert.equal(tokensIssued(), before + 1);
  });

  it('a node refused a token another node already replaced takes the stored one and renews nothing', async () => {
    // A's copy goes stale: B's connector is refused (the operator expired the token), and renews it.
    const [a, b] = nodes as [Node, Node];
    await queryThrough(a);
    const before = tokensIssued();
    fake.expireTokens();
    await queryThrough(b);
    assert.equal(tokensIssued(), before + 1);
    // A still holds the old token: refused once, it finds the newer one in the row and uses it, with no new token.
    const refusals = fake.tokenRefusals;
    await queryThrough(a);
    assert.equal(fake.tokenRefusals, refusals + 1, "A's old token refused once");
    assert.equal(tokensIssued(), before + 1, 'A took the token B stored rather than fetch one');
  });

  it('while the database is unavailable, calls go on with a token of the process (fetched once, renewed when refused)', async () => {
    // A server that refuses connections: what a database outage looks like to the pool.
    const down = createPool(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 1, { connectTimeoutMs: 500 });
    let fetched = 0;
    const cache = new TokenCache(() => Promise.resolve({ token: `local-${(fetched += 1)}`, expiresInSeconds: 3600 }), {
      db: down,
      box: t.box,
      connector: 'outage',
      scope: 'default',
      timeoutMs: 1000,
      log: t.app.log,
    });
    try {
      assert.equal(await cache.get(), 'local-1');
      assert.equal(await cache.get(), 'local-1', 'kept in memory: not fetched per call');
      await cache.invalidate('local-1');
      assert.equal(await cache.get(), 'local-2', 'a refused token is replaced');
      assert.equal(fetched, 2);
    } finally {
      await down.end();
    }
  });
});
