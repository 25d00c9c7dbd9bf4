// The settlement report (GET /v1/reports/settlement) and the `reconciliation.mismatch` events a
// provider's contradicting answer raises. One app without workers: everything moves by the simulate endpoints and
// signed sandbox callbacks, so the figures are exactly the ones made here.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { signCallback } from '../src/modules/providers/callback-protocol.js';
import { prefersCsv } from '../src/modules/reports/reports.routes.js';
import { loadServiceKeys } from '../src/platform/secrets.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  request,
  requestRefund,
  startTestApp,
  type TestApp,
} from './helpers/harness.js';

let t: TestApp;
let ws: { id: string; token: string };
let secret: string;
const today = new Date().toISOString().slice(0, 10);

before(async () => {
  t = await startTestApp();
  secret = (await loadServiceKeys(t.db, t.box)).sandboxProviderSecret;
  ws = await createWorkspace(t, `reports-${randomBytes(3).toString('hex')}`);
});
after(async () => t?.close());

async function collection(amount: number, outcome: 'successful' | 'failed', rail = 'mpesa'): Promise<string> {
  const c = await createCollection(t, ws.token, { amount }, `/v1/collections/KE/rails/${rail}`);
  assert.equal(c.status, 201, c.text);
  const s = await request(t, 'POST', `/v1/sandbox/collections/${c.body.collection_id}/simulate`, {
    token: ws.token,
    body: { outcome },
  });
  assert.equal(s.status, 200, s.text);
  return c.body.collection_id as string;
}

const report = (query: string, headers: Record<string, string> = {}) =>
  request(t, 'GET', `/v1/reports/settlement?${query}`, { token: ws.token, headers });

describe('the settlement report', () => {
  let failedId = '';

  before(async () => {
    await collection(1_500, 'successful');
    await collection(2_500, 'successful');
    failedId = await collection(700, 'failed');
    await collection(4_000, 'successful', 'airtel_money');
    const refunded = await collection(1_000, 'successful');
    const refund = await requestRefund(t, ws.token, refunded, 1_000);
    assert.equal(refund.status, 201, refund.text);
    const settled = await request(t, 'POST', `/v1/sandbox/refunds/${refund.body.refund_id}/simulate`, {
      token: ws.token,
      body: { outcome: 'successful' },
    });
    assert.equal(settled.status, 200, settled.text);
  });

  it("counts the day's outcomes per rail and status, and the ledger's opening, movements and closing", async () => {
    const res = await report(`date=${today}&currency=KES`);
    assert.equal(res.status, 200, res.text);
    const mpesa = res.body.rails.find((r: any) => r.rail === 'mpesa');
    const airtel = res.body.rails.find((r: any) => r.rail === 'airtel_money');
    assert.deepEqual(mpesa.collections.successful, { count: 3, amount: 5_000 });
    assert.deepEqual(mpesa.collections.failed, { count: 1, amount: 700 });
    assert.deepEqual(mpesa.collections.refunded, { count: 1, amount: 1_000 });
    assert.deepEqual(mpesa.refunds.successful, { count: 1, amount: 1_000 });
    assert.deepEqual(airtel.collections.successful, { count: 1, amount: 4_000 });
    const { opening_available, closing_available, movements } = res.body.ledger;
    assert.equal(opening_available, 0);
    assert.equal(closing_available, 1_500 + 2_500 + 4_000);
    const moved = movements.reduce((sum: number, m: { amount: number }) => sum + m.amount, 0);
    assert.equal(opening_available + moved, closing_available);
    assert.deepEqual(
      movements.map((m: { kind: string; count: number }) => [m.kind, m.count]),
      [
        ['collection_successful', 4],
        ['refund_reserved', 1],
      ],
    );
    // Another day has nothing, and starts from what this day ended with once it is over.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const next = await report(`date=${tomorrow}&currency=KES`);
    assert.deepEqual(next.body.rails, []);
    assert.equal(next.body.ledger.opening_available, closing_available);
  });

  it('answers CSV with Accept: text/csv, the same figures one row each', async () => {
    const res = await report(`date=${today}&currency=KES`, { accept: 'text/csv' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
    const lines = res.text.trim().split('\r\n');
    assert.equal(lines[0], 'section,market,rail,item,count,amount');
    assert.ok(lines.includes('collections,KE,mpesa,successful,3,5000'), res.text);
    assert.ok(lines.includes('refunds,KE,mpesa,successful,1,1000'), res.text);
    assert.ok(lines.includes('ledger,,,closing_available,,8000'), res.text);
    assert.equal(prefersCsv('application/json;q=0.9, text/csv'), true);
    assert.equal(prefersCsv('text/csv;q=0.5, application/json'), false);
    assert.equal(prefersCsv('*/*'), false);
  });

  it('a provider that says a failed collection succeeded: a reconciliation.mismatch event, in the report too', async () => {
    const { rows } = await t.db.query<{ provider_reference: string | null }>(
      'SELECT provider_reference FROM collections WHERE id = $1',
      [failedId],
    );
    const body = JSON.stringify({
      notice_id: `mismatch-${randomBytes(6).toString('hex')}`,
      object_type: 'collection',
      merchant_reference: failedId,
      reference: rows[0]?.provider_reference ?? `ref-${randomBytes(6).toString('hex')}`,
      status: 'successful',
      reason: null,
      occurred_at: new Date().toISOString(),
    });
    const res = await request(t, 'POST', '/v1/providers/sandbox/callbacks', {
      rawBody: body,
      headers: signCallback(secret, body),
    });
    assert.deepEqual(res.body, { received: true, outcome: 'refused' });
    const after = await report(`date=${today}&currency=KES`);
    assert.equal(after.body.reconciliation_mismatches.length, 1);
    const m = after.body.reconciliation_mismatches[0];
    assert.deepEqual(
      [m.object_id, m.our_status, m.provider_status, m.provider],
      [failedId, 'failed', 'successful', 'sandbox'],
    );
    const events = await request(t, 'GET', `/v1/events?type=reconciliation.mismatch`, { token: ws.token });
    assert.equal(events.body.data.length, 1);
    // Nothing moved: still failed, not credited.
    const c = await request(t, 'GET', `/v1/collections/${failedId}`, { token: ws.token });
    assert.equal(c.body.status, 'failed');
  });

  it('bad input: 400 with the field named; another audience 403; no token 401', async () => {
    for (const [query, code, field] of [
      [`date=2026-02-30&currency=KES`, 'validation_failed', 'date'],
      [`date=24-11-2026&currency=KES`, 'validation_failed', 'date'],
      [`date=${today}`, 'validation_failed', 'currency'],
      [`date=${today}&currency=kes`, 'validation_failed', 'currency'],
      [`date=${today}&currency=XYZ`, 'invalid_currency', 'currency'],
    ] as const) {
      const res = await report(query);
      assertProblem(res, 400, code);
      assert.deepEqual(
        (res.body.errors ?? []).map((e: { field: string }) => e.field),
        [field],
        `${query}: ${res.text}`,
      );
    }
    assertProblem(
      await request(t, 'GET', `/v1/reports/settlement?date=${today}&currency=KES`, { token: t.adminToken }),
      403,
      'forbidden',
    );
    assertProblem(await request(t, 'GET', `/v1/reports/settlement?date=${today}&currency=KES`), 401, 'unauthorized');
  });
});
