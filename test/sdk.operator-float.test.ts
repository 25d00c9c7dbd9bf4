// The TypeScript client's operator float call (packages/sdk, `admin.operatorFloat.list`) against a started service
// with a MoMo connector on its fake: the balances it lists are the ones the operator gave, and a token of another
// audience gets a typed 403.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { MomoFake } from '../fakes/mtn-momo.js';
import { Payments, PaymentsError } from '../packages/sdk/src/index.js';
import { MOMO_FAKE_ENTRY, startConnectorApp } from './helpers/connectors.js';

const fake = new MomoFake({ targetEnvironment: 'mtnghana', currency: 'GHS' });
const app = await startConnectorApp(fake, MOMO_FAKE_ENTRY, { OPERATOR_FLOAT_THRESHOLDS: 'mtn/disbursement=100000' });
after(async () => app.close());
const t = app.t;

describe('the SDK: operator float', () => {
  it('admin.operatorFloat.list gives each account with its balance, threshold and status', async () => {
    fake.portal.disbursement = 750;
    const connector = t.services.providers.connector('mtn');
    assert.ok(connector);
    await t.services.operatorFloat.read(connector);
    const admin = new Payments({ token: t.adminToken, baseUrl: t.baseUrl });
    const { data } = await admin.admin.operatorFloat.list();
    const disbursement = data.find((a) => a.connector === 'mtn' && a.account === 'disbursement');
    assert.equal(disbursement?.balance, 75000);
    assert.equal(disbursement?.currency, 'GHS');
    assert.equal(disbursement?.threshold, 100000);
    assert.equal(disbursement?.status, 'low');
    assert.ok(fake.requests('GET', '/disbursement/v1_0/account/balance').length >= 1, 'read from the operator');
  });

  it('an integrator token is refused with a typed 403 forbidden', async () => {
    const merchant = new Payments({ token: t.demoToken, baseUrl: t.baseUrl });
    await assert.rejects(merchant.admin.operatorFloat.list(), (err: unknown) => {
      assert.ok(err instanceof PaymentsError);
      assert.equal(err.status, 403);
      assert.equal(err.code, 'forbidden');
      return true;
    });
  });
});
