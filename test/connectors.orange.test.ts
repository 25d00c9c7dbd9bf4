// The Orange Money connector against the Web Payment fake (fakes/orange-money.ts): a collection opens a session whose
// payment_url becomes the collection's redirect instruction, the payer pays on that page, and the notification (with its
// notif_token) is believed only once the status call agrees. Orange's failures, notifications lost, repeated or forged,
// a token that expires in flight, an outage at initiation without a second session paid, and the refunds and payouts
// Orange's Web Payment API does not offer.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { OrangeFake, type OrangeSession } from '../fakes/orange-money.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { loadCatalogue, MarketCatalogue } from '../src/modules/catalogue/catalogue.js';
import { idFromOrangePart, notifUrl, orangeIdPart } from '../src/modules/providers/orange-money/orange.connector.js';
import { planProviders } from '../src/modules/providers/providers.registry.js';
import { assertPaidEvents, eventsAbout, read, since, startConnectorApp, waitStatus } from './helpers/connectors.js';
import {
  assertProblem,
  createCollection,
  liquidityProviderToken,
  request,
  requestRefund,
  waitFor,
} from './helpers/harness.js';

const fake = new OrangeFake({ actAfterMs: 150 });
process.env.TEST_ORANGE_CLIENT_SECRET = 'fake-client-secret';
const app = await startConnectorApp(fake, {
  type: 'orange_money',
  name: 'orange',
  rails: ['CI/orange_money'],
  client_id: 'fake-client-id',
  client_secret: { env: 'TEST_ORANGE_CLIENT_SECRET' },
  merchant_key: 'fake-merchant-key',
  country: 'CI',
  currency: 'XOF',
  poll_seconds: 1,
  return_url: 'https://shop.example.com/merci',
  cancel_url: 'https://shop.example.com/panier',
});
after(async () => app.close());
const t = app.t;
const token = app.callbackBase.split('/').pop() ?? '';

let numbers = 0;
/** A payer's number of its own per test: the national form the payer types on Orange's page, and E.164 for our API. */
const payer = (): { national: string; e164: string } => {
  const national = `07${String(10_000_000 + (numbers += 1)).slice(-8)}`;
  return { national, e164: `+225${national}` };
};

/** A collection from `e164`, once Orange opened its session (pending, with the payment page as its instruction). */
async function opened(e164: string, amount = 1500): Promise<{ id: string; url: string; session: OrangeSession }> {
  const res = await createCollection(
    t,
    t.demoToken,
    { currency: 'XOF', amount, customer: { phone_number: e164 } },
    '/v1/collections/CI/rails/orange_money',
  );
  assert.equal(res.status, 201, res.text);
  const id = res.body.collection_id as string;
  const pending = await waitStatus(t, t.demoToken, 'collection', id, 'pending');
  assert.equal(pending.payment_instruction?.type, 'redirect');
  const url = pending.payment_instruction.url as string;
  const session = fake.sessionsFor(orangeIdPart(id)).find((s) => url.endsWith(s.payToken));
  assert.ok(session, 'the instruction is the payment page of a session Orange opened for this collection');
  return { id, url, session };
}

/** Status calls made about a session. */
const statusCalls = (s: OrangeSession) =>
  fake
    .requests('POST', '/transactionstatus')
    .filter((r) => (r.json as { pay_token?: string }).pay_token === s.payToken);
/** Notifications that reached us about a session. */
const delivered = (s: OrangeSession) =>
  fake.callbacks.filter((c) => (c.body as { notif_token?: string }).notif_token === s.notifToken);
/** The webpayment calls made for a collection (each order_id starts with our id in base 36). */
const webpayments = (id: string) =>
  fake
    .requests('POST', '/webpayment')
    .filter((r) => String((r.json as { order_id?: string }).order_id).startsWith(orangeIdPart(id)));

describe('Orange Money collections', () => {
  it('a payment on Orange’s page reaches successful, the notification confirmed by the status call, its txnid kept', async () => {
    const p = payer();
    const created = performance.now();
    const { id, url, session } = await opened(p.e164);
    const sent = webpayments(id);
    assert.equal(sent.length, 1);
    const body = sent[0]?.json as Record<string, unknown>;
    assert.equal(String(body.order_id).length, 30, 'order_id within Orange’s 30 characters');
    assert.equal(idFromOrangePart(String(body.order_id).slice(0, 25)), id, 'and it gives our id back');
    assert.deepEqual(
      { ...body, order_id: undefined },
      {
        merchant_key: 'fake-merchant-key',
        currency: 'XOF',
        order_id: undefined,
        amount: 1500,
        return_url: 'https://shop.example.com/merci',
        cancel_url: 'https://shop.example.com/panier',
        notif_url: notifUrl(app.callbackBase, id),
        lang: 'fr',
        reference: (await read(t, t.demoToken, 'collection', id)).reference.slice(0, 30),
      },
    );
    assert.ok(String(body.notif_url).length <= 120);
    assert.equal(url, `${fake.url}/payment/pay_token/${session.payToken}`);

    const start = performance.now();
    assert.equal((await fake.payerSubmits(url, 'pay', p.national)).location, 'https://shop.example.com/merci');
    const done = await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    process.stdout.write(
      `# Orange: create → successful ${since(created)} ms (paid on the page → successful ${since(start)} ms), notification on time\n`,
    );
    assert.match(done.provider_receipt, /^MP[0-9]{6}\.[0-9]{4}\.[A-Z0-9]{6}$/);
    assert.equal(done.provider_receipt, session.txnid);
    assert.equal(delivered(session).length, 1);
    assert.equal(delivered(session)[0]?.status, 200, 'the notification was taken');
    assert.ok(statusCalls(session).length >= 1, 'and confirmed by the status call');
    await assertPaidEvents(t, id, session.txnid);
  });

  it('Orange’s FAILED fails the collection with provider_error (Orange does not say why)', async () => {
    const p = payer();
    fake.outcomes.set(p.national, 'FAILED');
    const { id, url } = await opened(p.e164);
    await fake.payerSubmits(url, 'pay', p.national);
    const failed = await waitStatus(t, t.demoToken, 'collection', id, 'failed');
    assert.equal(failed.failure_reason, 'provider_error');
    assert.equal(failed.provider_receipt, null);
  });

  it('Orange’s EXPIRED (a session that ran out of time) fails the collection with prompt_expired, found by the status call', async () => {
    const { id, session } = await opened(payer().e164);
    fake.expireSession(session.payToken);
    const failed = await waitStatus(t, t.demoToken, 'collection', id, 'failed');
    assert.equal(failed.failure_reason, 'prompt_expired');
    assert.equal(delivered(session).length, 0, 'Orange notifies no expiry: the status call found it');
    assert.ok(statusCalls(session).length >= 1);
  });

  it('a webpayment Orange refuses (400) fails the collection with provider_refused, and is not sent again', async () => {
    fake.inject({
      method: 'POST',
      path: '/webpayment',
      status: 400,
      body: { code: 400, message: 'Bad Request', description: 'no' },
    });
    const res = await createCollection(
      t,
      t.demoToken,
      { currency: 'XOF', amount: 1500, customer: { phone_number: payer().e164 } },
      '/v1/collections/CI/rails/orange_money',
    );
    const failed = await waitStatus(t, t.demoToken, 'collection', res.body.collection_id, 'failed');
    assert.equal(failed.failure_reason, 'provider_refused');
    assert.equal(failed.payment_instruction, null, 'no page to show');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(webpayments(failed.collection_id).length, 1);
  });

  it('a lost notification: the collection still completes, by the status call of the poll', async () => {
    const p = payer();
    const created = performance.now();
    const { id, url, session } = await opened(p.e164);
    fake.callbacksPlan({ drop: 1 });
    const start = performance.now();
    await fake.payerSubmits(url, 'pay', p.national);
    const done = await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    process.stdout.write(
      `# Orange: create → successful ${since(created)} ms (paid → successful ${since(start)} ms), notification lost (poll every 1 s)\n`,
    );
    assert.equal(done.provider_receipt, session.txnid);
    // The mechanism: this session's notification was the one dropped, none reached us, and its status was called.
    assert.ok(fake.dropped.some((d) => (d.body as { notif_token?: string }).notif_token === session.notifToken));
    assert.equal(delivered(session).length, 0, 'no notification reached us');
    assert.ok(statusCalls(session).length >= 1, 'the poll called the status of its session');
  });

  it('a notification received twice makes one transition', async () => {
    const p = payer();
    const { id, url, session } = await opened(p.e164);
    fake.callbacksPlan({ duplicate: 1 });
    await fake.payerSubmits(url, 'pay', p.national);
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    await waitFor('both notifications', async () => (delivered(session).length === 2 ? true : undefined));
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(
      delivered(session).map((c) => c.status),
      [200, 200],
    );
    const events = await eventsAbout(t, t.demoToken, id);
    assert.equal(events.filter((e) => e.type === 'collection.successful').length, 1);
  });

  it('a forged notification changes nothing: a wrong notif_token is 404 and asks nothing; one Orange contradicts is ignored', async () => {
    const { id, session } = await opened(payer().e164);
    const path = `/v1/providers/orange/callbacks/${token}/notif/${orangeIdPart(id)}`;
    const forged = { status: 'SUCCESS', notif_token: 'f'.repeat(32), txnid: 'MP000000.0000.FORGED' };
    assertProblem(await request(t, 'POST', path, { body: forged }), 404, 'not_found');
    assertProblem(
      await request(t, 'POST', path.replace(token, 'cb_wrongwrongwrongwrong00'), {
        body: { ...forged, notif_token: session.notifToken },
      }),
      404,
      'not_found',
    );
    await new Promise((r) => setTimeout(r, 200));
    const callsBefore = statusCalls(session).length;
    // The right notif_token, but the payer never paid: Orange's status call says INITIATED.
    const claimed = await request(t, 'POST', path, { body: { ...forged, notif_token: session.notifToken } });
    assert.equal(claimed.status, 200, claimed.text);
    await waitFor('the status call', async () => (statusCalls(session).length > callsBefore ? true : undefined));
    await new Promise((r) => setTimeout(r, 1500));
    const now = await read(t, t.demoToken, 'collection', id);
    assert.equal(now.status, 'pending');
    assert.equal(now.provider_receipt, null);
    assertProblem(await request(t, 'POST', path, { body: { status: 'SUCCESS' } }), 400, 'validation_failed');
  });

  it('a token expiring in flight: one new token, and one session for the payer', async () => {
    await opened(payer().e164); // a token is cached
    const before = fake.tokensIssued;
    fake.expireTokens();
    const p = payer();
    const { id, url } = await opened(p.e164);
    assert.equal(fake.tokensIssued, before + 1);
    assert.equal(webpayments(id).length, 2, 'refused once for the stale token (code 42), then sent with the new one');
    assert.equal(fake.sessionsFor(orangeIdPart(id)).length, 1);
    await fake.payerSubmits(url, 'pay', p.national);
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
  });

  it('Orange answering 500 at initiation: asked again, one session opened and paid once', async () => {
    fake.inject({ method: 'POST', path: '/webpayment', status: 500 });
    const p = payer();
    const { id, url } = await opened(p.e164);
    assert.equal(webpayments(id).length, 2, 'sent again after the 500');
    assert.equal(fake.sessionsFor(orangeIdPart(id)).length, 1, 'the 500 opened nothing');
    await fake.payerSubmits(url, 'pay', p.national);
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
  });

  it('a webpayment whose answer never came: a new session, and the lost one, whose page nobody has, is never paid', async () => {
    fake.inject({ method: 'POST', path: '/webpayment', timeout: { processed: true } });
    const p = payer();
    const { id, url, session } = await opened(p.e164);
    const sessions = fake.sessionsFor(orangeIdPart(id));
    assert.equal(sessions.length, 2, 'Orange opened the first session; its answer was lost');
    const lost = sessions.find((s) => s !== session);
    assert.ok(lost);
    assert.notEqual(lost.body.order_id, session.body.order_id, 'each call its own order_id, as Orange requires');
    assert.ok(!url.endsWith(lost.payToken), 'the page shown is the second session’s');
    await fake.payerSubmits(url, 'pay', p.national);
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    assert.deepEqual(
      fake
        .sessionsFor(orangeIdPart(id))
        .map((s) => s.status)
        .sort(),
      ['INITIATED', 'SUCCESS'],
      'one payment: the lost session was never confirmed',
    );
  });
});

describe('Orange Money refunds and payouts: not offered by the Web Payment API', () => {
  it('a refund of an Orange Money collection is 422 naming the rail, and nothing is sent to Orange', async () => {
    const p = payer();
    const { id, url } = await opened(p.e164);
    await fake.payerSubmits(url, 'pay', p.national);
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    const callsBefore = fake.received.length;
    const res = await requestRefund(t, t.demoToken, id, 1500);
    assertProblem(res, 422, 'operation_not_supported');
    assert.match(res.body.detail, /CI\/orange_money/);
    assert.match(res.body.detail, /refund/);
    const refunds = await request(t, 'GET', `/v1/collections/${id}/refunds`, { token: t.demoToken });
    assert.deepEqual(refunds.body.data, []);
    assert.equal((await read(t, t.demoToken, 'collection', id)).status, 'successful');
    assert.ok(
      fake.received.slice(callsBefore).every((r) => r.path.endsWith('/transactionstatus')),
      'nothing but the poll’s status calls reached Orange',
    );
  });

  it('an offramp route paying out over CI/orange_money is 422 naming the rail', async () => {
    const res = await request(t, 'POST', '/v1/api/routes', {
      token: await liquidityProviderToken(t),
      body: { source: 'XOF', market: 'CI', rail: 'orange_money', min_amount: 100, max_amount: 1_000_000 },
    });
    assertProblem(res, 422, 'operation_not_supported');
    assert.match(res.body.detail, /CI\/orange_money/);
    assert.match(res.body.detail, /payout/);
  });
});

describe('Orange Money entries in PROVIDERS_FILE', () => {
  const entry = (over: Record<string, unknown> = {}) => ({
    type: 'orange_money',
    name: 'orange',
    rails: ['CI/orange_money'],
    base_url: 'https://api.orange.com',
    callback_token: 'd'.repeat(24),
    client_id: 'i',
    client_secret: 's',
    merchant_key: 'm',
    country: 'CI',
    currency: 'XOF',
    ...over,
  });
  async function plan(connectors: unknown[], publicBaseUrl = 'https://pay.example.com') {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'orange-config-'));
    try {
      const file = path.join(dir, 'providers.json');
      await writeFile(file, JSON.stringify({ connectors }));
      const config = loadConfig({ PROVIDERS_FILE: file, PUBLIC_BASE_URL: publicBaseUrl });
      return planProviders(config, new MarketCatalogue(loadCatalogue(undefined)), {});
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  it('one entry per country, each with its merchant key: CI and SN', async () => {
    const p = await plan([
      entry(),
      entry({ name: 'orange-sn', rails: ['SN/orange_money'], country: 'SN', merchant_key: 'm2' }),
    ]);
    assert.equal(p.rails.get('CI/orange_money'), 'orange');
    assert.equal(p.rails.get('SN/orange_money'), 'orange-sn');
  });

  it('a rail of another country than the merchant key’s is refused', async () => {
    await assert.rejects(
      plan([entry({ rails: ['SN/orange_money'] })]),
      (err: Error) =>
        err instanceof ConfigError && /SN\/orange_money: this connector serves CI in XOF/.test(err.message),
    );
  });

  it('a notif_url longer than Orange’s 120 characters stops the start, naming callback_token', async () => {
    // 23 + 31 + 35 + 7 + 25 = 121 characters.
    await assert.rejects(
      plan([entry({ callback_token: 'e'.repeat(35) })]),
      (err: Error) =>
        err instanceof ConfigError && /field callback_token: the notif_url .*121 characters/.test(err.message),
    );
    const p = await plan([entry({ callback_token: 'e'.repeat(34) })]);
    assert.equal(p.rails.get('CI/orange_money'), 'orange');
  });
});
