// The hosted payment page preselects the payer's operator from the number typed (the by-token prediction), in a real
// Chromium found by roles and labels: a choice the payer made by hand is never overridden, one request per whole
// number; photographed at 360 and 1280 px (test-output/checkout-predict/) and audited with axe-core at both widths.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  axeViolations,
  browserMissing,
  DESKTOP,
  launchBrowser,
  PHONE,
  screenshotDir,
  snapBothWidths,
} from './helpers/browser.js';
import { newKey, request, startTestApp, type TestApp } from './helpers/harness.js';

const skip = browserMissing();

let t: TestApp;
let browser: Browser;
let shots: string;

before(async () => {
  if (skip) return;
  t = await startTestApp();
  browser = await launchBrowser();
  shots = await screenshotDir('checkout-predict');
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

async function openSession(body: Record<string, unknown>) {
  const res = await request(t, 'POST', '/v1/checkout/sessions', {
    token: t.demoToken,
    body: { redirect_url: 'https://shop.example/thanks', ...body },
    idempotencyKey: newKey(),
  });
  assert.equal(res.status, 201, res.text);
  // axe is injected into the page, so this context lets it past the page's CSP.
  const context = await browser.newContext({ viewport: PHONE, bypassCSP: true });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  const predictions: string[] = [];
  page.on('request', (r) => {
    if (r.url().endsWith('/predict-provider')) predictions.push(r.postData() ?? '');
  });
  const opened = await page.goto(`${t.baseUrl}${new URL(res.body.session_url).pathname}`);
  assert.equal(opened?.status(), 200);
  return { id: res.body.id as string, context, page, errors, predictions };
}

const checked = (page: Page, name: string) => page.getByRole('radio', { name }).isChecked();

async function waitChecked(page: Page, name: string): Promise<void> {
  await page.getByRole('radio', { name }).and(page.locator(':checked')).waitFor({ timeout: 10_000 });
}

async function assertAxeClean(page: Page, screen: string): Promise<void> {
  for (const viewport of [PHONE, DESKTOP]) {
    await page.setViewportSize(viewport);
    const violations = (await axeViolations(page)).map((v) => `${v.id}: ${v.help}`);
    assert.deepEqual(violations, [], `WCAG 2.1 AA problems on ${screen} at ${viewport.width} px`);
  }
  await page.setViewportSize(PHONE);
}

describe('the payment page preselects the operator of the number typed', { skip }, () => {
  it('Kenya: an Airtel number selects Airtel Money, a Safaricom one M-Pesa; the payment goes on that rail', async () => {
    const { id, context, page, errors, predictions } = await openSession({ amount: 150_000, currency: 'KES' });
    try {
      assert.equal(await checked(page, 'M-Pesa'), true, 'the first rail is selected before any number');
      const phone = page.getByLabel('Mobile money number');
      await phone.pressSequentially('0733 123 4');
      await page.waitForTimeout(500);
      assert.equal(predictions.length, 0, 'nothing is asked before the number is whole');
      await phone.pressSequentially('56');
      await waitChecked(page, 'Airtel Money');
      assert.equal(await checked(page, 'M-Pesa'), false);
      assert.equal(
        await page.locator('#rail-hint').textContent(),
        'Airtel Money is selected for this number. You can choose another above.',
      );
      assert.deepEqual(predictions, [JSON.stringify({ phone_number: '0733123456' })]);
      await snapBothWidths(page, shots, '1-airtel-preselected');
      await assertAxeClean(page, 'the preselected rail');

      await phone.fill('0712 345 678');
      await waitChecked(page, 'M-Pesa');
      assert.equal(predictions.length, 2, 'one request per whole number');

      await phone.fill('0733 123 456');
      await waitChecked(page, 'Airtel Money');
      await page.getByRole('button', { name: 'Pay KES 1,500.00' }).click();
      await page.locator('#screen-wait').waitFor({ state: 'visible', timeout: 15_000 });
      const session = await request(t, 'GET', `/v1/checkout/sessions/${id}`, { token: t.demoToken });
      assert.equal(session.body.rail, 'airtel_money', 'the attempt went on the predicted rail');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a rail the payer chose by hand stays chosen, whatever number follows', async () => {
    const { context, page, errors, predictions } = await openSession({ amount: 150_000, currency: 'KES' });
    try {
      await page.getByRole('radio', { name: 'Airtel Money' }).check();
      await page.getByLabel('Mobile money number').fill('0712 345 678');
      // Give a prediction, were one asked, the time to land.
      await page.waitForTimeout(500);
      assert.equal(await checked(page, 'Airtel Money'), true);
      assert.equal(await page.locator('#rail-hint').textContent(), '');
      assert.deepEqual(predictions, [], 'no prediction is asked once the payer has chosen');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it("Côte d'Ivoire, in French: an MTN number selects MTN MoMo over Orange Money", async () => {
    const { context, page, errors } = await openSession({ amount: 5000, currency: 'XOF', market: 'CI' });
    try {
      assert.equal(await checked(page, 'Orange Money'), true);
      await page.getByLabel('Numéro mobile money').fill('05 05 12 34 56');
      await waitChecked(page, 'MTN MoMo');
      assert.equal(
        await page.locator('#rail-hint').textContent(),
        'MTN MoMo est choisi pour ce numéro. Vous pouvez en choisir un autre ci-dessus.',
      );
      await snapBothWidths(page, shots, '2-mtn-preselected-fr');
      await assertAxeClean(page, 'the preselected rail (fr)');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
