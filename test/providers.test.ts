// Production mode: rails need a configured provider (the start is refused otherwise), and an HTTP gateway
// speaking the provider protocol runs collections and refunds end to end: initiation, signed callbacks,
// retries after an outage, refusals, and reconciliation by status query. Sandbox routes are 404 here.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { loadCatalogue, MarketCatalogue } from '../src/modules/catalogue/catalogue.js';
import { signCallback } from '../src/modules/providers/callback-protocol.js';
import { planProviders } from '../src/modules/providers/providers.registry.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { expireDue } from '../src/modules/lifecycle/sweeps.js';
import {
  assertProblem,
  createCollection,
  liquidityProviderToken,
  newKey,
  request,
  requestRefund,
  startTestApp,
  type TestApp,
  waitFor,
} from './helpers/harness.js';
import { npmStartArgs } from './helpers/start-command.js';

const catalogue = new MarketCatalogue(loadCatalogue(undefined));
const ALL_MARKETS = catalogue.marketCodes().map((m) => `${m}/*`);
const CALLBACK_SECRET = randomBytes(24).toString('hex');
const API_KEY = `gw_${randomBytes(8).toString('hex')}`;

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A PROVIDERS_FILE in `dir` with one gateway, acme, at `baseUrl` for `rails`; returns its path. */
async function acmeGatewayFile(dir: string, baseUrl: string, apiKey: string, rails: string[]): Promise<string> {
  const file = path.join(dir, 'providers.json');
  const gateway = { name: 'acme', base_url: baseUrl, api_key: apiKey, callback_secret: CALLBACK_SECRET, rails };
  await writeFile(file, JSON.stringify({ gateways: [gateway] }));
  return file;
}

/** A rail gateway on loopback speaking our provider protocol; its answers are set per test. */
class FakeGateway {
  readonly received: Received[] = [];
  /** What POST /collections and /refunds answer: status code and body. */
  answer: (req: Received) => { status: number; body: unknown } = (req) => ({
    status: 201,
    body: { reference: `gw_${req.body.merchant_reference}`, status: 'pending' },
  });
  /** What GET /collections/{id} answers. */
  query: (id: string) => { status: number; body: unknown } = () => ({ status: 404, body: {} });
  private server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const received: Received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: raw ? JSON.parse(raw) : undefined,
      };
      this.received.push(received);
      const reply =
        req.method === 'GET'
          ? this.query(decodeURIComponent((req.url ?? '').split('/').pop() ?? ''))
          : this.answer(received);
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
    });
  });
  url = '';

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  initiations(kind: 'collections' | 'refunds' | 'payouts', id: string): Received[] {
    return this.received.filter(
      (r) => r.method === 'POST' && r.url === `/${kind}` && r.body?.merchant_reference === id,
    );
  }
}

describe('the start is refused when a rail has no provider', () => {
  it('production without PROVIDERS_FILE: npm start exits 1 naming the rails and the setting', () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PAYMENTS_ENV: 'production',
      DATA_DIR: path.join(os.tmpdir(), 'never-created'),
      LOG_LEVEL: 'silent',
    };
    delete env.DATABASE_URL;
    const res = spawnSync(process.execPath, npmStartArgs(), { env, encoding: 'utf8', timeout: 30_000 });
    assert.equal(res.status, 1, res.stderr);
    assert.match(res.stderr, /configuration error: production needs a rail provider/);
    assert.match(res.stderr, /KE\/mpesa/);
    assert.match(res.stderr, /CI\/wave/);
    assert.match(res.stderr, /PROVIDERS_FILE/);
  });

  it('a gateway covering only some rails leaves the others named', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'providers-'));
    try {
      const file = await acmeGatewayFile(dir, 'https://gw.example', 'k', ['KE/*']);
      const config = loadConfig({ PAYMENTS_ENV: 'production', PROVIDERS_FILE: file });
      assert.throws(
        () => planProviders(config, catalogue),
        (err: Error) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, /GH\/mtn_momo/);
          assert.doesNotMatch(err.message, /KE\/mpesa/);
          return true;
        },
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('PROVIDERS_FILE mistakes are refused with the reason', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'providers-'));
    const gateway = {
      name: 'acme',
      base_url: 'https://gw.example',
      api_key: 'k',
      callback_secret: CALLBACK_SECRET,
      rails: ALL_MARKETS,
    };
    const cases: [unknown, RegExp][] = [
      [{ gateways: [{ ...gateway, rails: ['XX/*'] }] }, /market XX/],
      [{ gateways: [{ ...gateway, rails: ['KE/wave'] }] }, /rail KE\/wave/],
      [
        { gateways: [gateway, { ...gateway, name: 'other', rails: ['KE/mpesa'] }] },
        /KE\/mpesa is given to both 'acme' and 'other'/,
      ],
      [{ gateways: [{ ...gateway, name: 'sandbox' }] }, /reserved/],
      [{ gateways: [{ ...gateway, base_url: 'http://gw.example' }] }, /must use https in production/],
      [{ gateways: [{ ...gateway, callback_secret: 'short' }] }, /callback_secret/],
      [{ gateways: [{ ...gateway, extra: 1 }] }, /extra/],
    ];
    try {
      for (const [content, message] of cases) {
        const file = path.join(dir, `${randomBytes(4).toString('hex')}.json`);
        await writeFile(file, JSON.stringify(content));
        assert.throws(
          () => planProviders(loadConfig({ PAYMENTS_ENV: 'production', PROVIDERS_FILE: file }), catalogue),
          message,
        );
      }
      assert.throws(
        () => planProviders(loadConfig({ PROVIDERS_FILE: path.join(dir, 'missing.json') }), catalogue),
        /could not be read/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('in the sandbox the simulator runs every rail no gateway claims', () => {
    const plan = planProviders(loadConfig({}), catalogue);
    assert.equal(plan.rails.get('KE/mpesa'), 'sandbox');
    assert.equal(plan.rails.get('NG/bank_transfer'), 'sandbox');
    assert.equal(plan.simulated, true);
  });
});

describe('production with an HTTP gateway', () => {
  let t: TestApp;
  let dir: string;
  const gateway = new FakeGateway();

  before(async () => {
    await gateway.start();
    dir = await mkdtemp(path.join(os.tmpdir(), 'providers-'));
    const file = await acmeGatewayFile(dir, gateway.url, API_KEY, ALL_MARKETS);
    // KE/airtel_money expires after 2 s here, for the expiry test; everything else keeps the built-in expiry.
    t = await startTestApp(
      { PAYMENTS_ENV: 'production', PROVIDERS_FILE: file, WORKER_INTERVAL_MS: '20', RECONCILE_AFTER_SECONDS: '1' },
      { workers: true, expirySeconds: { 'KE/airtel_money': 2 } },
    );
  });
  after(async () => {
    await t.close();
    await gateway.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const status = async (id: string): Promise<any> =>
    (await request(t, 'GET', `/v1/collections/${id}`, { token: t.demoToken })).body;
  const callback = (body: Record<string, unknown>, secret = CALLBACK_SECRET, provider = 'acme') => {
    const raw = JSON.stringify({ occurred_at: new Date().toISOString(), reason: null, ...body });
    return request(t, 'POST', `/v1/providers/${provider}/callbacks`, {
      rawBody: raw,
      headers: signCallback(secret, raw),
    });
  };
  /** The collection once it reaches `want`, read through the API. */
  const reaching = (id: string, want: string, timeoutMs?: number): Promise<any> =>
    waitFor(
      `collection ${id} ${want}`,
      async () => {
        const c = await status(id);
        return c.status === want ? c : undefined;
      },
      timeoutMs,
    );
  /** A new collection of the demo workspace, once the gateway has it pending; returns its id. */
  async function pendingCollection(): Promise<string> {
    const created = await createCollection(t, t.demoToken);
    assert.equal(created.status, 201, created.text);
    const id = created.body.collection_id as string;
    await reaching(id, 'pending');
    return id;
  }
  /** The gateway answers `first` to the next initiation and as usual after it; `count` counts the initiations. */
  function answerFirst(first: { status: number; body: unknown }): { count: number } {
    const initiations = { count: 0 };
    gateway.answer = (req) => {
      initiations.count += 1;
      return initiations.count <= 1 ? first : new FakeGateway().answer(req);
    };
    return initiations;
  }
  /** The gateway's notice `noticeId` that the object it knows as `gw_<id>` reached `status`. */
  const gatewayNotice = (noticeId: string, objectType: string, id: string, status: string) => ({
    notice_id: noticeId,
    object_type: objectType,
    merchant_reference: id,
    reference: `gw_${id}`,
    status,
  });
  /** The demo workspace's available KES. */
  const balance = async (): Promise<number> =>
    (await request(t, 'GET', '/v1/balances', { token: t.demoToken })).body.data.find((b: any) => b.currency === 'KES')
      ?.available;
  /** Funds for a payout: a collection of `amount` the gateway initiated and reports successful. */
  async function fund(amount: number): Promise<void> {
    const c = await createCollection(t, t.demoToken, { amount });
    assert.equal(c.status, 201, c.text);
    const cid = c.body.collection_id as string;
    await waitFor('collection at the gateway', async () =>
      gateway.initiations('collections', cid).length === 1 ? true : undefined,
    );
    const paid = await callback(gatewayNotice(`fund-${cid}`, 'collection', cid, 'successful'));
    assert.equal(paid.status, 200, paid.text);
  }

  it('sandbox routes are unknown in production', async () => {
    const created = await createCollection(t, t.demoToken);
    for (const url of [
      `/v1/sandbox/collections/${created.body.collection_id}/simulate`,
      `/v1/sandbox/refunds/${created.body.collection_id}/simulate`,
    ]) {
      assertProblem(
        await request(t, 'POST', url, { token: t.demoToken, body: { outcome: 'successful' } }),
        404,
        'not_found',
      );
    }
    // No simulator runs here, so its callback route is unknown too.
    const raw = JSON.stringify({
      notice_id: 'n',
      object_type: 'collection',
      merchant_reference: created.body.collection_id,
      reference: 'r',
      status: 'successful',
      occurred_at: new Date().toISOString(),
    });
    assertProblem(
      await request(t, 'POST', '/v1/providers/sandbox/callbacks', {
        rawBody: raw,
        headers: signCallback('x'.repeat(32), raw),
      }),
      404,
      'not_found',
    );
  });

  it('a collection is initiated at the gateway once, moves by its signed callbacks, and is refunded through it', async () => {
    const created = await createCollection(t, t.demoToken, { customer: { phone_number: '+254712345678' } });
    assert.equal(created.status, 201);
    const id = created.body.collection_id as string;
    await reaching(id, 'pending');
    const initiations = gateway.initiations('collections', id);
    assert.equal(initiations.length, 1);
    const sent = initiations[0] as Received;
    assert.equal(sent.headers.authorization, `Bearer ${API_KEY}`);
    assert.equal(sent.headers['idempotency-key'], id);
    assert.equal(sent.body.amount, 1500);
    assert.equal(sent.body.currency, 'KES');
    assert.equal(sent.body.market, 'KE');
    assert.equal(sent.body.rail, 'mpesa');
    assert.deepEqual(sent.body.customer, { phone_number: '+254712345678' });
    assert.equal(sent.body.callback_url, `${t.config.publicBaseUrl}/v1/providers/acme/callbacks`);

    // Signed with another secret: refused, nothing moves.
    const forged = await callback(gatewayNotice('n-forged', 'collection', id, 'successful'), 'y'.repeat(32));
    assertProblem(forged, 401, 'invalid_signature');
    assert.equal((await status(id)).status, 'pending');

    // The gateway reports only the final outcome: the collection passes through processing to successful.
    const done = await callback(gatewayNotice('n-1', 'collection', id, 'successful'));
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(done.body, { received: true, outcome: 'applied' });
    assert.equal((await status(id)).status, 'successful');
    const again = await callback(gatewayNotice('n-1', 'collection', id, 'successful'));
    assert.deepEqual(again.body, { received: true, outcome: 'duplicate' });
    const events = await t.db.query<{ type: string }>(
      'SELECT type FROM events WHERE object_id = $1 ORDER BY created_at, id',
      [id],
    );
    assert.deepEqual(
      events.rows.map((e) => e.type),
      ['collection.created', 'collection.pending', 'collection.processing', 'collection.successful'],
    );

    // A notice whose reference is not the one the gateway gave: refused.
    const misrouted = await callback({
      ...gatewayNotice('n-2', 'collection', id, 'reversed'),
      reference: 'someone-else',
    });
    assert.deepEqual(misrouted.body, { received: true, outcome: 'refused' });
    assert.equal((await status(id)).status, 'successful');

    const refund = await requestRefund(t, t.demoToken, id, 1500);
    assert.equal(refund.status, 201, refund.text);
    const refundId = refund.body.refund_id as string;
    await waitFor('refund initiation', async () =>
      gateway.initiations('refunds', refundId).length === 1 ? true : undefined,
    );
    const refundSent = gateway.initiations('refunds', refundId)[0] as Received;
    assert.equal(refundSent.body.collection_reference, `gw_${id}`);
    assert.equal(refundSent.body.collection_merchant_reference, id);
    assert.equal(refundSent.body.amount, 1500);
    await waitFor('refund pending', async () =>
      (await request(t, 'GET', `/v1/refunds/${refundId}`, { token: t.demoToken })).body.status === 'pending'
        ? true
        : undefined,
    );
    const refunded = await callback(gatewayNotice('r-1', 'refund', refundId, 'successful'));
    assert.deepEqual(refunded.body, { received: true, outcome: 'applied' });
    assert.equal((await status(id)).status, 'refunded');
    assert.deepEqual(await verifyLedger(t.db), []);
  });

  it('a gateway that refuses the initiation (4xx) fails the collection with provider_refused', async () => {
    gateway.answer = () => ({ status: 400, body: { error: 'bad msisdn' } });
    try {
      const created = await createCollection(t, t.demoToken);
      const id = created.body.collection_id as string;
      const failed = await reaching(id, 'failed');
      assert.equal(failed.failure_reason, 'provider_refused');
    } finally {
      gateway.answer = new FakeGateway().answer;
    }
  });

  it('a gateway outage (5xx) leaves the collection created; the initiation is retried once the gateway answers', async () => {
    const initiations = answerFirst({ status: 503, body: {} });
    try {
      const created = await createCollection(t, t.demoToken);
      const id = created.body.collection_id as string;
      await waitFor('first attempt', async () => (initiations.count >= 1 ? true : undefined));
      assert.equal((await status(id)).status, 'created');
      await reaching(id, 'pending', 15_000);
      // Every attempt carried the same Idempotency-Key, so the gateway can tell it is one payment.
      const keys = new Set(gateway.initiations('collections', id).map((r) => r.headers['idempotency-key']));
      assert.deepEqual([...keys], [id]);
      assert.ok(gateway.initiations('collections', id).length >= 2);
    } finally {
      gateway.answer = new FakeGateway().answer;
    }
  });

  it('a collection in flight with no news is reconciled by asking the gateway', async () => {
    const id = await pendingCollection();
    gateway.query = (asked) =>
      asked === id ? { status: 200, body: { reference: `gw_${id}`, status: 'successful' } } : { status: 404, body: {} };
    try {
      await reaching(id, 'successful', 15_000);
      assert.ok(gateway.received.some((r) => r.method === 'GET' && r.url === `/collections/${id}`));
    } finally {
      gateway.query = () => ({ status: 404, body: {} });
    }
  });

  it('a 401 from the gateway (a rotated key, say) is retried, not taken as a refusal of the payment', async () => {
    answerFirst({ status: 401, body: { error: 'bad key' } });
    try {
      const created = await createCollection(t, t.demoToken);
      const id = created.body.collection_id as string;
      await reaching(id, 'pending', 15_000);
      assert.equal((await status(id)).failure_reason, null);
    } finally {
      gateway.answer = new FakeGateway().answer;
    }
  });

  it('a refund not yet sent when the provider reverses the collection fails as collection_reversed and is never sent', async () => {
    const id = await pendingCollection();
    await callback(gatewayNotice(`ok-${id}`, 'collection', id, 'successful'));
    let refundCalls = 0;
    gateway.answer = (req) =>
      req.url === '/refunds' ? ((refundCalls += 1), { status: 503, body: {} }) : new FakeGateway().answer(req);
    try {
      const refund = await requestRefund(t, t.demoToken, id, 1500);
      assert.equal(refund.status, 201, refund.text);
      await waitFor('the first refund attempt', async () => (refundCalls >= 1 ? true : undefined));
      const reversed = await callback(gatewayNotice(`rev-${id}`, 'collection', id, 'reversed'));
      assert.deepEqual(reversed.body, { received: true, outcome: 'applied' });
      const after = (await request(t, 'GET', `/v1/refunds/${refund.body.refund_id}`, { token: t.demoToken })).body;
      assert.equal(after.status, 'failed');
      assert.equal(after.failure_reason, 'collection_reversed');
      assert.match(after.resolved_at, /^\d{4}-/);
      const calls = refundCalls;
      gateway.answer = new FakeGateway().answer;
      // Due again now (its retry after the 503 would be seconds away, and a sweep before then sends nothing whatever
      // its status): only its being failed keeps the sweep from sending it.
      const due = await t.db.query(
        "UPDATE refunds SET submit_after = now() - interval '1 second' WHERE id = $1 AND submitted_at IS NULL",
        [after.refund_id],
      );
      assert.equal(due.rowCount, 1, 'the refund was never answered by the gateway, and is due');
      await t.services.submitter.sweep();
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(refundCalls, calls, 'the refund is not sent after the reversal');
      assert.equal(gateway.initiations('refunds', after.refund_id).filter((r) => r.method === 'POST').length, calls);
      const events = await t.db.query<{ type: string }>(
        'SELECT type FROM events WHERE object_id = $1 ORDER BY created_at, id',
        [after.refund_id],
      );
      assert.deepEqual(
        events.rows.map((e) => e.type),
        ['refund.requested', 'refund.failed'],
      );
      assert.deepEqual(await verifyLedger(t.db), []);
    } finally {
      gateway.answer = new FakeGateway().answer;
    }
  });

  it('a payment authorised at the last moment, whose callback was lost, is not expired: the provider is asked', async () => {
    const late = await createCollection(t, t.demoToken, {}, '/v1/collections/KE/rails/airtel_money');
    const quiet = await createCollection(t, t.demoToken, {}, '/v1/collections/KE/rails/airtel_money');
    const lateId = late.body.collection_id as string;
    const quietId = quiet.body.collection_id as string;
    await waitFor('both pending', async () =>
      (await status(lateId)).status === 'pending' && (await status(quietId)).status === 'pending' ? true : undefined,
    );
    // The payer of `late` authorised, but its callback was lost; the gateway knows.
    gateway.query = (asked) =>
      asked === lateId
        ? { status: 200, body: { reference: `gw_${lateId}`, status: 'processing' } }
        : { status: 200, body: { reference: `gw_${asked}`, status: 'pending' } };
    try {
      await reaching(quietId, 'expired', 10_000);
      assert.equal((await status(lateId)).status, 'processing');
      const paid = await callback(gatewayNotice(`late-${lateId}`, 'collection', lateId, 'successful'));
      assert.deepEqual(paid.body, { received: true, outcome: 'applied' });
      assert.equal((await status(lateId)).status, 'successful');
    } finally {
      gateway.query = () => ({ status: 404, body: {} });
    }
  });

  it("payouts are handed to the gateway once; its signed callbacks settle one and release the other; deposits come from the pool and the LP's reports", async () => {
    const lpToken = await liquidityProviderToken(t);
    await fund(10_000);
    const route = await request(t, 'POST', '/v1/api/routes', {
      token: lpToken,
      body: { source: 'KES', market: 'KE', rail: 'mpesa', min_amount: 100, max_amount: 1_000_000, fee_fixed: 25 },
    });
    assert.equal(route.status, 201, route.text);
    const ben = await request(t, 'POST', '/v1/api/beneficiaries', {
      token: t.demoToken,
      body: { name: 'Otieno Odhiambo', market: 'KE', rail: 'mpesa', phone_number: '+254712345678' },
    });
    const before = await balance();
    const commit = (amount: number) =>
      request(t, 'POST', '/api/transactions/commit', {
        token: t.demoToken,
        idempotencyKey: newKey(),
        body: {
          route_id: route.body.route_id,
          beneficiary_id: ben.body.beneficiary_id,
          amount,
          reference: 'gw-payout',
        },
      });
    const paid = await commit(4_000);
    const refused = await commit(3_000);
    assert.equal(paid.status, 201, paid.text);
    assert.equal(refused.status, 201, refused.text);
    for (const p of [paid, refused]) {
      const id = p.body.transaction_id as string;
      await waitFor('payout at the gateway', async () =>
        gateway.initiations('payouts', id).length === 1 ? true : undefined,
      );
      const sent = gateway.initiations('payouts', id)[0] as Received;
      assert.equal(sent.headers['idempotency-key'], id);
      assert.equal(sent.body.amount, p.body.amount);
      assert.equal(sent.body.amount, p.body.source_amount - 25);
      assert.deepEqual(sent.body.beneficiary, {
        name: 'Otieno Odhiambo',
        phone_number: '+254712345678',
        bank_code: null,
        account_number: null,
      });
      await waitFor('payout pending', async () =>
        (await request(t, 'GET', `/v1/api/transactions/${id}`, { token: t.demoToken })).body.status === 'pending'
          ? true
          : undefined,
      );
    }
    assert.equal(await balance(), before - 7_000);
    const pid = paid.body.transaction_id as string;
    const rid = refused.body.transaction_id as string;
    assert.equal((await callback(gatewayNotice(`p-${pid}`, 'payout', pid, 'successful'))).body.outcome, 'applied');
    assert.equal(
      (await callback({ ...gatewayNotice(`p-${rid}`, 'payout', rid, 'failed'), reason: 'invalid_account' })).body
        .outcome,
      'applied',
    );
    const failed = (await request(t, 'GET', `/v1/api/transactions/${rid}`, { token: t.demoToken })).body;
    assert.deepEqual([failed.status, failed.failure_reason], ['failed', 'invalid_account']);
    assert.equal(
      (await request(t, 'GET', `/v1/api/transactions/${pid}`, { token: t.demoToken })).body.status,
      'successful',
    );
    assert.equal(await balance(), before - 4_000);
    assertProblem(
      await request(t, 'POST', `/v1/sandbox/payouts/${pid}/simulate`, {
        token: t.demoToken,
        body: { outcome: 'failed' },
      }),
      404,
      'not_found',
    );

    // Deposits: no address is free until the liquidity provider stocks the pool; its chain watcher reports the transfer.
    const want = { asset: 'USDT', network: 'tron' };
    const empty = await request(t, 'POST', '/v1/api/deposit-addresses', { token: t.demoToken, body: want });
    assertProblem(empty, 409, 'deposit_address_pool_empty');
    assert.equal(empty.headers.get('retry-after'), '60');
    const addr = `T${'A'.repeat(33)}`;
    const stocked = await request(t, 'POST', '/v1/api/deposit-addresses/pool', {
      token: lpToken,
      body: { ...want, addresses: [addr] },
    });
    assert.deepEqual([stocked.status, stocked.body.added, stocked.body.available], [200, 1, 1]);
    const address = await request(t, 'POST', '/v1/api/deposit-addresses', { token: t.demoToken, body: want });
    assert.equal(address.status, 201, address.text);
    assert.equal(address.body.address, addr);
    const report = { network: 'tron', address: addr, asset: 'USDT', amount: 5_000_000, tx_hash: 'f'.repeat(64) };
    assert.equal(
      (await request(t, 'POST', '/v1/api/deposits', { token: lpToken, body: { ...report, status: 'pending' } })).status,
      201,
    );
    const confirmed = await request(t, 'POST', '/v1/api/deposits', {
      token: lpToken,
      body: { ...report, status: 'confirmed', confirmations: 20 },
    });
    assert.equal(confirmed.status, 200, confirmed.text);
    assert.deepEqual(
      [confirmed.body.status, confirmed.body.credited_currency, confirmed.body.credited_amount],
      ['credited', 'USDT', 5_000_000],
    );
    assertProblem(
      await request(t, 'POST', '/v1/sandbox/deposits', {
        token: t.demoToken,
        body: { deposit_address_id: address.body.deposit_address_id, amount: 1 },
      }),
      404,
      'not_found',
    );
    assert.deepEqual(await verifyLedger(t.db), []);
  });

  it('a payout whose initiation was never answered is failed (and released) only once the gateway says it does not have it', async () => {
    const lpToken = await liquidityProviderToken(t);
    await fund(9_000);
    const route = await request(t, 'POST', '/v1/api/routes', {
      token: lpToken,
      body: { source: 'KES', market: 'KE', rail: 'mpesa', min_amount: 100, max_amount: 1_000_000 },
    });
    const ben = await request(t, 'POST', '/v1/api/beneficiaries', {
      token: t.demoToken,
      body: { name: 'Akinyi', market: 'KE', rail: 'mpesa', phone_number: '+254712345678' },
    });
    const normal = gateway.answer;
    const normalQuery = gateway.query;
    // The gateway times out on every payout initiation (for us: no answer).
    gateway.answer = (req) => (req.url === '/payouts' ? { status: 503, body: {} } : normal(req));
    try {
      const payout = async () => {
        const res = await request(t, 'POST', '/api/transactions/commit', {
          token: t.demoToken,
          idempotencyKey: newKey(),
          body: {
            route_id: route.body.route_id,
            beneficiary_id: ben.body.beneficiary_id,
            amount: 1_000,
            reference: 'unanswered',
          },
        });
        assert.equal(res.status, 201, res.text);
        const id = res.body.transaction_id as string;
        await waitFor('initiation tried', async () =>
          gateway.initiations('payouts', id).length >= 1 ? true : undefined,
        );
        await new Promise((r) => setTimeout(r, 100));
        return id;
      };
      const read = async (id: string) =>
        (await request(t, 'GET', `/v1/api/transactions/${id}`, { token: t.demoToken })).body;
      const giveUp = async (id: string) => {
        const asked = t.services.submitter;
        asked.kick('payout', t.demoWorkspaceId, id, 11);
        await waitFor('status asked', async () =>
          gateway.received.some((r) => r.method === 'GET' && r.url === `/payouts/${id}`) ? true : undefined,
        );
        await new Promise((r) => setTimeout(r, 150));
      };
      // 1. The status query fails too: the payout stays created (reserved), for a person and the next sweep.
      gateway.query = () => ({ status: 500, body: {} });
      const unknown = await payout();
      await giveUp(unknown);
      assert.equal((await read(unknown)).status, 'created');
      // 2. The gateway has it after all: its status is applied, nothing is released.
      const taken = await payout();
      gateway.query = (id) => ({ status: 200, body: { reference: `gw_${id}`, status: 'pending' } });
      await giveUp(taken);
      await waitFor('the gateway’s pending applied', async () =>
        (await read(taken)).status === 'pending' ? true : undefined,
      );
      // 3. The gateway does not know it: failed with provider_error, and the reservation is released.
      const never = await payout();
      gateway.query = () => ({ status: 404, body: {} });
      const before = await balance();
      await giveUp(never);
      const failed = await waitFor('the payout failed', async () => {
        const body = await read(never);
        return body.status === 'failed' ? body : undefined;
      });
      assert.deepEqual([failed.status, failed.failure_reason], ['failed', 'provider_error']);
      assert.equal(await balance(), before + 1_000);
    } finally {
      gateway.answer = normal;
      gateway.query = normalQuery;
    }
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('the expiry sweep asks the provider first', () => {
  let t: TestApp;

  // No workers: this test runs the submitter and the sweep itself.
  before(async () => {
    t = await startTestApp({ SANDBOX_STEP_MS: '600000' }, { expirySeconds: { 'KE/mpesa': 1 } });
  });
  after(async () => t.close());

  it('a collection its provider reports as authorised becomes processing, one still pending expires', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const res = await createCollection(t, t.demoToken);
      assert.equal(res.status, 201, res.text);
      ids.push(res.body.collection_id);
      t.services.submitter.kick('collection', t.demoWorkspaceId, res.body.collection_id);
    }
    const [authorised, quiet] = ids as [string, string];
    await waitFor('both pending', async () => {
      const { rows } = await t.db.query<{ n: number }>(
        "SELECT count(*) AS n FROM collections WHERE id = ANY($1) AND status = 'pending'",
        [ids],
      );
      return rows[0]?.n === 2 ? true : undefined;
    });
    // At the simulated provider, the payer of `authorised` approved (its callback never came).
    await t.db.query(
      "UPDATE sandbox_operations SET script = script[1:next_step] || 'processing'::text, next_step = next_step + 1 WHERE object_id = $1",
      [authorised],
    );
    await new Promise((r) => setTimeout(r, 1100));
    const looked = await expireDue(
      t.db,
      t.services.batcher,
      t.services.lifecycle,
      t.services.providers,
      t.services.notices,
      t.app.log,
    );
    assert.ok(looked >= 2);
    const statuses = await t.db.query<{ id: string; status: string }>(
      'SELECT id, status FROM collections WHERE id = ANY($1)',
      [ids],
    );
    const byId = new Map(statuses.rows.map((r) => [r.id, r.status]));
    assert.equal(byId.get(authorised), 'processing');
    assert.equal(byId.get(quiet), 'expired');
    const events = await t.db.query<{ type: string }>(
      'SELECT type FROM events WHERE object_id = $1 ORDER BY created_at, id',
      [authorised],
    );
    assert.deepEqual(
      events.rows.map((e) => e.type),
      ['collection.created', 'collection.pending', 'collection.processing'],
    );
  });
});
