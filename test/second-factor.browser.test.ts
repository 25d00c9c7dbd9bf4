// The second factor in a real Chromium, driven by roles and labels: an owner without one is held on the enrolment page
// (the Collections link leads back to it), sets up the app from the key shown as text (the QR code beside it), is
// refused a wrong code, turns it on with a right one and is shown ten recovery codes once; then signs in with a code
// step, refused a wrong code, and completes it with a recovery code; and requires a second factor of every member.
// The enrolment also runs under the dashboard's real CSP (the QR code is inline SVG). Every page is checked with
// axe-core, for horizontal scroll at 360 px, and photographed at 360 and 1280 px.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { MembersService } from '../src/modules/members/members.service.js';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signInAsMember } from './helpers/dashboard.js';
import { startTestApp, type TestApp } from './helpers/harness.js';
import { codeFor } from './helpers/second-factor.js';

const skip = browserMissing();
const OWNER = 'owner@factor.test';
const ADMIN = 'admin@factor.test';
const PASSWORD = 'a passphrase for the factor';

let t: TestApp;
let browser: Browser;

before(async () => {
  if (skip) return;
  t = await startTestApp();
  browser = await launchBrowser();
  const members = new MembersService(t.services.tokens, t.config.paymentsEnv);
  for (const [email, role] of [
    [OWNER, 'owner'],
    [ADMIN, 'admin'],
  ] as const) {
    const made = await members.create(t.db, t.demoWorkspaceId, { email, password: PASSWORD, role });
    assert.ok(made.ok);
  }
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

/** From the held page to the enrolment: the key as the page shows it. */
async function beginEnrolment(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'Set up a second factor' }).click();
  await page.getByRole('heading', { name: 'Set up your authenticator app' }).waitFor();
  await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
  return (await page.locator('#totp-secret').innerText()).replace(/\s/g, '');
}

describe('dashboard: the second factor', { skip }, () => {
  it('holds an owner without one on the enrolment, turns it on with a code, and shows recovery codes once', async () => {
    const { context, page, errors } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/collections`);
    await signInAsMember(page, OWNER, PASSWORD);
    await page.getByRole('heading', { name: 'Second factor', level: 1 }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Your role needs a second factor' }).waitFor();
    await assertPageQuality(page, 'second-factor-required');
    // Nothing else opens until it is set up.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Collections' }).click();
    await page.getByRole('heading', { name: 'Second factor', level: 1 }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/dashboard/account/second-factor');

    const secret = await beginEnrolment(page);
    assert.match(secret, /^[A-Z2-7]{32}$/);
    await assertPageQuality(page, 'second-factor-enrol');
    await page.getByLabel('Code from your app').fill(codeFor(secret, 4));
    await page.getByRole('button', { name: 'Turn on the second factor' }).click();
    await page.getByRole('alert').filter({ hasText: 'That code is not right' }).waitFor();
    assert.equal((await page.locator('#totp-secret').innerText()).replace(/\s/g, ''), secret, 'the same key again');
    await page.getByLabel('Code from your app').fill(codeFor(secret));
    await page.getByRole('button', { name: 'Turn on the second factor' }).click();
    await page.getByRole('heading', { name: 'Second factor on' }).waitFor();
    const codes = (await page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem').allInnerTexts()).map(
      (c) => c.trim(),
    );
    assert.equal(codes.length, 10);
    await assertPageQuality(page, 'second-factor-recovery-codes');

    await page.getByRole('link', { name: 'Continue to the dashboard' }).click();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Collections' }).click();
    await page.getByRole('heading', { name: 'Collections', level: 1 }).waitFor();

    // Signing in again asks for a code; a wrong one is refused, a recovery code completes it (once).
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signInAsMember(page, OWNER, PASSWORD);
    await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
    await assertPageQuality(page, 'second-factor-sign-in');
    await page.getByLabel('Code from your authenticator app').fill('000000');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('alert').filter({ hasText: 'That code is not right or was already used.' }).waitFor();
    assert.equal(await page.getByLabel('Code from your authenticator app').inputValue(), '');
    await assertPageQuality(page, 'second-factor-sign-in-refused');
    await page.getByLabel('Code from your authenticator app').fill(codes[0] ?? '');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();

    await page.goto(`${t.baseUrl}/dashboard/account`);
    await page.getByRole('link', { name: 'Set up or change your second factor' }).click();
    await page.getByText('9 of 10 recovery codes left').waitFor();
    await assertPageQuality(page, 'second-factor-on');

    // Ten new recovery codes, with the app's next code (this step's was spent turning the factor on).
    await page.getByLabel('Authenticator code for new recovery codes').fill(codeFor(secret, 1));
    await page.getByRole('button', { name: 'Make new recovery codes' }).click();
    await page.getByRole('heading', { name: 'New recovery codes' }).waitFor();
    const fresh = (await page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem').allInnerTexts()).map(
      (c) => c.trim(),
    );
    assert.equal(fresh.length, 10);
    assert.ok(
      fresh.every((c) => !codes.includes(c)),
      'all ten are new',
    );
    await page.goto(`${t.baseUrl}/dashboard/account/second-factor`);
    await page.getByText('10 of 10 recovery codes left').waitFor();

    // Workspace security: every member must have one.
    const security = page.getByRole('region', { name: 'Workspace security' });
    await security.getByLabel('Second factor required of').selectOption('everyone');
    await security.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Every member now needs a second factor.' }).waitFor();
    const { rows } = await t.db.query<{ require_second_factor: boolean }>(
      'SELECT require_second_factor FROM workspaces WHERE id = $1',
      [t.demoWorkspaceId],
    );
    assert.equal(rows[0]?.require_second_factor, true);
    await assertPageQuality(page, 'second-factor-workspace');
    // The wrong enrolment code (400) and the wrong sign-in code (401), and nothing else.
    assert.deepEqual(errors, [
      'console: Failed to load resource: the server responded with a status of 400 (Bad Request)',
      'console: Failed to load resource: the server responded with a status of 401 (Unauthorized)',
    ]);
    await context.close();
  });

  it('draws the enrolment under the real CSP with nothing blocked', async () => {
    const { context, page, errors } = await openContext(browser, t, { bypassCSP: false });
    const blocked: string[] = [];
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) blocked.push(msg.text());
    });
    await page.goto(`${t.baseUrl}/dashboard/sign-in`);
    await signInAsMember(page, ADMIN, PASSWORD);
    await page.getByRole('heading', { name: 'Second factor', level: 1 }).waitFor();
    const secret = await beginEnrolment(page);
    const box = await page.getByRole('img', { name: 'QR code for your authenticator app' }).boundingBox();
    assert.ok(box && box.width > 100 && box.height > 100, 'the QR code is drawn at size');
    await page.getByLabel('Code from your app').fill(codeFor(secret));
    await page.getByRole('button', { name: 'Turn on the second factor' }).click();
    await page.getByRole('heading', { name: 'Second factor on' }).waitFor();
    assert.deepEqual(blocked, []);
    assert.deepEqual(errors, []);
    await context.close();
  });
});
