// Active configuration per workspace, through HTTP: the admin narrows the catalogue for a workspace (never widens it),
// the workspace reads what it may use, and every create path (collections, checkout sessions and their page, refunds,
// payouts, deposit addresses) applies it, with no statement of its own; a change made on one node is seen by another.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { poolSettings } from '../src/db/open.js';
import { createPool } from '../src/db/pool.js';
import { DEFAULT_CATALOGUE } from '../src/modules/catalogue/default-catalogue.js';
import { createService } from '../src/service.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  liquidityProviderToken,
  newKey,
  request,
  startTestApp,
  tokenSession,
  type TestApp,
} from './helpers/harness.js';
import { statementsSent } from './helpers/statements.js';

let t: TestApp;
/** A workspace of its own for each test, so one test's configuration never leaks into another. */
const fresh = (name: string) => createWorkspace(t, name);

before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

const configure = (
  workspaceId: string,
  rails: unknown[] | null,
  opts: { key?: string; base?: { baseUrl: string } } = {},
) =>
  request(opts.base ?? t, 'PUT', `/v1/admin/workspaces/${workspaceId}/configuration`, {
    token: t.adminToken,
    body: { rails },
    ...(opts.key ? { idempotencyKey: opts.key } : {}),
  });
const readOwn = (token: string) => request(t, 'GET', '/v1/workspace/configuration', { token });
const KES = DEFAULT_CATALOGUE.currencies.KES as { min_amount: number; max_amount: number; exponent: number };

describe('setting and reading a configuration', () => {
  it('a workspace no admin narrowed sees the whole catalogue, with limits, exponents, capabilities and authorisation', async () => {
    const ws = await fresh('whole');
    const res = await readOwn(ws.token);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.workspace_id, ws.id);
    assert.equal(res.body.narrowed, false);
    assert.equal(res.body.updated_at, null);
    assert.deepEqual(
      res.body.markets.map((m: { market: string }) => m.market),
      Object.keys(DEFAULT_CATALOGUE.markets).sort(),
    );
    const ke = res.body.markets.find((m: { market: string }) => m.market === 'KE');
    assert.equal(ke.currency, 'KES');
    assert.equal(ke.currency_exponent, 2);
    assert.deepEqual(ke.rails[0], {
      rail: 'mpesa',
      name: 'M-Pesa',
      type: 'mobile_money',
      min_amount: KES.min_amount,
      max_amount: KES.max_amount,
      refunds: true,
      payouts: true,
      authorisation: 'push_prompt',
    });
    const ci = res.body.markets.find((m: { market: string }) => m.market === 'CI');
    const orange = ci.rails.find((r: { rail: string }) => r.rail === 'orange_money');
    assert.deepEqual([orange.authorisation, orange.refunds, orange.payouts], ['redirect', false, false]);
    const ng = res.body.markets.find((m: { market: string }) => m.market === 'NG');
    assert.equal(ng.rails[0].authorisation, 'bank_transfer');
  });

  it('the admin sets markets, rails and limits; the workspace and the admin read them back', async () => {
    const ws = await fresh('narrowed');
    const set = await configure(ws.id, [
      { market: 'KE', rail: 'mpesa', min_amount: 1_000, max_amount: 50_000 },
      { market: 'UG', rail: 'mtn_momo' },
    ]);
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.narrowed, true);
    assert.match(set.body.updated_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.deepEqual(
      set.body.markets.map((m: { market: string; rails: { rail: string }[] }) => [
        m.market,
        m.rails.map((r) => r.rail),
      ]),
      [
        ['KE', ['mpesa']],
        ['UG', ['mtn_momo']],
      ],
    );
    const mpesa = set.body.markets[0].rails[0];
    assert.deepEqual([mpesa.min_amount, mpesa.max_amount], [1_000, 50_000]);
    // Limits not given are the catalogue's.
    const ugx = DEFAULT_CATALOGUE.currencies.UGX as { min_amount: number; max_amount: number };
    assert.deepEqual(
      [set.body.markets[1].rails[0].min_amount, set.body.markets[1].rails[0].max_amount],
      [ugx.min_amount, ugx.max_amount],
    );
    assert.equal(set.body.markets[1].currency_exponent, 0);

    const own = await readOwn(ws.token);
    assert.deepEqual(own.body, set.body);
    const admin = await request(t, 'GET', `/v1/admin/workspaces/${ws.id}/configuration`, { token: t.adminToken });
    assert.deepEqual(admin.body, set.body);
    // What is stored is what the admin gave: the catalogue's limits are applied when read, not copied.
    const { rows } = await t.db.query('SELECT rails FROM workspace_configurations WHERE workspace_id = $1', [ws.id]);
    assert.deepEqual(rows[0]?.rails, [
      { market: 'KE', rail: 'mpesa', min_amount: 1_000, max_amount: 50_000 },
      { market: 'UG', rail: 'mtn_momo', min_amount: null, max_amount: null },
    ]);
  });

  it('an Idempotency-Key replays the stored answer; rails: null gives the whole catalogue back', async () => {
    const ws = await fresh('replay');
    const key = newKey();
    const first = await configure(ws.id, [{ market: 'KE', rail: 'mpesa' }], { key });
    const again = await configure(ws.id, [{ market: 'KE', rail: 'mpesa' }], { key });
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.text, first.text);
    assertProblem(await configure(ws.id, [{ market: 'UG', rail: 'mtn_momo' }], { key }), 422, 'idempotency_key_reused');

    const tanzania = () =>
      createCollection(
        t,
        ws.token,
        { currency: 'TZS', amount: 20_000, customer: { phone_number: '+255712345678' } },
        '/v1/collections/TZ/rails/mpesa',
      );
    assertProblem(await tanzania(), 400, 'invalid_market');
    const cleared = await configure(ws.id, null);
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.narrowed, false);
    assert.equal(cleared.body.updated_at, null);
    assert.equal((await readOwn(ws.token)).body.narrowed, false);
    const { rows } = await t.db.query('SELECT 1 FROM workspace_configurations WHERE workspace_id = $1', [ws.id]);
    assert.equal(rows.length, 0);
    const made = await tanzania();
    assert.equal(made.status, 201, made.text);
  });

  it('only the admin sets a configuration; an unknown workspace is 404', async () => {
    const ws = await fresh('who');
    const byIntegrator = await request(t, 'PUT', `/v1/admin/workspaces/${ws.id}/configuration`, {
      token: ws.token,
      body: { rails: [] },
    });
    assertProblem(byIntegrator, 403, 'forbidden');
    assertProblem(await configure('0190f5b4-0000-7000-8000-000000000000', []), 404, 'not_found');
    assertProblem(await configure('not-a-uuid', []), 404, 'not_found');
    const missing = await request(t, 'GET', '/v1/admin/workspaces/0190f5b4-0000-7000-8000-000000000000/configuration', {
      token: t.adminToken,
    });
    assertProblem(missing, 404, 'not_found');
  });
});

describe('narrowing only: anything that widens the catalogue is refused', () => {
  it('a market or rail the catalogue lacks: 400 invalid_market / invalid_rail naming the entry', async () => {
    const ws = await fresh('widen-rail');
    const market = await configure(ws.id, [
      { market: 'KE', rail: 'mpesa' },
      { market: 'XX', rail: 'mpesa' },
    ]);
    assertProblem(market, 400, 'invalid_market');
    assert.deepEqual(market.body.errors, [{ field: 'rails[1].market', message: 'is not a market of the catalogue' }]);
    const rail = await configure(ws.id, [{ market: 'KE', rail: 'mtn_momo' }]);
    assertProblem(rail, 400, 'invalid_rail');
    assert.equal(rail.body.errors[0].field, 'rails[0].rail');
    // Nothing was stored by either.
    assert.equal((await readOwn(ws.token)).body.narrowed, false);
  });

  it("a minimum below the catalogue's or a maximum above it: 400 catalogue_widened, each field named", async () => {
    const ws = await fresh('widen-limits');
    const res = await configure(ws.id, [
      { market: 'KE', rail: 'mpesa', min_amount: KES.min_amount - 1, max_amount: KES.max_amount + 1 },
    ]);
    assertProblem(res, 400, 'catalogue_widened');
    assert.deepEqual(
      res.body.errors.map((e: { field: string }) => e.field),
      ['rails[0].min_amount', 'rails[0].max_amount'],
    );
    assert.equal((await readOwn(ws.token)).body.narrowed, false);
    // The catalogue's own limits are not a widening.
    const edge = await configure(ws.id, [
      { market: 'KE', rail: 'mpesa', min_amount: KES.min_amount, max_amount: KES.max_amount },
    ]);
    assert.equal(edge.status, 200, edge.text);
  });

  it('a repeated rail or a minimum above the maximum: 400 validation_failed; an unknown field: 400', async () => {
    const ws = await fresh('bad-shape');
    assertProblem(
      await configure(ws.id, [
        { market: 'KE', rail: 'mpesa' },
        { market: 'KE', rail: 'mpesa' },
      ]),
      400,
      'validation_failed',
    );
    assertProblem(
      await configure(ws.id, [{ market: 'KE', rail: 'mpesa', min_amount: 5_000, max_amount: 4_000 }]),
      400,
      'validation_failed',
    );
    assertProblem(await configure(ws.id, [{ market: 'KE', rail: 'mpesa', fee: 1 }]), 400, 'validation_failed');
  });
});

describe('the create paths apply the configuration', () => {
  it('a collection on a rail not enabled is 400 invalid_rail; a market not enabled 400 invalid_market', async () => {
    const ws = await fresh('collect');
    await configure(ws.id, [{ market: 'KE', rail: 'mpesa', min_amount: 1_000, max_amount: 50_000 }]);
    const airtel = await createCollection(t, ws.token, {}, '/v1/collections/KE/rails/airtel_money');
    assertProblem(airtel, 400, 'invalid_rail');
    assert.match(airtel.body.detail, /not enabled for this workspace.*use one of mpesa/);
    const uganda = await createCollection(
      t,
      ws.token,
      { currency: 'UGX', amount: 5_000, customer: { phone_number: '+256772123456' } },
      '/v1/collections/UG/rails/mtn_momo',
    );
    assertProblem(uganda, 400, 'invalid_market');
    assert.equal((await createCollection(t, ws.token, { amount: 1_500 })).status, 201);
  });

  it("amounts outside the narrowed limits are 422 amount_out_of_range, though inside the catalogue's", async () => {
    const ws = await fresh('limits');
    await configure(ws.id, [{ market: 'KE', rail: 'mpesa', min_amount: 1_000, max_amount: 50_000 }]);
    for (const amount of [999, 50_001]) {
      assert.ok(amount >= KES.min_amount && amount <= KES.max_amount, 'inside the catalogue');
      const res = await createCollection(t, ws.token, { amount });
      assertProblem(res, 422, 'amount_out_of_range');
      assert.deepEqual(res.body.errors, [{ field: 'amount', message: 'must be between 1000 and 50000' }]);
    }
    for (const amount of [1_000, 50_000]) assert.equal((await createCollection(t, ws.token, { amount })).status, 201);
  });

  it('another workspace is unaffected', async () => {
    const narrowed = await fresh('narrowed-one');
    const other = await fresh('other-one');
    await configure(narrowed.id, [{ market: 'KE', rail: 'mpesa', max_amount: 2_000 }]);
    assertProblem(
      await createCollection(t, narrowed.token, {}, '/v1/collections/KE/rails/airtel_money'),
      400,
      'invalid_rail',
    );
    assert.equal((await createCollection(t, other.token, {}, '/v1/collections/KE/rails/airtel_money')).status, 201);
    assert.equal((await createCollection(t, other.token, { amount: 1_000_000 })).status, 201);
    assert.equal((await readOwn(other.token)).body.narrowed, false);
  });

  it('the create path sends no statement more: the token check carries the configuration', async () => {
    const ws = await fresh('statements');
    await configure(ws.id, [{ market: 'KE', rail: 'mpesa', max_amount: 2_000 }]);
    const measure = async (amount: number) => {
      const { result, statements } = await statementsSent(t.db, () => createCollection(t, ws.token, { amount }));
      return { result, statements: statements.filter((s) => !/rate_limit_buckets/.test(s.text)) };
    };
    const made = await measure(1_500);
    assert.equal(made.result.status, 201, made.result.text);
    const texts = made.statements.map((s) => s.text.replace(/\s+/g, ' '));
    assert.equal(texts.length, 2, texts.join(' | '));
    assert.match(texts[0] ?? '', /FROM workspace_configurations/, 'the token check reads the configuration');
    assert.match(texts[0] ?? '', /FROM credentials/);
    assert.match(texts[1] ?? '', /INSERT INTO collections/);
    // A refusal by the configuration sends only the token check.
    const refused = await measure(2_001);
    assertProblem(refused.result, 422, 'amount_out_of_range');
    assert.equal(refused.statements.length, 1, refused.statements.map((s) => s.text).join(' | '));
  });

  it('a checkout session: its page offers only the enabled rails that take its amount; paying on another is 400', async () => {
    const ws = await fresh('checkout');
    await configure(ws.id, [
      { market: 'CI', rail: 'wave' },
      { market: 'CI', rail: 'mtn_momo', max_amount: 1_000 },
    ]);
    const session = (amount: number, market?: string) =>
      request(t, 'POST', '/v1/checkout/sessions', {
        token: ws.token,
        body: { amount, currency: 'XOF', redirect_url: 'https://shop.example/thanks', ...(market ? { market } : {}) },
      });
    // XOF is the currency of CI and SN: the session finds its market because the workspace may use only CI.
    const made = await session(5_000);
    assert.equal(made.status, 201, made.text);
    const token = (made.body.session_url as string).split('/').pop() as string;
    const page = await request(t, 'GET', `/v1/checkout/by-token/${token}`);
    assert.equal(page.status, 200, page.text);
    assert.equal(page.body.market, 'CI');
    assert.deepEqual(
      page.body.rails.map((r: { rail: string }) => r.rail),
      ['wave'],
    );
    // The hosted page itself (HTML, no token) offers the same rails as radio buttons.
    const html = await request(t, 'GET', `/checkout/${token}`);
    assert.equal(html.status, 200);
    const offered = [...html.text.matchAll(/name="rail" value="([a-z_]+)"/g)].map((m) => m[1]);
    assert.deepEqual(offered, ['wave']);
    // Its operator prediction names only those too: an Orange number predicts orange_money (and wave) in CI.
    const predicted = await request(t, 'POST', `/v1/checkout/by-token/${token}/predict-provider`, {
      body: { phone_number: '+2250701234567' },
    });
    assert.equal(predicted.status, 200, predicted.text);
    assert.deepEqual(predicted.body.rails, ['wave'], 'orange_money, predicted first, is not offered');
    const small = await session(900);
    const smallPage = await request(
      t,
      'GET',
      `/v1/checkout/by-token/${(small.body.session_url as string).split('/').pop()}`,
    );
    assert.deepEqual(
      smallPage.body.rails.map((r: { rail: string }) => r.rail),
      ['mtn_momo', 'wave'],
    );
    const pay = (rail: string) =>
      request(t, 'POST', `/v1/checkout/by-token/${token}/pay`, {
        body: { rail, customer: { phone_number: '+2250701234567' } },
        idempotencyKey: newKey(),
      });
    assertProblem(await pay('orange_money'), 400, 'invalid_rail');
    assertProblem(await pay('mtn_momo'), 422, 'amount_out_of_range');
    // A market the workspace may not use: given, or the only one left for the currency.
    assertProblem(
      await request(t, 'POST', '/v1/checkout/sessions', {
        token: ws.token,
        body: { amount: 1_500, currency: 'KES', redirect_url: 'https://shop.example/thanks' },
      }),
      400,
      'invalid_currency',
    );
    assertProblem(await session(5_000, 'SN'), 400, 'invalid_market');
  });

  it('a collection taken before its rail was disabled can still be refunded: the money is the payer’s', async () => {
    const ws = await fresh('refund');
    const made = await createCollection(t, ws.token, {}, '/v1/collections/KE/rails/airtel_money');
    assert.equal(made.status, 201, made.text);
    const paid = await request(t, 'POST', `/v1/sandbox/collections/${made.body.collection_id}/simulate`, {
      token: ws.token,
      body: { outcome: 'successful' },
    });
    assert.equal(paid.status, 200, paid.text);
    await configure(ws.id, [{ market: 'KE', rail: 'mpesa' }]);
    // New collections on the rail are refused; the refund of the one already taken is not.
    assertProblem(
      await createCollection(t, ws.token, {}, '/v1/collections/KE/rails/airtel_money'),
      400,
      'invalid_rail',
    );
    const refund = await request(t, 'POST', `/v1/collections/${made.body.collection_id}/refund`, {
      token: ws.token,
      body: { amount: made.body.amount },
      idempotencyKey: newKey(),
    });
    assert.equal(refund.status, 201, refund.text);
  });

  it('a payout over a rail not enabled is 400 invalid_rail; outside its limits 422 amount_out_of_range', async () => {
    const ws = await fresh('payout');
    const lp = await liquidityProviderToken(t);
    const route = async (rail: string) => {
      const res = await request(t, 'POST', '/v1/api/routes', {
        token: lp,
        body: { source: 'KES', market: 'KE', rail, min_amount: 100, max_amount: 20_000_000 },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.route_id as string;
    };
    const beneficiary = async (rail: string) => {
      const res = await request(t, 'POST', '/v1/api/beneficiaries', {
        token: ws.token,
        body: { name: 'Wanjiru Kamau', market: 'KE', rail, phone_number: '+254712345678' },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.beneficiary_id as string;
    };
    const commit = (routeId: string, beneficiaryId: string, amount: number) =>
      request(t, 'POST', '/api/transactions/commit', {
        token: ws.token,
        body: { route_id: routeId, beneficiary_id: beneficiaryId, amount, reference: `p-${newKey()}` },
        idempotencyKey: newKey(),
      });
    const airtelRoute = await route('airtel_money');
    const mpesaRoute = await route('mpesa');
    const airtel = await beneficiary('airtel_money');
    const mpesa = await beneficiary('mpesa');
    await configure(ws.id, [{ market: 'KE', rail: 'mpesa', min_amount: 1_000, max_amount: 50_000 }]);

    const refused = await commit(airtelRoute, airtel, 5_000);
    assertProblem(refused, 400, 'invalid_rail');
    assert.equal(refused.body.errors[0].field, 'route_id');
    assertProblem(await commit(mpesaRoute, mpesa, 50_001), 422, 'amount_out_of_range');
    assertProblem(await commit(mpesaRoute, mpesa, 999), 422, 'amount_out_of_range');
    // Within the limits it reaches the balance check: the workspace has no money yet.
    assertProblem(await commit(mpesaRoute, mpesa, 5_000), 422, 'insufficient_balance');
  });

  it('a deposit address converting to a currency of no enabled market is 400 invalid_currency', async () => {
    const ws = await fresh('deposit');
    await configure(ws.id, [{ market: 'KE', rail: 'mpesa' }]);
    const address = (currency: string) =>
      request(t, 'POST', '/v1/api/deposit-addresses', {
        token: ws.token,
        body: { asset: 'USDT', network: 'tron', autoconvert_currency: currency },
      });
    assertProblem(await address('GHS'), 400, 'invalid_currency');
    assert.equal((await address('KES')).status, 201);
  });
});

describe('the dashboard offers what the workspace may use', () => {
  const optionsOf = async (cookie: string, path: string, select: string): Promise<string[]> => {
    const page = await (await fetch(`${t.baseUrl}${path}`, { headers: { cookie } })).text();
    const list = new RegExp(`<select[^>]*name="${select}"[^>]*>([\\s\\S]*?)</select>`).exec(page)?.[1] ?? '';
    return [...list.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1] ?? '').filter((v) => v !== '');
  };

  it("the sandbox's test collection and a new checkout link list only the enabled rails and markets", async () => {
    const ws = await fresh('dashboard-narrowed');
    const cookie = await tokenSession(t.baseUrl, ws.token);
    const before = await optionsOf(cookie, '/dashboard/sandbox', 'rail');
    assert.ok(before.includes('KE/airtel_money') && before.includes('GH/mtn_momo'), 'the whole catalogue first');
    assert.equal((await configure(ws.id, [{ market: 'KE', rail: 'mpesa' }])).status, 200);
    assert.deepEqual(await optionsOf(cookie, '/dashboard/sandbox', 'rail'), ['KE/mpesa']);
    assert.deepEqual(await optionsOf(cookie, '/dashboard/checkout-links/new', 'market'), ['KE']);
  });
});

describe('several nodes', () => {
  it('a change made through one node is applied by another at its next request, with nothing to invalidate', async () => {
    // A second app on the same database, as a second node behind the load balancer.
    const url = t.config.databaseUrl as string;
    const db2 = createPool(url, 4, poolSettings(t.config));
    const second = await createService(t.config, db2, { logger: false, workerDb: db2, box: t.box });
    await second.app.listen({ port: 0, host: '127.0.0.1' });
    const address = second.app.server.address();
    const node2 = { baseUrl: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
    try {
      const ws = await fresh('nodes');
      // Node 2 serves the workspace first, with the whole catalogue.
      assert.equal((await createCollection(node2, ws.token, {}, '/v1/collections/KE/rails/airtel_money')).status, 201);
      // The admin narrows it through node 1 ...
      assert.equal((await configure(ws.id, [{ market: 'KE', rail: 'mpesa', max_amount: 2_000 }])).status, 200);
      // ... and node 2's very next request is refused.
      assertProblem(
        await createCollection(node2, ws.token, {}, '/v1/collections/KE/rails/airtel_money'),
        400,
        'invalid_rail',
      );
      assertProblem(await createCollection(node2, ws.token, { amount: 2_001 }), 422, 'amount_out_of_range');
      const seen = await request(node2, 'GET', '/v1/workspace/configuration', { token: ws.token });
      assert.equal(seen.body.narrowed, true);
      // And the other way: cleared through node 2, node 1 allows the rail again.
      assert.equal((await configure(ws.id, null, { base: node2 })).status, 200);
      assert.equal((await createCollection(t, ws.token, {}, '/v1/collections/KE/rails/airtel_money')).status, 201);
    } finally {
      await second.app.close();
      await db2.end();
    }
  });
});
