// Offramp routes and payouts (list, read, commit) through HTTP: who may call what, validation, the
// reservation from the ledger balance under concurrency, idempotent commits, the sandbox lifecycle that
// settles or releases the reservation, conversion from an asset, and the large-payout risk rule.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  newKey,
  request,
  requestRefund,
  startTestApp,
  waitFor,
} from './helpers/harness.js';

const t = await startTestApp(FAST_LIFECYCLE, { workers: true });
after(async () => t.close());
const lpToken = await liquidityProviderToken(t);

const route = (overrides: Record<string, unknown> = {}) => ({
  source: 'KES',
  market: 'KE',
  rail: 'mpesa',
  min_amount: 100,
  max_amount: 20_000_000,
  ...overrides,
});

async function createRoute(overrides: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const res = await request(t, 'POST', '/v1/api/routes', { token: lpToken, body: route(overrides) });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function beneficiary(token: string, phone = '+254712345678', rail = 'mpesa'): Promise<string> {
  const res = await request(t, 'POST', '/v1/api/beneficiaries', {
    token,
    body: { name: 'Wanjiru Kamau', market: 'KE', rail, phone_number: phone },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.beneficiary_id;
}

/** Credits `amount` KES cents to the workspace: a collection driven to successful. */
async function fund(token: string, amount: number): Promise<void> {
  const c = await createCollection(t, token, { amount });
  assert.equal(c.status, 201, c.text);
  const s = await request(t, 'POST', `/v1/sandbox/collections/${c.body.collection_id}/simulate`, {
    token,
    body: { outcome: 'successful' },
  });
  assert.equal(s.status, 200, s.text);
}

/** Credits `amount` of an asset to the workspace: a sandbox deposit to an address of its own, confirmed. */
async function deposit(token: string, asset: string, network: string, amount: number): Promise<void> {
  const address = await request(t, 'POST', '/v1/api/deposit-addresses', { token, body: { asset, network } });
  assert.equal(address.status, 201, address.text);
  const dep = await request(t, 'POST', '/v1/sandbox/deposits', {
    token,
    body: { deposit_address_id: address.body.deposit_address_id, amount },
  });
  assert.equal(dep.status, 201, dep.text);
  const confirmed = await request(t, 'POST', `/v1/sandbox/deposits/${dep.body.deposit_id}/simulate`, {
    token,
    body: { outcome: 'confirmed' },
  });
  assert.equal(confirmed.body.status, 'credited', confirmed.text);
}

/** A current `base`/KES rate, from a source of its own, posted by the liquidity provider; returns its id. */
async function postRate(base: string, rate: string): Promise<string> {
  const source = await request(t, 'POST', '/v1/api/markets/sources', {
    token: t.adminToken,
    body: { name: `payouts-${newKey()}`, kind: 'exchange' },
  });
  assert.equal(source.status, 201, source.text);
  const res = await request(t, 'POST', '/v1/api/markets/rates', {
    token: lpToken,
    body: { source_id: source.body.source_id, base, quote: 'KES', rate },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.rate_id as string;
}

async function available(token: string, currency: string): Promise<number> {
  const res = await request(t, 'GET', '/v1/balances', { token });
  return res.body.data.find((b: { currency: string }) => b.currency === currency)?.available ?? 0;
}

const commit = (token: string, body: Record<string, unknown>, key: string = newKey()) =>
  request(t, 'POST', '/api/transactions/commit', { token, body, idempotencyKey: key });

async function ledgerBalance(workspaceId: string, account: string, currency: string): Promise<number> {
  const { rows } = await t.db.query<{ balance: number }>(
    'SELECT balance FROM ledger_balances WHERE workspace_id = $1 AND account = $2 AND currency = $3',
    [workspaceId, account, currency],
  );
  return rows[0]?.balance ?? 0;
}

describe('offramp routes (GET /v1/api/routes)', () => {
  it('a liquidity provider adds one (201); every audience lists the active ones; the integrator may not add; PATCH deactivates', async () => {
    const r = await createRoute({ fee_fixed: 50, fee_bps: 100 });
    assert.equal(r.status, 'active');
    assert.equal(r.currency, 'KES');
    assert.equal(r.source_type, 'balance');
    assert.deepEqual([r.fee_fixed, r.fee_bps], [50, 100]);
    for (const token of [t.demoToken, lpToken, t.adminToken]) {
      const list = await request(t, 'GET', '/v1/api/routes?limit=100', { token });
      assert.equal(list.status, 200);
      assert.ok(list.body.data.some((x: { route_id: string }) => x.route_id === r.route_id));
    }
    assertProblem(await request(t, 'POST', '/v1/api/routes', { token: t.demoToken, body: route() }), 403, 'forbidden');
    assertProblem(await request(t, 'GET', '/v1/api/routes'), 401, 'unauthorized');
    const off = await request(t, 'PATCH', `/v1/api/routes/${r.route_id}`, {
      token: lpToken,
      body: { status: 'inactive' },
    });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.status, 'inactive');
    const list = await request(t, 'GET', '/v1/api/routes?limit=100', { token: t.demoToken });
    assert.ok(!list.body.data.some((x: { route_id: string }) => x.route_id === r.route_id));
    assertProblem(
      await request(t, 'PATCH', `/v1/api/routes/${r.route_id}`, { token: t.demoToken, body: { status: 'active' } }),
      403,
      'forbidden',
    );
    assertProblem(
      await request(t, 'PATCH', '/v1/api/routes/01890a5d-ac96-774b-bcce-b302099a8057', {
        token: lpToken,
        body: { status: 'active' },
      }),
      404,
      'not_found',
    );
  });

  it('bad routes are refused with the field named', async () => {
    for (const [body, status, code, field] of [
      [route({ market: 'ZZ' }), 400, 'invalid_market', 'market'],
      [route({ rail: 'pigeon' }), 400, 'invalid_rail', 'rail'],
      [route({ source: 'NGN' }), 400, 'invalid_currency', 'source'],
      [route({ min_amount: 500, max_amount: 100 }), 400, 'validation_failed', 'max_amount'],
      [route({ fee_bps: 10_001 }), 400, 'validation_failed', 'fee_bps'],
      [route({ min_amount: 0 }), 400, 'validation_failed', 'min_amount'],
    ] as const) {
      const res = await request(t, 'POST', '/v1/api/routes', { token: lpToken, body });
      assertProblem(res, status, code);
      assert.ok(
        res.body.errors.some((e: { field: string }) => e.field === field),
        `${field} in ${res.text}`,
      );
    }
  });
});

describe('POST /api/transactions/commit: commit a payout', () => {
  it('reserves the amount, charges the fee, answers 201; a retried key is the stored response; the list and the GET show it', async () => {
    const ws = await createWorkspace(t, 'payouts-happy');
    await fund(ws.token, 10_000);
    const r = await createRoute({ fee_fixed: 50, fee_bps: 100 });
    const b = await beneficiary(ws.token);
    const key = newKey();
    const body = {
      route_id: r.route_id,
      beneficiary_id: b,
      amount: 3_000,
      reference: 'payroll-7',
      metadata: { run: 7 },
    };
    const res = await commit(ws.token, body, key);
    assert.equal(res.status, 201, res.text);
    const p = res.body;
    assert.deepEqual(
      [p.source_currency, p.source_amount, p.currency, p.gross_amount, p.fee, p.amount],
      ['KES', 3_000, 'KES', 3_000, 80, 2_920],
    );
    assert.equal(p.rate, null);
    assert.equal(p.status, 'created');
    assert.deepEqual(p.metadata, { run: 7 });
    assert.equal(res.headers.get('location'), `/v1/api/transactions/${p.transaction_id}`);
    assert.equal(await available(ws.token, 'KES'), 7_000);

    const again = await commit(ws.token, body, key);
    assert.equal(again.status, 201);
    assert.equal(again.text, res.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(await available(ws.token, 'KES'), 7_000, 'a replay reserves nothing');
    assertProblem(await commit(ws.token, { ...body, amount: 3_001 }, key), 422, 'idempotency_key_reused');

    const one = await request(t, 'GET', `/v1/api/transactions/${p.transaction_id}`, { token: ws.token });
    assert.equal(one.status, 200);
    assert.equal(one.body.transaction_id, p.transaction_id);
    const list = await request(t, 'GET', '/v1/api/transactions', { token: ws.token });
    assert.deepEqual(
      list.body.data.map((x: { transaction_id: string }) => x.transaction_id),
      [p.transaction_id],
    );
    // Another workspace sees none of it.
    assertProblem(
      await request(t, 'GET', `/v1/api/transactions/${p.transaction_id}`, { token: t.demoToken }),
      404,
      'not_found',
    );
    const theirs = await request(t, 'GET', '/v1/api/transactions?limit=100', { token: t.demoToken });
    assert.ok(!theirs.body.data.some((x: { transaction_id: string }) => x.transaction_id === p.transaction_id));

    // The sandbox pays it: created → pending → successful, and the reservation is spent.
    const done = await waitFor('payout successful', async () => {
      const r2 = await request(t, 'GET', `/v1/api/transactions/${p.transaction_id}`, { token: ws.token });
      return r2.body.status === 'successful' ? r2.body : undefined;
    });
    assert.ok(done.completed_at);
    assert.equal(await available(ws.token, 'KES'), 7_000);
    assert.equal(await ledgerBalance(ws.id, 'payouts_in_flight', 'KES'), 0);
    assert.equal(await ledgerBalance(ws.id, 'fee_income', 'KES'), -80);
    // The provider float: +10,000 from the collection, −2,920 paid out.
    assert.equal(await ledgerBalance(ws.id, 'provider_receivable', 'KES'), 10_000 - 2_920);
    const events = await request(t, 'GET', '/v1/events?limit=100', { token: ws.token });
    const types = events.body.data
      .filter((e: any) => e.data?.transaction_id === p.transaction_id)
      .map((e: any) => e.type)
      .sort();
    assert.deepEqual(types, ['payout.created', 'payout.pending', 'payout.successful']);
  });

  it('422 without an Idempotency-Key; 401 without a token; 403 for a liquidity provider; 400 with field details', async () => {
    const r = await createRoute();
    const b = await beneficiary(t.demoToken);
    const body = { route_id: r.route_id, beneficiary_id: b, amount: 1_000, reference: 'x' };
    assertProblem(
      await request(t, 'POST', '/api/transactions/commit', { token: t.demoToken, body }),
      422,
      'idempotency_key_missing',
    );
    assertProblem(
      await request(t, 'POST', '/api/transactions/commit', { body, idempotencyKey: newKey() }),
      401,
      'unauthorized',
    );
    assertProblem(await commit(lpToken, body), 403, 'forbidden');
    assertProblem(await request(t, 'GET', '/v1/api/transactions', { token: lpToken }), 403, 'forbidden');
    for (const [bad, field] of [
      [{ ...body, amount: 0 }, 'amount'],
      [{ ...body, amount: '1000' }, 'amount'],
      [{ ...body, reference: undefined }, 'reference'],
      [{ ...body, route_id: 'nope' }, 'route_id'],
      [{ ...body, colour: 'red' }, 'colour'],
    ] as const) {
      const res = await commit(t.demoToken, bad as Record<string, unknown>);
      assertProblem(res, 400, 'validation_failed');
      assert.ok(
        res.body.errors.some((e: { field: string }) => e.field === field),
        `${field} in ${res.text}`,
      );
    }
  });

  it("refuses, with a clear code and nothing reserved: an inactive beneficiary, another workspace's, an inactive or mismatched route, limits, the balance", async () => {
    const ws = await createWorkspace(t, 'payouts-refusals');
    await fund(ws.token, 5_000);
    const r = await createRoute({ min_amount: 500, max_amount: 4_000 });
    const b = await beneficiary(ws.token);
    const ok = { route_id: r.route_id, beneficiary_id: b, reference: 'r', amount: 1_000 };

    const gone = await beneficiary(ws.token, '+254712340001');
    assert.equal((await request(t, 'DELETE', `/v1/api/beneficiaries/${gone}`, { token: ws.token })).status, 200);
    assertProblem(await commit(ws.token, { ...ok, beneficiary_id: gone }), 422, 'beneficiary_inactive');
    const foreign = await beneficiary(t.demoToken);
    const res404 = await commit(ws.token, { ...ok, beneficiary_id: foreign });
    assertProblem(res404, 404, 'not_found');
    assert.equal(res404.body.errors[0].field, 'beneficiary_id');

    const airtel = await beneficiary(ws.token, '+254733345678', 'airtel_money');
    assertProblem(await commit(ws.token, { ...ok, beneficiary_id: airtel }), 422, 'route_mismatch');
    const off = await createRoute();
    await request(t, 'PATCH', `/v1/api/routes/${off.route_id}`, { token: lpToken, body: { status: 'inactive' } });
    assertProblem(await commit(ws.token, { ...ok, route_id: off.route_id }), 422, 'route_unavailable');
    assertProblem(
      await commit(ws.token, { ...ok, route_id: '01890a5d-ac96-774b-bcce-b302099a8057' }),
      422,
      'route_unavailable',
    );
    assertProblem(await commit(ws.token, { ...ok, amount: 499 }), 422, 'amount_out_of_range');
    assertProblem(await commit(ws.token, { ...ok, amount: 4_001 }), 422, 'amount_out_of_range');
    const fee = await createRoute({ fee_fixed: 600, min_amount: 100 });
    assertProblem(await commit(ws.token, { ...ok, route_id: fee.route_id, amount: 600 }), 422, 'amount_out_of_range');

    assert.equal((await commit(ws.token, { ...ok, amount: 4_000 })).status, 201);
    const short = await commit(ws.token, { ...ok, amount: 1_001 });
    assertProblem(short, 422, 'insufficient_balance');
    assert.match(short.body.detail, /1000/);
    assert.equal(await available(ws.token, 'KES'), 1_000);
    assert.equal((await request(t, 'GET', '/v1/api/transactions?limit=100', { token: ws.token })).body.data.length, 1);
  });

  it('20 concurrent commits against a balance that covers 7: exactly 7 succeed, the rest are insufficient_balance, the balance never goes negative', async () => {
    const ws = await createWorkspace(t, 'payouts-race');
    await fund(ws.token, 7_000);
    await fund(ws.token, 500);
    const r = await createRoute();
    const b = await beneficiary(ws.token, '+254712340005'); // stays pending: nothing settles under the test
    const requests = Array.from({ length: 20 }, (_, i) => ({
      key: newKey(),
      body: { route_id: r.route_id, beneficiary_id: b, amount: 1_000, reference: `race-${i}` },
    }));
    const results = await Promise.all(requests.map((q) => commit(ws.token, q.body, q.key)));
    const statuses = results.map((x) => x.status);
    assert.equal(statuses.filter((s) => s === 201).length, 7, statuses.join(','));
    for (const res of results.filter((x) => x.status !== 201)) assertProblem(res, 422, 'insufficient_balance');
    assert.equal(await available(ws.token, 'KES'), 500);
    assert.equal(await ledgerBalance(ws.id, 'payouts_in_flight', 'KES'), -7_000);
    assert.equal((await request(t, 'GET', '/v1/api/transactions?limit=100', { token: ws.token })).body.data.length, 7);
    // Retrying a winner with its key is its stored response, not an eighth payout.
    const w = results.findIndex((x) => x.status === 201);
    const replay = await commit(ws.token, requests[w]!.body, requests[w]!.key);
    assert.equal(replay.status, 201);
    assert.equal(replay.text, results[w]!.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal((await request(t, 'GET', '/v1/api/transactions?limit=100', { token: ws.token })).body.data.length, 7);
    assert.equal(await available(ws.token, 'KES'), 500);
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('refunds reserve from the same balance', () => {
  it('10 refunds and 5 payouts at once against a balance that covers 6 of them: exactly 6 succeed, the rest are insufficient_balance, the balance never goes negative', async () => {
    const ws = await createWorkspace(t, 'refunds-and-payouts-race');
    // Ten collections of 1,000, then a payout of 3,500 that stays pending: 6,500 available.
    const collections: string[] = [];
    for (let i = 0; i < 10; i++) {
      const c = await createCollection(t, ws.token, { amount: 1_000 });
      assert.equal(c.status, 201, c.text);
      const s = await request(t, 'POST', `/v1/sandbox/collections/${c.body.collection_id}/simulate`, {
        token: ws.token,
        body: { outcome: 'successful' },
      });
      assert.equal(s.status, 200, s.text);
      collections.push(c.body.collection_id);
    }
    const r = await createRoute();
    const b = await beneficiary(ws.token, '+254712340005'); // stays pending: nothing settles under the test
    const first = await commit(ws.token, {
      route_id: r.route_id,
      beneficiary_id: b,
      amount: 3_500,
      reference: 'first',
    });
    assert.equal(first.status, 201, first.text);
    assert.equal(await available(ws.token, 'KES'), 6_500);

    const results = await Promise.all([
      ...collections.map((id) => requestRefund(t, ws.token, id, 1_000)),
      ...Array.from({ length: 5 }, (_, i) =>
        commit(ws.token, { route_id: r.route_id, beneficiary_id: b, amount: 1_000, reference: `mixed-${i}` }),
      ),
    ]);
    const statuses = results.map((x) => x.status);
    assert.equal(statuses.filter((s) => s === 201).length, 6, statuses.join(','));
    for (const res of results.filter((x) => x.status !== 201)) assertProblem(res, 422, 'insufficient_balance');
    assert.equal(await available(ws.token, 'KES'), 500);
    // The refunds that went through settle with the sandbox; the balance stays where the reservations left it.
    const refunded = results.slice(0, 10).filter((x) => x.status === 201);
    for (const res of refunded) {
      await waitFor(`refund ${res.body.refund_id} to succeed`, async () => {
        const got = await request(t, 'GET', `/v1/refunds/${res.body.refund_id}`, { token: ws.token });
        return got.body.status === 'successful' ? true : undefined;
      });
    }
    assert.equal(await available(ws.token, 'KES'), 500);
    assert.equal(await ledgerBalance(ws.id, 'refunds_in_flight', 'KES'), 0);
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('the sandbox settles or releases', () => {
  it('a declined payout (0001) and a refused one (0002) fail and give the reservation back; 0005 waits for the simulate endpoint', async () => {
    const ws = await createWorkspace(t, 'payouts-sandbox');
    await fund(ws.token, 9_000);
    const r = await createRoute();
    const declined = await commit(ws.token, {
      route_id: r.route_id,
      beneficiary_id: await beneficiary(ws.token, '+254712340001'),
      amount: 2_000,
      reference: 'd',
    });
    const refused = await commit(ws.token, {
      route_id: r.route_id,
      beneficiary_id: await beneficiary(ws.token, '+254712340002'),
      amount: 3_000,
      reference: 'r',
    });
    const waiting = await commit(ws.token, {
      route_id: r.route_id,
      beneficiary_id: await beneficiary(ws.token, '+254712340005'),
      amount: 1_000,
      reference: 'w',
    });
    const final = async (id: string) =>
      waitFor(`payout ${id} final`, async () => {
        const res = await request(t, 'GET', `/v1/api/transactions/${id}`, { token: ws.token });
        return res.body.status === 'failed' || res.body.status === 'successful' ? res.body : undefined;
      });
    assert.equal((await final(declined.body.transaction_id)).failure_reason, 'recipient_declined');
    assert.equal((await final(refused.body.transaction_id)).failure_reason, 'invalid_account');
    await waitFor('0005 pending', async () =>
      (await request(t, 'GET', `/v1/api/transactions/${waiting.body.transaction_id}`, { token: ws.token })).body
        .status === 'pending'
        ? true
        : undefined,
    );
    assert.equal(await available(ws.token, 'KES'), 8_000);

    const sim = await request(t, 'POST', `/v1/sandbox/payouts/${waiting.body.transaction_id}/simulate`, {
      token: ws.token,
      body: { outcome: 'failed', reason: 'recipient_declined' },
    });
    assert.equal(sim.status, 200, sim.text);
    assert.equal(sim.body.status, 'failed');
    assert.equal(await available(ws.token, 'KES'), 9_000);
    assertProblem(
      await request(t, 'POST', `/v1/sandbox/payouts/${waiting.body.transaction_id}/simulate`, {
        token: ws.token,
        body: { outcome: 'successful' },
      }),
      409,
      'transition_not_allowed',
    );
    assertProblem(
      await request(t, 'POST', `/v1/sandbox/payouts/${waiting.body.transaction_id}/simulate`, {
        token: t.demoToken,
        body: { outcome: 'failed' },
      }),
      404,
      'not_found',
    );
    const failed = await request(t, 'GET', '/v1/api/transactions?status=failed', { token: ws.token });
    assert.equal(failed.body.data.length, 3);
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('from an asset', () => {
  it('converts at the current rate (rounded down) from the USDT balance; without a current rate the commit is 422 rate_unavailable', async () => {
    const ws = await createWorkspace(t, 'payouts-usdt');
    await deposit(ws.token, 'USDT', 'tron', 50_000_000);
    assert.equal(await available(ws.token, 'USDT'), 50_000_000);

    const r = await createRoute({ source: 'USDT', min_amount: 1_000_000, max_amount: 100_000_000, fee_bps: 50 });
    assert.equal(r.source_type, 'asset');
    const b = await beneficiary(ws.token);
    const body = { route_id: r.route_id, beneficiary_id: b, amount: 12_345_679, reference: 'usdt-out' };
    assertProblem(await commit(ws.token, body), 422, 'rate_unavailable');

    const rateId = await postRate('USDT', '129.45');
    const res = await commit(ws.token, body);
    assert.equal(res.status, 201, res.text);
    // 12.345679 USDT × 129.45 = 1,598.148...; KES has 2 places: 159,814.8 cents → 159,814; fee 0.5 % → 799.
    assert.deepEqual([res.body.gross_amount, res.body.fee, res.body.amount], [159_814, 799, 159_015]);
    assert.equal(res.body.rate, '129.45');
    assert.equal(res.body.rate_id, rateId);
    assert.equal(await available(ws.token, 'USDT'), 50_000_000 - 12_345_679);
    await waitFor('converted payout settled', async () =>
      (await request(t, 'GET', `/v1/api/transactions/${res.body.transaction_id}`, { token: ws.token })).body.status ===
      'successful'
        ? true
        : undefined,
    );
    // Each currency balances: the USDT went to FX, the KES came out of FX to the recipient and the fee.
    assert.equal(await ledgerBalance(ws.id, 'fx_conversion', 'USDT'), -12_345_679);
    assert.equal(await ledgerBalance(ws.id, 'fx_conversion', 'KES'), 159_814);
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('conversions beyond what can be paid (from review)', () => {
  it('a commit whose converted amount would pass 2^53 minor units is 422 amount_out_of_range, not a 500', async () => {
    const ws = await createWorkspace(t, 'payouts-overflow');
    await deposit(ws.token, 'USDC', 'polygon', 1_000_000_000_000);
    await postRate('USDC', '99999999999999999999');
    const r = await createRoute({ source: 'USDC', min_amount: 1, max_amount: 1_000_000_000_000 });
    const res = await commit(ws.token, {
      route_id: r.route_id,
      beneficiary_id: await beneficiary(ws.token),
      amount: 1_000_000_000_000,
      reference: 'too-much',
    });
    assertProblem(res, 422, 'amount_out_of_range');
    assert.equal(await available(ws.token, 'USDC'), 1_000_000_000_000);
  });
});

describe('who changes a route (from review)', () => {
  it('a liquidity provider changes only the routes its workspace added; the admin changes any', async () => {
    const mine = await createRoute();
    const lpWorkspace = await createWorkspace(t, 'another-lp');
    const otherLpToken = await liquidityProviderToken(t, lpWorkspace.id);
    assertProblem(
      await request(t, 'PATCH', `/v1/api/routes/${mine.route_id}`, {
        token: otherLpToken,
        body: { fee_bps: 9_000 },
      }),
      403,
      'forbidden',
    );
    const byAdmin = await request(t, 'PATCH', `/v1/api/routes/${mine.route_id}`, {
      token: t.adminToken,
      body: { fee_bps: 10 },
    });
    assert.equal(byAdmin.status, 200, byAdmin.text);
    assert.equal(byAdmin.body.fee_bps, 10);
  });
});

describe('the large-payout risk rule', () => {
  it("a payout of half the currency's largest amount or more raises large_payout about it; a small one does not", async () => {
    const ws = await createWorkspace(t, 'payouts-risk');
    await fund(ws.token, 20_000_000);
    const r = await createRoute();
    const b = await beneficiary(ws.token);
    const small = await commit(ws.token, {
      route_id: r.route_id,
      beneficiary_id: b,
      amount: 12_499_999,
      reference: 'below',
    });
    assert.equal(small.status, 201, small.text);
    const open = async () =>
      (await request(t, 'GET', '/v1/api/risk/signals/open?limit=100', { token: ws.token })).body.data as any[];
    assert.deepEqual(
      (await open()).filter((s) => s.type === 'large_payout'),
      [],
    );
    await fund(ws.token, 20_000_000);
    const big = await commit(ws.token, {
      route_id: r.route_id,
      beneficiary_id: b,
      amount: 12_500_000,
      reference: 'at',
    });
    assert.equal(big.status, 201, big.text);
    const signals = (await open()).filter((s) => s.type === 'large_payout');
    assert.equal(signals.length, 1);
    assert.deepEqual(signals[0].subject, { type: 'payout', id: big.body.transaction_id });
    assert.equal(signals[0].severity, 'high');
    assert.equal(signals[0].details.threshold, 12_500_000);
  });
});
