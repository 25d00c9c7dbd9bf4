// The hosted payment page on a redirect rail, in a real Chromium at 360 px: a payer in Dakar picks Wave, gets a
// button that opens Wave's page (the launch URL of the session the Wave connector made at the Wave fake), pays there,
// and the hosted page, still polling, shows the payment complete. Audited for WCAG 2.1 AA with axe-core.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { WaveFake } from '../fakes/wave.js';
import {
  axeViolations,
  browserMissing,
  launchBrowser,
  PHONE,
  screenshotDir,
  snapBothWidths,
  type AxeViolation,
} from './helpers/browser.js';
import { startConnectorApp, type ConnectorApp } from './helpers/connectors.js';
import { request, waitFor } from './helpers/harness.js';

const skip = browserMissing();
const fake = new WaveFake({ actAfterMs: 150, autoPay: false, webhookSecret: 'wave_sn_WHS_page-test' });
let app: ConnectorApp;
let browser: Browser;
let shots: string;

before(async () => {
  if (skip) return;
  app = await startConnectorApp(fake, {
    type: 'wave',
    name: 'wave',
    rails: ['SN/wave'],
    api_key: 'wave_sn_prod_fake-api-key',
    webhook_secret: 'wave_sn_WHS_page-test',
    return_url: 'https://shop.example/thanks',
  });
  fake.webhookUrl = app.callbackBase;
  browser = await launchBrowser();
  shots = await screenshotDir('checkout');
});
after(async () => {
  if (skip) return;
  await browser.close();
  await app.close();
});

function assertNoViolations(violations: AxeViolation[], screen: string): void {
  const summary = violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
  assert.deepEqual(summary, [], `WCAG 2.1 AA problems on the ${screen} screen`);
}

const visible = (page: Page, id: string) => page.locator(`#${id}`).waitFor({ state: 'visible', timeout: 15_000 });

describe('the hosted payment page on a redirect rail', { skip }, () => {
  it('Wave: a button opens the Wave page, the payer pays there, and the page (still polling) completes', async () => {
    const { t } = app;
    const res = await request(t, 'POST', '/v1/checkout/sessions', {
      token: t.demoToken,
      body: {
        amount: 5000,
        currency: 'XOF',
        market: 'SN',
        redirect_url: 'https://shop.example/back',
        reference: 'sn-1',
      },
    });
    assert.equal(res.status, 201, res.text);
    // axe is injected into the page, so this context lets it past the page's CSP.
    const context = await browser.newContext({ viewport: PHONE, bypassCSP: true });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    let polls = 0;
    page.on('request', (r) => {
      if (r.url().includes('/v1/checkout/by-token/') && r.method() === 'GET') polls += 1;
    });
    try {
      await page.goto(`${t.baseUrl}${new URL(res.body.session_url).pathname}`);
      assert.equal(await page.getAttribute('html', 'lang'), 'fr');
      await page.getByLabel('Wave').check();
      await page.getByLabel('Numéro mobile money').fill('77 123 45 67');
      await page.getByRole('button', { name: /^Payer / }).click();
      await visible(page, 'screen-wait');
      const open = page.getByRole('link', { name: 'Ouvrir Wave' });
      await open.waitFor({ state: 'visible', timeout: 15_000 });
      const collection = (await request(t, 'GET', `/v1/checkout/sessions/${res.body.id}`, { token: t.demoToken })).body
        .collection_id as string;
      const session = fake.sessionOf(collection);
      assert.ok(session, 'the connector made a Wave session for the attempt');
      assert.equal(session.restrict_payer_mobile, '+221771234567');
      assert.equal(await open.getAttribute('href'), `${fake.url}/c/${session.id}`);
      assert.equal(await open.getAttribute('target'), '_blank', 'it opens beside the page, which keeps polling');
      assert.match((await page.locator('#instruction').textContent()) ?? '', /^Ouvrez la page Wave pour payer XOF 5/);
      const box = await open.boundingBox();
      assert.ok(box && box.height >= 44 && box.x >= 0 && box.x + box.width <= PHONE.width, 'a touch-sized button');
      await snapBothWidths(page, shots, '9-wait-redirect-fr');
      assertNoViolations(await axeViolations(page), 'wait (redirect)');

      const [wavePage] = await Promise.all([context.waitForEvent('page'), open.click()]);
      await wavePage.waitForLoadState();
      assert.match(await wavePage.locator('#amount').innerText(), /5000 F CFA/);
      const pollsBefore = polls;
      await wavePage.getByRole('button', { name: 'Payer' }).click();
      await visible(page, 'screen-success');
      assert.ok(polls > pollsBefore, 'the hosted page learnt of the payment by polling');
      await waitFor('the session complete', async () => {
        const s = await request(t, 'GET', `/v1/checkout/sessions/${res.body.id}`, { token: t.demoToken });
        return s.body.status === 'complete' ? s.body : undefined;
      });
      assertNoViolations(await axeViolations(page), 'success (redirect)');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
