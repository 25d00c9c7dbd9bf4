// The MTN MoMo connector against the MoMo fake (fakes/mtn-momo.ts): collections, refunds and payouts end to end,
// MoMo's failure reasons, callbacks lost, repeated or forged, a token that expires in flight, and a MoMo outage at
// initiation, with the payer prompted once throughout.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { MomoFake } from '../fakes/mtn-momo.js';
import { momoReferenceId } from '../src/modules/providers/mtn-momo/momo.connector.js';
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
  waitStatus,
  type Operator,
} from './helpers/connectors.js';
import { assertProblem, createCollection, request, waitFor } from './helpers/harness.js';

const fake = new MomoFake({ actAfterMs: 150, targetEnvironment: 'mtnghana' });
process.env.TEST_MOMO_COLLECTION_KEY = 'fake-collection-api-key';
const app = await startConnectorApp(fake, {
  type: 'mtn_momo',
  name: 'mtn',
  rails: ['GH/mtn_momo'],
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
after(async () => app.close());
const t = app.t;

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
const mtn: Operator = { t, fake, phone, collect, prompts: (p) => fake.prompts(digits(p)) };

describe('MTN MoMo collections', () => {
  it('a payment reaches successful with MoMo’s financialTransactionId kept on the collection and in its events', async () => {
    const p = phone();
    const start = performance.now();
    const done = await collectionReaching(mtn, p, 'successful');
    const elapsed = since(start);
    const id = done.collection_id as string;
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
      payerMessage: done.reference,
      payeeNote: done.reference,
    });
    assert.equal(fake.prompts(digits(p)), 1);
    await assertPaidEvents(t, id, op.financialTransactionId);
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
      const failed = await collectionReaching(mtn, p, 'failed');
      assert.equal(failed.failure_reason, expected);
      assert.equal(failed.provider_receipt, null);
    });
  }

  it('a lost callback: the collection still completes, by the poll of its status', async () => {
    fake.callbacksPlan({ drop: 1 });
    const start = performance.now();
    const done = await collectionReaching(mtn, phone(), 'successful');
    process.stdout.write(`# MoMo: create → successful with the callback lost (poll every 1 s): ${since(start)} ms\n`);
    assert.ok(done.provider_receipt);
    // The mechanism: this collection's callback was the one dropped, none of its reached us, and the status of its
    // RequestToPay (under the X-Reference-Id we derive from its id) was read: only that read could have moved it.
    const id = done.collection_id as string;
    const about = (body: unknown): boolean => (body as { externalId?: string } | undefined)?.externalId === id;
    assert.ok(
      fake.dropped.some((d) => about(d.body)),
      'the callback of this collection was the one dropped',
    );
    assert.equal(fake.callbacks.filter((c) => about(c.body)).length, 0, 'no callback reached us');
    assert.ok(
      fake.requests('GET', `/requesttopay/${momoReferenceId(id)}`).length >= 1,
      'the poll read the status of its RequestToPay',
    );
  });

  it('a callback received twice makes one transition', async () => {
    await assertOneTransitionForTwoCallbacks(
      mtn,
      (id) => fake.callbacks.filter((c) => (c.body as { externalId?: string }).externalId === id).length,
    );
  });

  it('a forged callback changes nothing: a wrong token is 404, and one MoMo contradicts is ignored', async () => {
    const p = phone();
    fake.outcomes.set(digits(p), { status: 'PENDING' });
    const { collection_id: id } = await collectionReaching(mtn, p, 'pending');
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
    await assertOneNewTokenOnExpiry(mtn, () => fake.requests('POST', '/collection/token/').length);
  });

  it('MoMo answering 500 at initiation: sent again under the same X-Reference-Id, and the payer prompted once', async () => {
    const first = await assertPromptedOnceDespite(mtn, { method: 'POST', path: '/requesttopay', status: 500 });
    const sent = fake
      .requests('POST', '/requesttopay')
      .filter((r) => (r.json as any)?.payer?.partyId === digits(first.phone));
    assert.equal(sent.length, 2, 'sent again after the 500');
    for (const r of sent) assert.equal(r.headers['x-reference-id'], momoReferenceId(first.id));
  });

  it('MoMo acting on an initiation whose answer never came: asked about it by our X-Reference-Id, never sent again', async () => {
    // The answer is lost after MoMo created it (and so is its callback): the retry reads its status by the
    // X-Reference-Id we derive from our id, and sends nothing again.
    fake.callbacksPlan({ drop: 1 });
    const second = await assertPromptedOnceDespite(mtn, {
      method: 'POST',
      path: '/requesttopay',
      timeout: { processed: true },
    });
    const sent = fake
      .requests('POST', '/requesttopay')
      .filter((r) => (r.json as any)?.payer?.partyId === digits(second.phone));
    assert.equal(sent.length, 1, 'the operator was asked to collect once');
    assert.equal(sent[0]?.headers['x-reference-id'], momoReferenceId(second.id));
    assert.ok(
      fake.requests('GET', `/requesttopay/${momoReferenceId(second.id)}`).length >= 1,
      'the retry read its status by our id instead',
    );
  });
});

describe('MTN MoMo refunds and payouts', () => {
  it('a refund is sent as a MoMo Refund of the collection and reaches successful; the collection becomes refunded', async () => {
    const { paid, refund } = await refundInFull(mtn, 2500);
    assert.ok(refund.provider_receipt);
    const sent = fake.operations.get(momoReferenceId(refund.refund_id));
    assert.equal(sent?.body.referenceIdToRefund, momoReferenceId(paid.collection_id));
    assert.equal(sent?.body.amount, '25');
  });

  it('a payout reaches successful; a payout MoMo fails releases its reservation', async () => {
    const { beneficiary, balance, commit, payout } = await payoutDesk(mtn, 'GH', 'mtn_momo', 'GHS');
    const before = await balance();
    const done = await payout(phone(), 3000, 'successful');
    assert.ok(done.provider_receipt);
    assert.equal(fake.operations.get(momoReferenceId(done.transaction_id))?.body.amount, '30');
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
