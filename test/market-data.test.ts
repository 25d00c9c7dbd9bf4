// Market data: rate sources kept by the admin (GET /v1/api/markets/sources lists the active ones) and rate records
// posted by liquidity providers (GET /v1/api/markets/rates lists them, newest first, by pair); a stale rate is never
// current.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { assertProblem, liquidityProviderToken, newKey, request, startTestApp } from './helpers/harness.js';

const t = await startTestApp({ RATE_MAX_AGE_SECONDS: '60' });
after(async () => t.close());
const lpToken = await liquidityProviderToken(t);

let n = 0;
const source = async (overrides: Record<string, unknown> = {}) => {
  n += 1;
  const res = await request(t, 'POST', '/v1/api/markets/sources', {
    token: t.adminToken,
    body: { name: `Source ${n} ${Date.now()}`, kind: 'exchange', ...overrides },
  });
  assert.equal(res.status, 201, res.text);
  return res.body as { source_id: string; name: string };
};
/** The admin's change to a rate source (its status). */
const changeSource = (id: string, body: unknown) =>
  request(t, 'PATCH', `/v1/api/markets/sources/${id}`, { token: t.adminToken, body });
const postRate = (body: Record<string, unknown>, token = lpToken) =>
  request(t, 'POST', '/v1/api/markets/rates', { token, body });

describe('rate sources (GET /v1/api/markets/sources)', () => {
  it('the admin adds one (active), the sources list shows it; deactivated, it leaves the list', async () => {
    const s = await source({ url: 'https://example.org/prices' });
    const listed = async () =>
      (await request(t, 'GET', '/v1/api/markets/sources?limit=100', { token: t.demoToken })).body.data.map(
        (x: { source_id: string }) => x.source_id,
      );
    assert.ok((await listed()).includes(s.source_id));
    const off = await changeSource(s.source_id, { status: 'inactive' });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.status, 'inactive');
    assert.equal(off.body.url, 'https://example.org/prices');
    assert.ok(!(await listed()).includes(s.source_id));
  });

  it('a name already used is 409 source_name_taken; bad input 400; unknown id 404; only the admin writes', async () => {
    const s = await source();
    assertProblem(
      await request(t, 'POST', '/v1/api/markets/sources', {
        token: t.adminToken,
        body: { name: s.name, kind: 'exchange' },
      }),
      409,
      'source_name_taken',
    );
    assertProblem(
      await request(t, 'POST', '/v1/api/markets/sources', { token: t.adminToken, body: { name: 'x', kind: 'oracle' } }),
      400,
      'validation_failed',
    );
    assertProblem(await changeSource(s.source_id, {}), 400, 'validation_failed');
    assertProblem(await changeSource('01890a5d-ac96-774b-bcce-b302099a8057', { status: 'inactive' }), 404, 'not_found');
    assertProblem(
      await request(t, 'POST', '/v1/api/markets/sources', { token: lpToken, body: { name: 'mine', kind: 'exchange' } }),
      403,
      'forbidden',
    );
    assertProblem(await request(t, 'GET', '/v1/api/markets/sources'), 401, 'unauthorized');
  });
});

describe('rate records (GET /v1/api/markets/rates)', () => {
  it('a liquidity provider posts a rate: 201, exact decimal string, pair, source name', async () => {
    const s = await source();
    const res = await postRate({ source_id: s.source_id, base: 'USDT', quote: 'KES', rate: '129.450000000001' });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.rate, '129.450000000001');
    assert.equal(res.body.pair, 'USDT/KES');
    assert.equal(res.body.source_name, s.name);
    const listed = await request(t, 'GET', '/v1/api/markets/rates?pair=USDT/KES&limit=1', { token: t.demoToken });
    assert.equal(listed.body.data[0].rate_id, res.body.rate_id);
    assert.equal(listed.body.data[0].rate, '129.450000000001');
  });

  it('newest first, filtered by pair, paged by cursor', async () => {
    const s = await source();
    const made: string[] = [];
    for (const rate of ['1550.5', '1551', '1552.25'])
      made.push((await postRate({ source_id: s.source_id, base: 'USDC', quote: 'NGN', rate })).body.rate_id);
    await postRate({ source_id: s.source_id, base: 'USDC', quote: 'GHS', rate: '15.1' });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: { rate_id: string; pair: string }[]; next_cursor: string | null } } =
        await request(
          t,
          'GET',
          `/v1/api/markets/rates?pair=USDC/NGN&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          { token: lpToken },
        );
      assert.equal(page.status, 200);
      for (const r of page.body.data) assert.equal(r.pair, 'USDC/NGN');
      seen.push(...page.body.data.map((r) => r.rate_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, [...made].reverse());
    assertProblem(
      await request(t, 'GET', '/v1/api/markets/rates?pair=usdc-ngn', { token: lpToken }),
      400,
      'validation_failed',
    );
  });

  it('refuses floats, zero, negative, too many places, equal base and quote, an inactive or unknown source, a far-future time', async () => {
    const s = await source();
    const base = { source_id: s.source_id, base: 'USDT', quote: 'UGX' };
    for (const rate of [3700.5, '0', '-1', '1.1234567890123', '1e3', '01.5'])
      assertProblem(await postRate({ ...base, rate }), 400, 'validation_failed');
    assertProblem(await postRate({ ...base, quote: 'USDT', rate: '1' }), 400, 'validation_failed');
    assertProblem(
      await postRate({ ...base, rate: '1', observed_at: new Date(Date.now() + 3_600_000).toISOString() }),
      400,
      'validation_failed',
    );
    assertProblem(
      await postRate({ ...base, source_id: '01890a5d-ac96-774b-bcce-b302099a8057', rate: '1' }),
      422,
      'rate_source_unavailable',
    );
    await changeSource(s.source_id, { status: 'inactive' });
    assertProblem(await postRate({ ...base, rate: '1' }), 422, 'rate_source_unavailable');
    assertProblem(await postRate({ ...base, rate: '1' }, t.demoToken), 403, 'forbidden');
  });

  it('an Idempotency-Key makes a retried post one record', async () => {
    const s = await source();
    const key = newKey();
    const body = { source_id: s.source_id, base: 'USDT', quote: 'RWF', rate: '1400' };
    const first = await request(t, 'POST', '/v1/api/markets/rates', { token: lpToken, body, idempotencyKey: key });
    const again = await request(t, 'POST', '/v1/api/markets/rates', { token: lpToken, body, idempotencyKey: key });
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
  });
});

describe('the rate used to convert', () => {
  it('is the newest observed within RATE_MAX_AGE_SECONDS from an active source; a stale or deactivated one never is', async () => {
    const s = await source();
    const old = new Date(Date.now() - 120_000).toISOString();
    await postRate({ source_id: s.source_id, base: 'USDT', quote: 'ZMW', rate: '26.5', observed_at: old });
    assert.equal(
      await t.services.marketData.currentRate('USDT', 'ZMW'),
      undefined,
      'a rate observed 120 s ago is stale at a 60 s limit',
    );
    const fresh = (await postRate({ source_id: s.source_id, base: 'USDT', quote: 'ZMW', rate: '26.75' })).body;
    assert.equal((await t.services.marketData.currentRate('USDT', 'ZMW'))?.rate_id, fresh.rate_id);
    assert.equal(
      await t.services.marketData.currentRate('USDT', 'ZMW', new Date(Date.now() + 61_000)),
      undefined,
      'stale a minute later',
    );
    await changeSource(s.source_id, { status: 'inactive' });
    assert.equal(await t.services.marketData.currentRate('USDT', 'ZMW'), undefined, 'a deactivated source is not used');
  });
});
