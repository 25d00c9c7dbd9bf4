// Deposits through HTTP: addresses, deposits and autoconvert credits; the liquidity
// provider's pool and ingestion; the sandbox's deposits; crediting in the asset or converted at a current rate.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import {
  assertProblem,
  createWorkspace,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  newKey,
  request,
  startTestApp,
  waitFor,
} from './helpers/harness.js';

const t = await startTestApp({ ...FAST_LIFECYCLE, RATE_MAX_AGE_SECONDS: '60' }, { workers: true });
after(async () => t.close());
const lpToken = await liquidityProviderToken(t);
const other = await createWorkspace(t, 'Other deposits workspace');

const TRON = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;
const EVM = /^0x[0-9a-f]{40}$/;
const txHash = () => randomBytes(32).toString('hex');
const evmAddress = () => `0x${randomBytes(20).toString('hex')}`;
const fieldsOf = (res: { body: { errors?: { field: string }[] } }) => (res.body.errors ?? []).map((e) => e.field);

const newAddress = async (token: string, body: Record<string, unknown> = {}) => {
  const res = await request(t, 'POST', '/v1/api/deposit-addresses', {
    token,
    body: { asset: 'USDT', network: 'tron', ...body },
  });
  assert.equal(res.status, 201, res.text);
  return res.body as {
    deposit_address_id: string;
    address: string;
    asset: string;
    network: string;
    autoconvert_currency: string | null;
  };
};
const sandboxDeposit = async (token: string, addressId: string, amount: number) => {
  const res = await request(t, 'POST', '/v1/sandbox/deposits', {
    token,
    body: { deposit_address_id: addressId, amount },
  });
  assert.equal(res.status, 201, res.text);
  return res.body as { deposit_id: string; status: string; tx_hash: string };
};
const simulate = (token: string, id: string, outcome: string) =>
  request(t, 'POST', `/v1/sandbox/deposits/${id}/simulate`, { token, body: { outcome } });
const report = (body: Record<string, unknown>, token = lpToken) =>
  request(t, 'POST', '/v1/api/deposits', { token, body });
const pool = (body: Record<string, unknown>, token = lpToken) =>
  request(t, 'POST', '/v1/api/deposit-addresses/pool', { token, body });
const getDeposit = async (token: string, id: string) => {
  const res = await request(t, 'GET', `/v1/api/deposits/${id}`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body;
};
const balances = async (token: string): Promise<Record<string, number>> => {
  const res = await request(t, 'GET', '/v1/balances', { token });
  assert.equal(res.status, 200, res.text);
  return Object.fromEntries(
    res.body.data.map((b: { currency: string; available: number }) => [b.currency, b.available]),
  );
};
let sources = 0;
const postRate = async (quote: string, rate: string, observedAt?: string) => {
  sources += 1;
  const name = `Deposit test source ${sources} ${Date.now()}`;
  const s = await request(t, 'POST', '/v1/api/markets/sources', {
    token: t.adminToken,
    body: { name, kind: 'exchange' },
  });
  assert.equal(s.status, 201, s.text);
  const body = {
    source_id: s.body.source_id,
    base: 'USDT',
    quote,
    rate,
    ...(observedAt ? { observed_at: observedAt } : {}),
  };
  const r = await request(t, 'POST', '/v1/api/markets/rates', { token: lpToken, body });
  assert.equal(r.status, 201, r.text);
  return { ...r.body, name } as { rate_id: string; source_id: string; observed_at: string; name: string };
};

describe('deposit addresses', () => {
  it("the sandbox makes an address in the network's format; GET and the list (newest first) show it", async () => {
    const res = await request(t, 'POST', '/v1/api/deposit-addresses', {
      token: t.demoToken,
      body: { asset: 'USDT', network: 'tron', label: 'customer 7', metadata: { customer: '7' } },
    });
    assert.equal(res.status, 201, res.text);
    const a = res.body;
    assert.deepEqual(Object.keys(a).sort(), [
      'address',
      'asset',
      'autoconvert_currency',
      'created_at',
      'deposit_address_id',
      'label',
      'metadata',
      'network',
    ]);
    assert.match(a.address, TRON);
    assert.equal(a.asset, 'USDT');
    assert.equal(a.autoconvert_currency, null);
    assert.equal(a.label, 'customer 7');
    assert.deepEqual(a.metadata, { customer: '7' });
    assert.equal(res.headers.get('location'), `/v1/api/deposit-addresses/${a.deposit_address_id}`);
    const eth = await newAddress(t.demoToken, { network: 'ethereum', autoconvert_currency: 'KES' });
    assert.match(eth.address, EVM);
    assert.equal(eth.autoconvert_currency, 'KES');

    assert.deepEqual(
      (await request(t, 'GET', `/v1/api/deposit-addresses/${a.deposit_address_id}`, { token: t.demoToken })).body,
      a,
    );
    const list = await request(t, 'GET', '/v1/api/deposit-addresses?limit=2', { token: t.demoToken });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((x: { deposit_address_id: string }) => x.deposit_address_id),
      [eth.deposit_address_id, a.deposit_address_id],
    );
    const theirs = await request(t, 'GET', '/v1/api/deposit-addresses?limit=100', { token: other.token });
    assert.ok(
      !theirs.body.data.some((x: { deposit_address_id: string }) => x.deposit_address_id === a.deposit_address_id),
    );
  });

  it('an Idempotency-Key replays the same address', async () => {
    const key = newKey();
    const body = { asset: 'USDC', network: 'solana' };
    const first = await request(t, 'POST', '/v1/api/deposit-addresses', {
      token: t.demoToken,
      body,
      idempotencyKey: key,
    });
    const again = await request(t, 'POST', '/v1/api/deposit-addresses', {
      token: t.demoToken,
      body,
      idempotencyKey: key,
    });
    assert.equal(first.status, 201, first.text);
    assert.match(first.body.address, /^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
  });

  it('validation: unknown asset, asset not on the network, bad currency, bad body', async () => {
    const create = (body: Record<string, unknown>) =>
      request(t, 'POST', '/v1/api/deposit-addresses', { token: t.demoToken, body });
    const btc = await create({ asset: 'BTC', network: 'tron' });
    assertProblem(btc, 400, 'invalid_asset');
    assert.deepEqual(fieldsOf(btc), ['asset']);
    const usdcTron = await create({ asset: 'USDC', network: 'tron' });
    assertProblem(usdcTron, 400, 'invalid_asset');
    assert.deepEqual(fieldsOf(usdcTron), ['network']);
    const xyz = await create({ asset: 'USDT', network: 'tron', autoconvert_currency: 'XYZ' });
    assertProblem(xyz, 400, 'invalid_currency');
    assert.deepEqual(fieldsOf(xyz), ['autoconvert_currency']);
    assertProblem(
      await create({ asset: 'USDT', network: 'tron', autoconvert_currency: 'kes' }),
      400,
      'validation_failed',
    );
    assertProblem(await create({ asset: 'USDT', network: 'tron', colour: 'red' }), 400, 'validation_failed');
    assertProblem(await create({ asset: 'USDT' }), 400, 'validation_failed');
  });

  it("401 without a token, 403 for other audiences, 404 for another workspace's or a malformed id", async () => {
    const a = await newAddress(t.demoToken);
    assertProblem(await request(t, 'GET', '/v1/api/deposit-addresses'), 401, 'unauthorized');
    assertProblem(
      await request(t, 'POST', '/v1/api/deposit-addresses', { body: { asset: 'USDT', network: 'tron' } }),
      401,
      'unauthorized',
    );
    assertProblem(await request(t, 'GET', '/v1/api/deposit-addresses', { token: lpToken }), 403, 'forbidden');
    assertProblem(
      await request(t, 'GET', `/v1/api/deposit-addresses/${a.deposit_address_id}`, { token: lpToken }),
      403,
      'forbidden',
    );
    assertProblem(
      await request(t, 'POST', '/v1/api/deposit-addresses', {
        token: t.adminToken,
        body: { asset: 'USDT', network: 'tron' },
      }),
      403,
      'forbidden',
    );
    assertProblem(
      await request(t, 'GET', `/v1/api/deposit-addresses/${a.deposit_address_id}`, { token: other.token }),
      404,
      'not_found',
    );
    assertProblem(
      await request(t, 'GET', '/v1/api/deposit-addresses/not-an-id', { token: t.demoToken }),
      404,
      'not_found',
    );
    // Nor can another workspace send a sandbox deposit to it.
    assertProblem(
      await request(t, 'POST', '/v1/sandbox/deposits', {
        token: other.token,
        body: { deposit_address_id: a.deposit_address_id, amount: 1 },
      }),
      404,
      'not_found',
    );
  });
});

describe('the address pool', () => {
  it('stocked addresses go out oldest first; already_known counts repeats; an exhausted pool falls back to the sandbox', async () => {
    const [a1, a2, a3] = [evmAddress(), evmAddress(), evmAddress()];
    const first = await pool({ asset: 'USDC', network: 'base', addresses: [a1, a2] });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, { asset: 'USDC', network: 'base', added: 2, already_known: 0, available: 2 });
    const second = await pool({ asset: 'USDC', network: 'base', addresses: [a2, a3] }, t.adminToken);
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body, { asset: 'USDC', network: 'base', added: 1, already_known: 1, available: 3 });

    const ws = await createWorkspace(t, 'Pool workspace');
    assert.equal((await newAddress(ws.token, { asset: 'USDC', network: 'base' })).address, a1);
    assert.equal((await newAddress(other.token, { asset: 'USDC', network: 'base' })).address, a2);
    assert.equal((await newAddress(ws.token, { asset: 'USDC', network: 'base', label: 'third' })).address, a3);
    const again = await pool({ asset: 'USDC', network: 'base', addresses: [a1, a3] });
    assert.deepEqual(
      again.body,
      { asset: 'USDC', network: 'base', added: 0, already_known: 2, available: 0 },
      'assigned addresses are known, not restocked',
    );
    const made = await newAddress(ws.token, { asset: 'USDC', network: 'base' });
    assert.match(made.address, EVM);
    assert.ok(![a1, a2, a3].includes(made.address));
    // The assigned address is the workspace's own: another workspace cannot read it.
    assertProblem(
      await request(t, 'GET', `/v1/api/deposit-addresses/${made.deposit_address_id}`, { token: other.token }),
      404,
      'not_found',
    );
  });

  it('two workspaces asking at once never get the same address', async () => {
    const stocked = Array.from({ length: 8 }, evmAddress);
    assert.equal((await pool({ asset: 'USDT', network: 'polygon', addresses: stocked })).body.added, 8);
    const results = await Promise.all(
      stocked.map((_, i) =>
        request(t, 'POST', '/v1/api/deposit-addresses', {
          token: i % 2 ? other.token : t.demoToken,
          body: { asset: 'USDT', network: 'polygon' },
        }),
      ),
    );
    for (const r of results) assert.equal(r.status, 201, r.text);
    const got = results.map((r) => r.body.address as string);
    assert.equal(new Set(got).size, 8);
    assert.deepEqual([...got].sort(), [...stocked].sort());
  });

  it("refuses addresses not in the network's format (naming each), unknown pairs, integrator tokens, no token", async () => {
    const bad = await pool({
      asset: 'USDT',
      network: 'tron',
      addresses: [`T${'1'.repeat(33)}`, '0x1234', `T${'0'.repeat(33)}`],
    });
    assertProblem(bad, 400, 'invalid_address');
    assert.deepEqual(fieldsOf(bad), ['addresses.1', 'addresses.2']);
    const usdcTron = await pool({ asset: 'USDC', network: 'tron', addresses: [`T${'1'.repeat(33)}`] });
    assertProblem(usdcTron, 400, 'invalid_asset');
    assert.deepEqual(fieldsOf(usdcTron), ['network']);
    assertProblem(await pool({ asset: 'USDT', network: 'tron', addresses: [] }), 400, 'validation_failed');
    assertProblem(
      await pool({ asset: 'USDT', network: 'ethereum', addresses: [evmAddress()] }, t.demoToken),
      403,
      'forbidden',
    );
    assertProblem(
      await request(t, 'POST', '/v1/api/deposit-addresses/pool', {
        body: { asset: 'USDT', network: 'ethereum', addresses: [evmAddress()] },
      }),
      401,
      'unauthorized',
    );
  });
});

describe('deposits, credited in the asset', () => {
  it('sandbox: pending → confirmed → credited; the balance rises by exactly the amount; the events are recorded', async () => {
    const ws = await createWorkspace(t, 'Lifecycle workspace');
    const a = await newAddress(ws.token);
    const d = await sandboxDeposit(ws.token, a.deposit_address_id, 25_000_000);
    assert.equal(d.status, 'pending');
    assert.deepEqual(await balances(ws.token), {});
    const pending = await getDeposit(ws.token, d.deposit_id);
    assert.equal(pending.address, a.address);
    assert.equal(pending.credited_at, null);

    const res = await simulate(ws.token, d.deposit_id, 'confirmed');
    assert.equal(res.status, 200, res.text);
    const c = res.body;
    assert.equal(c.status, 'credited');
    assert.equal(c.credited_currency, 'USDT');
    assert.equal(c.credited_amount, 25_000_000);
    assert.equal(c.credit_id, null);
    assert.ok(c.confirmed_at !== null && c.credited_at !== null && c.credited_at >= c.confirmed_at);
    assert.deepEqual(await getDeposit(ws.token, d.deposit_id), c);
    assert.deepEqual(await balances(ws.token), { USDT: 25_000_000 });

    const events = await request(t, 'GET', `/v1/events?object_id=${d.deposit_id}&limit=100`, { token: ws.token });
    assert.equal(events.status, 200, events.text);
    assert.deepEqual(
      events.body.data.map((e: { type: string }) => e.type),
      ['deposit.credited', 'deposit.confirmed', 'deposit.pending'],
    );
    assert.equal(events.body.data[0].data.credited_amount, 25_000_000);

    // Confirming again changes nothing; a second deposit adds to the balance.
    assert.equal((await simulate(ws.token, d.deposit_id, 'confirmed')).body.status, 'credited');
    assertProblem(await simulate(ws.token, d.deposit_id, 'failed'), 409, 'deposit_conflict');
    const d2 = await sandboxDeposit(ws.token, a.deposit_address_id, 1_500_001);
    await simulate(ws.token, d2.deposit_id, 'confirmed');
    assert.deepEqual(await balances(ws.token), { USDT: 26_500_001 });
  });

  it('a failed deposit credits nothing; the list filters by status; 401, 403, 404 as for addresses', async () => {
    const ws = await createWorkspace(t, 'Failure workspace');
    const a = await newAddress(ws.token);
    const ok = await sandboxDeposit(ws.token, a.deposit_address_id, 5_000_000);
    const dropped = await sandboxDeposit(ws.token, a.deposit_address_id, 7_000_000);
    const waiting = await sandboxDeposit(ws.token, a.deposit_address_id, 9_000_000);
    await simulate(ws.token, ok.deposit_id, 'confirmed');
    const failed = await simulate(ws.token, dropped.deposit_id, 'failed');
    assert.equal(failed.body.status, 'failed');
    assert.equal(failed.body.failure_reason, 'dropped');
    assertProblem(await simulate(ws.token, dropped.deposit_id, 'confirmed'), 409, 'deposit_conflict');
    assert.deepEqual(await balances(ws.token), { USDT: 5_000_000 });

    const ids = async (query: string) =>
      (await request(t, 'GET', `/v1/api/deposits?limit=100${query}`, { token: ws.token })).body.data.map(
        (x: { deposit_id: string }) => x.deposit_id,
      );
    assert.deepEqual(await ids(''), [waiting.deposit_id, dropped.deposit_id, ok.deposit_id]);
    assert.deepEqual(await ids('&status=credited'), [ok.deposit_id]);
    assert.deepEqual(await ids('&status=failed'), [dropped.deposit_id]);
    assert.deepEqual(await ids('&status=pending'), [waiting.deposit_id]);
    assertProblem(
      await request(t, 'GET', '/v1/api/deposits?status=lost', { token: ws.token }),
      400,
      'validation_failed',
    );
    const page = await request(t, 'GET', '/v1/api/deposits?limit=2', { token: ws.token });
    assert.equal(page.body.has_more, true);
    const rest = await request(
      t,
      'GET',
      `/v1/api/deposits?limit=2&cursor=${encodeURIComponent(page.body.next_cursor)}`,
      { token: ws.token },
    );
    assert.deepEqual(
      rest.body.data.map((x: { deposit_id: string }) => x.deposit_id),
      [ok.deposit_id],
    );

    assertProblem(await request(t, 'GET', '/v1/api/deposits'), 401, 'unauthorized');
    assertProblem(await request(t, 'GET', `/v1/api/deposits/${ok.deposit_id}`), 401, 'unauthorized');
    assertProblem(await request(t, 'GET', '/v1/api/deposits', { token: lpToken }), 403, 'forbidden');
    assertProblem(
      await request(t, 'GET', `/v1/api/deposits/${ok.deposit_id}`, { token: other.token }),
      404,
      'not_found',
    );
    assertProblem(await simulate(other.token, waiting.deposit_id, 'confirmed'), 404, 'not_found');
    assert.equal(
      (await getDeposit(ws.token, waiting.deposit_id)).status,
      'pending',
      'the other workspace moved nothing',
    );
    assert.ok(
      !(await request(t, 'GET', '/v1/api/deposits?limit=100', { token: other.token })).body.data.some(
        (x: { deposit_id: string }) => x.deposit_id === ok.deposit_id,
      ),
    );
  });
});

describe('ingestion by the liquidity provider', () => {
  it('idempotent by transfer: 201 then 200, one deposit; confirmations only rise; then credited', async () => {
    const ws = await createWorkspace(t, 'Ingestion workspace');
    const a = await newAddress(ws.token);
    const transfer = { network: 'tron', address: a.address, asset: 'USDT', amount: 3_333_333, tx_hash: txHash() };
    const first = await report({ ...transfer, status: 'pending', confirmations: 3 });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.status, 'pending');
    assert.equal(first.body.deposit_address_id, a.deposit_address_id);
    const again = await report({ ...transfer, status: 'pending', confirmations: 1 });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.deposit_id, first.body.deposit_id);
    assert.equal(again.body.confirmations, 3);
    const confirmed = await report({ ...transfer, status: 'confirmed', confirmations: 20 }, t.adminToken);
    assert.equal(confirmed.status, 200, confirmed.text);
    assert.equal(confirmed.body.status, 'credited');
    assert.equal(confirmed.body.confirmations, 20);
    assert.equal((await report({ ...transfer, status: 'confirmed' })).body.status, 'credited');
    const list = await request(t, 'GET', '/v1/api/deposits?limit=100', { token: ws.token });
    assert.deepEqual(
      list.body.data.map((x: { deposit_id: string }) => x.deposit_id),
      [first.body.deposit_id],
    );
    assert.deepEqual(await balances(ws.token), { USDT: 3_333_333 });

    const changed = await report({ ...transfer, amount: 3_333_334, status: 'confirmed' });
    assertProblem(changed, 409, 'deposit_conflict');
    assert.deepEqual(fieldsOf(changed), ['amount']);
    assertProblem(await report({ ...transfer, status: 'failed', reason: 'reorganised' }), 409, 'deposit_conflict');
    assert.equal((await getDeposit(ws.token, first.body.deposit_id)).status, 'credited');
    assert.deepEqual(await balances(ws.token), { USDT: 3_333_333 });
  });

  it('a transfer first seen failed is recorded failed; unknown and pooled addresses are 422; bad input 400; integrators 403', async () => {
    const ws = await createWorkspace(t, 'Ingestion failures');
    const a = await newAddress(ws.token, { network: 'ethereum' });
    const base = { network: 'ethereum', address: a.address, asset: 'USDT', amount: 1_000_000 };
    const failed = await report({ ...base, tx_hash: txHash(), status: 'failed', reason: 'reorganised' });
    assert.equal(failed.status, 201, failed.text);
    assert.equal(failed.body.status, 'failed');
    assert.equal(failed.body.failure_reason, 'reorganised');
    assert.deepEqual(await balances(ws.token), {});

    const unknown = await report({ ...base, address: evmAddress(), tx_hash: txHash(), status: 'pending' });
    assertProblem(unknown, 422, 'deposit_address_unknown');
    assert.deepEqual(fieldsOf(unknown), ['address']);
    const pooled = evmAddress();
    await pool({ asset: 'USDC', network: 'ethereum', addresses: [pooled] });
    assertProblem(
      await report({ ...base, asset: 'USDC', address: pooled, tx_hash: txHash(), status: 'confirmed' }),
      422,
      'deposit_address_unknown',
    );
    const wrongAsset = await report({ ...base, asset: 'USDC', tx_hash: txHash(), status: 'pending' });
    assertProblem(wrongAsset, 400, 'validation_failed');
    assert.deepEqual(fieldsOf(wrongAsset), ['asset']);
    const badAddress = await report({ ...base, address: 'T-not-an-address', tx_hash: txHash(), status: 'pending' });
    assertProblem(badAddress, 400, 'invalid_address');
    assert.deepEqual(fieldsOf(badAddress), ['address']);
    assertProblem(
      await report({ ...base, network: 'tron', asset: 'USDC', tx_hash: txHash(), status: 'pending' }),
      400,
      'invalid_asset',
    );
    assertProblem(await report({ ...base, amount: 0, tx_hash: txHash(), status: 'pending' }), 400, 'validation_failed');
    assertProblem(
      await report({ ...base, amount: 1.5, tx_hash: txHash(), status: 'pending' }),
      400,
      'validation_failed',
    );
    assertProblem(await report({ ...base, tx_hash: txHash(), status: 'credited' }), 400, 'validation_failed');
    assertProblem(await report({ ...base, tx_hash: txHash(), status: 'pending' }, ws.token), 403, 'forbidden');
    assertProblem(
      await request(t, 'POST', '/v1/api/deposits', { body: { ...base, tx_hash: txHash(), status: 'pending' } }),
      401,
      'unauthorized',
    );
    const list = await request(t, 'GET', '/v1/api/deposits?limit=100', { token: ws.token });
    assert.deepEqual(
      list.body.data.map((x: { deposit_id: string }) => x.deposit_id),
      [failed.body.deposit_id],
      'no refused report left a deposit',
    );
  });
});

describe('autoconvert credits', () => {
  it('a confirmed deposit is converted at the current rate, rounded down, less the fee; the balance is in the currency', async () => {
    const ws = await createWorkspace(t, 'Autoconvert workspace');
    const rate = await postRate('KES', '129.45');
    const a = await newAddress(ws.token, { autoconvert_currency: 'KES' });
    const d = await sandboxDeposit(ws.token, a.deposit_address_id, 12_345_679);
    const res = await simulate(ws.token, d.deposit_id, 'confirmed');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'credited');
    assert.equal(res.body.credited_currency, 'KES');
    // gross = floor(12_345_679 × 129.45 × 10^2 / 10^6) = floor(159_814.81…) = 159_814
    // fee = floor(159_814 × 100 / 10_000) = floor(1_598.14) = 1_598; amount = 159_814 − 1_598 = 158_216
    assert.equal(res.body.credited_amount, 158_216);
    assert.ok(res.body.credit_id);

    const credit = await request(t, 'GET', `/v1/api/autoconvert/credits/${res.body.credit_id}`, { token: ws.token });
    assert.equal(credit.status, 200, credit.text);
    assert.deepEqual(
      { ...credit.body, created_at: undefined },
      {
        credit_id: res.body.credit_id,
        deposit_id: d.deposit_id,
        source_asset: 'USDT',
        source_amount: 12_345_679,
        target_currency: 'KES',
        gross_amount: 159_814,
        fee: 1_598,
        fee_bps: 100,
        amount: 158_216,
        rate: '129.45',
        rate_id: rate.rate_id,
        rate_source_id: rate.source_id,
        rate_source_name: rate.name,
        rate_observed_at: rate.observed_at,
        created_at: undefined,
      },
    );
    assert.equal(credit.body.created_at, res.body.credited_at);
    assert.deepEqual(await balances(ws.token), { KES: 158_216 });

    assertProblem(await request(t, 'GET', `/v1/api/autoconvert/credits/${res.body.credit_id}`), 401, 'unauthorized');
    assertProblem(
      await request(t, 'GET', `/v1/api/autoconvert/credits/${res.body.credit_id}`, { token: lpToken }),
      403,
      'forbidden',
    );
    assertProblem(
      await request(t, 'GET', `/v1/api/autoconvert/credits/${res.body.credit_id}`, { token: other.token }),
      404,
      'not_found',
    );
    assertProblem(
      await request(t, 'GET', `/v1/api/autoconvert/credits/${d.deposit_id}`, { token: ws.token }),
      404,
      'not_found',
    );
    assertProblem(await request(t, 'GET', '/v1/api/autoconvert/credits/nope', { token: ws.token }), 404, 'not_found');
  });

  it('without a current rate the deposit waits, confirmed; a fresh rate gets it credited by the worker', async () => {
    const ws = await createWorkspace(t, 'Waiting workspace');
    await postRate('NGN', '1400', new Date(Date.now() - 10 * 60_000).toISOString()); // stale at a 60 s limit
    const a = await newAddress(ws.token, { autoconvert_currency: 'NGN' });
    const d = await sandboxDeposit(ws.token, a.deposit_address_id, 25_000_000);
    const res = await simulate(ws.token, d.deposit_id, 'confirmed');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'confirmed');
    assert.equal(res.body.credit_id, null);
    assert.equal(res.body.credited_amount, null);
    await new Promise((resolve) => setTimeout(resolve, 300)); // many worker ticks
    const still = await getDeposit(ws.token, d.deposit_id);
    assert.equal(still.status, 'confirmed');
    assert.equal(still.credited_at, null);
    assert.deepEqual(await balances(ws.token), {});
    assert.deepEqual(
      (await request(t, 'GET', '/v1/api/deposits?status=confirmed', { token: ws.token })).body.data.map(
        (x: { deposit_id: string }) => x.deposit_id,
      ),
      [d.deposit_id],
    );
    assertProblem(await simulate(ws.token, d.deposit_id, 'failed'), 409, 'deposit_conflict');

    const fresh = await postRate('NGN', '1550.5');
    const credited = await waitFor('the waiting deposit to be credited', async () => {
      const x = await getDeposit(ws.token, d.deposit_id);
      return x.status === 'credited' ? x : undefined;
    });
    // gross = 25 × 1550.5 × 100 = 3_876_250; fee = floor(38_762.5) = 38_762; amount = 3_837_488
    assert.equal(credited.credited_currency, 'NGN');
    assert.equal(credited.credited_amount, 3_837_488);
    const credit = (await request(t, 'GET', `/v1/api/autoconvert/credits/${credited.credit_id}`, { token: ws.token }))
      .body;
    assert.equal(credit.rate_id, fresh.rate_id);
    assert.equal(credit.rate, '1550.5');
    assert.equal(credit.gross_amount, 3_876_250);
    assert.equal(credit.fee, 38_762);
    assert.deepEqual(await balances(ws.token), { NGN: 3_837_488 });
    const events = await request(t, 'GET', `/v1/events?object_id=${d.deposit_id}&limit=100`, { token: ws.token });
    assert.deepEqual(
      events.body.data.map((e: { type: string }) => e.type),
      ['deposit.credited', 'deposit.confirmed', 'deposit.pending'],
    );
  });

  it('deposits waiting for a rate that never comes do not hold up one whose rate has arrived', async () => {
    const ws = await createWorkspace(t, 'Starved workspace');
    const ghs = await newAddress(ws.token, { autoconvert_currency: 'GHS' }); // no USDT/GHS rate is ever posted
    for (let i = 0; i < 100; i += 1) {
      const res = await report({
        network: 'tron',
        address: ghs.address,
        asset: 'USDT',
        amount: 1_000_000,
        tx_hash: txHash(),
        status: 'confirmed',
      });
      assert.equal(res.body.status, 'confirmed', res.text);
    }
    const zmw = await newAddress(ws.token, { autoconvert_currency: 'ZMW' });
    const d = await report({
      network: 'tron',
      address: zmw.address,
      asset: 'USDT',
      amount: 2_000_000,
      tx_hash: txHash(),
      status: 'confirmed',
    });
    assert.equal(d.body.status, 'confirmed', d.text);
    await postRate('ZMW', '26.5');
    const credited = await waitFor(
      'the ZMW deposit to be credited behind 100 waiting GHS ones',
      async () => {
        const x = await getDeposit(ws.token, d.body.deposit_id);
        return x.status === 'credited' ? x : undefined;
      },
      3_000,
    );
    assert.equal(credited.credited_amount, 5_247); // floor(2 × 26.5 × 100) = 5_300, less floor(53) = 5_247
  });
});

describe('the books', () => {
  it('the ledger verifies clean after every deposit above', async () => {
    assert.deepEqual(await verifyLedger(t.db), []);
    const { rows } = await t.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM ledger_postings WHERE kind IN ('deposit_credited', 'autoconvert_source', 'autoconvert_target')",
    );
    assert.ok((rows[0]?.n ?? 0) >= 7, 'the deposits above were posted');
  });
});

describe('one transfer, one spelling (from review)', () => {
  it('a tx hash written in another case or with 0x is the same transfer: credited once; another log index is another transfer', async () => {
    const evm = evmAddress();
    const stocked = await pool({
      asset: 'USDC',
      network: 'base',
      addresses: [evm.toUpperCase().replace('0X', '0x'), evm],
    });
    assert.deepEqual(
      [stocked.body.added, stocked.body.already_known],
      [1, 1],
      'two casings of one EVM address are one address',
    );
    const mine = await createWorkspace(t, 'deposits-spelling');
    const a = await newAddress(mine.token, { asset: 'USDC', network: 'base' });
    assert.equal(a.address, evm.toLowerCase());
    const hash = txHash();
    const base = { network: 'base', asset: 'USDC', amount: 5_000_000, status: 'confirmed' };
    const first = await report({ ...base, address: evm.toUpperCase().replace('0X', '0x'), tx_hash: hash });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.tx_hash, hash);
    for (const spelling of [hash.toUpperCase(), `0x${hash}`, `0X${hash.toUpperCase()}`]) {
      const again = await report({ ...base, address: evm, tx_hash: spelling });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.deposit_id, first.body.deposit_id);
    }
    const second = await report({ ...base, address: evm, tx_hash: hash, log_index: 3 });
    assert.equal(second.status, 201, second.text);
    assert.notEqual(second.body.deposit_id, first.body.deposit_id);
    assert.deepEqual(await balances(mine.token), { USDC: 10_000_000 });
    const bad = await report({ ...base, address: evm, tx_hash: 'abcd'.repeat(10) });
    assertProblem(bad, 400, 'validation_failed');
    assert.deepEqual(fieldsOf(bad), ['tx_hash']);
  });

  it('a deposit too large to convert at the rate is credited in the asset, not a 500', async () => {
    const mine = await createWorkspace(t, 'deposits-overflow');
    const a = await newAddress(mine.token, { autoconvert_currency: 'UGX' });
    await postRate('UGX', '99999999999999999999');
    const d = await sandboxDeposit(mine.token, a.deposit_address_id, 1_000_000_000_000_000);
    const res = await simulate(mine.token, d.deposit_id, 'confirmed');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      [res.body.status, res.body.credited_currency, res.body.credited_amount, res.body.credit_id],
      ['credited', 'USDT', 1_000_000_000_000_000, null],
    );
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});
