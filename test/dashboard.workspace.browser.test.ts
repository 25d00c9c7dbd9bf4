// The dashboard's workspace and operator pages in a real Chromium, driven by roles and labels: checkout links (a
// link made through the form, its copyable URL, its QR code and its attempts once paid), the sandbox panel (test
// collections driven to successful and to failed, a refusal, a refund driven to failed), the settlement report (the
// API's figures, and its CSV), and the operator's workspaces (a new workspace whose key is shown once and works, a
// second key minted). Every page is audited (axe-core, 360 px) and photographed (test-output/dashboard/).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { formatMoney } from '../src/modules/dashboard/html.js';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signIn } from './helpers/dashboard.js';
import { createCollection, newKey, request, startTestApp, waitFor, type TestApp } from './helpers/harness.js';

const skip = browserMissing();
const JWT = /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/;
/** The sandbox panel's test number whose collection stays processing until driven by hand. */
const STUCK = '…0005: stays processing';

let t: TestApp;
let browser: Browser;

before(async () => {
  if (skip) return;
  t = await startTestApp({ SANDBOX_STEP_MS: '50', WORKER_INTERVAL_MS: '20' }, { workers: true });
  browser = await launchBrowser();
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

/** A page signed in to `app` with `token`, at `path`. */
async function signedIn(
  app: TestApp,
  token: string,
  path: string,
): Promise<{ page: Page; close: () => Promise<void> }> {
  const { context, page } = await openContext(browser, app);
  await page.goto(`${app.baseUrl}${path}`);
  await signIn(page, token);
  return { page, close: () => context.close() };
}

async function collectionWhen(app: TestApp, id: string, status: string): Promise<Record<string, any>> {
  return waitFor(`collection ${id} ${status}`, async () => {
    const res = await request(app, 'GET', `/v1/collections/${id}`, { token: app.demoToken });
    return res.body.status === status ? res.body : undefined;
  });
}

describe('dashboard: checkout links', { skip }, () => {
  it('creates a link through the form, shows it with a QR code, and lists its attempts once paid', async () => {
    const { page, close } = await signedIn(t, t.demoToken, '/dashboard/checkout-links');
    await page.getByRole('heading', { name: 'Checkout links', level: 1 }).waitFor();
    await page.getByText('No checkout links yet.').waitFor();
    await assertPageQuality(page, 'checkout-links-empty');

    await page.getByRole('link', { name: 'New checkout link' }).click();
    await page.getByRole('heading', { name: 'New checkout link', level: 1 }).waitFor();
    await page.getByLabel('Currency').selectOption({ label: 'KES (Kenya)' });
    await page.getByLabel('Amount').fill('1,250.50');
    await page.getByLabel('Redirect URL').fill('https://shop.example/thanks');
    await page.getByLabel('Reference (optional)').fill('cart-77');
    await assertPageQuality(page, 'checkout-link-new');
    await page.getByRole('button', { name: 'Create checkout link' }).click();

    await page.getByRole('heading', { name: 'Checkout link cart-77', level: 1 }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Checkout link created.' }).waitFor();
    const id = new URL(page.url()).pathname.split('/').pop() as string;
    const session = (await request(t, 'GET', `/v1/checkout/sessions/${id}`, { token: t.demoToken })).body;
    // The API got the amount in minor units of the currency, and the form's other fields.
    assert.equal(session.amount, 125_050);
    assert.equal(session.currency, 'KES');
    assert.equal(session.reference, 'cart-77');
    assert.equal(session.redirect_url, 'https://shop.example/thanks');
    await page.getByText(session.session_url, { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Copy' }).waitFor();
    await page.getByRole('img', { name: 'QR code of the checkout link' }).waitFor();
    await page.getByText('No payment attempt yet.').waitFor();
    await assertPageQuality(page, 'checkout-link-open');

    // The payer tries a number whose payment fails at once, then one that succeeds.
    const token = (session.session_url as string).split('/').pop() as string;
    for (const phone of ['+254700000002', '+254712345678']) {
      const paid = await request(t, 'POST', `/v1/checkout/by-token/${token}/pay`, {
        body: { rail: 'mpesa', customer: { phone_number: phone } },
        idempotencyKey: newKey(),
      });
      assert.equal(paid.status, 201, paid.text);
      await waitFor('the attempt to end', async () => {
        const s = await request(t, 'GET', `/v1/checkout/sessions/${id}`, { token: t.demoToken });
        return s.body.status === 'open' || s.body.status === 'complete' ? true : undefined;
      });
    }
    const paid = (await request(t, 'GET', `/v1/checkout/sessions/${id}`, { token: t.demoToken })).body;
    assert.equal(paid.status, 'complete');
    await page.reload();
    await page.getByRole('heading', { name: 'Attempts (2)' }).waitFor();
    const attempts = page.getByRole('region', { name: 'Attempts', exact: true });
    const rows = async (name: string) =>
      (await attempts.getByRole('row', { name }).getByRole('cell').allInnerTexts()).slice(0, 4).map((s) => s.trim());
    assert.deepEqual(await rows('Attempt 2'), ['Attempt 2', 'successful', '—', 'KE mpesa']);
    assert.deepEqual(await rows('Attempt 1'), ['Attempt 1', 'failed', 'insufficient_funds', 'KE mpesa']);
    assert.equal(
      await attempts.getByRole('link', { name: 'Attempt 2' }).getAttribute('href'),
      `/dashboard/collections/${paid.collection_id}`,
    );
    await assertPageQuality(page, 'checkout-link-paid');

    await page.getByRole('link', { name: 'Checkout links' }).click();
    const row = page.getByRole('region', { name: 'Checkout links' }).getByRole('row', { name: /cart-77/ });
    assert.deepEqual((await row.getByRole('cell').allInnerTexts()).slice(0, 3), [
      'cart-77',
      'complete',
      'KES 1,250.50',
    ]);
    await assertPageQuality(page, 'checkout-links');
    await close();
  });
});

describe('dashboard: the sandbox panel', { skip }, () => {
  /** Creates a test collection through the panel's form; the page then has its id in the drive form. */
  async function createTestCollection(page: Page, label: string): Promise<string> {
    const create = page.getByRole('region', { name: 'Create a test collection' });
    await create.getByLabel('Market and rail').selectOption({ label: 'M-Pesa (KE, KES)' });
    await create.getByLabel('Amount').fill('75');
    await create.getByLabel('Payer’s number').selectOption({ label });
    await create.getByRole('button', { name: 'Create test collection' }).click();
    await page.getByRole('status').filter({ hasText: 'Test collection' }).waitFor();
    return page.getByLabel('Collection id').inputValue();
  }

  it('drives collections stuck in processing to successful and to failed, and shows a refusal', async () => {
    const { page, close } = await signedIn(t, t.demoToken, '/dashboard/sandbox');
    await page.getByRole('heading', { name: 'Sandbox', level: 1 }).waitFor();

    // One to successful, chosen from the list of running collections.
    const first = await createTestCollection(page, STUCK);
    const made = await collectionWhen(t, first, 'processing');
    assert.equal(made.amount, 7_500);
    assert.equal(made.customer.phone_number, '+254700000005');
    await page.goto(`${t.baseUrl}/dashboard/sandbox`);
    await assertPageQuality(page, 'sandbox');
    await page.getByRole('region', { name: 'Running collections' }).getByRole('link', { name: made.reference }).click();
    assert.equal(await page.getByLabel('Collection id').inputValue(), first);
    await page.getByLabel('Collection outcome').selectOption({ label: 'Successful' });
    await page.getByRole('button', { name: 'Drive collection' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `${first}) is now successful` })
      .waitFor();
    assert.equal(
      (await request(t, 'GET', `/v1/collections/${first}`, { token: t.demoToken })).body.status,
      'successful',
    );

    // One to failed, with a reason.
    const second = await createTestCollection(page, STUCK);
    await collectionWhen(t, second, 'processing');
    await page.getByLabel('Collection outcome').selectOption({ label: 'Failed' });
    await page.getByLabel('Collection failure reason (when failed)').selectOption({ label: 'insufficient_funds' });
    await page.getByRole('button', { name: 'Drive collection' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `${second}) is now failed` })
      .waitFor();
    const failed = (await request(t, 'GET', `/v1/collections/${second}`, { token: t.demoToken })).body;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.failure_reason, 'insufficient_funds');

    // The simulate endpoint's rules apply: a failed collection cannot become successful (409), said on the form.
    await page.getByLabel('Collection id').fill(second);
    await page.getByLabel('Collection outcome').selectOption({ label: 'Successful' });
    await page.getByRole('button', { name: 'Drive collection' }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'transition_not_allowed' }).waitFor();
    assert.match(await alert.innerText(), /A failed collection cannot become successful/);
    assert.equal(await page.getByLabel('Collection id').inputValue(), second);
    await assertPageQuality(page, 'sandbox-refused');
    assert.equal((await request(t, 'GET', `/v1/collections/${second}`, { token: t.demoToken })).body.status, 'failed');
    await close();
  });

  it('drives a refund to failed (on a service without workers, where a refund waits to be sent)', async () => {
    const held = await startTestApp();
    try {
      const made = await createCollection(held, held.demoToken);
      assert.equal(made.status, 201, made.text);
      const id = made.body.collection_id as string;
      const simulated = await request(held, 'POST', `/v1/sandbox/collections/${id}/simulate`, {
        token: held.demoToken,
        body: { outcome: 'successful' },
      });
      assert.equal(simulated.status, 200, simulated.text);
      const refund = await request(held, 'POST', `/v1/collections/${id}/refund`, {
        token: held.demoToken,
        body: { amount: made.body.amount },
        idempotencyKey: newKey(),
      });
      assert.equal(refund.status, 201, refund.text);
      const refundId = refund.body.refund_id as string;

      const { context, page } = await openContext(browser, held);
      await page.goto(`${held.baseUrl}/dashboard/sandbox`);
      await signIn(page, held.demoToken);
      const region = page.getByRole('region', { name: 'Drive a refund' });
      await region.getByLabel('Refund id').fill(refundId);
      await region.getByLabel('Refund outcome').selectOption({ label: 'Failed' });
      await region.getByLabel('Refund failure reason (when failed)').selectOption({ label: 'provider_refused' });
      await region.getByRole('button', { name: 'Drive refund' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Refund ${refundId} is now failed.` })
        .waitFor();
      const after = (await request(held, 'GET', `/v1/refunds/${refundId}`, { token: held.demoToken })).body;
      assert.equal(after.status, 'failed');
      assert.equal(after.failure_reason, 'provider_refused');
      await context.close();
    } finally {
      await held.close();
    }
  });
});

describe('dashboard: the settlement report', { skip }, () => {
  it('shows the API’s figures for the day and currency, and downloads the same report as CSV', async () => {
    const date = new Date().toISOString().slice(0, 10);
    const query = `date=${date}&currency=KES`;
    const api = (await request(t, 'GET', `/v1/reports/settlement?${query}`, { token: t.demoToken })).body;
    const { page, close } = await signedIn(t, t.demoToken, '/dashboard/reports');
    await page.getByRole('heading', { name: 'Settlement report', level: 1 }).waitFor();
    assert.equal(await page.getByLabel('Day (UTC)').inputValue(), date);
    await page.getByLabel('Currency').selectOption('KES');
    await page.getByRole('button', { name: 'Show report' }).click();
    await page.getByText(`KES on ${date} (UTC)`).waitFor();

    const kes = (minor: number) => formatMoney(minor, 'KES', 2);
    const mpesa = api.rails.find((r: { market: string; rail: string }) => r.market === 'KE' && r.rail === 'mpesa');
    assert.ok(mpesa, 'the day has KE mpesa figures');
    const table = page.getByRole('region', { name: 'KE mpesa', exact: true });
    const cells = async (name: string) =>
      (await table.getByRole('row', { name }).getByRole('cell').allInnerTexts()).map((s) => s.trim());
    assert.deepEqual(await cells('Collections successful'), [
      String(mpesa.collections.successful.count),
      kes(mpesa.collections.successful.amount),
    ]);
    assert.deepEqual(await cells('Collections failed'), [
      String(mpesa.collections.failed.count),
      kes(mpesa.collections.failed.amount),
    ]);
    const balance = await page.getByRole('region', { name: 'Balance and fees' }).innerText();
    assert.match(balance, new RegExp(`Opening available \\(00:00 UTC\\)\\s+${kes(api.ledger.opening_available)}`));
    assert.match(balance, new RegExp(`Closing available\\s+${kes(api.ledger.closing_available)}`));
    assert.match(balance, new RegExp(`Fees earned\\s+${kes(api.fees)}`));
    for (const m of api.ledger.movements) {
      const movements = page.getByRole('region', { name: 'Balance movements' });
      const row = movements.getByRole('row', { name: new RegExp(`^${m.kind.replaceAll('_', ' ')} `) });
      assert.deepEqual(
        (await row.getByRole('cell').allInnerTexts()).map((s) => s.trim()),
        [String(m.count), kes(m.amount)],
      );
    }
    await page.getByText('None found that day.').waitFor();
    await assertPageQuality(page, 'reports');

    const csv = await request(t, 'GET', `/v1/reports/settlement?${query}`, {
      token: t.demoToken,
      headers: { accept: 'text/csv' },
    });
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download CSV' }).click(),
    ]);
    assert.equal(download.suggestedFilename(), `settlement-${date}-KES.csv`);
    assert.equal(await readFile(await download.path(), 'utf8'), csv.text);
    await close();
  });
});

describe('dashboard: the operator’s workspaces', { skip }, () => {
  it('creates a workspace whose first key is shown once and works, and mints a second key', async () => {
    const { page, close } = await signedIn(t, t.adminToken, '/dashboard');
    await page.getByRole('heading', { name: 'Workspaces', level: 1 }).waitFor();
    await page.getByRole('region', { name: 'Reconciliation' }).getByText('npm run reconcile').waitFor();
    await assertPageQuality(page, 'admin-workspaces');

    const form = page.getByRole('region', { name: 'Create workspace' });
    await form.getByLabel('Name', { exact: true }).fill('Kilimo Traders');
    await form.getByLabel('Display name (optional)').fill('Kilimo');
    await form.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('heading', { name: 'Workspace Kilimo Traders', level: 1 }).waitFor();
    const token = (await page.getByText(JWT).innerText()).trim();
    await page.getByRole('button', { name: 'Copy' }).waitFor();
    await assertPageQuality(page, 'admin-workspace-created');
    const own = await request(t, 'GET', '/v1/workspace', { token });
    assert.equal(own.status, 200, own.text);
    assert.equal(own.body.name, 'Kilimo Traders');
    assert.equal(own.body.display_name, 'Kilimo');

    // Its page lists it without the token; minting a second key shows that one once.
    await page.getByRole('link', { name: 'Mint another key' }).click();
    await page.getByRole('heading', { name: 'Mint a key' }).waitFor();
    assert.equal(await page.getByText(token).count(), 0);
    await assertPageQuality(page, 'admin-workspace');
    await page.getByLabel('Audience').selectOption('integrator');
    await page.getByLabel('Key name (optional)').fill('reporting');
    await page.getByRole('button', { name: 'Mint key' }).click();
    await page.getByRole('heading', { name: 'Key minted', level: 1 }).waitFor();
    const second = (await page.getByText(JWT).innerText()).trim();
    assert.notEqual(second, token);
    await assertPageQuality(page, 'admin-key-minted');
    const workspace = await request(t, 'GET', '/v1/workspace', { token: second });
    assert.equal(workspace.status, 200, workspace.text);
    assert.equal(workspace.body.id, own.body.id);

    await page.getByRole('link', { name: 'All workspaces' }).click();
    const row = page.getByRole('region', { name: 'Workspaces', exact: true }).getByRole('row', { name: /Kilimo/ });
    assert.deepEqual((await row.getByRole('cell').allInnerTexts()).slice(0, 2), ['Kilimo Traders', 'sandbox']);
    await close();
  });
});
