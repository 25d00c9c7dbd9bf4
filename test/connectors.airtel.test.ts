// The Airtel Money connector against the Airtel fake (fakes/airtel-money.ts): USSD-push collections, refunds and
// disbursements end to end, Airtel's failure codes and its HTTP-200 business errors, callbacks lost, repeated or
// forged, a token that expires in flight, and an Airtel outage at initiation, with the payer prompted once.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { AirtelFake } from '../fakes/airtel-money.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import {
  assertOneNewTokenOnExpiry,
  assertOneTransitionForTwoCallbacks,
  assertPaidEvents,
  assertPromptedOnceDespite,
  collectionReaching,
  payoutDesk,
  read,
  refundInFull,
  since,
  startConnectorApp,
  type Operator,
} from './helpers/connectors.js';
import { assertProblem, createCollection, request, waitFor } from './helpers/harness.js';

const PIN =
  'KYJExln8rZwb14G1K5UE5YF/lD7KheNUM171MUEG3/f/QD8nmNKRsa44UZkh6A4cR7p5Bhd4LE1tNbM8sgy3VI0wGEhIYjfQ3EmjvI5hXbzp4lk8rTvDJQ==';
const fake = new AirtelFake({ actAfterMs: 150, country: 'KE', currency: 'KES', pin: PIN });
process.env.TEST_AIRTEL_CLIENT_SECRET = 'fake-client-secret';
const app = await startConnectorApp(fake, {
  type: 'airtel_money',
  name: 'airtel',
  rails: ['KE/airtel_money'],
  client_id: 'fake-client-id',
  client_secret: { env: 'TEST_AIRTEL_CLIENT_SECRET' },
  country: 'KE',
  currency: 'KES',
  pin: PIN,
});
after(async () => app.close());
const t = app.t;
// Airtel's callback URL is registered in its portal: the connector's base, with no sub-path.
fake.callbackUrl = app.callbackBase;

let numbers = 0;
const phone = (): string => `+25473${String(1_000_000 + (numbers += 1)).slice(-7)}`;
/** Airtel's msisdn: without the country code. */
const national = (p: string): string => p.slice(4);
const collect = (p: string, amount = 1500) =>
  createCollection(t, t.demoToken, { amount, customer: { phone_number: p } }, '/v1/collections/KE/rails/airtel_money');
const airtel: Operator = { t, fake, phone, collect, prompts: (p) => fake.prompts(national(p)) };

describe('Airtel Money collections', () => {
  it('a payment reaches successful with its Airtel Money id kept on the collection and in its events', async () => {
    const p = phone();
    const start = performance.now();
    const done = await collectionReaching(airtel, p, 'successful');
    const elapsed = since(start);
    const id = done.collection_id as string;
    const tx = fake.transactions.get(id);
    assert.ok(tx, "Airtel's transaction.id is our id");
    assert.equal(done.provider_receipt, tx.airtelMoneyId);
    const sent = fake.requests('POST', '/merchant/v1/payments/').find((r) => (r.json as any).transaction.id === id);
    assert.equal(sent?.headers['x-country'], 'KE');
    assert.equal(sent?.headers['x-currency'], 'KES');
    assert.deepEqual((sent?.json as any).subscriber, { country: 'KE', currency: 'KES', msisdn: national(p) });
    assert.equal((sent?.json as any).transaction.amount, 15);
    assert.equal(fake.prompts(national(p)), 1);
    await assertPaidEvents(t, id, tx.airtelMoneyId);
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
      const failed = await collectionReaching(airtel, p, 'failed');
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
      const failed = await collectionReaching(airtel, p, 'failed');
      assert.equal(failed.failure_reason, expected, code);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(
        fake
          .requests('POST', '/merchant/v1/payments/')
          .filter((r) => (r.json as any).transaction.id === failed.collection_id).length,
        1,
        `${code} was not retried`,
      );
    }
    // An ambiguous one (ESB000001: "do an enquiry") is asked again, under the same id: one prompt.
    const p = phone();
    fake.businessError('ESB000001');
    await collectionReaching(airtel, p, 'successful', undefined, 20_000);
    assert.equal(fake.prompts(national(p)), 1);
  });

  it('a lost callback: the collection still completes, by the enquiry', async () => {
    fake.callbacksPlan({ drop: 1 });
    const start = performance.now();
    const done = await collectionReaching(airtel, phone(), 'successful');
    process.stdout.write(
      `# Airtel: create → successful with the callback lost (RECONCILE_AFTER_SECONDS=2): ${since(start)} ms\n`,
    );
    assert.ok(done.provider_receipt);
    // The mechanism: this collection's callback (Airtel names our id as the transaction id) was dropped, none of its
    // reached us, and the enquiry asked about it: only the enquiry could have moved it.
    const id = done.collection_id as string;
    const about = (body: unknown): boolean => (body as any)?.transaction?.id === id;
    assert.ok(
      fake.dropped.some((d) => about(d.body)),
      'the callback of this collection was the one dropped',
    );
    assert.equal(fake.callbacks.filter((c) => about(c.body)).length, 0, 'no callback reached us');
    assert.ok(fake.requests('GET', `/standard/v1/payments/${id}`).length >= 1, 'the enquiry asked about it');
  });

  it('a callback received twice makes one transition', async () => {
    await assertOneTransitionForTwoCallbacks(
      airtel,
      (id) => fake.callbacks.filter((c) => (c.body as any).transaction.id === id).length,
    );
  });

  it('a forged callback changes nothing: a wrong token is 404, and one the enquiry contradicts is ignored', async () => {
    const p = phone();
    fake.outcomes.set(national(p), { status: 'TIP' });
    const { collection_id: id } = await collectionReaching(airtel, p, 'pending');
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
    await assertOneNewTokenOnExpiry(airtel, () => fake.requests('POST', '/auth/oauth2/token').length);
  });

  it('Airtel answering 500 at initiation: sent again under the same id, and the payer prompted once', async () => {
    await assertPromptedOnceDespite(airtel, { method: 'POST', path: '/merchant/v1/payments/', status: 500 });
  });

  it('Airtel acting on an initiation whose answer never came: asked about it by our id, never sent again', async () => {
    fake.callbacksPlan({ drop: 1 });
    const second = await assertPromptedOnceDespite(airtel, {
      path: '/merchant/v1/payments/',
      timeout: { processed: true },
    });
    const sent = fake
      .requests('POST', '/merchant/v1/payments/')
      .filter((r) => (r.json as any).transaction.id === second.id);
    assert.equal(sent.length, 1, 'the operator was asked to collect once');
    assert.ok(
      fake.requests('GET', `/standard/v1/payments/${second.id}`).length >= 1,
      'the retry asked for its status by our id instead',
    );
  });
});

describe('Airtel Money refunds and payouts', () => {
  it('a refund of a collection by its Airtel Money id reaches successful; the collection becomes refunded', async () => {
    const { paid } = await refundInFull(airtel, 2500);
    const sent = fake.requests('POST', '/standard/v2/payments/refund');
    assert.deepEqual(sent.at(-1)?.json, { transaction: { airtel_money_id: paid.provider_receipt } });
    assert.equal(fake.transactions.get(paid.collection_id)?.status, 'TR');
  });

  it('a disbursement reaches successful; one Airtel refuses releases its reservation', async () => {
    const desk = await payoutDesk(airtel, 'KE', 'airtel_money', 'KES');
    const before = await desk.balance();
    const good = phone();
    const done = await desk.payout(good, 3000, 'successful');
    assert.equal(done.provider_receipt, fake.transactions.get(done.transaction_id)?.airtelMoneyId);
    const sent = fake.requests('POST', '/standard/v2/disbursements/').at(-1)?.json as any;
    assert.deepEqual(sent.payee, { msisdn: national(good), wallet_type: 'NORMAL' });
    assert.equal(sent.pin, PIN);
    assert.deepEqual(sent.transaction, { amount: 30, id: done.transaction_id, type: 'B2C' });
    assert.equal(await desk.balance(), before - 3000);

    const bad = phone();
    fake.outcomes.set(national(bad), { status: 'TF', code: 'DP00900001012' });
    const failed = await desk.payout(bad, 2000, 'failed');
    assert.equal(failed.failure_reason, 'invalid_account');
    assert.equal(await desk.balance(), before - 3000, 'the reservation is released');
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});
