// Secrets at rest: the token signing key, the webhook signing secrets (and stored answers that show
// a secret) and PROVIDERS_FILE's sealed credentials are sealed under a key kept apart from the database (SECRETS_KEY,
// or DATA_DIR/secrets.key). The database alone opens none of them; `npm run secrets -- rotate-key` moves everything to a
// new key. The CLI runs as a child process against each test app's database, with the app's key.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, importJWK, jwtVerify, type CryptoKey } from 'jose';
import { Webhook } from 'standardwebhooks';
import { bootstrap } from '../src/bootstrap.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Db } from '../src/db/pool.js';
import { loadCatalogue, MarketCatalogue } from '../src/modules/catalogue/catalogue.js';
import { CredentialsService } from '../src/modules/credentials/credentials.service.js';
import { MembersService } from '../src/modules/members/members.service.js';
import { planProviders } from '../src/modules/providers/providers.registry.js';
import { sealPlaintextEndpointSecrets, signingSecrets } from '../src/modules/webhooks/webhooks.service.js';
import { isSealed, keyId, SecretBox, SecretBoxError, sealedKeyId } from '../src/platform/secret-box.js';
import { loadSecretsKey } from '../src/platform/secrets-key.js';
import { loadServiceKeys, TOKEN_ALG } from '../src/platform/secrets.js';
import { TokenService } from '../src/platform/tokens.js';
import { createService } from '../src/service.js';
import {
  createCollection,
  createTestDatabase,
  FAST_LIFECYCLE,
  newKey,
  request,
  startTestApp,
  type TestApp,
  waitFor,
} from './helpers/harness.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { giveSecondFactor } from './helpers/second-factor.js';
import { DARAJA_ENTRY } from './helpers/connectors.js';
import { npmStartArgs, PROJECT_ROOT } from './helpers/start-command.js';

const catalogue = new MarketCatalogue(loadCatalogue(undefined));
const newKeyText = (): string => randomBytes(32).toString('base64');
const boxOf = (keyText: string): SecretBox => new SecretBox(Buffer.from(keyText, 'base64'));

/** The environment of child processes: none of the runner's own key or database settings. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
  for (const name of ['SECRETS_KEY', 'SECRETS_KEY_PREVIOUS', 'PROVIDERS_FILE', 'DATABASE_URL']) delete env[name];
  return { ...env, ...extra };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run secrets -- ...args`, as a process of its own. */
function secretsCli(args: string[], env: Record<string, string>, stdin = ''): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/secrets.ts', ...args], {
    cwd: PROJECT_ROOT,
    env: childEnv(env),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(stdin);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The CLI against a test app's database, with its key (its DATA_DIR key file, or SECRETS_KEY when given). */
const rotateKey = (t: TestApp, extra: Record<string, string> = {}): Promise<Run> =>
  secretsCli(['rotate-key'], { DATABASE_URL: t.config.databaseUrl as string, DATA_DIR: t.config.dataDir, ...extra });

/** Every stored form of the tables that hold secrets, as text. */
async function storedText(db: Db): Promise<string> {
  const { rows } = await db.query<{ text: string }>(
    `SELECT value::text AS text FROM service_secrets
     UNION ALL SELECT row_to_json(w)::text FROM webhook_endpoints w
     UNION ALL SELECT row_to_json(k)::text FROM idempotency_keys k`,
  );
  return rows.map((r) => r.text).join('\n');
}

/** Every sealed value of the database, with where it is. */
async function sealedValues(db: Db): Promise<{ where: string; value: string }[]> {
  const out: { where: string; value: string }[] = [];
  for (const r of (await db.query<{ name: string; value: any }>('SELECT name, value FROM service_secrets')).rows)
    out.push({ where: `service_secrets ${r.name}`, value: r.value.sealed });
  const endpoints = await db.query<{ id: string; secret: string; previous_secrets: { secret: string }[] }>(
    'SELECT id, secret, previous_secrets FROM webhook_endpoints',
  );
  for (const r of endpoints.rows) {
    out.push({ where: `endpoint ${r.id}`, value: r.secret });
    for (const p of r.previous_secrets) out.push({ where: `endpoint ${r.id} previous`, value: p.secret });
  }
  const answers = await db.query<{ key: string; response_body: string }>(
    `SELECT key, response_body FROM idempotency_keys WHERE response_body LIKE 'sealed:%'`,
  );
  for (const r of answers.rows) out.push({ where: `stored answer ${r.key}`, value: r.response_body });
  const factors = await db.query<{ member_id: string; sealed_secret: string }>(
    'SELECT member_id, sealed_secret FROM member_second_factors',
  );
  for (const r of factors.rows) out.push({ where: `second factor of ${r.member_id}`, value: r.sealed_secret });
  return out;
}

async function endpointRow(db: Db, id: string) {
  const { rows } = await db.query('SELECT secret, previous_secrets FROM webhook_endpoints WHERE id = $1', [id]);
  assert.equal(rows.length, 1);
  return rows[0] as { secret: string; previous_secrets: { secret: string; expires_at: string }[] };
}

async function addEndpoint(
  t: TestApp,
  url: string,
  key?: string,
): Promise<{ id: string; secret: string; text: string }> {
  const res = await request(t, 'POST', '/v1/webhooks/endpoints', {
    token: t.demoToken,
    body: { url },
    ...(key === undefined ? {} : { idempotencyKey: key }),
  });
  assert.equal(res.status, 201, res.text);
  assert.match(res.body.secret, /^whsec_/);
  return { id: res.body.id, secret: res.body.secret, text: res.text };
}

/**
 * A collection is created; its first webhook delivery to the receiver, once it arrives. Only a delivery of that
 * collection's event counts: the receiver's port may have been another test process's receiver before, whose app
 * still retries deliveries to it, signed with that app's secrets.
 */
async function nextDelivery(t: TestApp, receiver: Receiver) {
  const seen = receiver.requests.length;
  const created = await createCollection(t, t.demoToken);
  assert.equal(created.status, 201, created.text);
  const ofIt = (r: { body: string }): boolean => {
    try {
      return (
        (JSON.parse(r.body) as { data?: { collection_id?: string } }).data?.collection_id === created.body.collection_id
      );
    } catch {
      return false;
    }
  };
  return waitFor('a webhook delivery', async () => receiver.requests.slice(seen).find(ofIt), 15_000);
}

/** The value with one bit of its ciphertext flipped. */
function tampered(sealed: string): string {
  const parts = sealed.split(':');
  const data = Buffer.from(parts[4] as string, 'base64url');
  data[0] = (data[0] as number) ^ 0x01;
  parts[4] = data.toString('base64url');
  return parts.join(':');
}

describe('SecretBox (AES-256-GCM)', () => {
  const a = randomBytes(32);
  const b = randomBytes(32);

  it('seals and opens: the sealed form names the key, and carries nothing of the plaintext', () => {
    const box = new SecretBox(a);
    for (const plain of ['whsec_abc', '', 'ñ€😀 and "quotes"', 'x'.repeat(10_000)]) {
      const sealed = box.seal(plain);
      assert.match(sealed, new RegExp(`^sealed:v1:${keyId(a)}:[\\w-]+:[\\w-]*:[\\w-]+$`));
      assert.ok(isSealed(sealed) && box.isSealed(sealed));
      assert.equal(sealedKeyId(sealed), keyId(a));
      if (plain.length > 3) assert.ok(!sealed.includes(plain));
      assert.equal(box.open(sealed), plain);
    }
    assert.match(keyId(a), /^[0-9a-f]{16}$/);
    assert.equal(isSealed('whsec_abc'), false);
  });

  it('a fresh IV each time: the same plaintext never seals alike', () => {
    const box = new SecretBox(a);
    const sealed = Array.from({ length: 50 }, () => box.seal('the same secret'));
    assert.equal(new Set(sealed).size, 50);
    assert.equal(new Set(sealed.map((s) => s.split(':')[3])).size, 50, 'every IV differs');
  });

  it('a value altered anywhere (ciphertext, tag, IV, or the key id it names) does not open', () => {
    const box = new SecretBox(a, [b]);
    const sealed = box.seal('whsec_secret');
    const parts = sealed.split(':');
    const flip = (i: number): string => {
      const copy = [...parts];
      const bytes = Buffer.from(copy[i] as string, 'base64url');
      bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0x80;
      copy[i] = bytes.toString('base64url');
      return copy.join(':');
    };
    for (const bad of [tampered(sealed), flip(3), flip(5)])
      assert.throws(
        () => box.open(bad),
        (err: Error) =>
          err instanceof SecretBoxError && /altered or damaged/.test(err.message) && err.message.includes(keyId(a)),
      );
    // Passed off as sealed under the other key the box holds: the authenticated header no longer matches.
    const relabelled = [...parts.slice(0, 2), keyId(b), ...parts.slice(3)].join(':');
    assert.throws(() => box.open(relabelled), /altered or damaged/);
    assert.throws(() => box.open(sealed.slice(0, -4)), /altered or damaged/);
    assert.throws(() => box.open('sealed:v1:abc'), /malformed/);
    assert.throws(() => box.open('whsec_plain'), /not a sealed value/);
  });

  it('a wrong key does not open it, and the error names the key it needs (never a key)', () => {
    const sealed = new SecretBox(a).seal('whsec_secret');
    assert.throws(
      () => new SecretBox(b).open(sealed),
      (err: Error) =>
        err instanceof SecretBoxError &&
        err.message.includes(
          `sealed under key ${keyId(a)}, which this process does not have (its keys: ${keyId(b)})`,
        ) &&
        !err.message.includes(a.toString('base64')),
    );
  });

  it('previous keys open what they sealed; new values are sealed under the current key', () => {
    const old = new SecretBox(a).seal('sealed before the rotation');
    const box = new SecretBox(b, [a]);
    assert.equal(box.open(old), 'sealed before the rotation');
    assert.equal(sealedKeyId(box.seal('new')), keyId(b));
    assert.deepEqual(box.keyIds, [keyId(b), keyId(a)]);
  });
});

describe('the secrets key: SECRETS_KEY or DATA_DIR/secrets.key', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'secrets-key-'));
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  it('SECRETS_KEY and SECRETS_KEY_PREVIOUS must be 32 bytes in base64; the error names the variable, not the value', () => {
    for (const name of ['SECRETS_KEY', 'SECRETS_KEY_PREVIOUS']) {
      for (const bad of ['not-a-key', randomBytes(16).toString('base64'), randomBytes(32).toString('hex')]) {
        assert.throws(
          () => loadConfig({ [name]: bad }),
          (err: Error) =>
            err instanceof ConfigError &&
            err.message.startsWith(`${name} must be 32 random bytes in base64`) &&
            !err.message.includes(bad),
        );
      }
    }
    const key = newKeyText();
    const config = loadConfig({ SECRETS_KEY: key, SECRETS_KEY_PREVIOUS: newKeyText() });
    assert.equal(config.secretsKey?.toString('base64'), key);
    assert.equal(loadConfig({}).secretsKey, undefined);
  });

  it('without SECRETS_KEY the key file is created on first start (0600), then read; with it, no file is made', () => {
    const dataDir = path.join(dir, 'data');
    const first = loadSecretsKey(loadConfig({ DATA_DIR: dataDir }));
    const file = path.join(dataDir, 'secrets.key');
    assert.equal(first.created, true);
    assert.equal(first.source, file);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(first.box.keyId, keyId(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')));
    assert.deepEqual(first.warnings, []);
    const second = loadSecretsKey(loadConfig({ DATA_DIR: dataDir }));
    assert.equal(second.created, false);
    assert.equal(second.box.keyId, first.box.keyId);

    const key = newKeyText();
    const fromEnv = loadSecretsKey(loadConfig({ DATA_DIR: path.join(dir, 'other'), SECRETS_KEY: key }));
    assert.equal(fromEnv.source, 'SECRETS_KEY');
    assert.equal(fromEnv.box.keyId, boxOf(key).keyId);
    assert.equal(existsSync(path.join(dir, 'other')), false);
  });

  it('in production without SECRETS_KEY the key file still works, with a warning that nodes need one SECRETS_KEY', () => {
    const loaded = loadSecretsKey(loadConfig({ DATA_DIR: path.join(dir, 'prod'), PAYMENTS_ENV: 'production' }));
    assert.ok(loaded.created);
    assert.match(
      loaded.warnings.join('\n'),
      /PAYMENTS_ENV is production and SECRETS_KEY is unset.*Several nodes need the same key/,
    );
  });

  it('a key file of another form stops the start naming the file', async () => {
    const dataDir = path.join(dir, 'bad');
    await rm(dataDir, { recursive: true, force: true });
    loadSecretsKey(loadConfig({ DATA_DIR: dataDir }));
    await writeFile(path.join(dataDir, 'secrets.key'), 'hello\n');
    assert.throws(
      () => loadSecretsKey(loadConfig({ DATA_DIR: dataDir })),
      (err: Error) => err instanceof ConfigError && err.message.includes(path.join(dataDir, 'secrets.key')),
    );
  });
});

describe('after start, nothing secret is in the database in plaintext', () => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    t = await startTestApp(FAST_LIFECYCLE, { workers: true });
    receiver = await startReceiver();
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('service_secrets hold sealed values only: the private key ("d"), the cursor key and the sandbox secret appear nowhere', async () => {
    const { rows } = await t.db.query<{ name: string; value: any }>(
      'SELECT name, value FROM service_secrets ORDER BY name',
    );
    assert.deepEqual(
      rows.map((r) => r.name),
      ['cursor_key', 'jwt_signing_key', 'sandbox_provider_secret'],
    );
    for (const r of rows) {
      assert.deepEqual(Object.keys(r.value), ['sealed']);
      assert.equal(sealedKeyId(r.value.sealed), t.box.keyId, r.name);
    }
    const signing = JSON.parse(t.box.open(rows.find((r) => r.name === 'jwt_signing_key')?.value.sealed));
    const keys = await loadServiceKeys(t.db, t.box);
    const text = await storedText(t.db);
    for (const secret of [signing.private_jwk.d, keys.cursorKey.toString('base64'), keys.sandboxProviderSecret]) {
      assert.equal(typeof secret, 'string');
      assert.ok(!text.includes(secret));
    }
    // And the tokens verify with what the sealed row holds.
    const publicKey = (await importJWK(signing.public_jwk, TOKEN_ALG)) as CryptoKey;
    await jwtVerify(t.demoToken, publicKey, { algorithms: [TOKEN_ALG] });
    assert.equal((await request(t, 'GET', '/v1/workspace', { token: t.demoToken })).status, 200);
  });

  it('webhook secrets are stored sealed, shown once as today, and deliveries are signed with them', async () => {
    const key = newKey();
    const endpoint = await addEndpoint(t, receiver.url, key);
    // A replay of the creation answers the same bytes (its stored copy is sealed).
    const replay = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: t.demoToken,
      body: { url: receiver.url },
      idempotencyKey: key,
    });
    assert.equal(replay.status, 201);
    assert.equal(replay.text, endpoint.text);
    const got = await request(t, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`, { token: t.demoToken });
    assert.equal(got.body.secret, undefined);

    const first = await nextDelivery(t, receiver);
    assert.doesNotThrow(() => new Webhook(endpoint.secret).verify(first.body, first.headers));

    const rotated = await request(t, 'POST', `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`, {
      token: t.demoToken,
      idempotencyKey: newKey(),
    });
    assert.equal(rotated.status, 200, rotated.text);
    const second = await nextDelivery(t, receiver);
    // Both secrets sign for 24 hours: the one shown at creation, and the new one.
    assert.doesNotThrow(() => new Webhook(endpoint.secret).verify(second.body, second.headers));
    assert.doesNotThrow(() => new Webhook(rotated.body.secret).verify(second.body, second.headers));

    const credential = await request(t, 'POST', '/v1/credentials', {
      token: t.demoToken,
      body: { name: 'secret at rest' },
      idempotencyKey: newKey(),
    });
    assert.equal(credential.status, 201, credential.text);

    const row = await endpointRow(t.db, endpoint.id);
    assert.equal(sealedKeyId(row.secret), t.box.keyId);
    assert.equal(row.previous_secrets.length, 1);
    assert.equal(sealedKeyId(row.previous_secrets[0]?.secret as string), t.box.keyId);
    assert.deepEqual(signingSecrets(row, new Date(), t.box), [rotated.body.secret, endpoint.secret]);
    const text = await storedText(t.db);
    for (const secret of [endpoint.secret, rotated.body.secret, credential.body.token]) {
      assert.ok(!text.includes(secret.replace(/^whsec_/, '')), 'no secret, nor its key material, in the database');
    }
    assert.ok((await sealedValues(t.db)).some((v) => v.where.startsWith('stored answer')));
  });

  it('the database alone (with any other key) cannot open the signing key or a webhook secret', async () => {
    const other = new SecretBox(randomBytes(32));
    await assert.rejects(
      loadServiceKeys(t.db, other),
      new RegExp(
        `the service secret \\w+ cannot be opened: a value is sealed under key ${t.box.keyId}, which this process does not have`,
      ),
    );
    const endpoint = await addEndpoint(t, `${receiver.url}?alone`);
    const row = await endpointRow(t.db, endpoint.id);
    assert.throws(() => signingSecrets(row, new Date(), other), /sealed under key/);
    // A service started on it with another key file refuses to start.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'secrets-other-'));
    const db = createPool(t.config.databaseUrl as string, 2);
    try {
      const config = loadConfig({ DATABASE_URL: t.config.databaseUrl, DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
      await assert.rejects(
        createService(config, db, { logger: false }),
        /cannot be opened: a value is sealed under key/,
      );
    } finally {
      await db.end();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
  it('a delivery whose secret this process cannot open is not sent: its attempt says so, nothing is sent', async () => {
    const endpoint = await addEndpoint(t, `${receiver.url}?unreadable`);
    const foreign = new SecretBox(randomBytes(32));
    await t.db.query('UPDATE webhook_endpoints SET secret = $2 WHERE id = $1', [endpoint.id, foreign.seal('whsec_x')]);
    const seen = receiver.requests.length;
    const created = await createCollection(t, t.demoToken);
    assert.equal(created.status, 201, created.text);
    const attempt = await waitFor('the attempt to the unreadable endpoint', async () => {
      const { rows } = await t.db.query<{ error: string | null; status_code: number | null }>(
        `SELECT a.error, a.status_code FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
         WHERE d.endpoint_id = $1`,
        [endpoint.id],
      );
      return rows[0];
    });
    assert.equal(attempt.error, 'not sent: the service could not read the signing secret');
    assert.equal(attempt.status_code, null);
    assert.ok(
      receiver.requests.slice(seen).every((r) => !r.path.includes('unreadable')),
      'nothing reached that endpoint',
    );
  });
});

describe('a database from before secrets were sealed', () => {
  it('is sealed in place at start, once, by nodes starting together; old tokens and secrets keep working', async () => {
    const database = await createTestDatabase();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'secrets-legacy-'));
    const pools = [createPool(database.url, 4), createPool(database.url, 4)] as const;
    const apps: { close(): Promise<unknown> }[] = [];
    try {
      const [db] = pools;
      await migrate(db);
      // The service secrets as the previous version stored them: plaintext jsonb.
      const { privateKey, publicKey } = await generateKeyPair(TOKEN_ALG, { extractable: true });
      const signing = {
        kid: randomBytes(8).toString('hex'),
        private_jwk: await exportJWK(privateKey),
        public_jwk: await exportJWK(publicKey),
      };
      const cursorKey = randomBytes(32).toString('base64');
      const sandboxSecret = randomBytes(32).toString('hex');
      for (const [name, value] of [
        ['jwt_signing_key', signing],
        ['cursor_key', { key: cursorKey }],
        ['sandbox_provider_secret', { key: sandboxSecret }],
      ] as const)
        await db.query('INSERT INTO service_secrets (name, value) VALUES ($1, $2)', [name, JSON.stringify(value)]);
      // Tokens minted by it, and webhook endpoints with plaintext secrets (one rotated).
      const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0' });
      const oldKeys = {
        kid: signing.kid,
        privateKey: (await importJWK(signing.private_jwk, TOKEN_ALG)) as CryptoKey,
        publicKey: (await importJWK(signing.public_jwk, TOKEN_ALG)) as CryptoKey,
        cursorKey: Buffer.from(cursorKey, 'base64'),
        sandboxProviderSecret: sandboxSecret,
      };
      const boot = await bootstrap(db, config, new CredentialsService(new TokenService(oldKeys, 'sandbox'), 'sandbox'));
      assert.ok(boot);
      const plain = {
        current: `whsec_${randomBytes(32).toString('base64')}`,
        previous: `whsec_${randomBytes(32).toString('base64')}`,
      };
      const ids = Array.from({ length: 3 }, () => randomUUID());
      for (const id of ids) {
        await db.query(
          `INSERT INTO webhook_endpoints (id, workspace_id, url, description, enabled_events, status, disabled_reason, secret, previous_secrets, created_at, updated_at)
           VALUES ($1, $2, 'https://receiver.example/hook', NULL, ARRAY['*'], 'enabled', NULL, $3, $4, now(), now())`,
          [
            id,
            boot.demoWorkspaceId,
            plain.current,
            JSON.stringify([{ secret: plain.previous, expires_at: new Date(Date.now() + 3600_000).toISOString() }]),
          ],
        );
      }

      // Two nodes start at once on the same key.
      const started = await Promise.all(pools.map((p) => createService(config, p, { logger: false })));
      apps.push(...started.map((s) => s.app));
      assert.equal(
        started.reduce((n, s) => n + s.sealedEndpoints, 0),
        ids.length,
        'each endpoint sealed once, by one of the nodes',
      );
      const box = started[0]?.services.box as SecretBox;
      const values = await sealedValues(db);
      assert.equal(values.length, 3 + ids.length * 2);
      for (const v of values) assert.equal(sealedKeyId(v.value), box.keyId, v.where);
      const text = await storedText(db);
      for (const secret of [signing.private_jwk.d as string, cursorKey, sandboxSecret, plain.current, plain.previous])
        assert.ok(!text.includes(secret));
      // Sealed once: a later start changes nothing.
      await loadServiceKeys(db, box);
      assert.equal(await sealPlaintextEndpointSecrets(db, box), 0);
      assert.equal(await storedText(db), text);

      // The same keys as before: old tokens verify, the endpoints sign with the secrets they had.
      const keys = await loadServiceKeys(db, box);
      assert.equal(keys.kid, signing.kid);
      assert.equal(keys.sandboxProviderSecret, sandboxSecret);
      const app = started[0]?.app;
      assert.ok(app);
      await app.listen({ port: 0, host: '127.0.0.1' });
      const address = app.server.address();
      const api = { baseUrl: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
      assert.equal((await request(api, 'GET', '/v1/workspace', { token: boot.demoToken })).status, 200);
      assert.equal((await request(api, 'GET', '/v1/admin/workspaces', { token: boot.adminToken })).status, 200);
      for (const id of ids)
        assert.deepEqual(signingSecrets(await endpointRow(db, id), new Date(), box), [plain.current, plain.previous]);
    } finally {
      for (const app of apps) await app.close();
      for (const p of pools) await p.end();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('npm run secrets -- rotate-key', () => {
  it('with the key file: everything is re-sealed under a new key, the file replaced (old kept), the running app goes on', async () => {
    const t = await startTestApp(FAST_LIFECYCLE, { workers: true });
    const receiver = await startReceiver();
    try {
      const key = newKey();
      const endpoint = await addEndpoint(t, receiver.url, key);
      const file = path.join(t.config.dataDir, 'secrets.key');
      const before = readFileSync(file, 'utf8');
      const oldBox = boxOf(before.trim());
      const kid = (await loadServiceKeys(t.db, t.box)).kid;
      const member = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, t.demoWorkspaceId, {
        email: 'factor@rotate.test',
        password: 'a passphrase to rotate',
        role: 'owner',
      });
      assert.ok(member.ok);
      const { secret: totpSecret } = await giveSecondFactor(t, t.demoWorkspaceId, {
        id: member.member.id,
        email: 'factor@rotate.test',
      });

      const run = await rotateKey(t);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, '', 'with the key file, no key is printed');
      const after = readFileSync(file, 'utf8');
      assert.notEqual(after, before);
      const newBox = boxOf(after.trim());
      assert.match(
        run.stderr,
        new RegExp(
          `re-sealed 3 service secrets, the signing secrets of 1 webhook endpoints, 1 stored answers and 1 members' second factors under key ${newBox.keyId} \\(was ${oldBox.keyId}\\)`,
        ),
      );
      assert.match(run.stderr, /the old key is kept in secrets\.key\.previous/);
      assert.match(run.stderr, /PROVIDERS_FILE.*npm run secrets -- seal/);
      assert.equal(readFileSync(path.join(t.config.dataDir, 'secrets.key.previous'), 'utf8'), before);
      assert.equal(existsSync(path.join(t.config.dataDir, 'secrets.key.new')), false);
      assert.equal(statSync(file).mode & 0o777, 0o600);

      // Everything opens with the new key alone, and nothing with the old one.
      for (const v of await sealedValues(t.db)) assert.equal(sealedKeyId(v.value), newBox.keyId, v.where);
      await assert.rejects(loadServiceKeys(t.db, oldBox), /cannot be opened/);
      const keys = await loadServiceKeys(t.db, newBox);
      assert.equal(keys.kid, kid);
      await jwtVerify(t.demoToken, keys.publicKey, { algorithms: [TOKEN_ALG] });
      assert.deepEqual(signingSecrets(await endpointRow(t.db, endpoint.id), new Date(), newBox), [endpoint.secret]);
      const factor = await t.db.query<{ sealed_secret: string }>(
        'SELECT sealed_secret FROM member_second_factors WHERE member_id = $1',
        [member.member.id],
      );
      assert.equal(newBox.open(factor.rows[0]?.sealed_secret ?? ''), totpSecret, 'the TOTP secret is the same');

      // The running app takes the new key up: it still signs deliveries, replays the stored answer, seals anew.
      const delivery = await nextDelivery(t, receiver);
      assert.doesNotThrow(() => new Webhook(endpoint.secret).verify(delivery.body, delivery.headers));
      const replay = await request(t, 'POST', '/v1/webhooks/endpoints', {
        token: t.demoToken,
        body: { url: receiver.url },
        idempotencyKey: key,
      });
      assert.equal(replay.text, endpoint.text);
      const later = await addEndpoint(t, `${receiver.url}?later`);
      assert.equal(sealedKeyId((await endpointRow(t.db, later.id)).secret), newBox.keyId);
      assert.equal((await request(t, 'GET', '/v1/workspace', { token: t.demoToken })).status, 200);
    } finally {
      await t.close();
      await receiver.close();
    }
  });

  it('with SECRETS_KEY: the new key is printed; nodes restarted with it alone open everything', async () => {
    const oldKey = newKeyText();
    const t = await startTestApp({ SECRETS_KEY: oldKey });
    const db = createPool(t.config.databaseUrl as string, 4);
    let restarted: Awaited<ReturnType<typeof createService>> | undefined;
    try {
      const endpoint = await addEndpoint(t, 'https://receiver.example/hook');
      const run = await rotateKey(t, { SECRETS_KEY: oldKey });
      assert.equal(run.code, 0, run.stderr);
      const printed = run.stdout.split('\n').filter((l) => l !== '');
      assert.equal(printed.length, 1, `stdout is the new key alone: ${run.stdout}`);
      const newKeyPrinted = printed[0] as string;
      assert.match(newKeyPrinted, /^[A-Za-z0-9+/]{43}=$/);
      const newBox = boxOf(newKeyPrinted);
      assert.match(
        run.stderr,
        new RegExp(
          `set SECRETS_KEY to the key printed above \\(key ${newBox.keyId}\\) and SECRETS_KEY_PREVIOUS to the old one \\(key ${boxOf(oldKey).keyId}\\)`,
        ),
      );
      assert.match(run.stderr, /SECRETS_KEY_PREVIOUS keeps them working/);
      assert.equal(existsSync(path.join(t.config.dataDir, 'secrets.key')), false, 'SECRETS_KEY: no key file is made');
      for (const v of await sealedValues(db)) assert.equal(sealedKeyId(v.value), newBox.keyId, v.where);

      // A node restarted with the new key only.
      const config = loadConfig({
        DATABASE_URL: t.config.databaseUrl,
        DATA_DIR: t.config.dataDir,
        SECRETS_KEY: newKeyPrinted,
        LOG_LEVEL: 'silent',
      });
      restarted = await createService(config, db, { logger: false });
      const res = await restarted.app.inject({
        method: 'GET',
        url: '/v1/workspace',
        headers: { authorization: `Bearer ${t.demoToken}` },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(signingSecrets(await endpointRow(db, endpoint.id), new Date(), restarted.services.box), [
        endpoint.secret,
      ]);
    } finally {
      await restarted?.app.close();
      await db.end();
      await t.close();
    }
  });

  it('a value it cannot open fails it with exit 1 and nothing changed; bad arguments exit 2', async () => {
    const t = await startTestApp();
    try {
      const endpoint = await addEndpoint(t, 'https://receiver.example/hook');
      const foreign = new SecretBox(randomBytes(32));
      await t.db.query('UPDATE webhook_endpoints SET secret = $2 WHERE id = $1', [
        endpoint.id,
        foreign.seal('whsec_x'),
      ]);
      const file = path.join(t.config.dataDir, 'secrets.key');
      const keyBefore = readFileSync(file, 'utf8');
      const stored = await storedText(t.db);

      const run = await rotateKey(t);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /rotate-key failed and changed nothing \(the transaction rolled back\)/);
      assert.match(run.stderr, new RegExp(`sealed under key ${foreign.keyId}`));
      assert.equal(run.stdout, '');
      assert.equal(await storedText(t.db), stored);
      assert.equal(readFileSync(file, 'utf8'), keyBefore);
      assert.equal(existsSync(path.join(t.config.dataDir, 'secrets.key.new')), false);
      assert.equal(existsSync(path.join(t.config.dataDir, 'secrets.key.previous')), false);

      for (const args of [['rotate-key', 'now'], ['frobnicate'], [], ['rotate-key', '--force']]) {
        const bad = await secretsCli(args, {
          DATABASE_URL: t.config.databaseUrl as string,
          DATA_DIR: t.config.dataDir,
        });
        assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
        assert.match(bad.stderr, /Usage:/);
      }
      assert.equal(await storedText(t.db), stored);
    } finally {
      await t.close();
    }
  });
});

describe('PROVIDERS_FILE: sealed connector credentials', () => {
  let dir: string;
  let dataDir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'secrets-providers-'));
    dataDir = path.join(dir, 'data');
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  const daraja = (secrets: Record<string, unknown>) => ({ ...DARAJA_ENTRY, ...secrets });

  async function providersFile(entry: unknown): Promise<string> {
    const file = path.join(dir, `${randomUUID()}.json`);
    await writeFile(file, JSON.stringify({ connectors: [entry] }));
    return file;
  }

  it('`seal` prints a value sealed under the key; {"sealed": …} loads; plaintext literals are named for a warning', async () => {
    const sealedRun = await secretsCli(['seal'], { DATA_DIR: dataDir }, 'the-consumer-secret\n');
    assert.equal(sealedRun.code, 0, sealedRun.stderr);
    const sealed = sealedRun.stdout.trim();
    const box = loadSecretsKey(loadConfig({ DATA_DIR: dataDir })).box;
    assert.match(sealed, new RegExp(`^sealed:v1:${box.keyId}:`));
    assert.match(sealedRun.stderr, new RegExp(`sealed under key ${box.keyId}`));
    assert.ok(!sealedRun.stderr.includes('the-consumer-secret'));
    assert.equal(box.open(sealed), 'the-consumer-secret', 'the trailing newline is not part of the value');

    const file = await providersFile(
      daraja({
        consumer_secret: { sealed },
        b2c: { shortcode: '600000', initiator_name: 'testapi', security_credential: { sealed: box.seal('cred') } },
      }),
    );
    const plan = planProviders(loadConfig({ PROVIDERS_FILE: file, DATA_DIR: dataDir }), catalogue, {});
    const settings = plan.connectors[0] as unknown as Record<string, any>;
    assert.equal(settings.consumer_secret, 'the-consumer-secret');
    assert.equal(settings.b2c.security_credential, 'cred');
    assert.equal(plan.rails.get('KE/mpesa'), 'mkopo');
    assert.deepEqual(plan.plaintextSecrets.sort(), [
      "connector 'mkopo' field callback_token",
      "connector 'mkopo' field consumer_key",
      "connector 'mkopo' field passkey",
    ]);

    const empty = await secretsCli(['seal'], { DATA_DIR: dataDir }, '');
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /no value on stdin/);
  });

  it('a tampered sealed value, or one sealed under another key, stops the start with a ConfigError naming the connector and field', async () => {
    const box = loadSecretsKey(loadConfig({ DATA_DIR: dataDir })).box;
    const altered = await providersFile(daraja({ consumer_secret: { sealed: tampered(box.seal('s')) } }));
    assert.throws(
      () => planProviders(loadConfig({ PROVIDERS_FILE: altered, DATA_DIR: dataDir }), catalogue, {}),
      (err: Error) =>
        err instanceof ConfigError &&
        /^PROVIDERS_FILE: connector 'mkopo' \(connectors\[0\], mpesa_daraja\): field consumer_secret is sealed but cannot be opened: .*altered or damaged/.test(
          err.message,
        ),
    );
    const foreign = new SecretBox(randomBytes(32));
    const elsewhere = await providersFile(
      daraja({
        b2c: { shortcode: '600000', initiator_name: 'testapi', security_credential: { sealed: foreign.seal('c') } },
      }),
    );
    assert.throws(
      () => planProviders(loadConfig({ PROVIDERS_FILE: elsewhere, DATA_DIR: dataDir }), catalogue, {}),
      new RegExp(
        `field b2c\\.security_credential is sealed but cannot be opened: a value is sealed under key ${foreign.keyId}`,
      ),
    );

    const res = spawnSync(process.execPath, npmStartArgs(), {
      env: childEnv({ PROVIDERS_FILE: altered, DATA_DIR: dataDir }),
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(res.status, 1, res.stderr);
    assert.match(
      res.stderr,
      /configuration error: PROVIDERS_FILE: connector 'mkopo' \(connectors\[0\], mpesa_daraja\): field consumer_secret is sealed but cannot be opened/,
    );
  });
});
