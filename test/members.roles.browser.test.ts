// Roles and sessions in a real Chromium, driven by roles and labels: a viewer sees no link or button it may not use
// and gets the "Not allowed" page at a form's address; an owner manages a member (its sessions listed, its role
// changed, which signs that member's other browser out); a member sees and ends its own sessions on Your account.
// Every page is checked with axe-core, for horizontal scroll at 360 px, and photographed at 360 and 1280 px.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { MembersService } from '../src/modules/members/members.service.js';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signInAsMember } from './helpers/dashboard.js';
import { startTestApp, type TestApp } from './helpers/harness.js';

const skip = browserMissing();
const PASSWORD = 'a passphrase for the browser';
const OWNER = 'owner@roles-browser.test';
const VIEWER = 'viewer@roles-browser.test';

let t: TestApp;
let browser: Browser;
let viewerId: string;

before(async () => {
  if (skip) return;
  t = await startTestApp();
  browser = await launchBrowser();
  const members = new MembersService(t.services.tokens, t.config.paymentsEnv);
  const owner = await members.create(t.db, t.demoWorkspaceId, { email: OWNER, password: PASSWORD, role: 'owner' });
  assert.ok(owner.ok);
  const viewer = await members.create(t.db, t.demoWorkspaceId, { email: VIEWER, password: PASSWORD, role: 'viewer' });
  assert.ok(viewer.ok);
  viewerId = viewer.member.id;
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

describe('dashboard: roles and sessions', { skip }, () => {
  it("a viewer sees no Sandbox link and no key buttons, and a form's address answers Not allowed", async () => {
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/developers/keys`);
    await signInAsMember(page, VIEWER, PASSWORD);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    const nav = page.getByRole('navigation', { name: 'Main' });
    assert.equal(await nav.getByRole('link', { name: 'Sandbox' }).count(), 0);
    assert.equal(await nav.getByRole('link', { name: 'Reports' }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Create key' }).count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Rotate' }).count(), 0);
    const res = await page.goto(`${t.baseUrl}/dashboard/payouts/new`);
    assert.equal(res?.status(), 403);
    await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
    assert.match(await page.getByRole('alert').innerText(), /forbidden/);
    await assertPageQuality(page, 'roles-not-allowed');
    await context.close();
  });

  it("an owner manages a member: its sessions listed, its role changed, and the member's browser signed out", async () => {
    const viewer = await openContext(browser, t);
    await viewer.page.goto(`${t.baseUrl}/dashboard/account`);
    await signInAsMember(viewer.page, VIEWER, PASSWORD);
    await viewer.page.getByRole('heading', { name: 'Your account' }).waitFor();

    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/members`);
    await signInAsMember(page, OWNER, PASSWORD);
    await page.getByRole('link', { name: `Manage ${VIEWER}` }).click();
    await page.getByRole('heading', { name: `Member ${VIEWER}` }).waitFor();
    const sessions = page.getByRole('region', { name: 'Session list' });
    assert.ok((await sessions.getByRole('row').count()) >= 2, 'a header and the viewer session');
    await assertPageQuality(page, 'member-manage');

    await page.getByLabel('New role').selectOption('support');
    await page.getByRole('button', { name: 'Change role' }).click();
    await page.getByRole('status').filter({ hasText: 'is now support' }).waitFor();
    await page.getByText('No session is open.').waitFor();

    await viewer.page.reload();
    await viewer.page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    const { rows } = await t.db.query<{ role: string }>('SELECT role FROM members WHERE id = $1', [viewerId]);
    assert.equal(rows[0]?.role, 'support');
    await viewer.context.close();
    await context.close();
  });

  it('a member sees its sessions on Your account, this one marked, and ends the other', async () => {
    const other = await openContext(browser, t);
    await other.page.goto(`${t.baseUrl}/dashboard/account`);
    await signInAsMember(other.page, OWNER, PASSWORD);

    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/account`);
    await signInAsMember(page, OWNER, PASSWORD);
    await page.getByRole('heading', { name: 'Your sessions' }).waitFor();
    const region = page.getByRole('region', { name: 'Session list' });
    const ends = region.getByRole('button', { name: /^End the session/ });
    const before_ = await ends.count();
    assert.ok(before_ >= 2, `${before_} sessions listed`);
    assert.equal(await region.getByRole('button', { name: /\(this session\)$/ }).count(), 1);
    await assertPageQuality(page, 'account-sessions');

    // End the newest session that is not this one: the other browser's.
    await region
      .getByRole('button', { name: /^End the session/ })
      .and(page.locator(':not([aria-label$="(this session)"])'))
      .first()
      .click();
    await page.getByRole('status').filter({ hasText: 'The session has ended.' }).waitFor();
    assert.equal(await page.getByRole('region', { name: 'Session list' }).getByRole('button').count(), before_ - 1);
    await other.page.reload();
    await other.page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await other.context.close();
    await context.close();
  });
});
