// The Airtel Money connector against the Airtel fake (fakes/airtel-money.ts): USSD-push collections, refunds and
// disbursements end to end, Airtel's failure codes and its HTTP-200 business errors, callbacks lost, repeated or
// forged, a token that expires in flight, and an Airtel outage at initiation, with the payer prompted once.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AirtelFake } from '../fakes/airtel-money.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import {
  eventsAbout,
  payoutDesk,
  read,
  since,
  startConnectorApp,
  waitStatus,
  type ConnectorApp,
} from './helpers/connectors.js';
import { assertProblem, createCollection, newKey, request, waitFor, type TestApp } from './helpers/harness.js';

const PIN =
  'KYJExln8rZwb14G1K5UE5YF/lD7KheNUM171MUEG3/f/QD8nmNKRsa44UZkh6A4cR7p5Bhd4LE1tNbM8sgy3VI0wGEhIYjfQ3EmjvI5hXbzp4lk8rTvDJQ==';
const fake = new AirtelFake({ actAfterMs: 150, country: 'KE', currency: 'KES', pin: PIN });
let app: ConnectorApp;
let t: TestApp;

before(async () => {
  await fake.start();
  app = await startConnectorApp({
    type: 'airtel_money',
    name: 'airtel',
    rails: ['KE/airtel_money'],
    base_url: fake.url,
    client_id: 'fake-client-id',
    client_secret: { env: 'TEST_AIRTEL_CLIENT_SECRET' },
    country: 'KE',
    currency: 'KES',
    pin: PIN,
  });
  t = app.t;
  // Airtel's callback URL is registered in its portal: the connector's base, with no sub-path.
  fake.callbackUrl = app.callbackBase;
});
after(async () => {
  await app.close();
  await fake.stop();
});
process.env.TEST_AIRTEL_CLIENT_SECRET = 'fake-client-secret';

let numbers = 0;
const phone = (): string => `+25473${String(1_000_000 + (numbers += 1)).slice(-7)}`;
/** Airtel's msisdn: without the country code. */
const national = (p: string): string => p.slice(4);
const collect = (p: string, amount = 1500) =>
  createCollection(t, t.demoToken, { amount, customer: { phone_number: p } }, '/v1/collections/KE/rails/airtel_money');

describe('Airtel Money collections', () => {
  it('a payment reaches successful with its Airtel Money id kept on the collection and in its events', async () => {
    const p = phone();
    const start = performance.now();
    const created = await collect(p);
    assert.equal(created.status, 201, created.text);
    const id = created.body.collection_id as string;
    const done = await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    const elapsed = since(start);
    const tx = fake.transactions.get(id);
    assert.ok(tx, "Airtel's transaction.id is our id");
    assert.equal(done.provider_receipt, tx.airtelMoneyId);
    const sent = fake.requests('POST', '/merchant/v1/payments/').find((r) => (r.json as any).transaction.id === id);
    assert.equal(sent?.headers['x-country'], 'KE');
    assert.equal(sent?.headers['x-currency'], 'KES');
    assert.deepEqual((sent?.json as any).subscriber, { country: 'KE', currency: 'KES', msisdn: national(p) });
    assert.equal((sent?.json as any).transaction.amount, 15);
    assert.equal(fake.prompts(national(p)), 1);
    const events = await eventsAbout(t, t.demoToken, id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['collection.created', 'collection.pending', 'collection.processing', 'collection.successful'],
    );
    assert.equal(events.at(-1)?.data.provider_receipt, tx.airtelMoneyId);
    process.stdout.write(`# Airtel: create → successful with the callback on time: ${elapsed} ms\n`);
  });

  for (const [code, expected] of [
    ['DP00800001002', 'wrong_pin'],
    ['DP00800001003', 'payer_limit_reached'],
    ['DP00800001005', 'prompt_expired'],
    ['DP00800001007', 'insufficient_funds'],
    ['DP00800001008', 'payer_declined'],
    ['DP00800001024', 'prompt_expired'],
  ] as const) {
    it(`a payment Airtel fails with ${code} fails the collection with ${expected}`, async () => {
      const p = phone();
      fake.outcomes.set(national(p), { status: 'TF', code });
      const created = await collect(p);
      const failed = await waitStatus(t, t.demoToken, 'collection', created.body.collection_id, 'failed');
      assert.equal(failed.failure_reason, expected);
    });
  }

  it("Airtel's HTTP-200 business errors fail the collection at once with a reason, and are not sent again", async () => {
    for (const [code, expected] of [
      ['ESB000033', 'payer_not_found'],
      ['ESB000039', 'provider_refused'],
    ] as const) {
      const p = phone();
      fake.businessError(code);
      const created = await collect(p);
      const failed = await waitStatus(t, t.demoToken, 'collection', created.body.collection_id, 'failed');
      assert.equal(failed.failure_reason, expected, code);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(
        fake
          .requests('POST', '/merchant/v1/payments/')
          .filter((r) => (r.json as any).transaction.id === created.body.collection_id).length,
        1,
        `${code} was not retried`,
      );
    }
    // An ambiguous one (ESB000001: "do an enquiry") is asked again, under the same id: one prompt.
    const p = phone();
    fake.businessError('ESB000001');
    const created = await collect(p);
    await waitStatus(t, t.demoToken, 'collection', created.body.collection_id, 'successful', 20_000);
    assert.equal(fake.prompts(national(p)), 1);
  });

  it('a lost callback: the collection still completes, by the enquiry', async () => {
    fake.callbacksPlan({ drop: 1 });
    const start = performance.now();
    const created = await collect(phone());
    const done = await waitStatus(t, t.demoToken, 'collection', created.body.collection_id, 'successful');
    process.stdout.write(
      `# Airtel: create → successful with the callback lost (RECONCILE_AFTER_SECONDS=2): ${since(start)} ms\n`,
    );
    assert.ok(done.provider_receipt);
  });

  it('a callback received twice makes one transition', async () => {
    fake.callbacksPlan({ duplicate: 1 });
    const created = await collect(phone());
    const id = created.body.collection_id as string;
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    await waitFor('both callbacks', async () =>
      fake.callbacks.filter((c) => (c.body as any).transaction.id === id).length === 2 ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await eventsAbout(t, t.demoToken, id)).filter((e) => e.type === 'collection.successful').length, 1);
  });

  it('a forged callback changes nothing: a wrong token is 404, and one the enquiry contradicts is ignored', async () => {
    const p = phone();
    fake.outcomes.set(national(p), { status: 'TIP' });
    const created = await collect(p);
    const id = created.body.collection_id as string;
    await waitStatus(t, t.demoToken, 'collection', id, 'pending');
    const forged = { transaction: { id, message: 'Paid', status_code: 'TS', airtel_money_id: 'MP000000.0000.FORGED' } };
    assertProblem(
      await request(t, 'POST', '/v1/providers/airtel/callbacks/cb_not_the_token_at_all', { body: forged }),
      404,
      'not_found',
    );
    const before = fake.requests('GET', `/standard/v1/payments/${id}`).length;
    const res = await request(t, 'POST', app.callbackBase.replace(t.baseUrl, ''), { body: forged });
    assert.equal(res.status, 200, res.text);
    await waitFor('the enquiry', async () =>
      fake.requests('GET', `/standard/v1/payments/${id}`).length > before ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const now = await read(t, t.demoToken, 'collection', id);
    assert.equal(now.status, 'pending');
    assert.equal(now.provider_receipt, null);
  });

  it('a token expiring in flight: one new token, and the payer is prompted once', async () => {
    await collect(phone());
    await new Promise((r) => setTimeout(r, 300));
    const before = fake.requests('POST', '/auth/oauth2/token').length;
    fake.expireTokens();
    const p = phone();
    const created = await collect(p);
    await waitStatus(t, t.demoToken, 'collection', created.body.collection_id, 'successful');
    assert.equal(fake.requests('POST', '/auth/oauth2/token').length, before + 1);
    assert.equal(fake.prompts(national(p)), 1);
  });

  it('Airtel answering 500, or not at all, at initiation: retried under the same id, and the payer prompted once', async () => {
    const p1 = phone();
    fake.inject({ path: '/merchant/v1/payments/', status: 500 });
    const first = await collect(p1);
    await waitStatus(t, t.demoToken, 'collection', first.body.collection_id, 'successful', 20_000);
    assert.equal(fake.prompts(national(p1)), 1);

    const p2 = phone();
    fake.inject({ path: '/merchant/v1/payments/', timeout: { processed: true } });
    fake.callbacksPlan({ drop: 1 });
    const second = await collect(p2);
    await waitStatus(t, t.demoToken, 'collection', second.body.collection_id, 'successful', 20_000);
    assert.equal(fake.prompts(national(p2)), 1);
    assert.ok(
      fake
        .requests('POST', '/merchant/v1/payments/')
        .filter((r) => (r.json as any).transaction.id === second.body.collection_id).length >= 2,
      'it was sent again',
    );
  });
});

describe('Airtel Money refunds and payouts', () => {
  it('a refund of a collection by its Airtel Money id reaches successful; the collection becomes refunded', async () => {
    const created = await collect(phone(), 2500);
    const id = created.body.collection_id as string;
    const paid = await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    const refund = await request(t, 'POST', `/v1/collections/${id}/refund`, {
      token: t.demoToken,
      body: { amount: 2500 },
      idempotencyKey: newKey(),
    });
    assert.equal(refund.status, 201, refund.text);
    await waitStatus(t, t.demoToken, 'refund', refund.body.refund_id, 'successful');
    assert.equal((await read(t, t.demoToken, 'collection', id)).status, 'refunded');
    const sent = fake.requests('POST', '/standard/v2/payments/refund');
    assert.deepEqual(sent.at(-1)?.json, { transaction: { airtel_money_id: paid.provider_receipt } });
    assert.equal(fake.transactions.get(id)?.status, 'TR');
  });

  it('a disbursement reaches successful; one Airtel refuses releases its reservation', async () => {
    const funding = await collect(phone(), 10_000);
    await waitStatus(t, t.demoToken, 'collection', funding.body.collection_id, 'successful');
    const { beneficiary, balance, commit } = await payoutDesk(t, 'KE', 'airtel_money', 'KES');

    const before = await balance();
    const good = phone();
    const paid = await commit(await beneficiary(good), 3000);
    assert.equal(paid.status, 201, paid.text);
    const done = await waitStatus(t, t.demoToken, 'payout', paid.body.transaction_id, 'successful');
    assert.equal(done.provider_receipt, fake.transactions.get(paid.body.transaction_id)?.airtelMoneyId);
    const sent = fake.requests('POST', '/standard/v2/disbursements/').at(-1)?.json as any;
    assert.deepEqual(sent.payee, { msisdn: national(good), wallet_type: 'NORMAL' });
    assert.equal(sent.pin, PIN);
    assert.deepEqual(sent.transaction, { amount: 30, id: paid.body.transaction_id, type: 'B2C' });
    assert.equal(await balance(), before - 3000);

    const bad = phone();
    fake.outcomes.set(national(bad), { status: 'TF', code: 'DP00900001012' });
    const refused = await commit(await beneficiary(bad), 2000);
    const failed = await waitStatus(t, t.demoToken, 'payout', refused.body.transaction_id, 'failed');
    assert.equal(failed.failure_reason, 'invalid_account');
    assert.equal(await balance(), before - 3000, 'the reservation is released');
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});
