// The SDK's bulk commit (payments.payouts.bulk) against a started service: items answered in order, keys made for the
// items that have none, and a call whose answer is lost retried with the same keys: replayed, no payout twice.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Payments } from '../packages/sdk/src/index.js';
import {
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  request,
  startTestApp,
  type TestApp,
} from './helpers/harness.js';

let t: TestApp;
let route: string;
before(async () => {
  t = await startTestApp(FAST_LIFECYCLE, { workers: true });
  const lp = await liquidityProviderToken(t);
  const res = await request(t, 'POST', '/v1/api/routes', {
    token: lp,
    body: { source: 'KES', market: 'KE', rail: 'mpesa', min_amount: 100, max_amount: 1_000_000 },
  });
  assert.equal(res.status, 201, res.text);
  route = res.body.route_id;
});
after(async () => t?.close());

/** A workspace with `amount` KES cents available and a beneficiary whose payouts stay pending. */
async function funded(name: string, amount: number): Promise<{ id: string; token: string; beneficiary: string }> {
  const ws = await createWorkspace(t, name);
  const c = await createCollection(t, ws.token, { amount });
  assert.equal(c.status, 201, c.text);
  const s = await request(t, 'POST', `/v1/sandbox/collections/${c.body.collection_id}/simulate`, {
    token: ws.token,
    body: { outcome: 'successful' },
  });
  assert.equal(s.status, 200, s.text);
  const b = await request(t, 'POST', '/v1/api/beneficiaries', {
    token: ws.token,
    body: { name: 'Kwame Mensah', market: 'KE', rail: 'mpesa', phone_number: '+254712340005' },
  });
  assert.equal(b.status, 201, b.text);
  return { ...ws, beneficiary: b.body.beneficiary_id };
}

describe('payments.payouts.bulk', () => {
  it('commits the items in order, refuses the one that would overdraw, and makes a key for an item without one', async () => {
    const ws = await funded('sdk-bulk', 2_500);
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });
    const answer = await payments.payouts.bulk([
      { idempotency_key: 'sdk-bulk-a', route_id: route, beneficiary_id: ws.beneficiary, amount: 1_000, reference: 'a' },
      { route_id: route, beneficiary_id: ws.beneficiary, amount: 2_000, reference: 'b' },
      { route_id: route, beneficiary_id: ws.beneficiary, amount: 1_500, reference: 'c' },
    ]);
    assert.deepEqual(
      answer.data.map((d) => [d.index, d.status, d.payout?.reference, d.problem?.code]),
      [
        [0, 'committed', 'a', undefined],
        [1, 'refused', undefined, 'insufficient_balance'],
        [2, 'committed', 'c', undefined],
      ],
    );
    assert.equal(answer.data[0]!.idempotency_key, 'sdk-bulk-a');
    for (const d of answer.data.slice(1)) assert.match(d.idempotency_key, /^[0-9a-f-]{36}$/);
    // The made key is the payout's key: the single commit with it replays the bulk's payout.
    const again = await payments.payouts.create(
      { route_id: route, beneficiary_id: ws.beneficiary, amount: 1_500, reference: 'c' },
      { idempotencyKey: answer.data[2]!.idempotency_key },
    );
    assert.equal(again.transaction_id, answer.data[2]!.payout!.transaction_id);
  });

  it('a call whose answer is lost is sent again with the same keys: answered from the stored payouts, none twice', async () => {
    const ws = await funded('sdk-bulk-lost', 10_000);
    const bodies: string[] = [];
    const sentHeaders: string[][] = [];
    let cut = 0;
    const flaky: typeof fetch = async (input, init) => {
      const req = new Request(input, init);
      if (req.method === 'POST') {
        bodies.push(await req.clone().text());
        sentHeaders.push(Array.from(req.headers as unknown as Iterable<[string, string]>, ([name]) => name));
      }
      const response = await fetch(req);
      if (req.method === 'POST' && cut++ === 0) throw new TypeError('fetch failed: socket closed');
      return response;
    };
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl, fetch: flaky, backoffMs: 10 });
    const answer = await payments.payouts.bulk([
      { route_id: route, beneficiary_id: ws.beneficiary, amount: 1_000, reference: 'lost-a' },
      { route_id: route, beneficiary_id: ws.beneficiary, amount: 2_000, reference: 'lost-b' },
    ]);
    assert.equal(bodies.length, 2, 'sent twice');
    assert.equal(bodies[0], bodies[1], 'the retry carries the same items and keys');
    for (const h of sentHeaders) assert.ok(!h.includes('x-sdk-repeatable'), 'the marker stays in the client');
    assert.deepEqual(
      answer.data.map((d) => [d.status, d.replayed]),
      [
        ['committed', true],
        ['committed', true],
      ],
    );
    const list = await payments.payouts.list().firstPage();
    assert.equal(list.data.length, 2);
    const balances = await request(t, 'GET', '/v1/balances', { token: ws.token });
    assert.equal(balances.body.data.find((b: { currency: string }) => b.currency === 'KES').available, 7_000);
  });
});
