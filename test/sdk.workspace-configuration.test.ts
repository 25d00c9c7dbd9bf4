// The TypeScript client (packages/sdk) for a workspace's active configuration: the admin narrows a workspace and reads
// it back, the workspace reads what it may use, a widening is a typed error, and the narrowing holds on a collection.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Payments, PaymentsError, type WorkspaceConfiguration } from '../packages/sdk/src/index.js';
import { createWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t?.close());

const order = () => ({
  amount: 1500,
  currency: 'KES',
  reference: `sdk-${randomBytes(4).toString('hex')}`,
  customer: { phone_number: '+254712345678' },
});

async function problemOf(call: Promise<unknown>): Promise<PaymentsError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof PaymentsError, `a PaymentsError, got ${String(error)}`);
  return error;
}

describe('workspace configuration through the SDK', () => {
  it('admin.workspaces.configure, .configuration and workspace.configuration', async () => {
    const ws = await createWorkspace(t, `sdk-config-${randomBytes(3).toString('hex')}`);
    const admin = new Payments({ token: t.adminToken, baseUrl: t.baseUrl });
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });

    const whole: WorkspaceConfiguration = await payments.workspace.configuration();
    assert.equal(whole.narrowed, false);
    assert.ok(whole.markets.length > 1);

    const set = await admin.admin.workspaces.configure(ws.id, {
      rails: [{ market: 'KE', rail: 'mpesa', min_amount: 1_000, max_amount: 5_000 }],
    });
    assert.equal(set.narrowed, true);
    assert.deepEqual(
      set.markets.map((m) => [m.market, m.currency_exponent, m.rails.map((r) => [r.rail, r.min_amount, r.max_amount])]),
      [['KE', 2, [['mpesa', 1_000, 5_000]]]],
    );
    assert.deepEqual(await admin.admin.workspaces.configuration(ws.id), set);
    assert.deepEqual(await payments.workspace.configuration(), set);

    const widened = await problemOf(
      admin.admin.workspaces.configure(ws.id, { rails: [{ market: 'KE', rail: 'mpesa', max_amount: 10 ** 12 }] }),
    );
    assert.equal(widened.status, 400);
    assert.equal(widened.code, 'catalogue_widened');

    const refused = await problemOf(payments.collections.create('KE', 'airtel_money', order()));
    assert.equal(refused.code, 'invalid_rail');
    const tooMuch = await problemOf(payments.collections.create('KE', 'mpesa', { ...order(), amount: 5_001 }));
    assert.equal(tooMuch.code, 'amount_out_of_range');
    assert.equal((await payments.collections.create('KE', 'mpesa', order())).status, 'created');

    const cleared = await admin.admin.workspaces.configure(ws.id, { rails: null });
    assert.equal(cleared.narrowed, false);
    assert.equal((await payments.collections.create('KE', 'airtel_money', order())).status, 'created');
  });
});
