// The dashboard's payment pages in a real Chromium, driven by roles and labels: the collections list (filters, search,
// paging, CSV export), a collection's page with its timeline and webhook deliveries, a refund end to end (button,
// confirmation, the API's refund, the page showing it) and one the API refuses, the refunds list and a refund's page,
// a payout made through the form (and one the balance cannot cover), and deposits. Every page passes
// assertPageQuality (axe-core, no sideways scroll at 360 px, screenshots in test-output/dashboard/).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signIn } from './helpers/dashboard.js';
import {
  createCollection,
  liquidityProviderToken,
  request,
  startTestApp,
  waitFor,
  type TestApp,
} from './helpers/harness.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const skip = browserMissing();

let t: TestApp;
let browser: Browser;
let receiver: Receiver;

/** The collections made before the tests, by name: id and reference. */
const made: Record<string, { id: string; reference: string }> = {};
const MPESA = '/v1/collections/KE/rails/mpesa';
const AIRTEL = '/v1/collections/KE/rails/airtel_money';
const AIRTEL_PHONE = '+254733000111';

async function make(name: string, overrides: Record<string, unknown>, path = MPESA): Promise<void> {
  const reference = `dash-${name}`;
  const res = await createCollection(t, t.demoToken, { reference, ...overrides }, path);
  assert.equal(res.status, 201, res.text);
  made[name] = { id: res.body.collection_id, reference };
}

const api = (path: string) => request(t, 'GET', path, { token: t.demoToken });
const idOf = (name: string): string => made[name]?.id ?? '';
const referenceOf = (name: string): string => made[name]?.reference ?? '';

before(async () => {
  if (skip) return;
  t = await startTestApp({ SANDBOX_STEP_MS: '50', WORKER_INTERVAL_MS: '20' }, { workers: true });
  browser = await launchBrowser();
  // A local endpoint that answers 200: every event of these collections has a delivery to show.
  receiver = await startReceiver();
  const endpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
    token: t.demoToken,
    body: { url: receiver.url },
  });
  assert.equal(endpoint.status, 201, endpoint.text);
  // The sandbox's outcomes by the phone's last digits (docs/guides/sandbox.md): 0002 fails at once, others succeed.
  await make('paid', { amount: 150_000 });
  await make('declined', { amount: 9_900, customer: { phone_number: '+254700000002' } });
  await make('airtel', { amount: 4_200, customer: { phone_number: AIRTEL_PHONE } }, AIRTEL);
  await make('refund-me', { amount: 250_000 });
  await make('small-1', { amount: 1_000 });
  await make('small-2', { amount: 1_100 });
  await waitFor('the collections to settle', async () => {
    const states = await Promise.all(
      Object.keys(made).map(async (n) => (await api(`/v1/collections/${idOf(n)}`)).body.status),
    );
    return states.every((s) => s === 'successful' || s === 'failed') ? true : undefined;
  });
});
after(async () => {
  if (skip) return;
  await browser.close();
  await receiver.close();
  await t.close();
});

async function signedIn(path: string): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const opened = await openContext(browser, t);
  await opened.page.goto(`${t.baseUrl}${path}`);
  await signIn(opened.page, t.demoToken);
  return opened;
}

/** Clicks what navigates (a link, a form's button) and waits for the next page to load. */
async function follow(page: Page, target: Locator): Promise<void> {
  await Promise.all([page.waitForEvent('framenavigated'), target.click()]);
  await page.waitForLoadState('load');
}

/** The event types of the page's timeline, oldest first. */
async function timelineTypes(page: Page): Promise<string[]> {
  const text = await page.getByRole('region', { name: 'Timeline' }).innerText();
  return [...text.matchAll(/\b([a-z_]+(?:\.[a-z_]+)+) · /g)].map((m) => m[1] ?? '');
}

/** The references in the list's table, top to bottom. */
async function listedReferences(page: Page): Promise<string[]> {
  const table = page.getByRole('region', { name: 'Collections' });
  const heads = await table.getByRole('rowheader').allInnerTexts();
  return heads.map((s) => s.trim());
}

describe('dashboard: collections', { skip }, () => {
  it('lists collections, filtered by status, rail, reference and phone number, and pages with a small limit', async () => {
    const { context, page, errors } = await signedIn('/dashboard/collections');
    await page.getByRole('heading', { name: 'Collections', level: 1 }).waitFor();
    assert.equal((await listedReferences(page)).length, Object.keys(made).length);
    // Amounts in their currency, times with their zone.
    const paidRow = page.getByRole('row', { name: new RegExp(referenceOf('paid')) });
    await paidRow.getByRole('cell', { name: 'KES 1,500.00' }).waitFor();
    await paidRow.getByRole('cell', { name: /\d{4}, \d\d:\d\d:\d\d (UTC|GMT)/ }).waitFor();
    await assertPageQuality(page, 'collections');

    await page.getByLabel('Status').selectOption('failed');
    await follow(page, page.getByRole('button', { name: 'Filter' }));
    await page.waitForURL(/status=failed/);
    assert.deepEqual(await listedReferences(page), [referenceOf('declined')]);
    await assertPageQuality(page, 'collections-filtered');

    await follow(page, page.getByRole('link', { name: 'Clear filters' }));
    await page.getByLabel('Rail').fill('airtel_money');
    await follow(page, page.getByRole('button', { name: 'Filter' }));
    await page.waitForURL(/rail=airtel_money/);
    assert.deepEqual(await listedReferences(page), [referenceOf('airtel')]);

    await follow(page, page.getByRole('link', { name: 'Clear filters' }));
    await page.getByLabel('Reference or phone number').fill(referenceOf('paid'));
    await follow(page, page.getByRole('button', { name: 'Filter' }));
    await page.waitForURL(/q=/);
    assert.deepEqual(await listedReferences(page), [referenceOf('paid')]);

    await page.getByLabel('Reference or phone number').fill(AIRTEL_PHONE);
    await follow(page, page.getByRole('button', { name: 'Filter' }));
    await page.waitForURL(/q=%2B254733000111/);
    assert.deepEqual(await listedReferences(page), [referenceOf('airtel')]);

    await follow(page, page.getByRole('link', { name: 'Clear filters' }));
    await page.getByLabel('Market').fill('ke');
    await page.getByLabel('Rail').fill('mpesa');
    await follow(page, page.getByRole('button', { name: 'Filter' }));
    await page.waitForURL(/rail=mpesa/);
    assert.equal((await listedReferences(page)).length, Object.keys(made).length - 1);

    // Pages of two, newest first, with the filter kept, walk the same set as the API lists.
    await page.goto(`${t.baseUrl}/dashboard/collections?rail=mpesa&limit=2`);
    const walked: string[] = [];
    for (let pages = 0; pages < 10; pages++) {
      const shown = await listedReferences(page);
      assert.ok(shown.length <= 2);
      walked.push(...shown);
      const next = page.getByRole('link', { name: 'Next page' });
      if ((await next.count()) === 0) break;
      await follow(page, next);
    }
    const fromApi = await api('/v1/collections?rail=mpesa&limit=100');
    assert.deepEqual(
      walked,
      fromApi.body.data.map((c: { reference: string }) => c.reference),
    );
    await follow(page, page.getByRole('link', { name: 'First page' }));
    assert.equal((await listedReferences(page)).length, 2);
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('exports the filtered set, every page of it, as CSV', async () => {
    const { context, page } = await signedIn('/dashboard/collections?rail=mpesa&limit=2');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Export CSV' }).click(),
    ]);
    assert.match(download.suggestedFilename(), /^collections-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = await readFile((await download.path()) ?? '', 'utf8');
    const lines = csv.trimEnd().split('\r\n');
    assert.equal(
      lines[0],
      'collection_id,created_at,status,market,rail,amount_minor_units,currency,amount,reference,phone_number,provider_receipt,failure_reason,updated_at',
    );
    const fromApi = await api('/v1/collections?rail=mpesa&limit=100');
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(',')[0]),
      fromApi.body.data.map((c: { collection_id: string }) => c.collection_id),
    );
    const paid = lines.find((l) => l.startsWith(idOf('paid')));
    assert.ok(paid);
    assert.match(paid, /,successful,KE,mpesa,150000,KES,"KES 1,500\.00",dash-paid,\+254712345678,/);
    assert.ok(!lines.some((l) => l.includes(idOf('airtel'))));
    await context.close();
  });

  it("shows a collection's facts and its timeline of events with their webhook deliveries", async () => {
    await waitFor('the webhook deliveries of the paid collection', async () => {
      const events = await api(`/v1/events?object_id=${idOf('paid')}`);
      const deliveries = await Promise.all(
        events.body.data.map(async (e: { id: string }) => (await api(`/v1/events/${e.id}/deliveries`)).body.data),
      );
      return deliveries.every((d: { status: string }[]) => d.length === 1 && d[0]?.status === 'succeeded')
        ? true
        : undefined;
    });
    const { context, page, errors } = await signedIn('/dashboard/collections');
    await follow(page, page.getByRole('link', { name: referenceOf('paid'), exact: true }));
    await page.getByRole('heading', { name: `Collection ${referenceOf('paid')}`, level: 1 }).waitFor();
    const details = page.getByRole('definition');
    await details.filter({ hasText: 'KES 1,500.00' }).waitFor();
    await details.filter({ hasText: '+254712345678' }).waitFor();
    await details
      .filter({ hasText: /\d{4}, \d\d:\d\d:\d\d (UTC|GMT)/ })
      .first()
      .waitFor();
    const timeline = page.getByRole('region', { name: 'Timeline' });
    const types = await timelineTypes(page);
    assert.equal(types[0], 'collection.created');
    assert.equal(types[types.length - 1], 'collection.successful');
    const shown = await timeline.innerText();
    assert.match(
      shown,
      /succeeded Webhook to http:\/\/127\.0\.0\.1:\d+\/hook\/[0-9a-f]{12} · 1 attempt, last answer HTTP 200/,
      shown,
    );
    await assertPageQuality(page, 'collection');
    assert.deepEqual(errors, []);
    await context.close();
  });
});

describe('dashboard: refunds', { skip }, () => {
  it('refunds a collection end to end: the button, the confirmation, the API’s refund, the page showing it', async () => {
    const id = idOf('refund-me');
    const { context, page, errors } = await signedIn(`/dashboard/collections/${id}`);
    await follow(page, page.getByRole('link', { name: 'Refund', exact: true }));
    await page.getByRole('heading', { name: 'Refund a collection', level: 1 }).waitFor();
    await page.getByText('Refund KES 2,500.00 to +254712345678?').waitFor();
    await assertPageQuality(page, 'refund-confirm');
    // Cancel changes nothing.
    await follow(page, page.getByRole('link', { name: 'Cancel' }));
    await page.getByRole('heading', { name: `Collection ${referenceOf('refund-me')}` }).waitFor();
    assert.equal((await api(`/v1/collections/${id}/refunds`)).body.data.length, 0);

    await follow(page, page.getByRole('link', { name: 'Refund', exact: true }));
    await follow(page, page.getByRole('button', { name: 'Confirm' }));
    await page.getByRole('status').filter({ hasText: 'Refund of KES 2,500.00 requested' }).waitFor();
    const refunds = (await api(`/v1/collections/${id}/refunds`)).body.data;
    assert.equal(refunds.length, 1);
    assert.equal(refunds[0].amount, 250_000);
    const refundId: string = refunds[0].refund_id;
    await page
      .getByRole('region', { name: 'Refunds of this collection' })
      .getByRole('row', { name: new RegExp(refundId) })
      .getByRole('link', { name: 'KES 2,500.00' })
      .waitFor();

    // Once it has succeeded, the page shows it, and the timeline has the refund's events beside the collection's.
    await waitFor('the refund to succeed', async () =>
      (await api(`/v1/refunds/${refundId}`)).body.status === 'successful' ? true : undefined,
    );
    await page.reload();
    await page.getByRole('definition').filter({ hasText: 'refunded' }).waitFor();
    const types = await timelineTypes(page);
    assert.ok(types.indexOf('collection.successful') < types.indexOf('refund.requested'), types.join(', '));
    assert.ok(types.includes('refund.successful') && types.includes('collection.refunded'), types.join(', '));
    await assertPageQuality(page, 'collection-refunded');
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('shows the problem when the API refuses a refund (a failed collection: 409)', async () => {
    const { context, page } = await signedIn(`/dashboard/collections/${idOf('declined')}/refund`);
    await follow(page, page.getByRole('button', { name: 'Confirm' }));
    await page.getByRole('heading', { name: 'Refund not made', level: 1 }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'Only a successful collection can be refunded' }).waitFor();
    await assertPageQuality(page, 'refund-refused');
    assert.equal((await api(`/v1/collections/${idOf('declined')}/refunds`)).body.data.length, 0);
    await context.close();
  });

  it('lists refunds, filtered by status, and shows one', async () => {
    const refund = (await api(`/v1/collections/${idOf('refund-me')}/refunds`)).body.data[0];
    assert.ok(refund, 'the end-to-end refund runs first');
    const { context, page, errors } = await signedIn('/dashboard/refunds');
    await page.getByRole('heading', { name: 'Refunds', level: 1 }).waitFor();
    const row = page.getByRole('row', { name: new RegExp(refund.refund_id) });
    await row.getByRole('link', { name: 'KES 2,500.00' }).waitFor();
    await assertPageQuality(page, 'refunds');
    await page.getByLabel('Status').selectOption('failed');
    await follow(page, page.getByRole('button', { name: 'Filter' }));
    await page.getByText('No refunds match these filters.').waitFor();
    await page.getByLabel('Status').selectOption('successful');
    await follow(page, page.getByRole('button', { name: 'Filter' }));
    await follow(page, row.getByRole('link', { name: 'KES 2,500.00' }));
    await page.getByRole('heading', { name: 'Refund of KES 2,500.00', level: 1 }).waitFor();
    await page.getByRole('definition').filter({ hasText: 'merchant_request' }).waitFor();
    await page.getByRole('region', { name: 'Timeline' }).getByText('refund.successful').waitFor();
    await assertPageQuality(page, 'refund');
    assert.deepEqual(errors, []);
    await context.close();
  });
});

describe('dashboard: payouts', { skip }, () => {
  before(async () => {
    if (skip) return;
    const lp = await liquidityProviderToken(t);
    const route = await request(t, 'POST', '/v1/api/routes', {
      token: lp,
      body: { source: 'KES', market: 'KE', rail: 'mpesa', min_amount: 100, max_amount: 20_000_000, fee_fixed: 50 },
    });
    assert.equal(route.status, 201, route.text);
    const beneficiary = await request(t, 'POST', '/v1/api/beneficiaries', {
      token: t.demoToken,
      body: { name: 'Wanjiru Kamau', market: 'KE', rail: 'mpesa', phone_number: '+254712345678' },
    });
    assert.equal(beneficiary.status, 201, beneficiary.text);
  });

  async function fillPayout(page: Page, amount: string, reference: string): Promise<void> {
    await page.getByLabel('Beneficiary').selectOption({ label: 'Wanjiru Kamau (+254712345678, KE mpesa)' });
    await page.getByLabel('Route').selectOption({ label: 'KES balance → KE mpesa, fee KES 0.50' });
    await page.getByLabel('Amount').fill(amount);
    await page.getByLabel('Reference').fill(reference);
    await follow(page, page.getByRole('button', { name: 'Continue' }));
  }

  it('makes a payout through the form, after a confirmation; it is listed and has its page', async () => {
    const { context, page, errors } = await signedIn('/dashboard/payouts');
    await follow(page, page.getByRole('link', { name: 'New payout' }));
    await page.getByRole('heading', { name: 'New payout', level: 1 }).waitFor();
    await assertPageQuality(page, 'payout-new');
    await fillPayout(page, '15.00', 'dash-payout-1');
    await page.getByRole('heading', { name: 'Confirm the payout', level: 1 }).waitFor();
    await page.getByText('Pay KES 15.00 to Wanjiru Kamau (+254712345678, KE mpesa)?').waitFor();
    await assertPageQuality(page, 'payout-confirm');
    await follow(page, page.getByRole('button', { name: 'Confirm' }));
    await page.getByRole('heading', { name: 'Payout dash-payout-1', level: 1 }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Payout of KES 15.00 committed' }).waitFor();

    const payouts = (await api('/v1/api/transactions?limit=100')).body.data.filter(
      (p: { reference: string }) => p.reference === 'dash-payout-1',
    );
    assert.equal(payouts.length, 1);
    assert.deepEqual([payouts[0].source_amount, payouts[0].fee, payouts[0].amount], [1_500, 50, 1_450]);
    await page.getByRole('definition').filter({ hasText: 'KES 14.50' }).waitFor();
    await waitFor('the payout to succeed', async () =>
      (await api(`/v1/api/transactions/${payouts[0].transaction_id}`)).body.status === 'successful' ? true : undefined,
    );
    await page.reload();
    await page.getByRole('region', { name: 'Timeline' }).getByText('payout.successful').waitFor();
    await assertPageQuality(page, 'payout');

    await follow(page, page.getByRole('link', { name: 'All payouts' }));
    await page.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor();
    await page
      .getByRole('row', { name: /dash-payout-1/ })
      .getByRole('cell', { name: 'KES 14.50' })
      .waitFor();
    await assertPageQuality(page, 'payouts');
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('shows the balance problem when the payout is more than the balance (422 insufficient_balance)', async () => {
    const { context, page } = await signedIn('/dashboard/payouts/new');
    await fillPayout(page, '100,000.00', 'dash-payout-too-much');
    await page.getByText('Pay KES 100,000.00 to Wanjiru Kamau (+254712345678, KE mpesa)?').waitFor();
    await follow(page, page.getByRole('button', { name: 'Confirm' }));
    await page.getByRole('heading', { name: 'Payout not made', level: 1 }).waitFor();
    await page
      .getByRole('alert')
      .filter({ hasText: /available KES balance/ })
      .waitFor();
    await page.getByRole('alert').filter({ hasText: 'insufficient_balance' }).waitFor();
    await assertPageQuality(page, 'payout-refused');
    // Back to the form, with what was entered.
    await follow(page, page.getByRole('link', { name: 'Back to the form' }));
    assert.equal(await page.getByLabel('Amount').inputValue(), '100,000.00');
    const listed = (await api('/v1/api/transactions?limit=100')).body.data;
    assert.ok(!listed.some((p: { reference: string }) => p.reference === 'dash-payout-too-much'));
    await context.close();
  });
});

describe('dashboard: deposits', { skip }, () => {
  it('lists deposits and shows one, with its timeline', async () => {
    const address = await request(t, 'POST', '/v1/api/deposit-addresses', {
      token: t.demoToken,
      body: { asset: 'USDT', network: 'tron' },
    });
    assert.equal(address.status, 201, address.text);
    const arrived = await request(t, 'POST', '/v1/sandbox/deposits', {
      token: t.demoToken,
      body: { deposit_address_id: address.body.deposit_address_id, amount: 25_000_000 },
    });
    assert.equal(arrived.status, 201, arrived.text);
    const confirmed = await request(t, 'POST', `/v1/sandbox/deposits/${arrived.body.deposit_id}/simulate`, {
      token: t.demoToken,
      body: { outcome: 'confirmed' },
    });
    assert.equal(confirmed.body.status, 'credited', confirmed.text);

    const { context, page, errors } = await signedIn('/dashboard/deposits');
    await page.getByRole('heading', { name: 'Deposits', level: 1 }).waitFor();
    const row = page.getByRole('row', { name: new RegExp(arrived.body.deposit_id) });
    await row.getByRole('cell', { name: 'credited' }).waitFor();
    await assertPageQuality(page, 'deposits');
    await page.getByLabel('Status').selectOption('pending');
    await follow(page, page.getByRole('button', { name: 'Filter' }));
    await page.getByText('No deposits match these filters.').waitFor();
    await follow(page, page.getByRole('link', { name: 'Clear filters' }));
    await follow(page, row.getByRole('link', { name: /^USDT/ }));
    await page.getByRole('heading', { name: /^Deposit of USDT/, level: 1 }).waitFor();
    await page.getByRole('definition').filter({ hasText: 'USDT on tron' }).waitFor();
    const types = await timelineTypes(page);
    assert.equal(types[0], 'deposit.pending');
    assert.deepEqual([...types].sort(), ['deposit.confirmed', 'deposit.credited', 'deposit.pending']);
    await assertPageQuality(page, 'deposit');
    assert.deepEqual(errors, []);
    await context.close();
  });
});
