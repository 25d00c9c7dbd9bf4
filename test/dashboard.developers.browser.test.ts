// The dashboard's developer pages in a real Chromium, driven by roles and labels: API keys (a new token shown once
// with a copy button, rotation and revocation end to end, and rotating or revoking the key you are signed in with
// ending the session), webhook endpoints against a local receiver (add, send a test event, the delivery log with
// request and response, resend, roll the secret, edit, disable) and the event log (type filter, an event's JSON
// and deliveries, resend). Every page is audited with axe-core, checked for horizontal scroll at 360 px and
// photographed at 360 and 1280 px (test-output/dashboard/).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { assertPageQuality, openContext, signIn } from './helpers/dashboard.js';
import {
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  newKey,
  request,
  startTestApp,
  waitFor,
  type TestApp,
} from './helpers/harness.js';
import { startReceiver, type ReceivedRequest, type Receiver } from './helpers/receiver.js';

const skip = browserMissing();
const WAIT_MS = 15_000;
/** An API token as the service issues them (a JWT). */
const TOKEN = /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/;
const SECRET = /^whsec_\S+$/;

let t: TestApp;
let browser: Browser;
let receiver: Receiver;

before(async () => {
  if (skip) return;
  receiver = await startReceiver(() => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'got it' }));
  t = await startTestApp({ ...FAST_LIFECYCLE, WEBHOOK_POLL_MS: '20' }, { workers: true });
  browser = await launchBrowser();
});
after(async () => {
  if (skip) return;
  await browser.close();
  await t.close();
  await receiver.close();
});

/** A fresh context signed in with `token`, on `path`. */
async function signedIn(token: string, path: string, options: { bypassCSP?: boolean } = {}) {
  const opened = await openContext(browser, t, options);
  await opened.page.goto(`${t.baseUrl}${path}`);
  await signIn(opened.page, token);
  return opened;
}

/** Reloads the page until `locator` shows (the relay sends in the background). */
async function reloadUntil(page: Page, locator: Locator, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while ((await locator.count()) === 0) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
    await page.reload();
  }
}

const status = async (token: string): Promise<number> => (await request(t, 'GET', '/v1/workspace', { token })).status;

/** The deliveries the receiver got for one event (by its webhook-id). */
const arrivals = (eventId: string): ReceivedRequest[] =>
  receiver.requests.filter((r) => r.headers['webhook-id'] === eventId);

describe('dashboard: API keys', { skip }, () => {
  it('creates a key whose token is shown once with a copy button and works; rotates it (old 401, new works) and revokes it', async () => {
    const ws = await createWorkspace(t, 'dash-keys');
    const { context, page, errors } = await signedIn(ws.token, '/dashboard/developers');
    await page.getByRole('heading', { name: 'Developers', level: 1 }).waitFor();
    await assertPageQuality(page, 'developers');

    await page.getByRole('main').getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await assertPageQuality(page, 'developers-keys');

    await page.getByLabel('Name').fill('ci server');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Key created' }).waitFor();
    const token = (await page.getByText(TOKEN).innerText()).trim();
    const copy = page.getByRole('button', { name: 'Copy' });
    assert.equal(await copy.isVisible(), true, 'the page script shows the Copy button');
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.baseUrl });
    await copy.click();
    await page.getByRole('status').filter({ hasText: 'Copied.' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), token);
    await assertPageQuality(page, 'developers-key-created');
    assert.equal(await status(token), 200, 'the new token works against the API');
    // Shown once: the list never shows it again.
    await page.getByRole('link', { name: 'Back to API keys' }).click();
    const row = page.getByRole('row', { name: /ci server/ });
    await row.waitFor();
    assert.equal(await page.getByText(token).count(), 0);

    // Rotate: a confirmation first, then the new token, once; the old one is refused.
    await row.getByRole('link', { name: 'Rotate' }).click();
    await page.getByRole('heading', { name: 'Rotate the key “ci server”?' }).waitFor();
    assert.equal(await page.getByRole('note').filter({ hasText: 'signed in with this key' }).count(), 0);
    await assertPageQuality(page, 'developers-key-rotate');
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.getByRole('heading', { name: 'Key rotated' }).waitFor();
    const rotated = (await page.getByText(TOKEN).innerText()).trim();
    assert.notEqual(rotated, token);
    await page.getByRole('button', { name: 'Copy' }).waitFor();
    assert.equal(await status(token), 401, 'the old token stopped working');
    assert.equal(await status(rotated), 200, 'the new token works');
    await page.getByRole('link', { name: 'Back to API keys' }).click();
    assert.notEqual(await row.getByRole('cell').nth(3).innerText(), '—', 'the list shows when it was rotated');

    // Revoke: a confirmation first; then the list says so and the token is refused.
    await row.getByRole('link', { name: 'Revoke' }).click();
    await page.getByRole('heading', { name: 'Revoke the key “ci server”?' }).waitFor();
    await assertPageQuality(page, 'developers-key-revoke');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('status').filter({ hasText: 'The key “ci server” is revoked' }).waitFor();
    await row.getByText('revoked', { exact: true }).waitFor();
    assert.equal(await row.getByRole('link', { name: 'Rotate' }).count(), 0);
    assert.equal(await status(rotated), 401);
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('rotating the key you are signed in with warns first, shows the new token once, and then the next page is sign-in', async () => {
    const ws = await createWorkspace(t, 'dash-own-key');
    const { context, page } = await signedIn(ws.token, '/dashboard/developers/keys');
    const row = page.getByRole('row', { name: /you are signed in with it/ });
    await row.getByRole('link', { name: 'Rotate' }).click();
    await page.getByRole('note').filter({ hasText: 'You are signed in with this key' }).waitFor();
    assert.match(await page.getByRole('main').innerText(), /Rotating it ends this dashboard session/);
    await assertPageQuality(page, 'developers-key-rotate-own');
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.getByRole('heading', { name: 'Key rotated' }).waitFor();
    const rotated = (await page.getByText(TOKEN).innerText()).trim();
    await page.getByRole('note').filter({ hasText: 'Your dashboard session has ended' }).waitFor();
    await assertPageQuality(page, 'developers-key-rotated-own');
    assert.equal(await status(ws.token), 401);

    // The session is over: any page is sign-in, and the new token brings us back to the keys.
    const other = await context.newPage();
    await other.goto(`${t.baseUrl}/dashboard/developers`);
    await other.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await other.close();
    await page.getByRole('link', { name: 'Sign in again' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await signIn(page, rotated);
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();

    // Revoking the key you are signed in with: warned, then sign-in.
    await page
      .getByRole('row', { name: /you are signed in with it/ })
      .getByRole('link', { name: 'Revoke' })
      .click();
    await page.getByRole('note').filter({ hasText: 'the next page is sign-in' }).waitFor();
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    assert.equal(await status(rotated), 401);
    await context.close();
  });

  it('under the real CSP the page script runs: the Copy button shows and nothing is logged', async () => {
    const ws = await createWorkspace(t, 'dash-csp');
    const { context, page, errors } = await signedIn(ws.token, '/dashboard/developers/keys', { bypassCSP: false });
    await page.getByLabel('Name').fill('csp check');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Key created' }).waitFor();
    // The CSP admits the page's own script and style by their hashes: a mismatch is logged, and the button stays hidden.
    await page
      .getByRole('button', { name: 'Copy' })
      .waitFor({ state: 'visible', timeout: 5000 })
      .catch(() => undefined);
    assert.deepEqual(errors, []);
    assert.equal(await page.getByRole('button', { name: 'Copy' }).isVisible(), true);
    await context.close();
  });
});

describe('dashboard: webhooks', { skip }, () => {
  it('adds an endpoint, sends a test event to a local receiver, reads the delivery log, resends, rolls the secret, edits and disables it', async () => {
    const ws = await createWorkspace(t, 'dash-webhooks');
    const url = `${receiver.url}/${newKey()}`;
    const { context, page, errors } = await signedIn(ws.token, '/dashboard/developers/webhooks');
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await assertPageQuality(page, 'developers-webhooks-empty');

    await page.getByRole('link', { name: 'Add an endpoint' }).click();
    await page.getByRole('heading', { name: 'Add a webhook endpoint' }).waitFor();
    await page.getByRole('group', { name: 'Event types' }).waitFor();
    await assertPageQuality(page, 'developers-webhook-new');
    // The API's refusal of a URL is shown above the form, which keeps what was typed.
    await page.getByLabel('URL', { exact: true }).fill('ftp://example.com/hook');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('alert').filter({ hasText: 'URL' }).waitFor();
    assert.equal(await page.getByLabel('URL', { exact: true }).inputValue(), 'ftp://example.com/hook');
    // That answer was a 400, which Chromium logs; nothing else may be.
    assert.deepEqual(errors.splice(0), [
      'console: Failed to load resource: the server responded with a status of 400 (Bad Request)',
    ]);

    await page.getByLabel('URL', { exact: true }).fill(url);
    await page.getByLabel('Description (optional)').fill('orders service');
    await page.getByLabel('Every event type, including types added later').uncheck();
    await page.getByLabel('collection.successful', { exact: true }).check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('heading', { name: 'Endpoint added' }).waitFor();
    const secret = (await page.getByText(SECRET).innerText()).trim();
    await page.getByRole('button', { name: 'Copy' }).waitFor();
    await assertPageQuality(page, 'developers-webhook-added');
    const [endpoint] = (await request(t, 'GET', '/v1/webhooks/endpoints', { token: ws.token })).body.data;
    assert.equal(endpoint.url, url);
    assert.deepEqual(endpoint.enabled_events, ['collection.successful']);
    assert.equal(endpoint.description, 'orders service');

    // Send a test event: it arrives, signed, and the log shows the request and the response.
    await page.getByRole('link', { name: 'Go to the endpoint' }).click();
    await page.getByRole('heading', { name: 'Webhook endpoint' }).waitFor();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('status').filter({ hasText: 'webhook.test event is on its way' }).waitFor();
    const delivered = page.getByRole('article', { name: 'webhook.test succeeded' });
    await reloadUntil(page, delivered, 'the test delivery to succeed');
    const eventId = (await delivered.getByRole('link', { name: /^[0-9a-f-]{36}$/ }).innerText()).trim();
    const [arrived] = arrivals(eventId);
    assert.ok(arrived, 'the receiver got the test event');
    const sent = new Webhook(secret).verify(arrived.body, arrived.headers) as { type: string; data: { id: string } };
    assert.equal(sent.type, 'webhook.test');
    assert.equal(sent.data.id, endpoint.id);
    const attempts = delivered.getByRole('region', { name: /Attempts of delivery/ });
    await attempts.getByRole('cell', { name: '200', exact: true }).waitFor();
    await attempts.getByRole('cell', { name: 'got it', exact: true }).waitFor();
    await attempts.getByRole('cell', { name: arrived.headers['webhook-timestamp'], exact: true }).waitFor();
    assert.match(await delivered.innerText(), new RegExp(`webhook-id: ${eventId}`));
    await delivered.getByText('Request body').click();
    assert.deepEqual(
      JSON.parse(await delivered.getByText('"webhook.test"').innerText()),
      JSON.parse(arrived.body),
      'the log shows the body as it was sent',
    );
    await assertPageQuality(page, 'developers-webhook-endpoint');

    // Resend it: one more arrival with the same webhook-id, and a resend in the log.
    await delivered.getByRole('button', { name: 'Resend' }).click();
    await page.getByRole('status').filter({ hasText: 'Resent' }).waitFor();
    await waitFor('the resend to arrive', async () => (arrivals(eventId).length === 2 ? true : undefined), WAIT_MS);
    await reloadUntil(
      page,
      page.getByRole('article', { name: 'webhook.test succeeded' }).nth(1),
      'the resend in the log',
    );
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No delivery failed yet.').waitFor();

    // Roll the secret: confirmed, shown once, and the next delivery verifies with it.
    await page.getByRole('link', { name: 'Roll secret' }).click();
    await page.getByRole('heading', { name: 'Roll the signing secret?' }).waitFor();
    await assertPageQuality(page, 'developers-webhook-roll');
    await page.getByRole('button', { name: 'Roll secret' }).click();
    await page.getByRole('heading', { name: 'Secret rolled' }).waitFor();
    const rolled = (await page.getByText(SECRET).innerText()).trim();
    assert.notEqual(rolled, secret);
    await page.getByRole('link', { name: 'Go to the endpoint' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    const second = await waitFor(
      'the second test event',
      async () =>
        receiver.requests.find(
          (r) =>
            r.path === new URL(url).pathname && r.headers['webhook-id'] !== eventId && r.body.includes('webhook.test'),
        ),
      WAIT_MS,
    );
    new Webhook(rolled).verify(second.body, second.headers);

    // Edit: URL, description and types.
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit the webhook endpoint' }).waitFor();
    assert.equal(await page.getByLabel('collection.successful', { exact: true }).isChecked(), true);
    await assertPageQuality(page, 'developers-webhook-edit');
    await page.getByLabel('Description (optional)').fill('orders and refunds');
    await page.getByLabel('refund.successful', { exact: true }).check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Endpoint saved.' }).waitFor();
    await page.getByText('collection.successful, refund.successful').waitFor();
    const edited = (await request(t, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`, { token: ws.token })).body;
    assert.deepEqual(edited.enabled_events, ['collection.successful', 'refund.successful']);
    assert.equal(edited.description, 'orders and refunds');

    // Disable, then enable again.
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('status').filter({ hasText: 'Endpoint disabled' }).waitFor();
    assert.equal(
      (await request(t, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`, { token: ws.token })).body.status,
      'disabled',
    );
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('status').filter({ hasText: 'Endpoint enabled' }).waitFor();
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('row', { name: new RegExp(url.replace(/[/.]/g, '\\$&')) }).waitFor();
    await assertPageQuality(page, 'developers-webhooks');
    assert.deepEqual(errors, []);
    await context.close();
  });
});

describe('dashboard: event log', { skip }, () => {
  it('filters events by type; an event page shows its JSON and its deliveries, and resends', async () => {
    const ws = await createWorkspace(t, 'dash-events');
    const url = `${receiver.url}/${newKey()}`;
    const created = await request(t, 'POST', '/v1/webhooks/endpoints', { token: ws.token, body: { url } });
    assert.equal(created.status, 201, created.text);
    const collection = await createCollection(t, ws.token, { customer: { phone_number: '+254712340000' } });
    assert.equal(collection.status, 201, collection.text);
    const collectionId: string = collection.body.collection_id;
    const events = await waitFor(
      'the collection to succeed',
      async () => {
        const res = await request(t, 'GET', `/v1/events?object_id=${collectionId}`, { token: ws.token });
        return res.body.data.some((e: { type: string }) => e.type === 'collection.successful')
          ? res.body.data
          : undefined;
      },
      WAIT_MS,
    );
    const createdEvent = events.find((e: { type: string }) => e.type === 'collection.created');
    await waitFor('its delivery', async () => (arrivals(createdEvent.id).length === 1 ? true : undefined), WAIT_MS);

    const { context, page, errors } = await signedIn(ws.token, '/dashboard/developers/events');
    await page.getByRole('heading', { name: 'Events', level: 1 }).waitFor();
    const table = page.getByRole('region', { name: 'Events' });
    assert.ok((await table.getByRole('row').count()) > 3, 'several types are listed');
    await assertPageQuality(page, 'developers-events');
    await page.getByLabel('Type').selectOption('collection.created');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/type=collection\.created/);
    const links = table.getByRole('link');
    assert.deepEqual(await links.allInnerTexts(), ['collection.created']);

    await links.first().click();
    await page.getByRole('heading', { name: 'Event collection.created' }).waitFor();
    const shown = await page.getByRole('region', { name: 'JSON, as deliveries carry it' }).innerText();
    const json: unknown = JSON.parse(shown.slice(shown.indexOf('{')));
    assert.deepEqual(json, createdEvent);
    const deliveries = page.getByRole('region', { name: 'Deliveries' });
    const delivery = deliveries.getByRole('article', { name: url });
    await delivery.getByText('succeeded', { exact: true }).waitFor();
    await assertPageQuality(page, 'developers-event');

    await delivery.getByRole('button', { name: 'Resend' }).click();
    await page.getByRole('status').filter({ hasText: 'Resent: 1 delivery queued' }).waitFor();
    await waitFor('the resend', async () => (arrivals(createdEvent.id).length === 2 ? true : undefined), WAIT_MS);
    await reloadUntil(
      page,
      deliveries.getByRole('article', { name: url }).getByText('resend', { exact: true }),
      'the resend in the deliveries',
    );
    assert.deepEqual(errors, []);
    await context.close();
  });
});
