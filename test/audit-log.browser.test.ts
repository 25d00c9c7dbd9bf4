// The dashboard's audit log in a real Chromium, driven by roles and labels: a member's failed and successful sign-ins
// and an API key's write appear with who, what, when, from where and the request id; the filters narrow the table to
// exactly the events the database holds for them; the CSV download is that same selection; another workspace's events
// never appear; an operator's session reads a workspace's log by its id. Axe-clean at 360 and 1280 px.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { MembersService } from '../src/modules/members/members.service.js';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signIn, signInAsMember } from './helpers/dashboard.js';
import { createWorkspace, request, startTestApp, type TestApp } from './helpers/harness.js';
import { codeFor, giveSecondFactor } from './helpers/second-factor.js';

const skip = browserMissing();
const OWNER = 'owner@audit.test';
const PASSWORD = 'an owner passphrase';

let t: TestApp;
let browser: Browser;
let ownerId: string;
/** The owner's TOTP secret: an owner signs in with a code. */
let ownerSecret: string;
let other: { id: string; token: string };

before(async () => {
  if (skip) return;
  t = await startTestApp();
  browser = await launchBrowser();
  const made = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, t.demoWorkspaceId, {
    email: OWNER,
    password: PASSWORD,
    role: 'owner',
  });
  assert.ok(made.ok);
  ownerId = made.member.id;
  ownerSecret = (await giveSecondFactor(t, t.demoWorkspaceId, { id: ownerId, email: OWNER })).secret;
  // Another workspace's write, which the demo workspace's log must never show.
  other = await createWorkspace(t, 'Elsewhere');
  const elsewhere = await request(t, 'PATCH', '/v1/workspace', {
    token: other.token,
    body: { late_payment: 'refund' },
  });
  assert.equal(elsewhere.status, 200, elsewhere.text);
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

async function auditRows(workspaceId: string, action?: string): Promise<{ action: string; request_id: string }[]> {
  const { rows } = await t.db.query<{ action: string; request_id: string }>(
    `SELECT action, request_id FROM audit_events WHERE workspace_id = $1 AND ($2::text IS NULL OR action = $2)
     ORDER BY id DESC`,
    [workspaceId, action ?? null],
  );
  return rows;
}

describe('dashboard: the audit log', { skip }, () => {
  it("shows the workspace's sign-ins and writes, filters them, and downloads the same selection as CSV", async () => {
    const { context, page, errors } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/sign-in`);
    await signInAsMember(page, OWNER, 'not the passphrase');
    await page.getByRole('alert').waitFor();
    await signInAsMember(page, OWNER, PASSWORD);
    // The next step's code: the one of this step was spent confirming the factor.
    await page.getByLabel('Code from your authenticator app').fill(codeFor(ownerSecret, 1));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    // A write by an API key, outside the dashboard.
    const renamed = await request(t, 'PATCH', '/v1/workspace', {
      token: t.demoToken,
      body: { late_payment: 'refund' },
    });
    assert.equal(renamed.status, 200, renamed.text);

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    const table = page.getByRole('region', { name: 'Audit events' });
    const all = await auditRows(t.demoWorkspaceId);
    assert.ok(all.length >= 3, 'a failed sign-in, a sign-in and a workspace update were recorded');
    // Every event of the workspace is a row, newest first, named by its request id; none of the other workspace's.
    const shown = await table.locator('tbody tr').count();
    assert.equal(shown, all.length);
    assert.equal(await table.locator('tbody tr').first().getByRole('rowheader').innerText(), all[0]?.action);
    for (const row of all) await table.getByText(row.request_id, { exact: true }).waitFor();
    for (const row of await auditRows(other.id)) {
      assert.equal(await table.getByText(row.request_id, { exact: true }).count(), 0, 'another workspace is not shown');
    }
    const update = table.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'workspace.update' }) });
    assert.match(await update.innerText(), /api_key/);
    await assertPageQuality(page, 'audit-log');

    // Filtered by action: exactly the failed sign-ins the database holds, the member named as the actor.
    await page.getByLabel('Action').fill('dashboard.sign_in_failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/action=dashboard\.sign_in_failed/);
    const failed = await auditRows(t.demoWorkspaceId, 'dashboard.sign_in_failed');
    assert.equal(failed.length, 1);
    assert.equal(await table.locator('tbody tr').count(), 1);
    assert.match(await table.locator('tbody tr').innerText(), new RegExp(ownerId));
    await assertPageQuality(page, 'audit-log-filtered');

    // The CSV is the same selection: its header, then one line per event, carrying the same request ids.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download CSV' }).click(),
    ]);
    assert.equal(download.suggestedFilename(), 'audit-events.csv');
    const stream = await download.createReadStream();
    let csv = '';
    for await (const chunk of stream) csv += String(chunk);
    const lines = csv.trimEnd().split('\r\n');
    assert.match(lines[0] ?? '', /^id,occurred_at,workspace_id,actor_type,actor_id,action,/);
    assert.equal(lines.length, 1 + failed.length);
    assert.match(lines[1] ?? '', new RegExp(`dashboard\\.sign_in_failed.*${failed[0]?.request_id}`));

    // A bad filter is the API's refusal on the page, not a broken page.
    await page.goto(`${t.baseUrl}/dashboard/audit-log?actor_id=not-an-id`);
    await page.getByRole('heading', { level: 1 }).waitFor();
    assert.equal(await table.count(), 0);
    assert.match(await page.locator('main').innerText(), /actor_id/);
    assert.deepEqual(
      errors.filter((e) => !/status of (400|401)/.test(e)),
      [],
    );
    await context.close();
  });

  it("lets an operator's session read a workspace's log by its id", async () => {
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/sign-in`);
    await signIn(page, t.adminToken);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByLabel('Workspace ID').fill(other.id);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(new RegExp(`workspace_id=${other.id}`));
    const table = page.getByRole('region', { name: 'Audit events' });
    const rows = await auditRows(other.id);
    assert.ok(rows.length >= 1);
    assert.equal(await table.locator('tbody tr').count(), rows.length);
    for (const row of rows) await table.getByText(row.request_id, { exact: true }).waitFor();
    await assertPageQuality(page, 'audit-log-operator');
    await context.close();
  });
});
