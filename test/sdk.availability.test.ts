// The SDK's rail availability calls against a started service: availability.get, and the admin's maintenance set and
// cleared, with the 503 `rail_unavailable` a create gets meanwhile as a typed error.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Payments, PaymentsError } from '../packages/sdk/src/index.js';
import { startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp({ AVAILABILITY_REFRESH_MS: '50' }, { workers: true });
});
after(async () => t?.close());

describe('rail availability through the SDK', () => {
  it('reads it, sets and clears maintenance; a collection meanwhile is a typed 503 rail_unavailable', async () => {
    const payments = new Payments({ token: t.demoToken, baseUrl: t.baseUrl, maxRetries: 0 });
    const admin = new Payments({ token: t.adminToken, baseUrl: t.baseUrl });
    const before = await payments.availability.get();
    const mpesa = before.data.find((r) => r.market === 'TZ' && r.rail === 'mpesa');
    assert.equal(mpesa?.collections.status, 'operational');

    const ends = new Date(Date.now() + 600_000).toISOString();
    const set = await admin.admin.maintenance.set('TZ', 'mpesa', {
      starts_at: new Date().toISOString(),
      ends_at: ends,
      note: 'Switch upgrade',
    });
    assert.equal(set.ends_at, ends);
    const during = (await payments.availability.get()).data.find((r) => r.market === 'TZ' && r.rail === 'mpesa');
    assert.equal(during?.collections.status, 'down');
    assert.equal(during?.maintenance?.note, 'Switch upgrade');

    await assert.rejects(
      payments.collections.create('TZ', 'mpesa', {
        amount: 20_000,
        currency: 'TZS',
        reference: 'sdk-availability',
        customer: { phone_number: '+255712345678' },
        metadata: {},
      }),
      (err: unknown) => err instanceof PaymentsError && err.status === 503 && err.code === 'rail_unavailable',
    );

    await admin.admin.maintenance.clear('TZ', 'mpesa');
    const afterwards = (await payments.availability.get()).data.find((r) => r.market === 'TZ' && r.rail === 'mpesa');
    assert.equal(afterwards?.collections.status, 'operational');
    await assert.rejects(
      admin.admin.maintenance.clear('TZ', 'mpesa'),
      (err: unknown) => err instanceof PaymentsError && err.status === 404 && err.code === 'not_found',
    );
  });
});
