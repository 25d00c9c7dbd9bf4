// Dashboard members in a real Chromium, driven by roles and labels: the sign-in page's member form above the
// break-glass token form, a refused password answered on the page without saying which field was wrong, then the
// member signed in (named in the header, by email and role) and signed out. Every page is checked with axe-core, for
// horizontal scroll at 360 px, and photographed at 360 and 1280 px.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { MembersService } from '../src/modules/members/members.service.js';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signInAsMember } from './helpers/dashboard.js';
import { startTestApp, type TestApp } from './helpers/harness.js';
import { codeFor, giveSecondFactor } from './helpers/second-factor.js';

const skip = browserMissing();
const EMAIL = 'amina@demo.test';
const PASSWORD = 'a passphrase for the browser';
const OWNER = 'owner@demo.test';

let t: TestApp;
let browser: Browser;
/** The owner's TOTP secret: an owner signs in with a code (test/second-factor.browser.test.ts covers enrolment). */
let ownerSecret = '';

before(async () => {
  if (skip) return;
  t = await startTestApp();
  browser = await launchBrowser();
  const made = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, t.demoWorkspaceId, {
    email: EMAIL,
    password: PASSWORD,
    role: 'finance',
  });
  assert.ok(made.ok);
  const owner = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, t.demoWorkspaceId, {
    email: OWNER,
    password: PASSWORD,
    role: 'owner',
  });
  assert.ok(owner.ok);
  ownerSecret = (await giveSecondFactor(t, t.demoWorkspaceId, { id: owner.member.id, email: OWNER })).secret;
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

describe('dashboard: members sign in by email and password', { skip }, () => {
  it('refuses a wrong password without saying which field was wrong, then signs the member in and out', async () => {
    const { context, page, errors } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/collections`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    // The break-glass token form is there too, under its own heading.
    await page.getByRole('region', { name: 'Break-glass: sign in with a token' }).getByLabel('API token').waitFor();
    await assertPageQuality(page, 'member-sign-in');

    await signInAsMember(page, EMAIL, 'not the passphrase');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.equal(
      (await alert.innerText()).trim(),
      'That email and password do not match a member. Check both and try again.',
    );
    // The email is kept, the password is not; both fields point at the message.
    assert.equal(await page.getByLabel('Email').inputValue(), EMAIL);
    assert.equal(await page.getByLabel('Password').inputValue(), '');
    assert.equal(await page.getByLabel('Email').getAttribute('aria-describedby'), 'signin-error');
    assert.equal(await page.getByLabel('Password').getAttribute('aria-describedby'), 'signin-error');
    await assertPageQuality(page, 'member-sign-in-refused');
    assert.deepEqual(errors.splice(0), [
      'console: Failed to load resource: the server responded with a status of 401 (Unauthorized)',
    ]);

    await signInAsMember(page, EMAIL, PASSWORD);
    // Back where it was going, with the member named in the header.
    await page.getByRole('heading', { name: 'Collections', level: 1 }).waitFor();
    assert.match(await page.getByRole('banner').innerText(), /amina@demo\.test \(finance\)/);
    await assertPageQuality(page, 'member-signed-in');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Signed out.' }).waitFor();
    const { rows } = await t.db.query(
      'SELECT 1 FROM dashboard_sessions s JOIN members m ON m.id = s.member_id WHERE m.email = $1',
      [EMAIL],
    );
    assert.equal(rows.length, 0, 'sign-out ended the session server-side');
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('after repeated failures, answers on the page that sign-in must wait, without saying why', async () => {
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/sign-in`);
    for (let i = 1; i <= 6; i++) {
      await signInAsMember(page, 'someone@demo.test', `wrong ${i}`);
      await page.getByRole('alert').filter({ hasText: 'do not match a member' }).waitFor();
    }
    // The sixth failure blocked the account for 1 s; held for a minute here so a slow machine cannot outrun it.
    const held = await t.db.query(
      `UPDATE dashboard_sign_in_failures SET blocked_until = now() + interval '1 minute'
        WHERE failures = 6 AND blocked_until > last_failed_at`,
    );
    assert.equal(held.rowCount, 1);
    await signInAsMember(page, 'someone@demo.test', 'anything');
    await page
      .getByRole('alert')
      .filter({ hasText: /^Too many failed sign-ins\. Wait \d+ seconds, then try again\.$/ })
      .waitFor();
    await assertPageQuality(page, 'member-sign-in-blocked');
    await context.close();
  });

  it('invites a member by a link shown to the owner, who joins, changes the password, and gets a reset link', async () => {
    const owner = await openContext(browser, t);
    await owner.page.goto(`${t.baseUrl}/dashboard/sign-in`);
    await signInAsMember(owner.page, OWNER, PASSWORD);
    // The next step's code: the one of this step was spent confirming the factor.
    await owner.page.getByLabel('Code from your authenticator app').fill(codeFor(ownerSecret, 1));
    await owner.page.getByRole('button', { name: 'Continue' }).click();
    await owner.page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).click();
    await owner.page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
    await owner.page.getByRole('region', { name: 'Members' }).getByRole('cell', { name: EMAIL, exact: true }).waitFor();
    await assertPageQuality(owner.page, 'members');

    await owner.page.getByLabel('Email').fill('joining@demo.test');
    await owner.page.getByLabel('Role').selectOption('support');
    await owner.page.getByRole('button', { name: 'Create invitation link' }).click();
    await owner.page.getByRole('heading', { name: 'Invitation created' }).waitFor();
    const link = (await owner.page.locator('#invitation-link').innerText()).trim();
    assert.match(link, /\/dashboard\/links\/[0-9a-f-]{36}\/[\w-]{43}$/);
    await assertPageQuality(owner.page, 'member-invitation');

    // The invitee, in a browser of their own.
    const invitee = await openContext(browser, t);
    // The link names the configured PUBLIC_BASE_URL; the test's server listens elsewhere.
    await invitee.page.goto(`${t.baseUrl}${new URL(link).pathname}`);
    await invitee.page.getByRole('heading', { name: 'Accept the invitation' }).waitFor();
    await assertPageQuality(invitee.page, 'member-accept');
    await invitee.page.getByLabel('New password').fill('the invitee passphrase');
    await invitee.page.getByRole('button', { name: 'Join' }).click();
    await invitee.page.getByRole('status').filter({ hasText: 'You have joined' }).waitFor();
    await signInAsMember(invitee.page, 'joining@demo.test', 'the invitee passphrase');
    assert.match(await invitee.page.getByRole('banner').innerText(), /joining@demo\.test \(support\)/);

    await invitee.page.goto(`${t.baseUrl}/dashboard/account`);
    await invitee.page.getByRole('heading', { name: 'Your account', level: 1 }).waitFor();
    await assertPageQuality(invitee.page, 'member-account');
    await invitee.page.getByLabel('Current password').fill('the invitee passphrase');
    await invitee.page.getByLabel('New password').fill('a changed passphrase');
    await invitee.page.getByRole('button', { name: 'Change password' }).click();
    await invitee.page.getByRole('status').filter({ hasText: 'Password changed' }).waitFor();

    // The owner issues the invitee a reset link.
    await owner.page.goto(`${t.baseUrl}/dashboard/members`);
    await owner.page.getByRole('button', { name: 'Reset link for joining@demo.test' }).click();
    await owner.page.getByRole('heading', { name: 'Password reset link' }).waitFor();
    await assertPageQuality(owner.page, 'member-reset-link');
    const reset = (await owner.page.locator('#reset-link').innerText()).trim();
    await invitee.page.goto(`${t.baseUrl}${new URL(reset).pathname}`);
    await invitee.page.getByRole('heading', { name: 'Set a new password' }).waitFor();
    await assertPageQuality(invitee.page, 'member-reset');
    await invitee.page.getByLabel('New password').fill('a reset passphrase');
    await invitee.page.getByRole('button', { name: 'Set password' }).click();
    await invitee.page.getByRole('status').filter({ hasText: 'Password set' }).waitFor();
    assert.deepEqual([...owner.errors, ...invitee.errors], []);
    await owner.context.close();
    await invitee.context.close();
  });
});
