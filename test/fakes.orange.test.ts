// The Orange Money Web Payment fake refuses what Orange documents refusing (the form-only token request, its field
// limits, a reused order_id, a stale token), opens a payment page a payer can pay or cancel, notifies notif_url once
// with the session's notif_token, and answers the status call only for the order_id, amount and pay_token together.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { OrangeFake } from '../fakes/orange-money.js';
import { waitFor } from './helpers/harness.js';

const fake = new OrangeFake({ actAfterMs: 30 });
const api = (path: string) => `${fake.url}/orange-money-webpay/ci/v1${path}`;
let token = '';
let receiver: http.Server;
let notifUrl = '';
const received: unknown[] = [];

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as Record<string, any>) };
}

const auth = () => ({ authorization: `Bearer ${token}` });
let orders = 0;
const payment = (overrides: Record<string, unknown> = {}) => ({
  merchant_key: 'fake-merchant-key',
  currency: 'XOF',
  order_id: `order${(orders += 1)}`,
  amount: 1500,
  return_url: 'https://shop.example.com/ok',
  cancel_url: 'https://shop.example.com/ko',
  notif_url: notifUrl,
  lang: 'fr',
  reference: 'Boutique',
  ...overrides,
});

before(async () => {
  await fake.start();
  receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      received.push(JSON.parse(raw));
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  notifUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/notif`;
  const res = await fetch(`${fake.url}/oauth/v3/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('fake-client-id:fake-client-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  token = ((await res.json()) as { access_token: string }).access_token;
});
after(async () => {
  await fake.stop();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

describe('the Orange Money Web Payment fake', () => {
  it('the token request takes Basic client credentials and a form body only', async () => {
    const basicAuth = `Basic ${Buffer.from('fake-client-id:fake-client-secret').toString('base64')}`;
    const json = await post(
      `${fake.url}/oauth/v3/token`,
      { grant_type: 'client_credentials' },
      { authorization: basicAuth },
    );
    assert.equal(json.status, 400);
    assert.equal(json.body?.error, 'invalid_request');
    const wrong = await fetch(`${fake.url}/oauth/v3/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('fake-client-id:nope').toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    assert.equal(wrong.status, 401);
    assert.ok(token.length > 0);
  });

  it('webpayment refuses what Orange refuses: field limits, a non-integer amount, a reused order_id, a stale token', async () => {
    for (const [overrides, problem] of [
      [{ order_id: 'x'.repeat(31) }, 'order_id'],
      [{ reference: 'r'.repeat(31) }, 'reference'],
      [{ notif_url: `https://n.example.com/${'a'.repeat(100)}` }, 'notif_url'],
      [{ return_url: 'not a url' }, 'return_url'],
      [{ amount: 15.5 }, 'amount'],
      [{ lang: 'de' }, 'lang'],
      [{ currency: 'EUR' }, 'currency'],
    ] as const) {
      const res = await post(api('/webpayment'), payment(overrides), auth());
      assert.equal(res.status, 400, JSON.stringify(overrides));
      assert.match(String(res.body?.description), new RegExp(problem));
    }
    const bad = await post(api('/webpayment'), payment({ merchant_key: 'other' }), auth());
    assert.equal(bad.status, 403);
    const first = await post(api('/webpayment'), payment({ order_id: 'once' }), auth());
    assert.equal(first.status, 201);
    assert.equal((await post(api('/webpayment'), payment({ order_id: 'once' }), auth())).status, 400);
    assert.equal((await post(api('/webpayment'), payment(), { authorization: 'Bearer nope' })).body?.code, 41);
    const noAccept = await fetch(api('/webpayment'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/html', ...auth() },
      body: JSON.stringify(payment()),
    });
    assert.equal(noAccept.status, 406);
  });

  it('a session paid on its page: the payer goes to return_url, notif_url gets the notif_token once, the status call says SUCCESS', async () => {
    const order = payment();
    const opened = await post(api('/webpayment'), order, auth());
    assert.equal(opened.status, 201);
    const { pay_token: payToken, payment_url: url, notif_token: notifToken } = opened.body as Record<string, string>;
    const status = () =>
      post(api('/transactionstatus'), { order_id: order.order_id, amount: 1500, pay_token: payToken }, auth());
    assert.equal((await status()).body?.status, 'INITIATED');
    assert.equal((await fetch(url ?? '')).status, 200);
    const paid = await fake.payerSubmits(url ?? '', 'pay', '0700000001');
    assert.deepEqual(paid, { status: 302, location: 'https://shop.example.com/ok' });
    const notification = await waitFor('the notification', async () =>
      received.find((n) => (n as { notif_token?: string }).notif_token === notifToken),
    );
    const answer = await status();
    assert.equal(answer.status, 201);
    assert.equal(answer.body?.status, 'SUCCESS');
    assert.deepEqual(notification, { status: 'SUCCESS', notif_token: notifToken, txnid: answer.body?.txnid });
    assert.equal((await fake.payerSubmits(url ?? '', 'pay', '0700000001')).status, 410, 'paid once only');
    const other = await post(
      api('/transactionstatus'),
      { order_id: order.order_id, amount: 1600, pay_token: payToken },
      auth(),
    );
    assert.equal(other.status, 404, 'the amount must match');
  });

  it('a payer whose number fails: FAILED, notified; a session left alone expires unnotified', async () => {
    fake.outcomes.set('0700000002', 'FAILED');
    const order = payment();
    const opened = (await post(api('/webpayment'), order, auth())).body as Record<string, string>;
    await fake.payerSubmits(opened.payment_url ?? '', 'pay', '0700000002');
    await waitFor('the failure notification', async () =>
      received.find((n) => (n as { notif_token?: string }).notif_token === opened.notif_token),
    );
    const failed = await post(
      api('/transactionstatus'),
      { order_id: order.order_id, amount: 1500, pay_token: opened.pay_token },
      auth(),
    );
    assert.equal(failed.body?.status, 'FAILED');

    const idle = payment();
    const left = (await post(api('/webpayment'), idle, auth())).body as Record<string, string>;
    fake.expireSession(left.pay_token ?? '');
    const expired = await post(
      api('/transactionstatus'),
      { order_id: idle.order_id, amount: 1500, pay_token: left.pay_token },
      auth(),
    );
    assert.equal(expired.body?.status, 'EXPIRED');
    assert.equal((await fake.payerSubmits(left.payment_url ?? '', 'pay')).status, 410);
  });
});
