// Roles in a real Chromium, driven by roles and labels: each role's navigation and buttons are only what it may use,
// and a form it may not send (posted from its own page, with its own session's anti-forgery value) is answered 403;
// an owner manages a member (role change, a session ended, removal) and the member's browser is signed out each
// time; a member ends one of their own sessions. test/members.roles.test.ts covers every route over HTTP; this file
// covers what a person sees. Every new page is checked with axe-core at 360 and 1280 px and photographed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { MembersService } from '../src/modules/members/members.service.js';
import type { Role } from '../src/modules/members/members.repository.js';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signInAsMember } from './helpers/dashboard.js';
import { startTestApp, type TestApp } from './helpers/harness.js';
import { codeFor, giveSecondFactor } from './helpers/second-factor.js';

const skip = browserMissing();
const PASSWORD = 'a passphrase for the roles';
const OWNER = 'owner@roles.test';

let t: TestApp;
let browser: Browser;
let ownerSecret = '';
let operatorId = '';
let opsAdminSecret = '';
const ids = new Map<string, string>();

async function member(email: string, role: Role): Promise<void> {
  const made = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, t.demoWorkspaceId, {
    email,
    password: PASSWORD,
    role,
  });
  assert.ok(made.ok, `member ${email}`);
  ids.set(email, made.member.id);
}

/** A browser of the member's own, signed in, on the page `path`. */
async function signedIn(email: string, path = '/dashboard') {
  const opened = await openContext(browser, t);
  await opened.page.goto(`${t.baseUrl}${path}`);
  await signInAsMember(opened.page, email, PASSWORD);
  await opened.page.getByRole('banner').filter({ hasText: email }).waitFor();
  return opened;
}

/** The main navigation's link names, in order. */
async function navLinks(page: Page): Promise<string[]> {
  return (await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allInnerTexts()).map((s) => s.trim());
}

/** Whether the page now shows the sign-in form (the session has ended), after reloading it. */
async function signedOut(page: Page): Promise<boolean> {
  await page.reload();
  return page.getByRole('heading', { name: 'Sign in to the dashboard' }).isVisible();
}

before(async () => {
  if (skip) return;
  t = await startTestApp();
  browser = await launchBrowser();
  await member(OWNER, 'owner');
  ownerSecret = (await giveSecondFactor(t, t.demoWorkspaceId, { id: ids.get(OWNER)!, email: OWNER })).secret;
  await member('viewer@roles.test', 'viewer');
  await member('support@roles.test', 'support');
  await member('developer@roles.test', 'developer');
  await member('finance@roles.test', 'finance');
  await member('leaving@roles.test', 'support');
  await member('twice@roles.test', 'finance');
  const operator = await t.db.query<{ id: string }>(`SELECT id::text FROM workspaces WHERE kind = 'operator' LIMIT 1`);
  operatorId = operator.rows[0]?.id ?? '';
  assert.ok(operatorId, 'the first start made the operator workspace');
  for (const [email, role] of [
    ['ops-admin@roles.test', 'admin'],
    ['ops-viewer@roles.test', 'viewer'],
  ] as const) {
    const made = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, operatorId, {
      email,
      password: PASSWORD,
      role,
    });
    assert.ok(made.ok, email);
    ids.set(email, made.member.id);
  }
  opsAdminSecret = (
    await giveSecondFactor(t, operatorId, { id: ids.get('ops-admin@roles.test')!, email: 'ops-admin@roles.test' })
  ).secret;
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

describe('dashboard: roles, seen by the people who hold them', { skip }, () => {
  it('draws each role only the pages and buttons it may use', async () => {
    const viewer = await signedIn('viewer@roles.test');
    const developer = await signedIn('developer@roles.test');
    const finance = await signedIn('finance@roles.test');

    // A viewer reads: no sandbox, no keys to make, no payout to create, no member to invite.
    assert.ok(!(await navLinks(viewer.page)).includes('Sandbox'), 'a viewer has no sandbox link');
    await viewer.page.goto(`${t.baseUrl}/dashboard/payouts`);
    await viewer.page.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor();
    assert.equal(await viewer.page.getByRole('link', { name: 'New payout' }).count(), 0);
    await viewer.page.goto(`${t.baseUrl}/dashboard/members`);
    await viewer.page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
    assert.equal(await viewer.page.getByRole('region', { name: 'Invite a member' }).count(), 0);
    assert.equal(await viewer.page.getByRole('link', { name: /^Manage / }).count(), 0);
    await assertPageQuality(viewer.page, 'roles-viewer-members');

    // A developer has the sandbox and the keys, and no payouts to create.
    assert.ok((await navLinks(developer.page)).includes('Sandbox'), 'a developer has the sandbox');
    await developer.page.goto(`${t.baseUrl}/dashboard/payouts`);
    await developer.page.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor();
    assert.equal(await developer.page.getByRole('link', { name: 'New payout' }).count(), 0);

    // The developer manages API keys, but a member's credential is that member's access: no Rotate or Revoke on it.
    await developer.page.goto(`${t.baseUrl}/dashboard/developers/keys`);
    const keyRows = developer.page.getByRole('region', { name: 'API keys' }).getByRole('row');
    const memberRows = keyRows.filter({ hasText: "a member's" });
    assert.equal(await memberRows.count(), ids.size - 2, 'every member credential of the workspace is marked');
    assert.equal(await memberRows.getByRole('link', { name: 'Rotate' }).count(), 0);
    assert.equal(await memberRows.getByRole('link', { name: 'Revoke' }).count(), 0);
    const apiKeyRows = keyRows.filter({ hasNotText: "a member's" }).filter({ hasText: 'integrator' });
    assert.ok((await apiKeyRows.getByRole('link', { name: 'Rotate' }).count()) >= 1, 'an API key can be rotated');
    await assertPageQuality(developer.page, 'roles-developer-keys');

    // Finance creates payouts, and has no sandbox.
    assert.ok(!(await navLinks(finance.page)).includes('Sandbox'), 'finance has no sandbox link');
    await finance.page.goto(`${t.baseUrl}/dashboard/payouts`);
    await finance.page.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor();
    assert.ok((await finance.page.getByRole('link', { name: 'New payout' }).count()) > 0, 'finance may pay out');

    // The viewer sends a payout form anyway, from its own page with its own anti-forgery value: 403, nothing made.
    await viewer.page.goto(`${t.baseUrl}/dashboard/account`);
    const csrf = await viewer.page.locator('input[name="csrf"]').first().inputValue();
    const before = await t.db.query('SELECT count(*)::int AS n FROM payouts WHERE workspace_id = $1', [
      t.demoWorkspaceId,
    ]);
    const refused = await viewer.page.request.post(`${t.baseUrl}/dashboard/payouts`, {
      form: { csrf, amount: '100', currency: 'KES', reference: 'roles-forged' },
      maxRedirects: 0,
    });
    assert.equal(refused.status(), 403);
    assert.match(await refused.text(), /Not allowed/);
    const afterCount = await t.db.query('SELECT count(*)::int AS n FROM payouts WHERE workspace_id = $1', [
      t.demoWorkspaceId,
    ]);
    assert.equal(afterCount.rows[0].n, before.rows[0].n);
    // Removing a member, forged the same way: refused, and the refusal is in the audit log under the viewer.
    const removal = await viewer.page.request.post(
      `${t.baseUrl}/dashboard/members/${ids.get('finance@roles.test')}/remove`,
      { form: { csrf }, maxRedirects: 0 },
    );
    assert.equal(removal.status(), 403);
    const audited = await t.db.query(
      `SELECT action, object_id FROM audit_events WHERE workspace_id = $1 AND actor_id = $2 AND status = 403`,
      [t.demoWorkspaceId, ids.get('viewer@roles.test')],
    );
    assert.deepEqual(audited.rows, [{ action: 'member.remove', object_id: ids.get('finance@roles.test') }]);
    assert.ok(
      await t.db
        .query('SELECT 1 FROM members WHERE id = $1', [ids.get('finance@roles.test')])
        .then((r) => r.rowCount === 1),
    );

    for (const b of [viewer, developer, finance]) {
      assert.deepEqual(
        b.errors.filter((e) => !e.includes('403')),
        [],
      );
      await b.context.close();
    }
  });

  it("an owner changes a member's role, ends one of its sessions and removes it; the member's browser follows", async () => {
    const owner = await openContext(browser, t);
    await owner.page.goto(`${t.baseUrl}/dashboard/sign-in`);
    await signInAsMember(owner.page, OWNER, PASSWORD);
    // The step after the one spent confirming the factor.
    await owner.page.getByLabel('Code from your authenticator app').fill(codeFor(ownerSecret, 1));
    await owner.page.getByRole('button', { name: 'Continue' }).click();
    await owner.page.getByRole('banner').filter({ hasText: OWNER }).waitFor();

    // The support member is signed in twice: a laptop and a phone.
    const laptop = await signedIn('support@roles.test');
    const phone = await signedIn('support@roles.test');

    await owner.page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).click();
    await owner.page.getByRole('link', { name: 'Manage support@roles.test' }).click();
    await owner.page.getByRole('heading', { name: 'Member support@roles.test', level: 1 }).waitFor();
    const sessions = owner.page.getByRole('region', { name: 'Session list' }).getByRole('row');
    assert.equal(await sessions.count(), 3, 'a header row and the two sessions');
    await assertPageQuality(owner.page, 'member-manage');

    // End one session (the first listed): exactly one of the two browsers is signed out.
    await owner.page
      .getByRole('button', { name: /^End the session signed in / })
      .first()
      .click();
    await owner.page.getByRole('status').filter({ hasText: 'A session of support@roles.test has ended.' }).waitFor();
    const ended = [await signedOut(laptop.page), await signedOut(phone.page)];
    assert.deepEqual(
      ended.filter(Boolean).length,
      1,
      `one browser signed out, the other still in: ${JSON.stringify(ended)}`,
    );
    const stillIn = ended[0] ? phone : laptop;

    // A role change ends the rest, and the member signs in again to the new role.
    await owner.page.getByLabel('New role').selectOption('viewer');
    await owner.page.getByRole('button', { name: 'Change role' }).click();
    await owner.page
      .getByRole('status')
      .filter({ hasText: 'support@roles.test is now viewer; 1 session ended.' })
      .waitFor();
    assert.ok(await signedOut(stillIn.page), 'the role change signed the member out');
    await signInAsMember(stillIn.page, 'support@roles.test', PASSWORD);
    await stillIn.page.getByRole('banner').filter({ hasText: 'support@roles.test (viewer)' }).waitFor();

    // Removal: the leaving member's browser is signed out, and it cannot sign in again.
    const leaving = await signedIn('leaving@roles.test');
    await owner.page.goto(`${t.baseUrl}/dashboard/members`);
    await owner.page.getByRole('link', { name: 'Manage leaving@roles.test' }).click();
    await owner.page.getByRole('button', { name: 'Remove leaving@roles.test' }).click();
    await owner.page.getByRole('status').filter({ hasText: 'leaving@roles.test was removed' }).waitFor();
    assert.equal(
      await owner.page
        .getByRole('region', { name: 'Members' })
        .getByRole('cell', { name: 'leaving@roles.test' })
        .count(),
      0,
    );
    assert.ok(await signedOut(leaving.page), 'removal signed the member out');
    await signInAsMember(leaving.page, 'leaving@roles.test', PASSWORD);
    await leaving.page.getByRole('alert').filter({ hasText: 'do not match a member' }).waitFor();

    assert.deepEqual(owner.errors, []);
    for (const b of [owner, laptop, phone, leaving]) await b.context.close();
  });

  it('a member ends another of their own sessions from Your account', async () => {
    const here = await signedIn('twice@roles.test', '/dashboard/account');
    const elsewhere = await signedIn('twice@roles.test');
    await here.page.goto(`${t.baseUrl}/dashboard/account`);
    await here.page.getByRole('heading', { name: 'Your account', level: 1 }).waitFor();
    const list = here.page.getByRole('region', { name: 'Your sessions' });
    await list.getByText('(this session)').waitFor();
    assert.equal(await list.getByRole('button', { name: /^End the session/ }).count(), 2);
    await assertPageQuality(here.page, 'member-sessions');

    // The button of the session that is not this one.
    await list.getByRole('button', { name: /^End the session signed in [^(]*$/ }).click();
    await here.page.getByRole('status').filter({ hasText: 'The session has ended.' }).waitFor();
    assert.ok(await signedOut(elsewhere.page), 'the other browser is signed out');
    assert.ok(!(await signedOut(here.page)), 'this one is still in');
    await here.context.close();
    await elsewhere.context.close();
  });

  it("the operator's staff sign in as members of the operator workspace, each with their role", async () => {
    // An operator admin: a password, then a code, then the operator's pages with their actions.
    const admin = await openContext(browser, t);
    await admin.page.goto(`${t.baseUrl}/dashboard/sign-in`);
    await signInAsMember(admin.page, 'ops-admin@roles.test', PASSWORD);
    await admin.page.getByLabel('Code from your authenticator app').fill(codeFor(opsAdminSecret, 1));
    await admin.page.getByRole('button', { name: 'Continue' }).click();
    await admin.page.getByRole('banner').filter({ hasText: 'ops-admin@roles.test (admin)' }).waitFor();
    assert.deepEqual(await navLinks(admin.page), ['Workspaces', 'Operator float', 'Members', 'Audit log']);
    await admin.page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workspaces' }).click();
    await admin.page.getByRole('heading', { name: 'Create workspace' }).waitFor();
    await assertPageQuality(admin.page, 'operator-member-workspaces');

    // An operator viewer reads the list and has no action; the create form, forged, is refused.
    const viewer = await signedIn('ops-viewer@roles.test', '/dashboard/admin/workspaces');
    await viewer.page.getByRole('heading', { name: 'All workspaces' }).waitFor();
    assert.equal(await viewer.page.getByRole('heading', { name: 'Create workspace' }).count(), 0);
    const csrf = await viewer.page.locator('input[name="csrf"]').first().inputValue();
    const before = await t.db.query('SELECT count(*)::int AS n FROM workspaces');
    const refused = await viewer.page.request.post(`${t.baseUrl}/dashboard/admin/workspaces`, {
      form: { csrf, name: 'Forged Shop' },
      maxRedirects: 0,
    });
    assert.equal(refused.status(), 403);
    assert.equal((await t.db.query('SELECT count(*)::int AS n FROM workspaces')).rows[0].n, before.rows[0].n);

    assert.deepEqual(admin.errors, []);
    await admin.context.close();
    await viewer.context.close();
  });
});
