// Bulk payouts on the dashboard in a real Chromium, driven by roles and labels: a finance member uploads a CSV file
// (read into the form by the page's script), a file without the columns is refused on the page, the rows the page
// cannot read are reported and not sent, the rest go to the API's bulk commit and come back row by row (one the
// balance cannot cover refused, the others committed), and sending the same form again pays nothing twice. A support
// member is not offered the page and is refused it. Every page passes assertPageQuality (axe-core at 360 and 1280 px).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { MembersService } from '../src/modules/members/members.service.js';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signInAsMember } from './helpers/dashboard.js';
import {
  createCollection,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  request,
  startTestApp,
  type TestApp,
} from './helpers/harness.js';

const skip = browserMissing();
const FINANCE = 'kofi@demo.test';
const SUPPORT = 'esi@demo.test';
const PASSWORD = 'a long enough passphrase';

let t: TestApp;
let browser: Browser;
let beneficiaries: string[] = [];

before(async () => {
  if (skip) return;
  t = await startTestApp(FAST_LIFECYCLE, { workers: true });
  browser = await launchBrowser();
  const members = new MembersService(t.services.tokens, t.config.paymentsEnv);
  for (const [email, role] of [
    [FINANCE, 'finance'],
    [SUPPORT, 'support'],
  ] as const) {
    const made = await members.create(t.db, t.demoWorkspaceId, { email, password: PASSWORD, role });
    assert.ok(made.ok);
  }
  const lp = await liquidityProviderToken(t);
  const route = await request(t, 'POST', '/v1/api/routes', {
    token: lp,
    body: { source: 'KES', market: 'KE', rail: 'mpesa', min_amount: 100, max_amount: 20_000_000 },
  });
  assert.equal(route.status, 201, route.text);
  // KES 50.00 available.
  const c = await createCollection(t, t.demoToken, { amount: 5_000 });
  assert.equal(c.status, 201, c.text);
  const paid = await request(t, 'POST', `/v1/sandbox/collections/${c.body.collection_id}/simulate`, {
    token: t.demoToken,
    body: { outcome: 'successful' },
  });
  assert.equal(paid.status, 200, paid.text);
  // Numbers ending 0005: their payouts stay pending, so the page's answer does not move under the test.
  beneficiaries = [];
  for (const [name, phone] of [
    ['Ama Owusu', '+254712340005'],
    ['Yaw Boateng', '+254712350005'],
  ]) {
    const b = await request(t, 'POST', '/v1/api/beneficiaries', {
      token: t.demoToken,
      body: { name, market: 'KE', rail: 'mpesa', phone_number: phone },
    });
    assert.equal(b.status, 201, b.text);
    beneficiaries.push(b.body.beneficiary_id);
  }
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
});

/** Clicks what navigates (a link, a form's button) and waits for the next page to load. */
async function follow(page: Page, target: Locator): Promise<void> {
  await Promise.all([page.waitForEvent('framenavigated'), target.click()]);
  await page.waitForLoadState('load');
}

const payoutsByReference = async (): Promise<string[]> =>
  (await request(t, 'GET', '/v1/api/transactions?limit=100', { token: t.demoToken })).body.data
    .map((p: { reference: string }) => p.reference)
    .sort();

describe('dashboard: bulk payouts from a CSV', { skip }, () => {
  it('a finance member uploads a file; unreadable rows are reported, the rest committed or refused row by row; sending it again pays nothing twice', async () => {
    const { context, page, errors } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/payouts`);
    await signInAsMember(page, FINANCE, PASSWORD);
    await page.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor();
    await follow(page, page.getByRole('link', { name: 'Bulk payouts (CSV)' }));
    await page.getByRole('heading', { name: 'Bulk payouts', level: 1 }).waitFor();
    await assertPageQuality(page, 'payouts-bulk');

    // A file whose columns are not the page's: refused on the page, with what it was given kept.
    await page.getByLabel('CSV', { exact: true }).fill('name,amount\nAma,15.00\n');
    await follow(page, page.getByRole('button', { name: 'Pay these' }));
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /Unknown column: name/);
    assert.equal(await page.getByLabel('CSV', { exact: true }).inputValue(), 'name,amount\nAma,15.00\n');
    await assertPageQuality(page, 'payouts-bulk-refused');
    // More rows than a request takes, and more text than the page takes: refused as a whole, nothing sent.
    const rows = (n: number, width = 1) =>
      [
        'beneficiary_id,amount,reference',
        ...Array.from({ length: n }, (_, i) => `x,1.00,${'r'.repeat(width)}${i}`),
      ].join('\n');
    await page.getByLabel('CSV', { exact: true }).fill(rows(101));
    await follow(page, page.getByRole('button', { name: 'Pay these' }));
    assert.match(await page.getByRole('alert').innerText(), /The CSV has 101 rows; at most 100 are taken/);
    // The text box holds at most 32,000 characters; a client that ignores that is refused by the page.
    const box = page.getByLabel('CSV', { exact: true });
    assert.equal(await box.getAttribute('maxlength'), '32000');
    await box.evaluate((el) => el.removeAttribute('maxlength'));
    await box.fill(rows(90, 400));
    await follow(page, page.getByRole('button', { name: 'Pay these' }));
    assert.match(await page.getByRole('alert').innerText(), /The CSV is \d+ characters; at most 32000 are taken/);
    assert.deepEqual(await payoutsByReference(), []);

    // The file, read into the form by the page's script: quoted fields with a comma and doubled quotes, a header in
    // another order, one row the balance cannot cover, two the page cannot read.
    const [b1, b2] = beneficiaries;
    const csv = [
      'reference,beneficiary_id,amount',
      `bulk-row-1,${b1},15.00`,
      `bulk-row-2,${b2},"1,000.00"`,
      `"bulk ""row"" 3",${b2},20.00`,
      `bulk-row-4,not-an-id,5.00`,
      `bulk-row-5,${b1}`,
      '',
    ].join('\r\n');
    await page.getByLabel('Route for rows without route_id').selectOption({ label: 'KES → KE mpesa' });
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'payouts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('status').filter({ hasText: 'payouts.csv read' }).waitFor();
    assert.equal(
      (await page.getByLabel('CSV', { exact: true }).inputValue()).replace(/\r\n/g, '\n'),
      csv.replace(/\r\n/g, '\n'),
    );
    const formKey = await page.locator('input[name="idempotency_key"]').inputValue();
    await follow(page, page.getByRole('button', { name: 'Pay these' }));
    await page.getByRole('heading', { name: 'Bulk payouts: the result', level: 1 }).waitFor();
    assert.match(
      await page.getByRole('status').filter({ hasText: 'committed' }).innerText(),
      /2 committed, 1 refused by the API, 2 not sent/,
    );
    const table = page.getByRole('region', { name: 'Result per row' });
    const row = (line: number) => table.getByRole('row', { name: new RegExp(`^${line} `) });
    assert.match(await row(2).innerText(), /^2\s+committed\s+bulk-row-1\s+15\.00\s+KES 15\.00/);
    assert.match(await row(3).innerText(), /^3\s+refused.*insufficient_balance/s);
    assert.match(await row(4).innerText(), /^4\s+committed\s+bulk "row" 3.*KES 20\.00/s);
    assert.match(await row(5).innerText(), /^5\s+invalid.*beneficiary_id is not a beneficiary id/s);
    assert.match(await row(6).innerText(), /^6\s+invalid.*Has 2 fields; the header names 3/s);
    await assertPageQuality(page, 'payouts-bulk-result');
    // The API holds exactly the two committed payouts.
    assert.deepEqual(await payoutsByReference(), ['bulk "row" 3', 'bulk-row-1']);

    // The committed row's link opens an ordinary payout.
    await follow(page, row(2).getByRole('link', { name: 'KES 15.00' }));
    await page.getByRole('heading', { name: 'Payout bulk-row-1', level: 1 }).waitFor();

    // The same form sent again (its key kept, as a double click or a resent page would): nothing is paid twice.
    await page.goto(`${t.baseUrl}/dashboard/payouts/bulk`);
    await page
      .locator('input[name="idempotency_key"]')
      .evaluate((el, key) => ((el as HTMLInputElement).value = key), formKey);
    await page.getByLabel('Route for rows without route_id').selectOption({ label: 'KES → KE mpesa' });
    await page.getByLabel('CSV', { exact: true }).fill(csv);
    await follow(page, page.getByRole('button', { name: 'Pay these' }));
    await page.getByRole('heading', { name: 'Bulk payouts: the result', level: 1 }).waitFor();
    assert.match(await row(2).innerText(), /already committed by this key/);
    assert.match(await row(4).innerText(), /already committed by this key/);
    assert.deepEqual(await payoutsByReference(), ['bulk "row" 3', 'bulk-row-1']);
    assert.deepEqual(
      new Set(errors),
      new Set(['console: Failed to load resource: the server responded with a status of 400 (Bad Request)']),
    );
    await context.close();
  });

  it('a support member is not offered bulk payouts and is refused the page', async () => {
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard/payouts`);
    await signInAsMember(page, SUPPORT, PASSWORD);
    await page.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Bulk payouts (CSV)' }).count(), 0);
    const refused = await page.goto(`${t.baseUrl}/dashboard/payouts/bulk`);
    assert.equal(refused?.status(), 403);
    await context.close();
  });
});
