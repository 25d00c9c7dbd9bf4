// The MTN MoMo connector against the MoMo fake (fakes/mtn-momo.ts): collections, refunds and payouts end to end,
// MoMo's failure reasons, callbacks lost, repeated or forged, a token that expires in flight, and a MoMo outage at
// initiation, with the payer prompted once throughout.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MomoFake } from '../fakes/mtn-momo.js';
import { momoReferenceId } from '../src/modules/providers/mtn-momo/momo.connector.js';
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

const fake = new MomoFake({ actAfterMs: 150, targetEnvironment: 'mtnghana' });
let app: ConnectorApp;
let t: TestApp;

before(async () => {
  await fake.start();
  app = await startConnectorApp({
    type: 'mtn_momo',
    name: 'mtn',
    rails: ['GH/mtn_momo'],
    base_url: fake.url,
    target_environment: 'mtnghana',
    poll_seconds: 1,
    collection: {
      subscription_key: 'fake-collection-key',
      api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a01',
      api_key: { env: 'TEST_MOMO_COLLECTION_KEY' },
    },
    disbursement: {
      subscription_key: 'fake-disbursement-key',
      api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a02',
      api_key: 'fake-disbursement-api-key',
    },
  });
  t = app.t;
});
after(async () => {
  await app.close();
  await fake.stop();
});
process.env.TEST_MOMO_COLLECTION_KEY = 'fake-collection-api-key';

let numbers = 0;
/** A Ghanaian number of its own per test, so outcomes set for one never touch another. */
const phone = (): string => `+23324${String(1_000_000 + (numbers += 1)).slice(-7)}`;
const digits = (p: string): string => p.slice(1);
const collect = (p: string, amount = 1500) =>
  createCollection(
    t,
    t.demoToken,
    { currency: 'GHS', amount, customer: { phone_number: p } },
    '/v1/collections/GH/rails/mtn_momo',
  );

describe('MTN MoMo collections', () => {
  it('a payment reaches successful with MoMo’s financialTransactionId kept on the collection and in its events', async () => {
    const p = phone();
    const start = performance.now();
    const created = await collect(p);
    assert.equal(created.status, 201, created.text);
    const id = created.body.collection_id as string;
    const done = await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    const elapsed = since(start);
    const op = fake.operations.get(momoReferenceId(id));
    assert.ok(op, 'MoMo has the RequestToPay under our id (as UUID v4)');
    assert.match(done.provider_receipt, /^[0-9]{10}$/);
    assert.equal(done.provider_receipt, op.financialTransactionId);
    const sent = fake.requests('POST', '/requesttopay')[fake.requests('POST', '/requesttopay').length - 1];
    assert.equal(sent?.headers['x-reference-id'], momoReferenceId(id));
    assert.equal(sent?.headers['x-callback-url'], `${app.callbackBase}/requesttopay`);
    assert.deepEqual(sent?.json, {
      amount: '15',
      currency: 'GHS',
      externalId: id,
      payer: { partyIdType: 'MSISDN', partyId: digits(p) },
      payerMessage: created.body.reference,
      payeeNote: created.body.reference,
    });
    assert.equal(fake.prompts(digits(p)), 1);
    const events = await eventsAbout(t, t.demoToken, id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['collection.created', 'collection.pending', 'collection.processing', 'collection.successful'],
    );
    assert.equal(events.at(-1)?.data.provider_receipt, op.financialTransactionId);
    process.stdout.write(`# MoMo: create → successful with the callback on time: ${elapsed} ms\n`);
  });

  for (const [reason, expected] of [
    ['APPROVAL_REJECTED', 'payer_declined'],
    ['EXPIRED', 'prompt_expired'],
    ['COULD_NOT_PERFORM_TRANSACTION', 'prompt_expired'],
    ['NOT_ENOUGH_FUNDS', 'insufficient_funds'],
    ['PAYER_LIMIT_REACHED', 'payer_limit_reached'],
    ['PAYER_NOT_FOUND', 'payer_not_found'],
    ['INTERNAL_PROCESSING_ERROR', 'provider_error'],
  ] as const) {
    it(`MoMo's FAILED ${reason} fails the collection with ${expected}`, async () => {
      const p = phone();
      fake.outcomes.set(digits(p), { status: 'FAILED', reason });
      const created = await collect(p);
      const failed = await waitStatus(t, t.demoToken, 'collection', created.body.collection_id, 'failed');
      assert.equal(failed.failure_reason, expected);
      assert.equal(failed.provider_receipt, null);
    });
  }

  it('a lost callback: the collection still completes, by the poll of its status', async () => {
    const p = phone();
    fake.callbacksPlan({ drop: 1 });
    const start = performance.now();
    const created = await collect(p);
    const done = await waitStatus(t, t.demoToken, 'collection', created.body.collection_id, 'successful');
    process.stdout.write(`# MoMo: create → successful with the callback lost (poll every 1 s): ${since(start)} ms\n`);
    assert.ok(done.provider_receipt);
    assert.ok(
      !fake.callbacks.some((c) => (c.body as { externalId?: string }).externalId === created.body.collection_id),
      'no callback was sent',
    );
  });

  it('a callback received twice makes one transition', async () => {
    const p = phone();
    fake.callbacksPlan({ duplicate: 1, delayMs: 0 });
    const created = await collect(p);
    const id = created.body.collection_id as string;
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    await waitFor('both callbacks', async () =>
      fake.callbacks.filter((c) => (c.body as { externalId?: string }).externalId === id).length === 2
        ? true
        : undefined,
    );
    await new Promise((r) => setTimeout(r, 300));
    const events = await eventsAbout(t, t.demoToken, id);
    assert.equal(events.filter((e) => e.type === 'collection.successful').length, 1);
  });

  it('a forged callback changes nothing: a wrong token is 404, and one MoMo contradicts is ignored', async () => {
    const p = phone();
    fake.outcomes.set(digits(p), { status: 'PENDING' });
    const created = await collect(p);
    const id = created.body.collection_id as string;
    await waitStatus(t, t.demoToken, 'collection', id, 'pending');
    const forged = {
      externalId: id,
      amount: '15',
      currency: 'GHS',
      financialTransactionId: '1234567890',
      status: 'SUCCESSFUL',
    };
    const wrong = await request(t, 'POST', `/v1/providers/mtn/callbacks/cb_wrongwrongwrongwrong00/requesttopay`, {
      body: forged,
    });
    assertProblem(wrong, 404, 'not_found');
    const queriesBefore = fake.requests('GET', `/requesttopay/${momoReferenceId(id)}`).length;
    const contradicted = await request(
      t,
      'PUT',
      `/v1/providers/mtn/callbacks/${app.callbackBase.split('/').pop()}/requesttopay`,
      { body: forged },
    );
    assert.equal(contradicted.status, 200, contradicted.text);
    await waitFor('the status query', async () =>
      fake.requests('GET', `/requesttopay/${momoReferenceId(id)}`).length > queriesBefore ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const now = await read(t, t.demoToken, 'collection', id);
    assert.equal(now.status, 'pending');
    assert.equal(now.provider_receipt, null);
    assertProblem(
      await request(t, 'POST', `${app.callbackBase.replace(t.baseUrl, '')}/requesttopay`, {
        body: { status: 'SUCCESSFUL' },
      }),
      400,
      'validation_failed',
    );
  });

  it('a token expiring in flight: one new token, and the payer is prompted once', async () => {
    await collect(phone()); // a token is cached
    await new Promise((r) => setTimeout(r, 300));
    const tokensBefore = fake.requests('POST', '/collection/token/').length;
    fake.expireTokens();
    const p = phone();
    const created = await collect(p);
    await waitStatus(t, t.demoToken, 'collection', created.body.collection_id, 'successful');
    assert.equal(fake.requests('POST', '/collection/token/').length, tokensBefore + 1);
    assert.equal(fake.prompts(digits(p)), 1);
  });

  it('MoMo answering 500, or not at all, at initiation: retried under the same X-Reference-Id, and the payer prompted once', async () => {
    const p1 = phone();
    fake.inject({ path: '/requesttopay', status: 500 });
    const first = await collect(p1);
    await waitStatus(t, t.demoToken, 'collection', first.body.collection_id, 'successful', 20_000);
    assert.equal(fake.prompts(digits(p1)), 1);

    // The answer is lost after MoMo created it (and so is its callback): the retry finds it there (409) and prompts
    // nobody again.
    const p2 = phone();
    fake.inject({ path: '/requesttopay', timeout: { processed: true } });
    fake.callbacksPlan({ drop: 1 });
    const second = await collect(p2);
    await waitStatus(t, t.demoToken, 'collection', second.body.collection_id, 'successful', 20_000);
    assert.equal(fake.prompts(digits(p2)), 1);
    // Sent again under its X-Reference-Id (MoMo answers 409: it has it), unless the status poll, asking by that same
    // id, found it successful first: either way one prompt, and never another reference.
    const sent = fake.requests('POST', '/requesttopay').filter((r) => (r.json as any)?.payer?.partyId === digits(p2));
    assert.ok(sent.length >= 1);
    for (const r of sent) assert.equal(r.headers['x-reference-id'], momoReferenceId(second.body.collection_id));
  });
});

describe('MTN MoMo refunds and payouts', () => {
  it('a refund is sent as a MoMo Refund of the collection and reaches successful; the collection becomes refunded', async () => {
    const created = await collect(phone(), 2500);
    const id = created.body.collection_id as string;
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    const refund = await request(t, 'POST', `/v1/collections/${id}/refund`, {
      token: t.demoToken,
      body: { amount: 2500 },
      idempotencyKey: newKey(),
    });
    assert.equal(refund.status, 201, refund.text);
    const done = await waitStatus(t, t.demoToken, 'refund', refund.body.refund_id, 'successful');
    assert.ok(done.provider_receipt);
    assert.equal((await read(t, t.demoToken, 'collection', id)).status, 'refunded');
    const sent = fake.operations.get(momoReferenceId(refund.body.refund_id));
    assert.equal(sent?.body.referenceIdToRefund, momoReferenceId(id));
    assert.equal(sent?.body.amount, '25');
  });

  it('a payout reaches successful; a payout MoMo fails releases its reservation', async () => {
    // Funds: a collection of 100 GHS through MoMo.
    const funding = await collect(phone(), 10_000);
    await waitStatus(t, t.demoToken, 'collection', funding.body.collection_id, 'successful');
    const { beneficiary, balance, commit } = await payoutDesk(t, 'GH', 'mtn_momo', 'GHS');

    const good = phone();
    const before = await balance();
    const paid = await commit(await beneficiary(good), 3000);
    assert.equal(paid.status, 201, paid.text);
    const done = await waitStatus(t, t.demoToken, 'payout', paid.body.transaction_id, 'successful');
    assert.ok(done.provider_receipt);
    assert.equal(fake.operations.get(momoReferenceId(paid.body.transaction_id))?.body.amount, '30');
    assert.equal(await balance(), before - 3000);

    const bad = phone();
    fake.outcomes.set(digits(bad), { status: 'FAILED', reason: 'PAYEE_NOT_FOUND' });
    const refused = await commit(await beneficiary(bad), 2000);
    assert.equal(refused.status, 201, refused.text);
    assert.equal(await balance(), before - 5000, 'reserved while in flight');
    const failed = await waitStatus(t, t.demoToken, 'payout', refused.body.transaction_id, 'failed');
    assert.equal(failed.failure_reason, 'invalid_account');
    assert.equal(await balance(), before - 3000, 'the reservation is released');
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});
