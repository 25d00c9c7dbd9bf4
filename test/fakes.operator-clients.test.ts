// Operator client libraries we did not write, from the npm registry (mpesa-node, mtn-momo), run against our fakes
// for the calls they share with our connectors: token, STK Push / RequestToPay, status, B2C / Transfer and balance.
// They send what real integrations send, so a fake that drifts from the operator (a header, a field, a credential
// it cannot read) fails here even when our own connector, written from the same reading, still passes.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as momo from 'mtn-momo';
import { DarajaFake, FAKE_INITIATOR_PASSWORD, SANDBOX_PASSKEY, SANDBOX_SHORTCODE } from '../fakes/mpesa-daraja.js';
import { MomoFake } from '../fakes/mtn-momo.js';
import { waitFor } from './helpers/harness.js';

/** mpesa-node as it is (no types of its own): the calls used here, each an axios promise. */
interface MpesaNode {
  baseURL: string;
  oAuth(): Promise<{ data: { access_token: string; expires_in: string } }>;
  lipaNaMpesaOnline(msisdn: number, amount: number, callbackUrl: string, accountRef: string): Promise<{ data: any }>;
  lipaNaMpesaQuery(checkoutRequestId: string): Promise<{ data: any }>;
  b2c(
    senderParty: number,
    receiverParty: number,
    amount: number,
    queueUrl: string,
    resultUrl: string,
  ): Promise<{ data: any }>;
  accountBalance(shortCode: number, idType: number, queueUrl: string, resultUrl: string): Promise<{ data: any }>;
}
const MpesaNode = createRequire(import.meta.url)('mpesa-node') as new (config: Record<string, unknown>) => MpesaNode;

/** A receiver for the fake's callbacks (STK results, B2C and balance results), by path. */
class Receiver {
  readonly received: { path: string; body: any }[] = [];
  private readonly server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      this.received.push({ path: req.url ?? '', body: JSON.parse(raw || 'null') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ResultCode":0,"ResultDesc":"Accepted"}');
    });
  });
  url = '';

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** The callback received on `path`, once it has come. */
  on(pathname: string): Promise<any> {
    return waitFor(`a callback on ${pathname}`, async () => this.received.find((r) => r.path === pathname)?.body);
  }
}

describe('mpesa-node against the Daraja fake', () => {
  const fake = new DarajaFake({ actAfterMs: 50 });
  const receiver = new Receiver();
  /** mpesa-node encrypts its initiator password with the certificate at certPath, as it does with Safaricom's. */
  const client = (initiatorPassword: string): MpesaNode => {
    const mpesa = new MpesaNode({
      consumerKey: 'fake-consumer-key',
      consumerSecret: 'fake-consumer-secret',
      environment: 'sandbox',
      shortCode: '600000',
      initiatorName: 'testapi',
      lipaNaMpesaShortCode: Number(SANDBOX_SHORTCODE),
      lipaNaMpesaShortPass: SANDBOX_PASSKEY,
      securityCredential: initiatorPassword,
      certPath: path.resolve(import.meta.dirname, '../fakes/daraja-test.cert.pem'),
    });
    mpesa.baseURL = fake.url;
    return mpesa;
  };
  before(async () => {
    await fake.start();
    await receiver.start();
  });
  after(async () => {
    await fake.stop();
    await receiver.stop();
  });

  it('OAuth gives it a token', async () => {
    const res = await client(FAKE_INITIATOR_PASSWORD).oAuth();
    assert.match(res.data.access_token, /^[A-Za-z0-9]{20,}$/);
    assert.equal(res.data.expires_in, '3599');
  });

  it('an STK Push is accepted, the payer pays, the callback comes and STK Push Query reports it', async () => {
    const mpesa = client(FAKE_INITIATOR_PASSWORD);
    const push = await mpesa.lipaNaMpesaOnline(254708374149, 10, `${receiver.url}/stk/1`, 'Order1');
    assert.equal(push.data.ResponseCode, '0');
    const callback = await receiver.on('/stk/1');
    assert.equal(callback.Body.stkCallback.CheckoutRequestID, push.data.CheckoutRequestID);
    assert.equal(callback.Body.stkCallback.ResultCode, 0);
    const query = await mpesa.lipaNaMpesaQuery(push.data.CheckoutRequestID);
    assert.equal(query.data.ResultCode, '0');
  });

  it('B2C with the initiator password encrypted with the published certificate pays (ResultCode 0)', async () => {
    const res = await client(FAKE_INITIATOR_PASSWORD).b2c(
      600000,
      254708374149,
      5,
      `${receiver.url}/b2c/timeout/1`,
      `${receiver.url}/b2c/result/1`,
    );
    assert.equal(res.data.ResponseCode, '0');
    const result = (await receiver.on('/b2c/result/1')).Result;
    assert.equal(result.ResultCode, 0, JSON.stringify(result));
    assert.ok(result.ResultParameters.ResultParameter.some((p: any) => p.Key === 'TransactionReceipt'));
  });

  it('B2C with a wrong initiator password is accepted, then refused by result: 2001 "The initiator information is invalid."', async () => {
    const res = await client('Not-The-Password-1').b2c(
      600000,
      254708374149,
      5,
      `${receiver.url}/b2c/timeout/2`,
      `${receiver.url}/b2c/result/2`,
    );
    assert.equal(res.data.ResponseCode, '0');
    const result = (await receiver.on('/b2c/result/2')).Result;
    assert.equal(result.ResultCode, 2001);
    assert.equal(result.ResultDesc, 'The initiator information is invalid.');
  });

  it('Account Balance answers by result with the working account in AccountBalance', async () => {
    const res = await client(FAKE_INITIATOR_PASSWORD).accountBalance(
      600000,
      4,
      `${receiver.url}/balance/timeout`,
      `${receiver.url}/balance/result`,
    );
    assert.equal(res.data.ResponseCode, '0');
    const result = (await receiver.on('/balance/result')).Result;
    assert.equal(result.ResultCode, 0, JSON.stringify(result));
    const balance = result.ResultParameters.ResultParameter.find((p: any) => p.Key === 'AccountBalance')?.Value;
    // 10 paid in by STK, 5 paid out by B2C.
    assert.match(String(balance), /^Working Account\|KES\|5\.00\|5\.00\|0\.00\|0\.00&/);
  });
});

describe('mtn-momo against the MTN MoMo fake', () => {
  const fake = new MomoFake({ actAfterMs: 50 });
  let collections: ReturnType<ReturnType<typeof momo.create>['Collections']>;
  let disbursements: ReturnType<ReturnType<typeof momo.create>['Disbursements']>;
  before(async () => {
    await fake.start();
    const client = momo.create({ callbackHost: '127.0.0.1', baseUrl: fake.url, environment: momo.Environment.SANDBOX });
    collections = client.Collections({
      primaryKey: 'fake-collection-key',
      userId: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a01',
      userSecret: 'fake-collection-api-key',
    });
    disbursements = client.Disbursements({
      primaryKey: 'fake-disbursement-key',
      userId: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a02',
      userSecret: 'fake-disbursement-api-key',
    });
  });
  after(async () => fake.stop());

  it('RequestToPay (token, then the request) settles, and its status reads SUCCESSFUL', async () => {
    const referenceId = await collections.requestToPay({
      amount: '50',
      currency: 'EUR',
      externalId: 'order-1',
      payer: { partyIdType: momo.PayerType.MSISDN, partyId: '46733123454' },
      payerMessage: 'Order 1',
      payeeNote: 'Order 1',
    });
    assert.ok(fake.operations.has(referenceId), 'the fake took the request under its X-Reference-Id');
    const paid = await waitFor('the payment', async () => {
      const transaction = await collections.getTransaction(referenceId);
      return transaction.status === momo.Status.SUCCESSFUL ? transaction : undefined;
    });
    assert.equal(paid.amount, '50');
    assert.ok(paid.financialTransactionId);
  });

  it('RequestToPay without externalId is taken (MTN does not require it)', async () => {
    const referenceId = await collections.requestToPay({
      amount: '5',
      currency: 'EUR',
      payer: { partyIdType: momo.PayerType.MSISDN, partyId: '46733123454' },
    });
    assert.ok(fake.operations.has(referenceId));
  });

  it('the account balance and the account holder check answer in the shapes the client reads', async () => {
    await waitFor('both payments', async () =>
      [...fake.operations.values()].every((o) => o.status === 'SUCCESSFUL') ? true : undefined,
    );
    assert.deepEqual(await collections.getBalance(), { availableBalance: '55', currency: 'EUR' });
    assert.deepEqual(await collections.isPayerActive('46733123454'), { result: true });
    assert.deepEqual(await collections.isPayerActive('46733123455'), { result: false }, 'MTN: payer not found');
  });

  it('Transfer (the disbursement token, then the request) settles and its status reads SUCCESSFUL', async () => {
    const referenceId = randomUUID();
    await disbursements.transfer({
      referenceId,
      amount: '20',
      currency: 'EUR',
      externalId: 'payout-1',
      payee: { partyIdType: momo.PayerType.MSISDN, partyId: '46733123454' },
      payerMessage: 'Payout 1',
      payeeNote: 'Payout 1',
    });
    const paid = await waitFor('the transfer', async () => {
      const transaction = await disbursements.getTransaction(referenceId);
      return transaction.status === momo.Status.SUCCESSFUL ? transaction : undefined;
    });
    assert.equal(paid.amount, '20');
    assert.deepEqual(await disbursements.getBalance(), { availableBalance: '35', currency: 'EUR' });
  });
});
