// The operator fakes refuse what their operators document refusing, with the operators' own status codes and
// bodies, so a connector that passes against them has met the real API's rules. Also their control endpoint.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AirtelFake } from '../fakes/airtel-money.js';
import { DarajaFake, SANDBOX_PASSKEY, SANDBOX_SHORTCODE } from '../fakes/mpesa-daraja.js';
import { MomoFake } from '../fakes/mtn-momo.js';
import { WaveFake } from '../fakes/wave.js';
import { verifyWaveSignature } from '../src/modules/providers/wave/wave.connector.js';
import { waitFor } from './helpers/harness.js';

interface Answer {
  status: number;
  text: string;
  body: any;
}

async function call(
  url: string,
  method: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, text, body: parsed };
}

describe('the M-Pesa Daraja fake', () => {
  const fake = new DarajaFake({ actAfterMs: 50 });
  let token = '';
  const basicAuth = (key: string, secret: string) => ({
    authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`,
  });
  const stk = (overrides: Record<string, unknown> = {}) => {
    const timestamp = '20261123120000';
    return {
      BusinessShortCode: SANDBOX_SHORTCODE,
      Password: Buffer.from(`${SANDBOX_SHORTCODE}${SANDBOX_PASSKEY}${timestamp}`).toString('base64'),
      Timestamp: timestamp,
      TransactionType: 'CustomerPayBillOnline',
      Amount: 10,
      PartyA: '254708374149',
      PartyB: SANDBOX_SHORTCODE,
      PhoneNumber: '254708374149',
      CallBackURL: 'https://merchant.example.com/cb',
      AccountReference: 'order42',
      TransactionDesc: 'Payment',
      ...overrides,
    };
  };
  before(async () => {
    await fake.start();
    token = (
      await call(
        `${fake.url}/oauth/v1/generate?grant_type=client_credentials`,
        'GET',
        basicAuth('fake-consumer-key', 'fake-consumer-secret'),
      )
    ).body.access_token;
  });
  after(() => fake.stop());

  it('OAuth: a string expires_in; wrong credentials are a 400 with an empty body; a wrong grant type is 400.008.02', async () => {
    const ok = await call(
      `${fake.url}/oauth/v1/generate?grant_type=client_credentials`,
      'GET',
      basicAuth('fake-consumer-key', 'fake-consumer-secret'),
    );
    assert.equal(ok.status, 200);
    assert.equal(ok.body.expires_in, '3599');
    assert.match(ok.body.access_token, /^[A-Za-z0-9]{28}$/);
    // A new token invalidates the app's previous one (Daraja's FAQ): the one from `before` is refused now.
    const stale = await call(
      `${fake.url}/mpesa/stkpush/v1/processrequest`,
      'POST',
      { authorization: `Bearer ${token}` },
      stk(),
    );
    assert.deepEqual([stale.status, stale.body.errorCode], [404, '404.001.03']);
    token = ok.body.access_token;
    const wrong = await call(
      `${fake.url}/oauth/v1/generate?grant_type=client_credentials`,
      'GET',
      basicAuth('fake-consumer-key', 'nope'),
    );
    assert.deepEqual([wrong.status, wrong.text], [400, '']);
    const grant = await call(
      `${fake.url}/oauth/v1/generate?grant_type=password`,
      'GET',
      basicAuth('fake-consumer-key', 'fake-consumer-secret'),
    );
    assert.equal(grant.body.errorCode, '400.008.02');
  });

  it('an API call without a valid token is 404 404.001.03 "Invalid Access Token"', async () => {
    const res = await call(
      `${fake.url}/mpesa/stkpush/v1/processrequest`,
      'POST',
      { authorization: 'Bearer stale' },
      stk(),
    );
    assert.equal(res.status, 404);
    assert.deepEqual([res.body.errorCode, res.body.errorMessage], ['404.001.03', 'Invalid Access Token']);
  });

  it('STK Push refuses what Daraja refuses', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const cases: [Record<string, unknown>, number, string, string][] = [
      [{ Amount: '10.50' }, 400, '400.002.02', 'Bad Request - Invalid Amount'],
      [{ Amount: 0 }, 400, '400.002.02', 'Bad Request - Invalid Amount'],
      [{ PhoneNumber: '+254708374149' }, 400, '400.002.02', 'Bad Request - Invalid PhoneNumber'],
      [{ PhoneNumber: '0708374149' }, 400, '400.002.02', 'Bad Request - Invalid PhoneNumber'],
      [{ CallBackURL: 'https://shop.example.com/mpesa/cb' }, 400, '400.002.02', 'Bad Request - Invalid CallBackURL'],
      [{ CallBackURL: 'not a url' }, 400, '400.002.02', 'Bad Request - Invalid CallBackURL'],
      [{ AccountReference: 'thirteen-char' }, 400, '400.002.02', 'Bad Request - Invalid AccountReference'],
      [{ TransactionType: 'CustomerPayBill' }, 400, '400.002.02', 'Bad Request - Invalid TransactionType'],
      [{ Password: 'd3Jvbmc=' }, 500, '500.001.1001', 'Wrong credentials'],
      [{ BusinessShortCode: '999999' }, 500, '500.001.1001', 'Merchant does not exist'],
    ];
    for (const [overrides, status, code, message] of cases) {
      const res = await call(`${fake.url}/mpesa/stkpush/v1/processrequest`, 'POST', auth, stk(overrides));
      assert.deepEqual(
        [res.status, res.body.errorCode, res.body.errorMessage],
        [status, code, message],
        JSON.stringify(overrides),
      );
    }
    const form = await fetch(`${fake.url}/mpesa/stkpush/v1/processrequest`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=b',
    });
    assert.equal(
      ((await form.json()) as { errorMessage: string }).errorMessage,
      'Bad Request - Invalid BusinessShortCode',
    );
  });

  it('STK Push Query: "being processed" while the payer has not acted, then the string ResultCode; an unknown id does not exist', async () => {
    const auth = { authorization: `Bearer ${token}` };
    fake.outcomes.set('254711001032', '1032');
    fake.callbacksPlan({ drop: 1 });
    const push = await call(
      `${fake.url}/mpesa/stkpush/v1/processrequest`,
      'POST',
      auth,
      stk({ PartyA: '254711001032', PhoneNumber: '254711001032' }),
    );
    assert.equal(push.status, 200);
    assert.equal(push.body.ResponseCode, '0');
    const query = (id: string) => {
      const { BusinessShortCode, Password, Timestamp } = stk();
      return call(`${fake.url}/mpesa/stkpushquery/v1/query`, 'POST', auth, {
        BusinessShortCode,
        Password,
        Timestamp,
        CheckoutRequestID: id,
      });
    };
    const early = await query(push.body.CheckoutRequestID);
    assert.deepEqual(
      [early.status, early.body.errorMessage, early.body.requestId],
      [500, 'The transaction is being processed', push.body.CheckoutRequestID],
    );
    const late = await waitFor('the payer', async () => {
      const res = await query(push.body.CheckoutRequestID);
      return res.status === 200 ? res : undefined;
    });
    assert.deepEqual([late.body.ResultCode, late.body.ResultDesc], ['1032', 'Request cancelled by user']);
    assert.equal((await query('ws_CO_000000000000000000000')).body.errorMessage, 'This transaction does not exist');
  });

  it('B2C v3 refuses a repeated OriginatorConversationID', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const body = {
      OriginatorConversationID: randomUUID(),
      InitiatorName: 'testapi',
      SecurityCredential: 'fake-security-credential',
      CommandID: 'BusinessPayment',
      Amount: 10,
      PartyA: '600000',
      PartyB: '254708374149',
      Remarks: 'payout',
      QueueTimeOutURL: 'https://merchant.example.com/timeout',
      ResultURL: 'https://merchant.example.com/result',
      Occasion: '',
    };
    assert.equal((await call(`${fake.url}/mpesa/b2c/v3/paymentrequest`, 'POST', auth, body)).body.ResponseCode, '0');
    const again = await call(`${fake.url}/mpesa/b2c/v3/paymentrequest`, 'POST', auth, body);
    assert.deepEqual([again.status, again.body.errorCode], [500, '500.002.1001']);
  });
});

describe('the MTN MoMo fake', () => {
  const fake = new MomoFake({ actAfterMs: 50 });
  let token = '';
  const key = { 'ocp-apim-subscription-key': 'fake-collection-key' };
  const pay = (headers: Record<string, string>, body: Record<string, unknown> = {}) =>
    call(
      `${fake.url}/collection/v1_0/requesttopay`,
      'POST',
      { ...key, authorization: `Bearer ${token}`, 'x-target-environment': 'sandbox', ...headers },
      {
        amount: '10',
        currency: 'EUR',
        externalId: 'order-1',
        payer: { partyIdType: 'MSISDN', partyId: '46733123451' },
        payerMessage: 'Pay',
        payeeNote: 'Pay',
        ...body,
      },
    );
  before(async () => {
    await fake.start();
    const res = await call(`${fake.url}/collection/token/`, 'POST', {
      ...key,
      authorization: `Basic ${Buffer.from('5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a01:fake-collection-api-key').toString('base64')}`,
    });
    token = res.body.access_token;
    assert.equal(res.body.expires_in, 3600);
  });
  after(() => fake.stop());

  it('tokens: a wrong subscription key is the gateway’s 401; wrong API user credentials are 500 login_failed', async () => {
    const noKey = await call(`${fake.url}/collection/token/`, 'POST', { 'ocp-apim-subscription-key': 'wrong' });
    assert.deepEqual([noKey.status, noKey.body.statusCode], [401, 401]);
    const wrong = await call(`${fake.url}/collection/token/`, 'POST', {
      ...key,
      authorization: `Basic ${Buffer.from('user:nope').toString('base64')}`,
    });
    assert.deepEqual([wrong.status, wrong.body], [500, { error: 'login_failed' }]);
  });

  it('RequestToPay refuses what MoMo refuses; a reused X-Reference-Id is 409; the published test number 46733123451 is rejected by the payer', async () => {
    const id = randomUUID();
    assert.equal(
      (await pay({ 'x-reference-id': '01890a5d-ac96-774b-bcce-b302099a8057' })).status,
      400,
      'a UUID other than v4',
    );
    assert.equal((await pay({ 'x-reference-id': randomUUID() }, { payerMessage: "it's" })).status, 400);
    assert.equal(
      (await pay({ 'x-reference-id': randomUUID() }, { amount: 10 })).status,
      400,
      'amount must be a string',
    );
    const currency = await pay({ 'x-reference-id': randomUUID() }, { currency: 'GHS' });
    assert.deepEqual([currency.status, currency.body.code], [500, 'INVALID_CURRENCY']);
    const environment = await pay({ 'x-reference-id': randomUUID(), 'x-target-environment': 'mtnghana' });
    assert.deepEqual([environment.status, environment.body.code], [500, 'NOT_ALLOWED_TARGET_ENVIRONMENT']);
    const stale = await pay({ 'x-reference-id': randomUUID(), authorization: 'Bearer stale' });
    assert.equal(stale.status, 401);
    assert.equal(stale.body.statusCode, undefined, 'not the gateway’s subscription-key 401');
    assert.equal((await pay({ 'x-reference-id': id })).status, 202);
    const again = await pay({ 'x-reference-id': id });
    assert.deepEqual([again.status, again.body.code], [409, 'RESOURCE_ALREADY_EXIST']);
    const read = () =>
      call(`${fake.url}/collection/v1_0/requesttopay/${id}`, 'GET', {
        ...key,
        authorization: `Bearer ${token}`,
        'x-target-environment': 'sandbox',
      });
    const failed = await waitFor('the payer', async () => {
      const res = await read();
      return res.body.status === 'FAILED' ? res : undefined;
    });
    assert.equal(failed.body.reason, 'APPROVAL_REJECTED');
    const unknown = await call(`${fake.url}/collection/v1_0/requesttopay/${randomUUID()}`, 'GET', {
      ...key,
      authorization: `Bearer ${token}`,
      'x-target-environment': 'sandbox',
    });
    assert.deepEqual([unknown.status, unknown.body.code], [404, 'RESOURCE_NOT_FOUND']);
  });

  it('the control endpoint injects faults: the next call answers 503', async () => {
    assert.equal(
      (await call(`${fake.url}/__fake/control`, 'POST', {}, { fault: { path: '/requesttopay', status: 503 } })).status,
      200,
    );
    const res = await pay({ 'x-reference-id': randomUUID() });
    assert.deepEqual([res.status, res.body.code], [503, 'SERVICE_UNAVAILABLE']);
    assert.equal((await pay({ 'x-reference-id': randomUUID() })).status, 202);
  });

  it('a fault scoped to POST is not taken by a status query on the same path', async () => {
    const control = { fault: { method: 'POST', path: '/requesttopay', status: 503 } };
    assert.equal((await call(`${fake.url}/__fake/control`, 'POST', {}, control)).status, 200);
    const query = await call(`${fake.url}/collection/v1_0/requesttopay/${randomUUID()}`, 'GET', {
      ...key,
      authorization: `Bearer ${token}`,
      'x-target-environment': 'sandbox',
    });
    assert.deepEqual([query.status, query.body.code], [404, 'RESOURCE_NOT_FOUND']);
    const res = await pay({ 'x-reference-id': randomUUID() });
    assert.deepEqual([res.status, res.body.code], [503, 'SERVICE_UNAVAILABLE']);
  });
});

describe('the Airtel Money fake', () => {
  const fake = new AirtelFake({ actAfterMs: 50, pin: 'encrypted-pin' });
  let token = '';
  const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(
      `${fake.url}${path}`,
      method,
      { authorization: `Bearer ${token}`, 'x-country': 'KE', 'x-currency': 'KES', ...headers },
      body,
    );
  const payment = (id: string, msisdn = '733123456') => ({
    reference: 'order42',
    subscriber: { country: 'KE', currency: 'KES', msisdn },
    transaction: { amount: 10, country: 'KE', currency: 'KES', id },
  });
  before(async () => {
    await fake.start();
    const res = await call(
      `${fake.url}/auth/oauth2/token`,
      'POST',
      {},
      { client_id: 'fake-client-id', client_secret: 'fake-client-secret', grant_type: 'client_credentials' },
    );
    token = res.body.access_token;
    assert.equal(res.body.expires_in, '180');
  });
  after(() => fake.stop());

  it('the token endpoint and the gateway refuse as Airtel does', async () => {
    const bad = await call(
      `${fake.url}/auth/oauth2/token`,
      'POST',
      {},
      { client_id: 'x', client_secret: 'y', grant_type: 'client_credentials' },
    );
    assert.deepEqual([bad.status, bad.body.error], [400, 'invalid_client']);
    const missing = await call(
      `${fake.url}/merchant/v1/payments/`,
      'POST',
      { 'x-country': 'KE', 'x-currency': 'KES' },
      payment(randomUUID()),
    );
    assert.deepEqual([missing.status, missing.body.error], [401, 'invalid_request']);
    const stale = await api('POST', '/merchant/v1/payments/', payment(randomUUID()), { authorization: 'Bearer stale' });
    assert.deepEqual([stale.status, stale.body.error], [401, 'invalid_token']);
  });

  it('business errors are HTTP 200 with status.success false: a number with its country code, a repeated id, an unknown enquiry, a wrong PIN', async () => {
    const withCode = await api('POST', '/merchant/v1/payments/', payment(randomUUID(), '254733123456'));
    assert.deepEqual(
      [withCode.status, withCode.body.status.success, withCode.body.status.result_code],
      [200, false, 'ESB000033'],
    );
    const id = randomUUID();
    const ok = await api('POST', '/merchant/v1/payments/', payment(id));
    assert.deepEqual([ok.status, ok.body.status.success, ok.body.data.transaction.id], [200, true, id]);
    const again = await api('POST', '/merchant/v1/payments/', payment(id));
    assert.deepEqual([again.status, again.body.status.result_code], [200, 'ESB000041']);
    const unknown = await api('GET', `/standard/v1/payments/${randomUUID()}`);
    assert.deepEqual(
      [unknown.status, unknown.body.status.success, unknown.body.status.result_code],
      [200, false, 'ESB000045'],
    );
    const pin = await api('POST', '/standard/v2/disbursements/', {
      payee: { msisdn: '733123456', wallet_type: 'NORMAL' },
      reference: 'payout1',
      pin: 'wrong',
      transaction: { amount: 10, id: randomUUID(), type: 'B2C' },
    });
    assert.deepEqual([pin.status, pin.body.status.message], [200, 'Incorrect Encrypted Pin']);
  });
});

describe('the Wave fake', () => {
  const fake = new WaveFake({ actAfterMs: 50, webhookSecret: 'whs' });
  const key = 'wave_sn_prod_fake-api-key';
  const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(`${fake.url}${path}`, method, { authorization: `Bearer ${key}`, ...headers }, body);
  const checkout = (overrides: Record<string, unknown> = {}) => ({
    amount: '1500',
    currency: 'XOF',
    client_reference: randomUUID(),
    success_url: 'https://shop.example/ok',
    error_url: 'https://shop.example/ko',
    ...overrides,
  });
  const received: { headers: Record<string, string>; raw: string }[] = [];
  let hook: import('node:http').Server;
  before(async () => {
    await fake.start();
    const http = await import('node:http');
    hook = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        received.push({ headers: req.headers as Record<string, string>, raw });
        res.end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const address = hook.address();
    fake.webhookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
  });
  after(async () => {
    await fake.stop();
    await new Promise<void>((resolve) => hook.close(() => resolve()));
  });

  it("refuses a missing, unreadable, unknown or revoked API key with Wave's 401 codes", async () => {
    const codes = async (headers: Record<string, string>) =>
      (await call(`${fake.url}/v1/checkout/sessions/search?client_reference=x`, 'GET', headers)).body.code;
    assert.equal(await codes({}), 'missing-auth-header');
    assert.equal(await codes({ authorization: 'Basic abc' }), 'invalid-auth');
    assert.equal(await codes({ authorization: 'Bearer wave_sn_prod_other' }), 'api-key-not-found');
    fake.expireTokens();
    assert.equal(await codes({ authorization: `Bearer ${key}` }), 'api-key-revoked');
    fake.restoreKey();
    assert.equal((await api('GET', '/v1/checkout/sessions/search?client_reference=x')).status, 200);
  });

  it('a checkout session refuses what Wave refuses: decimals in XOF, a number amount, http URLs, unknown fields, a mobile not in E.164', async () => {
    for (const bad of [
      { amount: '1500.50' },
      { amount: 1500 },
      { amount: '0' },
      { success_url: 'http://shop.example/ok' },
      { currency: 'EUR' },
      { colour: 'blue' },
      { restrict_payer_mobile: '771234567' },
    ]) {
      const res = await api('POST', '/v1/checkout/sessions', checkout(bad));
      assert.deepEqual([res.status, res.body.code], [400, 'request-validation-error'], JSON.stringify(bad));
    }
    const ok = await api('POST', '/v1/checkout/sessions', checkout({ restrict_payer_mobile: '+221771234567' }));
    assert.equal(ok.status, 200, ok.text);
    assert.match(ok.body.id, /^cos-/);
    assert.equal(ok.body.wave_launch_url, `${fake.url}/c/${ok.body.id}`);
    assert.deepEqual([ok.body.checkout_status, ok.body.payment_status], ['open', 'processing']);
    assert.equal((await api('GET', '/v1/checkout/sessions/cos-nope')).status, 404);
  });

  it('the payer pays; the webhook is signed as Wave signs it; a paid session cannot be expired and is refunded once', async () => {
    const made = await api('POST', '/v1/checkout/sessions', checkout());
    const ofThis = (w: { raw: string }) => JSON.parse(w.raw).data.id === made.body.id;
    const webhook = await waitFor('the webhook', async () => received.find(ofThis));
    verifyWaveSignature('whs', webhook.raw, webhook.headers);
    assert.throws(() => verifyWaveSignature('another', webhook.raw, webhook.headers));
    const event = JSON.parse(webhook.raw);
    assert.equal(event.type, 'checkout.session.completed');
    assert.equal(event.data.id, made.body.id);
    const paid = await api('GET', `/v1/checkout/sessions/${made.body.id}`);
    assert.deepEqual([paid.body.checkout_status, paid.body.payment_status], ['complete', 'succeeded']);
    assert.match(paid.body.transaction_id, /^T_/);
    assert.equal((await api('POST', `/v1/checkout/sessions/${made.body.id}/expire`)).status, 409);
    assert.equal((await api('POST', `/v1/checkout/sessions/${made.body.id}/refund`)).status, 200);
    const again = await api('POST', `/v1/checkout/sessions/${made.body.id}/refund`);
    assert.deepEqual([again.status, again.body.code], [409, 'checkout-refund-failed']);
  });

  it('a payout needs an idempotency key; the same key answers the same payout, another body under it is 409', async () => {
    const body = { currency: 'XOF', receive_amount: '1000', mobile: '+221771234567', client_reference: 'po-1' };
    assert.equal((await api('POST', '/v1/payout', body)).status, 400);
    const first = await api('POST', '/v1/payout', body, { 'idempotency-key': 'k-1' });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual([first.body.status, first.body.receive_amount], ['succeeded', '1000']);
    const retry = await api('POST', '/v1/payout', body, { 'idempotency-key': 'k-1' });
    assert.equal(retry.body.id, first.body.id);
    const other = await api('POST', '/v1/payout', { ...body, receive_amount: '2000' }, { 'idempotency-key': 'k-1' });
    assert.deepEqual([other.status, other.body.code], [409, 'idempotency-mismatch']);
    fake.outcomes.set('+221770000000', { error: 'insufficient-funds' });
    const failed = await api('POST', '/v1/payout', { ...body, mobile: '+221770000000' }, { 'idempotency-key': 'k-2' });
    assert.deepEqual([failed.body.status, failed.body.payout_error.error_code], ['failed', 'insufficient-funds']);
    const found = await api('GET', '/v1/payouts/search?client_reference=po-1');
    assert.equal(found.body.result.length, 2);
  });
});
