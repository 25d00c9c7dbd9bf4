// The operator's float page in a browser, driven by roles and labels: an admin signs in, follows "Operator float" and
// reads each operator account's balance, threshold and status (ok, low, unknown with the operator's error) as the fakes
// of MTN MoMo and Airtel Money gave them. Audited by axe-core at 360 px and photographed at 360 and 1280 px.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { AirtelFake } from '../fakes/airtel-money.js';
import { MomoFake } from '../fakes/mtn-momo.js';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { AIRTEL_FAKE_ENTRY, CALLBACK_TOKEN, freePort, MOMO_FAKE_ENTRY } from './helpers/connectors.js';
import { assertPageQuality, openContext, signIn } from './helpers/dashboard.js';
import { startTestApp, type TestApp } from './helpers/harness.js';

const skip = browserMissing();
const momo = new MomoFake({ targetEnvironment: 'mtnghana', currency: 'GHS' });
const airtel = new AirtelFake({ country: 'KE', currency: 'KES' });
let t: TestApp;
let browser: Browser;
let dir: string;

before(async () => {
  if (skip) return;
  await Promise.all([momo.start(), airtel.start()]);
  dir = await mkdtemp(path.join(os.tmpdir(), 'float-page-'));
  const file = path.join(dir, 'providers.json');
  await writeFile(
    file,
    JSON.stringify({
      connectors: [
        { ...MOMO_FAKE_ENTRY, base_url: momo.url, callback_token: CALLBACK_TOKEN },
        { ...AIRTEL_FAKE_ENTRY, base_url: airtel.url, callback_token: CALLBACK_TOKEN, pin: 'fake-encrypted-pin' },
      ],
    }),
  );
  const port = await freePort();
  t = await startTestApp({
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    PROVIDERS_FILE: file,
    OPERATOR_TIMEOUT_MS: '1000',
    OPERATOR_FLOAT_THRESHOLDS: 'mtn/disbursement=100000,airtel=50000',
  });
  browser = await launchBrowser();
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
  await Promise.all([momo.stop(), airtel.stop()]);
  await rm(dir, { recursive: true, force: true });
});

/** Reads every connector's balances now, as the scheduled round does. */
async function readAll(): Promise<void> {
  for (const connector of t.services.providers.connectors()) await t.services.operatorFloat.read(connector);
}

describe('dashboard: operator float', { skip }, () => {
  it('shows each operator account with its balance, threshold and status, and why a read failed', async () => {
    momo.portal.collection = 12_500;
    momo.portal.disbursement = 640;
    airtel.portalBalance = 2_000;
    await readAll();
    // Airtel then fails: its wallet keeps the last balance and shows unknown with Airtel's answer.
    airtel.inject({ path: '/standard/v1/users/balance', status: 503 });
    await readAll();

    const { context, page } = await openContext(browser, t);
    try {
      await page.goto(`${t.baseUrl}/dashboard`);
      await signIn(page, t.adminToken);
      await page.getByRole('link', { name: 'Operator float' }).click();
      await page.getByRole('heading', { name: 'Operator float', level: 1 }).waitFor();
      await page.getByRole('status').filter({ hasText: '2 accounts need attention' }).waitFor();
      const table = page.getByRole('region', { name: 'Operator balances' });
      const row = (connector: string, account: string) =>
        table
          .getByRole('row')
          .filter({ has: page.getByRole('cell', { name: connector, exact: true }) })
          .filter({ has: page.getByRole('cell', { name: account, exact: true }) });
      const collection = row('mtn', 'collection');
      await collection.getByText('ok', { exact: true }).waitFor();
      assert.match(await collection.innerText(), /12,500\.00/);
      const disbursement = row('mtn', 'disbursement');
      await disbursement.getByText('low', { exact: true }).waitFor();
      assert.match(await disbursement.innerText(), /640\.00/);
      assert.match(await disbursement.innerText(), /1,000\.00/, 'its threshold');
      const wallet = row('airtel', 'wallet');
      await wallet.getByText('unknown', { exact: true }).waitFor();
      assert.match(await wallet.innerText(), /Airtel answered 503/);
      assert.match(await wallet.innerText(), /2,000\.00/, 'the last balance read is still shown');
      await assertPageQuality(page, 'admin-operator-float');
    } finally {
      await context.close();
    }
  });

  it('is not shown to a merchant: the nav has no such link, and the page is refused', async () => {
    const { context, page } = await openContext(browser, t);
    try {
      await page.goto(`${t.baseUrl}/dashboard`);
      await signIn(page, t.demoToken);
      assert.equal(await page.getByRole('link', { name: 'Operator float' }).count(), 0);
      const res = await page.goto(`${t.baseUrl}/dashboard/admin/operator-float`);
      assert.equal(res?.status(), 403);
    } finally {
      await context.close();
    }
  });
});
