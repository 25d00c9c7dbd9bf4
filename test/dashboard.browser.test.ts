// The dashboard in a real Chromium, driven by roles and labels: sign-in with a pasted token, the home page's
// balances, chart and failures, sign-out, and a session that ends when its key is rotated (back to sign-in, then
// back to the page). Every page is audited with axe-core, checked for horizontal scroll at 360 px, and photographed
// at 360 and 1280 px (test-output/dashboard/).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { createCollection, request, startTestApp, waitFor, type TestApp } from './helpers/harness.js';
import { assertPageQuality, signIn, openContext } from './helpers/dashboard.js';

const skip = browserMissing();

let t: TestApp;
let browser: Browser;

before(async () => {
  if (skip) return;
  t = await startTestApp({ SANDBOX_STEP_MS: '50', WORKER_INTERVAL_MS: '20' }, { workers: true });
  browser = await launchBrowser();
  // A week's traffic is today's here: two that succeed, one the payer declines.
  const made = await Promise.all([
    createCollection(t, t.demoToken, { amount: 150_000 }),
    createCollection(t, t.demoToken, { amount: 2_500 }),
    createCollection(t, t.demoToken, { amount: 9_900, customer: { phone_number: '+254700000002' } }),
  ]);
  for (const res of made) assert.equal(res.status, 201, res.text);
  await waitFor('the collections to settle', async () => {
    const states = await Promise.all(
      made.map(
        async (m) =>
          (await request(t, 'GET', `/v1/collections/${m.body.collection_id}`, { token: t.demoToken })).body.status,
      ),
    );
    return states.every((s) => s === 'successful' || s === 'failed') ? true : undefined;
  });
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

describe('dashboard: sign-in and home', { skip }, () => {
  it('signs in with a token, shows balances, the week per rail and the latest failure, and signs out', async () => {
    const { context, page, errors } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard`);
    // Not signed in: the sign-in page, which brings us back where we were going.
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await assertPageQuality(page, 'sign-in');
    await page.getByLabel('API token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in with the token' }).click();
    await page.getByRole('alert').filter({ hasText: 'not valid here' }).waitFor();
    // That answer was a 401, which Chromium logs; nothing else may be.
    assert.deepEqual(errors.splice(0), [
      'console: Failed to load resource: the server responded with a status of 401 (Unauthorized)',
    ]);

    await signIn(page, t.demoToken);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    assert.match(await page.getByRole('note').innerText(), /Sandbox: test data/);
    // The balances API's figure (1,500.00 + 25.00 KES), in its currency.
    const balances = await request(t, 'GET', '/v1/balances', { token: t.demoToken });
    const kes = balances.body.data.find((b: { currency: string }) => b.currency === 'KES');
    assert.equal(kes.available, 152_500);
    await page.getByRole('region', { name: 'Balances' }).getByText('KES 1,525.00', { exact: true }).waitFor();
    const week = page.getByRole('region', { name: 'KES by rail, last 7 days' });
    const row = week.getByRole('row', { name: /KE mpesa/ });
    assert.deepEqual(
      (await row.getByRole('cell').allInnerTexts()).map((s) => s.trim()),
      ['2', 'KES 1,525.00', '1', '67%'],
    );
    await page.getByRole('img', { name: /KES: successful volume per day and rail/ }).waitFor();
    const failures = page.getByRole('region', { name: 'Latest failures' });
    await failures.getByRole('cell', { name: 'insufficient_funds' }).waitFor();
    // Times carry their zone (the browser's, once its script has told the server; UTC before).
    await failures.getByRole('cell', { name: /\d{4}, \d\d:\d\d:\d\d (UTC|GMT)/ }).waitFor();
    await assertPageQuality(page, 'home');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Signed out.' }).waitFor();
    await page.goto(`${t.baseUrl}/dashboard`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('ends the session when its key is rotated, and after signing in again returns to the page', async () => {
    const created = await request(t, 'POST', '/v1/credentials', {
      token: t.demoToken,
      body: { name: 'support desk' },
      idempotencyKey: `dash-${Date.now()}`,
    });
    assert.equal(created.status, 201, created.text);
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard`);
    await signIn(page, created.body.token);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    assert.match(await page.getByText(/support desk/).innerText(), /Demo|workspace/i);

    const rotated = await request(t, 'POST', `/v1/credentials/${created.body.id}/rotate`, {
      token: t.demoToken,
      idempotencyKey: `dash-rot-${Date.now()}`,
    });
    assert.equal(rotated.status, 200, rotated.text);
    await page.goto(`${t.baseUrl}/dashboard?from=rotation`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    // The old token no longer signs in; the new one does, and lands on the page we were on.
    await signIn(page, created.body.token);
    await page.getByRole('alert').filter({ hasText: 'not valid here' }).waitFor();
    await signIn(page, rotated.body.token);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    assert.equal(new URL(page.url()).search, '?from=rotation');
    await context.close();
  });

  it('refuses a form posted without the session’s CSRF token, and a forged session cookie', async () => {
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard`);
    await signIn(page, t.demoToken);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    const forged = await page.request.post(`${t.baseUrl}/dashboard/sign-out`, { form: { csrf: 'guess' } });
    assert.equal(forged.status(), 403);
    await page.reload();
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    await context.clearCookies();
    await context.addCookies([{ name: 'dashboard_session', value: 'forged', url: `${t.baseUrl}/dashboard` }]);
    await page.goto(`${t.baseUrl}/dashboard`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await context.close();
  });

  it('works with the keyboard alone: sign in, skip to the content, sign out', async () => {
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard`);
    const focused = () =>
      page.evaluate(
        () =>
          document.activeElement?.getAttribute('aria-label') ??
          document.activeElement?.textContent?.trim() ??
          document.activeElement?.id,
      );
    // The member form first (email, password, its button), then the break-glass token form.
    for (const expected of ['email', 'password']) {
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.id), expected);
    }
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'Sign in');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'token');
    await page.keyboard.type(t.demoToken);
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'Sign in with the token');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'Skip to content');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
    // From the top of a fresh page: the skip link, then Sign out.
    await page.goto(`${t.baseUrl}/dashboard?again=1`);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'Sign out');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await context.close();
  });
});
