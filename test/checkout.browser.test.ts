// The hosted payment page in a real Chromium: a payer pays from a fresh session to the redirect, fails and
// retries, waits past expiry, pays with the keyboard alone; every screen is photographed at 360 and 1280 px
// (test-output/checkout/) and audited for WCAG 2.1 AA with axe-core.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  axeViolations,
  browserMissing,
  launchBrowser,
  PHONE,
  screenshotDir,
  snapBothWidths,
  type AxeViolation,
} from './helpers/browser.js';
import { request, startTestApp, waitFor, type TestApp } from './helpers/harness.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const skip = browserMissing();

let t: TestApp;
let browser: Browser;
let merchant: Receiver;
let shots: string;

before(async () => {
  if (skip) return;
  // Simulator steps of 600 ms: each screen stays up long enough to be seen and photographed.
  t = await startTestApp({ SANDBOX_STEP_MS: '600', WORKER_INTERVAL_MS: '20' }, { workers: true });
  merchant = await startReceiver(() => ({
    status: 200,
    headers: { 'content-type': 'text/html' },
    body: '<!doctype html><title>Shop</title><p>Back at the shop</p>',
  }));
  browser = await launchBrowser();
  shots = await screenshotDir('checkout');
});
after(async () => {
  if (skip) return;
  await browser.close();
  await merchant.close();
  await t.close();
});

async function newSession(
  overrides: Record<string, unknown> = {},
): Promise<{ id: string; url: string; redirect: string }> {
  const redirect = `${merchant.url}/thanks?cart=9`;
  const res = await request(t, 'POST', '/v1/checkout/sessions', {
    token: t.demoToken,
    body: {
      amount: 150_000,
      currency: 'KES',
      redirect_url: redirect,
      reference: 'cart-9',
      metadata: { order_id: 'ord-7731' },
      ...overrides,
    },
  });
  assert.equal(res.status, 201, res.text);
  // session_url is on PUBLIC_BASE_URL; the test server listens on its own port.
  return { id: res.body.id, url: `${t.baseUrl}${new URL(res.body.session_url).pathname}`, redirect };
}

async function openPage(
  url: string,
  options: { audit?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: PHONE, ...(options.audit ? { bypassCSP: true } : {}) });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  const res = await page.goto(url);
  assert.equal(res?.status(), 200);
  return { context, page, errors };
}

const visible = (page: Page, id: string) => page.locator(`#${id}`).waitFor({ state: 'visible', timeout: 15_000 });

async function assertFitsPhone(page: Page): Promise<void> {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than a 360 px phone`);
}

function assertNoViolations(violations: AxeViolation[], screen: string): void {
  const summary = violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
  assert.deepEqual(summary, [], `WCAG 2.1 AA problems on the ${screen} screen`);
}

async function sessionStatus(id: string): Promise<string> {
  return (await request(t, 'GET', `/v1/checkout/sessions/${id}`, { token: t.demoToken })).body.status;
}

describe('the hosted payment page in Chromium', { skip }, () => {
  it('a payer completes a payment from a fresh session to the redirect', async () => {
    const session = await newSession();
    const { context, page, errors } = await openPage(session.url);
    try {
      assert.equal(await page.locator('#amount').textContent(), 'KES 1,500.00');
      assert.match((await page.locator('.merchant').textContent()) ?? '', /Demo Shop/);
      assert.deepEqual(await page.locator('.rail span').allTextContents(), ['M-Pesa', 'Airtel Money']);
      assert.equal(await page.locator('#phone-prefix').textContent(), '+254');
      assert.match((await page.locator('#phone-hint').textContent()) ?? '', /9 digits after \+254/);
      assert.match((await page.locator('#expires').textContent()) ?? '', /^This payment link expires at \d{2}:\d{2}/);
      await assertFitsPhone(page);
      await snapBothWidths(page, shots, '1-pay');

      // Validation as you type: a letter is flagged at once, too many digits too; a short number only when leaving the field.
      await page.getByLabel('Mobile money number').fill('71234x');
      assert.equal(await page.locator('#phone-error').textContent(), 'Use digits only.');
      assert.equal(await page.locator('#phone').getAttribute('aria-invalid'), 'true');
      await page.getByLabel('Mobile money number').fill('7123');
      assert.equal(await page.locator('#phone-error').textContent(), '');
      await page.getByRole('button', { name: 'Pay KES 1,500.00' }).click();
      assert.match(
        (await page.locator('#phone-error').textContent()) ?? '',
        /needs 9 digits after \+254; 5 more to go/,
      );
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'phone', 'the invalid field gets the focus');
      await snapBothWidths(page, shots, '2-pay-invalid');
      assert.equal(await sessionStatus(session.id), 'open', 'nothing was sent for an invalid number');

      await page.getByLabel('Mobile money number').fill('0712 340 000'); // the local form works too
      await page.getByRole('button', { name: 'Pay KES 1,500.00' }).click();
      await visible(page, 'screen-wait');
      assert.match(
        (await page.locator('#instruction').textContent()) ?? '',
        /Approve the M-Pesa prompt for KES 1,500\.00 sent to \+254\*+000 with your PIN/,
      );
      await snapBothWidths(page, shots, '3-wait');

      await visible(page, 'screen-success');
      assert.equal(
        await page.evaluate(() => document.activeElement?.id),
        'success-title',
        'the result is announced by moving focus to it',
      );
      await snapBothWidths(page, shots, '4-success');
      await page.waitForURL((u) => u.pathname === `${merchant.path}/thanks`, { timeout: 15_000 });
      const back = new URL(page.url());
      assert.equal(back.searchParams.get('session_id'), session.id);
      assert.equal(back.searchParams.get('status'), 'complete');
      assert.equal(back.searchParams.get('cart'), '9');
      assert.equal(await sessionStatus(session.id), 'complete');
      const landed = merchant.requests.find(
        (r) => r.path.startsWith(`${merchant.path}/thanks`) && r.path.includes(session.id),
      );
      assert.ok(landed, 'the shop received the payer');
      assert.equal(landed.headers.referer, undefined, 'no Referer: the payment link never leaks to the shop');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a payer whose payment fails sees why, tries again with a good number and succeeds', async () => {
    const session = await newSession();
    const { context, page, errors } = await openPage(session.url);
    try {
      await page.getByLabel('Mobile money number').fill('712340001'); // 0001: pending, then declined
      await page.getByRole('button', { name: /^Pay / }).click();
      await visible(page, 'screen-failed');
      assert.equal(await page.locator('#failure-reason').textContent(), 'The payment was declined.');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'failed-title');
      await snapBothWidths(page, shots, '5-failed');
      assert.equal(await sessionStatus(session.id), 'open');

      await page.getByRole('button', { name: 'Try again' }).click();
      await visible(page, 'screen-pay');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'phone', 'focus returns to the number');
      await page.getByLabel('Mobile money number').fill('712340000');
      await page.getByRole('button', { name: /^Pay / }).click();
      await page.waitForURL((u) => u.pathname === `${merchant.path}/thanks`, { timeout: 20_000 });
      assert.equal(new URL(page.url()).searchParams.get('status'), 'complete');
      const final = (await request(t, 'GET', `/v1/checkout/sessions/${session.id}`, { token: t.demoToken })).body;
      assert.equal(final.status, 'complete');
      assert.equal(final.attempts, 2);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a payer who waits past expiry is told, with no request of their own, and offered the way back', async () => {
    const session = await newSession();
    await t.db.query(`UPDATE checkout_sessions SET expires_at = now() + interval '2 seconds' WHERE id = $1`, [
      session.id,
    ]);
    const { context, page, errors } = await openPage(session.url);
    try {
      await visible(page, 'screen-pay');
      await visible(page, 'screen-expired');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'expired-title');
      const href = (await page.locator('#expired-return').getAttribute('href')) ?? '';
      const back = new URL(href);
      assert.equal(back.searchParams.get('status'), 'expired');
      assert.equal(back.searchParams.get('session_id'), session.id);
      await snapBothWidths(page, shots, '6-expired');
      assert.equal(await sessionStatus(session.id), 'expired');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a payer who approved too late is told the money is on its way back, and may pay again', async () => {
    const session = await newSession();
    const { context, page, errors } = await openPage(session.url, { audit: true });
    try {
      await page.getByLabel('Mobile money number').fill('712340003'); // 0003: pending, never authorised in time
      await page.getByRole('button', { name: /^Pay / }).click();
      await visible(page, 'screen-wait');
      const collectionId = await waitFor('the attempt to be pending', async () => {
        const s = (await request(t, 'GET', `/v1/checkout/sessions/${session.id}`, { token: t.demoToken })).body;
        const c = s.collection_id
          ? (await request(t, 'GET', `/v1/collections/${s.collection_id}`, { token: t.demoToken })).body
          : undefined;
        return c?.status === 'pending' ? (s.collection_id as string) : undefined;
      });
      const simulate = (outcome: string) =>
        request(t, 'POST', `/v1/sandbox/collections/${collectionId}/simulate`, {
          token: t.demoToken,
          body: { outcome },
        });
      assert.equal((await simulate('expired')).status, 200);
      await visible(page, 'screen-failed');
      // The payer approves now, after the expiry: the workspace's default policy sends the money back.
      assert.equal((await simulate('successful')).status, 200);
      await page
        .locator('#failure-reason', { hasText: 'arrived after the request had expired' })
        .waitFor({ timeout: 15_000 });
      assert.equal(
        await page.locator('#failure-reason').textContent(),
        'Your payment arrived after the request had expired, so it is being returned to your M-Pesa account.',
      );
      assert.equal(
        await page.locator('#retry-hint').textContent(),
        'You can pay again now; the first payment is still being returned.',
      );
      await assertFitsPhone(page);
      assertNoViolations(await axeViolations(page), 'late payment refunded');
      await snapBothWidths(page, shots, '9-late-payment-refunded');
      assert.equal(await sessionStatus(session.id), 'open');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('a payer completes the payment with the keyboard alone, seeing where the focus is', async () => {
    const session = await newSession();
    const { context, page, errors } = await openPage(session.url);
    try {
      await page.keyboard.press('Tab');
      assert.deepEqual(
        await page.evaluate(() => [
          document.activeElement?.getAttribute('name'),
          (document.activeElement as HTMLInputElement).value,
        ]),
        ['rail', 'mpesa'],
      );
      const ring = await page.evaluate(() => {
        const label = document.activeElement?.closest('label') as Element;
        const s = getComputedStyle(label);
        return `${s.outlineStyle} ${s.outlineWidth}`;
      });
      assert.equal(ring, 'solid 3px', 'the chosen rail shows a focus ring');
      await page.keyboard.press('ArrowDown');
      assert.equal(
        await page.evaluate(() => (document.querySelector('input[name=rail]:checked') as HTMLInputElement).value),
        'airtel_money',
      );
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'phone');
      await page.keyboard.type('712340000');
      await page.keyboard.press('Enter');
      await visible(page, 'screen-success');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'success-title');
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'continue');
      const linkRing = await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle);
      assert.equal(linkRing, 'solid');
      // The timed return to the shop can be turned off (WCAG 2.2.1), from the keyboard too.
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'stay');
      await page.keyboard.press('Enter');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'continue');
      await page.waitForTimeout(5_500);
      assert.equal(new URL(page.url()).pathname.startsWith('/checkout/'), true, 'the payer stayed');
      assert.match((await page.locator('#success-text').textContent()) ?? '', /when you are ready/);
      await page.keyboard.press('Enter');
      await page.waitForURL((u) => u.pathname === `${merchant.path}/thanks`, { timeout: 15_000 });
      assert.equal(new URL(page.url()).searchParams.get('status'), 'complete');
      const final = (await request(t, 'GET', `/v1/checkout/sessions/${session.id}`, { token: t.demoToken })).body;
      assert.equal(final.rail, 'airtel_money');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('French in francophone markets, and the USSD code to dial on a USSD rail', async () => {
    const session = await newSession({ currency: 'XOF', market: 'CI', amount: 5000 });
    const { context, page, errors } = await openPage(session.url);
    try {
      assert.equal(await page.getAttribute('html', 'lang'), 'fr');
      assert.equal((await page.locator('#amount').textContent())?.replace(/\s/g, ' '), 'XOF 5 000');
      assert.equal(await page.locator('legend').textContent(), 'Payer avec');
      await snapBothWidths(page, shots, '7-pay-fr');
      await page.getByLabel('MTN MoMo').check();
      await page.getByLabel('Numéro mobile money').fill('05 01 23 00 05'); // 0005: stays processing
      await page.getByRole('button', { name: /^Payer / }).click();
      await visible(page, 'screen-wait');
      assert.match((await page.locator('#instruction').textContent()) ?? '', /^Validez la demande MTN MoMo de XOF/);
      assert.match((await page.locator('#status-text').textContent()) ?? '', /validation|Envoi|Confirmation/);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
    const ussd = await newSession({ currency: 'GHS', market: 'GH', amount: 5000 });
    const second = await openPage(ussd.url);
    try {
      await second.page.getByLabel('Telecel Cash').check();
      await second.page.getByLabel('Mobile money number').fill('020 123 0005');
      await second.page.getByRole('button', { name: /^Pay / }).click();
      await visible(second.page, 'screen-wait');
      assert.equal(await second.page.locator('#ussd').textContent(), '*110#');
      assert.match((await second.page.locator('#instruction').textContent()) ?? '', /^Dial \*110# from/);
      await snapBothWidths(second.page, shots, '8-wait-ussd');
      assert.deepEqual(second.errors, []);
    } finally {
      await second.context.close();
    }
  });

  it('every screen passes a WCAG 2.1 AA audit (labels, names, contrast) at phone width', async () => {
    const checks: [string, (page: Page) => Promise<void>][] = [
      ['pay', async () => undefined],
      [
        'pay with errors',
        async (page) => {
          await page.getByLabel('Mobile money number').fill('12x');
          await page.getByRole('button', { name: /^Pay / }).click();
        },
      ],
      [
        'failed',
        async (page) => {
          await page.getByLabel('Mobile money number').fill('712340002');
          await page.getByRole('button', { name: /^Pay / }).click();
          await visible(page, 'screen-failed');
        },
      ],
    ];
    for (const [screen, reach] of checks) {
      const session = await newSession();
      const { context, page } = await openPage(session.url, { audit: true });
      try {
        await reach(page);
        assertNoViolations(await axeViolations(page), screen);
      } finally {
        await context.close();
      }
    }
    const done = await newSession();
    const { context, page } = await openPage(done.url, { audit: true });
    try {
      await page.getByLabel('Mobile money number').fill('712340005');
      await page.getByRole('button', { name: /^Pay / }).click();
      await visible(page, 'screen-wait');
      assertNoViolations(await axeViolations(page), 'wait');
      const collectionId = await waitFor('the attempt', async () => {
        const s = (await request(t, 'GET', `/v1/checkout/sessions/${done.id}`, { token: t.demoToken })).body;
        return s.collection_id ?? undefined;
      });
      const driven = await request(t, 'POST', `/v1/sandbox/collections/${collectionId}/simulate`, {
        token: t.demoToken,
        body: { outcome: 'successful' },
      });
      assert.ok(driven.status < 300, driven.text);
      await visible(page, 'screen-success');
      assertNoViolations(await axeViolations(page), 'success');
    } finally {
      await context.close();
    }
  });

  it('an unknown link shows a plain 404 page', async () => {
    const context = await browser.newContext({ viewport: PHONE });
    try {
      const page = await context.newPage();
      const res = await page.goto(`${t.baseUrl}/checkout/${'x'.repeat(43)}`);
      assert.equal(res?.status(), 404);
      assert.equal(await page.locator('h1').textContent(), 'Payment link not found');
      await snapBothWidths(page, shots, '9-not-found');
    } finally {
      await context.close();
    }
  });
});
