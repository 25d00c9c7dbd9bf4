// The SSRF guard: in production an endpoint must be https and must not reach a loopback,
// private or link-local address, checked at registration and again at every delivery (a name may resolve
// elsewhere later). The sandbox accepts local receivers.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import dns from 'node:dns';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadCatalogue, MarketCatalogue } from '../src/modules/catalogue/catalogue.js';
import { isInternalAddress } from '../src/modules/webhooks/url-guard.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  request,
  startTestApp,
  waitFor,
  type ApiResponse,
  type TestApp,
} from './helpers/harness.js';

const PUBLIC_ADDRESS = '93.184.215.14';
const PUBLIC_ADDRESS_V6 = '2606:2800:21f:cb07:6820:80da:af6b:1946';

/** Name resolution for the guard: a table the tests can change; `localhost` goes to the real system resolver. */
const names = new Map<string, string[]>([
  ['public.example.com', [PUBLIC_ADDRESS]],
  ['public6.example.com', [PUBLIC_ADDRESS_V6]],
  ['public-dual.example.com', [PUBLIC_ADDRESS, PUBLIC_ADDRESS_V6]],
  ['internal.example.com', ['10.0.0.1']],
  ['metadata.example.com', ['169.254.169.254']],
  ['loopback6.example.com', ['::1']],
  ['mixed.example.com', [PUBLIC_ADDRESS, '10.0.0.1']],
  ['empty.example.com', []],
]);
const lookUpCalls: string[] = [];
async function lookUpAddresses(host: string): Promise<string[]> {
  lookUpCalls.push(host);
  if (host === 'localhost')
    return (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  const found = names.get(host);
  if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return [...found];
}

/** A provider gateway on loopback that accepts every initiation, so collections can be created in production. */
function startGateway(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      if (req.method === 'POST') {
        const body = raw ? JSON.parse(raw) : {};
        res
          .writeHead(201, { 'content-type': 'application/json' })
          .end(JSON.stringify({ reference: `gw_${body.merchant_reference}`, status: 'pending' }));
      } else res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      ok({
        url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    }),
  );
}

/** A plain TCP server that only counts the connections it is offered (and closes them). */
async function startCounter(
  host: string,
): Promise<{ port: number; connections: () => number; close: () => Promise<void> } | undefined> {
  let count = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    count += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.destroy();
  });
  try {
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(0, host, () => ok());
    });
  } catch {
    return undefined; // e.g. no IPv6 loopback here
  }
  const a = server.address();
  return {
    port: typeof a === 'object' && a ? a.port : 0,
    connections: () => count,
    close: () =>
      new Promise<void>((done) => {
        for (const s of sockets) s.destroy();
        server.close(() => done());
      }),
  };
}

describe('production: the address guard', () => {
  let t: TestApp;
  let dir: string;
  let gateway: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    gateway = await startGateway();
    dir = await mkdtemp(path.join(os.tmpdir(), 'ssrf-'));
    const markets = new MarketCatalogue(loadCatalogue(undefined)).marketCodes().map((m) => `${m}/*`);
    const file = path.join(dir, 'providers.json');
    await writeFile(
      file,
      JSON.stringify({
        gateways: [
          {
            name: 'acme',
            base_url: gateway.url,
            api_key: `gw_${randomBytes(8).toString('hex')}`,
            callback_secret: randomBytes(24).toString('hex'),
            rails: markets,
          },
        ],
      }),
    );
    t = await startTestApp(
      { PAYMENTS_ENV: 'production', PROVIDERS_FILE: file, WORKER_INTERVAL_MS: '20', WEBHOOK_POLL_MS: '20' },
      { workers: true, lookUpAddresses },
    );
  });
  after(async () => {
    await t?.close();
    await gateway?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe('at registration', () => {
    let token = '';
    before(async () => {
      // A workspace of its own, so the endpoint accepted here is never a delivery target of the delivery tests.
      token = (await createWorkspace(t, 'ssrf registration')).token;
    });

    const refused: [string, string][] = [
      ['http://127.0.0.1/x', 'plain http'],
      ['http://public.example.com/x', 'plain http, even to a public host'],
      ['https://127.0.0.1/x', 'IPv4 loopback'],
      ['https://127.0.0.2:8443/x', 'the rest of 127/8'],
      ['https://10.0.0.1/x', 'private (10/8)'],
      ['https://172.16.5.4/x', 'private (172.16/12)'],
      ['https://192.168.1.1/x', 'private (192.168/16)'],
      ['https://169.254.169.254/latest/meta-data', 'link-local: the cloud metadata service'],
      ['https://0.0.0.0/x', 'the unspecified address'],
      ['https://[::1]/x', 'IPv6 loopback'],
      ['https://[::ffff:127.0.0.1]/x', 'IPv4-mapped IPv6 loopback'],
      ['https://[::ffff:a00:1]/x', 'IPv4-mapped IPv6 private'],
      ['https://[fe80::1]/x', 'IPv6 link-local'],
      ['https://[fd00::1]/x', 'IPv6 unique local'],
      ['https://0x7f000001/x', 'hexadecimal IPv4'],
      ['https://2130706433/x', 'decimal IPv4'],
      ['https://0177.0.0.1/x', 'octal IPv4'],
      ['https://127.1/x', 'shortened IPv4'],
      ['https://localhost/x', 'a name the system resolver resolves to loopback'],
      ['https://internal.example.com/x', 'a name resolving to 10.0.0.1'],
      ['https://metadata.example.com/latest/meta-data', 'a name resolving to 169.254.169.254'],
      ['https://loopback6.example.com/x', 'a name resolving to ::1'],
      ['https://mixed.example.com/x', 'a name with one public and one private address'],
      ['https://nowhere.example.com/x', 'a name that does not resolve'],
      ['https://empty.example.com/x', 'a name with no addresses'],
    ];
    for (const [url, why] of refused) {
      it(`refuses ${url} (${why}) with 400 invalid_webhook_url on the url field`, async () => {
        const res = await request(t, 'POST', '/v1/webhooks/endpoints', { token, body: { url } });
        assertProblem(res, 400, 'invalid_webhook_url');
        assert.equal(res.body.errors?.[0]?.field, 'url', res.text);
      });
    }

    it('the real system resolver is consulted for localhost', () => {
      assert.ok(lookUpCalls.includes('localhost'));
    });

    const accepted: [string, string][] = [
      ['https://public.example.com/hooks', 'a name resolving to a public IPv4 address'],
      ['https://public6.example.com/hooks', 'a name resolving to a public IPv6 address'],
      ['https://public-dual.example.com/hooks', 'a name resolving to public IPv4 and IPv6 addresses'],
      [`https://${PUBLIC_ADDRESS}/hooks`, 'a public IPv4 literal'],
      [`https://[${PUBLIC_ADDRESS_V6}]/hooks`, 'a public IPv6 literal'],
    ];
    for (const [url, why] of accepted) {
      it(`accepts ${url} (${why}) with 201`, async () => {
        const res = await request(t, 'POST', '/v1/webhooks/endpoints', { token, body: { url } });
        assert.equal(res.status, 201, res.text);
        assert.equal(res.body.url, url);
        assert.equal((await request(t, 'DELETE', `/v1/webhooks/endpoints/${res.body.id}`, { token })).status, 204);
      });
    }

    it('PATCH cannot move an accepted endpoint to an internal or plain-http URL', async () => {
      const res = await request(t, 'POST', '/v1/webhooks/endpoints', {
        token,
        body: { url: 'https://public6.example.com/hooks' },
      });
      assert.equal(res.status, 201, res.text);
      for (const url of [
        'https://10.0.0.1/x',
        'https://[::1]/x',
        'https://internal.example.com/x',
        'https://localhost/x',
        'http://public6.example.com/hooks',
      ]) {
        const patched = await request(t, 'PATCH', `/v1/webhooks/endpoints/${res.body.id}`, { token, body: { url } });
        assertProblem(patched, 400, 'invalid_webhook_url');
        assert.equal(patched.body.errors?.[0]?.field, 'url');
      }
      const still = await request(t, 'GET', `/v1/webhooks/endpoints/${res.body.id}`, { token });
      assert.equal(still.body.url, 'https://public6.example.com/hooks');
      assert.equal((await request(t, 'DELETE', `/v1/webhooks/endpoints/${res.body.id}`, { token })).status, 204);
    });
  });

  describe('at delivery', () => {
    const counters: NonNullable<Awaited<ReturnType<typeof startCounter>>>[] = [];
    after(async () => {
      for (const c of counters) await c.close();
    });

    it(
      'an endpoint that now resolves (or always pointed) inside is never contacted; each attempt is logged as refused',
      { timeout: 120_000 },
      async () => {
        const v4 = await startCounter('127.0.0.1');
        assert.ok(v4);
        counters.push(v4);
        const v6 = await startCounter('::1');
        if (v6) counters.push(v6);
        const token = t.demoToken;

        // Names that resolve publicly now (to a public IPv6 address, so that this part does not depend on how the
        // registration check treats public IPv4 addresses, which the registration tests cover), so they are accepted...
        const rebound: [string, string[]][] = [
          ['rebind-loopback.example.com', ['127.0.0.1']],
          ['rebind-private.example.com', ['10.0.0.1']],
          ['rebind-metadata.example.com', ['169.254.169.254']],
          ['rebind-mixed.example.com', [PUBLIC_ADDRESS_V6, '127.0.0.1']],
          ...(v6 ? ([['rebind-loopback6.example.com', ['::1']]] as [string, string[]][]) : []),
        ];
        const expected = new Map<string, string>(); // endpoint id → url
        const reboundTo = new Map<string, string>(); // endpoint id → the internal address its name resolves to now
        for (const [name, addresses] of rebound) {
          names.set(name, [PUBLIC_ADDRESS_V6]);
          const port: number | undefined = name === 'rebind-loopback6.example.com' ? v6?.port : v4.port;
          const url: string = `https://${name}:${port}/x`;
          const res: ApiResponse<{ id: string }> = await request(t, 'POST', '/v1/webhooks/endpoints', {
            token,
            body: { url },
          });
          assert.equal(res.status, 201, res.text);
          expected.set(res.body.id, url);
          reboundTo.set(res.body.id, addresses.find((a) => a !== PUBLIC_ADDRESS_V6) as string);
        }
        // ...then resolve inside before any event is produced.
        for (const [name, addresses] of rebound) names.set(name, addresses);

        // URLs that were fine when registered (say, before the service ran in production), written directly.
        const stored = [
          `https://localhost:${v4.port}/x`,
          `https://127.0.0.1:${v4.port}/x`,
          `http://127.0.0.1:${v4.port}/x`,
          `https://0x7f000001:${v4.port}/x`,
          `https://[::ffff:127.0.0.1]:${v4.port}/x`,
          ...(v6 ? [`https://[::1]:${v6.port}/x`] : []),
          'https://10.0.0.1/x',
          'https://169.254.169.254/latest/meta-data',
        ];
        for (const url of stored) {
          const id = randomUUID();
          await t.db.query(
            `INSERT INTO webhook_endpoints (id, workspace_id, url, description, enabled_events, status, disabled_reason, secret, previous_secrets, created_at, updated_at)
           VALUES ($1, $2, $3, NULL, ARRAY['*'], 'enabled', NULL, $4, '[]', now() - interval '1 second', now() - interval '1 second')`,
            [id, t.demoWorkspaceId, url, `whsec_${randomBytes(32).toString('base64')}`],
          );
          expected.set(id, url);
        }
        assert.ok(expected.size <= 16, 'within the endpoint limit of a workspace');

        // An event: the collection goes to the gateway; collection.created is recorded either way.
        const created = await createCollection(t, token, { customer: { phone_number: '+254712345678' } });
        assert.equal(created.status, 201, created.text);
        const events = await waitFor('collection.created', async () => {
          const res = await request(
            t,
            'GET',
            `/v1/events?object_id=${created.body.collection_id}&type=collection.created`,
            { token },
          );
          return res.body?.data?.length === 1 ? res.body.data : undefined;
        });
        const eventId: string = events[0].id;

        // Every endpoint gets a delivery, and its attempts (the first and the immediate retry) are refused.
        const deliveries = await waitFor(
          'a refused attempt (and its immediate retry) to every endpoint',
          async () => {
            const res = await request(t, 'GET', `/v1/events/${eventId}/deliveries?limit=100`, { token });
            const data: any[] = res.body?.data ?? [];
            if (data.length < expected.size) return undefined;
            return data.every((d) => d.attempts.length >= 2) ? data : undefined;
          },
          60_000,
        );
        assert.deepEqual(new Set(deliveries.map((d) => d.endpoint_id)), new Set(expected.keys()));
        for (const d of deliveries) {
          const url = expected.get(d.endpoint_id);
          assert.ok(d.status === 'pending' || d.status === 'failed', `${url}: ${d.status}`);
          for (const attempt of d.attempts) {
            assert.equal(attempt.url, url);
            assert.equal(attempt.succeeded, false, url);
            assert.equal(attempt.status_code, null, url);
            assert.match(attempt.error ?? '', /^refused: /, `${url}: ${attempt.error}`);
            // Judged on what the name resolves to at delivery time, not at registration.
            const now = reboundTo.get(d.endpoint_id);
            if (now !== undefined) assert.ok((attempt.error as string).includes(now), `${url}: ${attempt.error}`);
          }
        }

        // Nothing reached the local servers.
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(v4.connections(), 0, 'no connection to 127.0.0.1');
        if (v6) assert.equal(v6.connections(), 0, 'no connection to ::1');

        // (The counter does count: a direct connection is seen.)
        await new Promise<void>((ok, fail) => net.connect(v4.port, '127.0.0.1').on('connect', ok).on('error', fail));
        await waitFor('the probe connection counted', async () => (v4.connections() === 1 ? true : undefined), 5000);
      },
    );
  });
});

describe('sandbox: local receivers are allowed', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(async () => {
    await t?.close();
  });

  for (const url of [
    'http://127.0.0.1/x',
    'http://127.0.0.1:4000/hooks',
    'http://localhost:3000/x',
    'http://[::1]:3000/x',
    'https://10.0.0.1/x',
  ]) {
    it(`accepts ${url} (201)`, async () => {
      const res = await request(t, 'POST', '/v1/webhooks/endpoints', { token: t.demoToken, body: { url } });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.url, url);
    });
  }
});

describe('which addresses are internal', () => {
  it('only global unicast addresses may be reached; an IPv4-mapped one is judged by its IPv4 address', () => {
    for (const address of ['8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])
      assert.equal(isInternalAddress(address), false, address);
    for (const address of [
      '10.0.0.1',
      '127.0.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '192.0.2.1',
      '198.18.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '::1',
      '::',
      '::ffff:127.0.0.1',
      '::a00:1', // IPv4-compatible (deprecated)
      '64:ff9b::808:808', // NAT64
      '2001:db8::1',
      'fe80::1',
      'fc00::1',
      '2002::1', // 6to4
      '2001::1', // Teredo
      'not an address',
    ]) {
      assert.equal(isInternalAddress(address), true, address);
    }
  });
});
