// The Wave connector against the Wave fake (fakes/wave.ts): checkout sessions whose launch URL becomes the payment
// instruction, Wave's payment errors, webhooks lost, repeated, badly signed or contradicted by the session, a revoked
// API key, an outage or a lost answer at initiation with one session made, a session closed when our collection
// ends, refunds by the session's refund call, and payouts under an idempotency key.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { WaveFake } from '../fakes/wave.js';
import { DEFAULT_CATALOGUE } from '../src/modules/catalogue/default-catalogue.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import {
  verifyWaveSignature,
  waveSignature,
  WAVE_PAYMENT_ERRORS,
} from '../src/modules/providers/wave/wave.connector.js';
import {
  assertOneTransitionForTwoCallbacks,
  assertPaidEvents,
  assertPromptedOnceDespite,
  collectionReaching,
  eventsAbout,
  payoutDesk,
  read,
  refundInFull,
  since,
  startConnectorApp,
  waitStatus,
  type Operator,
} from './helpers/connectors.js';
import { assertProblem, createCollection, request, waitFor } from './helpers/harness.js';

const WEBHOOK_SECRET = 'wave_sn_WHS_fake-webhook-secret';
const fake = new WaveFake({ actAfterMs: 150, webhookSecret: WEBHOOK_SECRET });
process.env.TEST_WAVE_WEBHOOK_SECRET = WEBHOOK_SECRET;
const app = await startConnectorApp(fake, {
  type: 'wave',
  name: 'wave',
  rails: ['SN/wave', 'CI/wave'],
  api_key: 'wave_sn_prod_fake-api-key',
  webhook_secret: { env: 'TEST_WAVE_WEBHOOK_SECRET' },
  return_url: 'https://shop.example/thanks',
});
after(async () => app.close());
const t = app.t;
// The webhook registered in Wave's Business Portal: the connector's base, with no sub-path.
fake.webhookUrl = app.callbackBase;

let numbers = 0;
const phone = (): string => `+22177${String(1_000_000 + (numbers += 1)).slice(-7)}`;
const collect = (p: string, amount = 1500) =>
  createCollection(
    t,
    t.demoToken,
    { amount, currency: 'XOF', customer: { phone_number: p } },
    '/v1/collections/SN/rails/wave',
  );
const wave: Operator = { t, fake, phone, collect, prompts: (p) => fake.prompts(p) };
const webhookPath = app.callbackBase.replace(t.baseUrl, '');
/** Webhooks the fake sent (or dropped) about a collection. */
const about = (id: string) => (event: unknown) => (event as any)?.data?.client_reference === id;
const sessionCreates = (id: string) =>
  fake.requests('POST', '/v1/checkout/sessions').filter((r) => (r.json as any)?.client_reference === id);

describe('Wave collections', () => {
  it('a payment reaches successful with its Wave transaction id kept, and the launch URL as the instruction', async () => {
    const p = phone();
    const start = performance.now();
    const done = await collectionReaching(wave, p, 'successful');
    const elapsed = since(start);
    const id = done.collection_id as string;
    const session = fake.sessionOf(id);
    assert.ok(session, "the session's client_reference is our id");
    assert.equal(done.provider_receipt, session.transaction_id);
    const sent = sessionCreates(id)[0]?.json as any;
    assert.deepEqual(sent, {
      amount: '1500',
      currency: 'XOF',
      client_reference: id,
      success_url: 'https://shop.example/thanks',
      error_url: 'https://shop.example/thanks',
      restrict_payer_mobile: p,
    });
    assert.equal(
      fake.requests('POST', '/v1/checkout/sessions')[0]?.headers.authorization,
      'Bearer wave_sn_prod_fake-api-key',
    );
    assert.deepEqual(done.payment_instruction, {
      type: 'redirect',
      url: `${fake.url}/c/${session.id}`,
      message: `Ouvrez la page Wave pour payer XOF 1\u202f500. Sur un téléphone, elle s'ouvre dans l'application Wave.`,
    });
    await assertPaidEvents(t, id, session.transaction_id);
    const events = await eventsAbout(t, t.demoToken, id);
    assert.equal(events[0]?.data.payment_instruction, null, 'no page to open before Wave answers');
    assert.equal(events[1]?.data.payment_instruction.url, `${fake.url}/c/${session.id}`, 'collection.pending has it');
    process.stdout.write(`# Wave: create → successful with the webhook on time: ${elapsed} ms\n`);
  });

  for (const code of ['insufficient-funds', 'payer-mobile-mismatch', 'kyb-limits-exceeded', 'payment-failure']) {
    const expected = WAVE_PAYMENT_ERRORS[code] ?? '';
    it(`a payment Wave refuses with ${code} fails the collection with ${expected}, and its session is closed`, async () => {
      const p = phone();
      fake.outcomes.set(p, { error: code });
      const failed = await collectionReaching(wave, p, 'failed');
      assert.equal(failed.failure_reason, expected);
      const session = fake.sessionOf(failed.collection_id);
      await waitFor('the session expired at Wave', async () =>
        session?.checkout_status === 'expired' ? true : undefined,
      );
      assert.equal(fake.requests('POST', `/v1/checkout/sessions/${session?.id}/expire`).length, 1);
    });
  }

  it('a request Wave refuses (400 request-validation-error) fails the collection at once, sent once', async () => {
    const p = phone();
    fake.inject({
      path: '/v1/checkout/sessions',
      status: 400,
      body: { code: 'request-validation-error', message: 'Request invalid', details: [] },
    });
    const failed = await collectionReaching(wave, p, 'failed');
    assert.equal(failed.failure_reason, 'provider_refused');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(sessionCreates(failed.collection_id).length, 1, 'not sent again');
  });

  it('a lost webhook: the collection still completes, by the status query', async () => {
    fake.callbacksPlan({ drop: 1 });
    const start = performance.now();
    const done = await collectionReaching(wave, phone(), 'successful');
    process.stdout.write(
      `# Wave: create → successful with the webhook lost (RECONCILE_AFTER_SECONDS=2): ${since(start)} ms\n`,
    );
    const id = done.collection_id as string;
    assert.ok(done.provider_receipt);
    assert.ok(
      fake.dropped.some((d) => about(id)(d.body)),
      'the webhook of this collection was the one dropped',
    );
    assert.equal(fake.callbacks.filter((c) => about(id)(c.body)).length, 0, 'no webhook reached us');
    const session = fake.sessionOf(id);
    assert.ok(fake.requests('GET', `/v1/checkout/sessions/${session?.id}`).length >= 1, 'the status query asked');
  });

  it('a webhook received twice makes one transition', async () => {
    await assertOneTransitionForTwoCallbacks(wave, (id) => fake.callbacks.filter((c) => about(id)(c.body)).length);
  });

  it('a forged webhook changes nothing: a wrong token is 404, a bad signature 401, and one the session contradicts is ignored', async () => {
    const p = phone();
    fake.outcomes.set(p, { never: true });
    const { collection_id: id } = await collectionReaching(wave, p, 'pending');
    const session = fake.sessionOf(id);
    assert.ok(session);
    const forged = {
      id: 'AE_forged',
      type: 'checkout.session.completed',
      data: { id: session.id, client_reference: id, amount: '1500', currency: 'XOF', transaction_id: 'T_FORGED' },
    };
    const raw = JSON.stringify(forged);
    const now = Math.floor(Date.now() / 1000);
    const post = (signature: string | undefined, path = webhookPath) =>
      fetch(`${t.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(signature ? { 'wave-signature': signature } : {}) },
        body: raw,
      });
    const queries = () => fake.requests('GET', `/v1/checkout/sessions/${session.id}`).length;
    const before = queries();
    assert.equal(
      (
        await post(
          `t=${now},v1=${waveSignature(WEBHOOK_SECRET, now, raw)}`,
          webhookPath.replace(/[^/]+$/, 'cb_not_the_token_at_all'),
        )
      ).status,
      404,
    );
    for (const bad of [
      undefined,
      `t=${now},v1=${waveSignature('another-secret', now, raw)}`,
      `t=${now - 3600},v1=${waveSignature(WEBHOOK_SECRET, now - 3600, raw)}`,
      `t=${now},v1=${waveSignature(WEBHOOK_SECRET, now, `${raw} `)}`,
    ]) {
      const res = await post(bad);
      assert.equal(res.status, 401, bad);
      assert.equal(((await res.json()) as { code: string }).code, 'invalid_signature');
    }
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(queries(), before, 'a badly signed webhook is not even asked about');
    // Well signed (the secret leaked, say), but the session says it is not paid: nothing moves.
    const signed = await post(`t=${now},v1=0000,v1=${waveSignature(WEBHOOK_SECRET, now, raw)}`);
    assert.equal(signed.status, 200);
    await waitFor('the status query', async () => (queries() > before ? true : undefined));
    await new Promise((r) => setTimeout(r, 1500));
    const now2 = await read(t, t.demoToken, 'collection', id);
    assert.equal(now2.status, 'pending');
    assert.equal(now2.provider_receipt, null);
    // The payer then really pays on the page the launch URL opens.
    const page = await fetch(now2.payment_instruction.url);
    assert.match(await page.text(), /<button type="submit">Payer<\/button>/);
    assert.equal((await fetch(now2.payment_instruction.url, { method: 'POST' })).status, 200);
    const paid = await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    assert.equal(paid.provider_receipt, session.transaction_id);
  });

  it('the signature scheme: HMAC-SHA256 of the timestamp followed by the body, any of several v1 values', () => {
    const body = '{"id":"AE_1","type":"checkout.session.completed","data":{}}';
    const t0 = 1_639_081_943;
    const good = waveSignature('secret', t0, body);
    assert.match(good, /^[0-9a-f]{64}$/);
    verifyWaveSignature('secret', body, { 'wave-signature': `t=${t0},v1=${'0'.repeat(64)},v1=${good}` }, t0 * 1000);
    assert.throws(() =>
      verifyWaveSignature('secret', body, { 'wave-signature': `t=${t0},v1=${good}` }, (t0 + 301) * 1000),
    );
    assert.throws(() => verifyWaveSignature('secret', body, { 'wave-signature': `v1=${good}` }, t0 * 1000));
  });

  it('a revoked API key: nothing is made while Wave refuses it, and once the key is back the payer gets one session', async () => {
    fake.expireTokens();
    const p = phone();
    const created = await collect(p);
    assert.equal(created.status, 201, created.text);
    const id = created.body.collection_id as string;
    await waitFor('a refused create', async () =>
      fake.requests('POST', '/v1/checkout/sessions').some((r) => (r.json as any)?.client_reference === id)
        ? true
        : undefined,
    );
    assert.equal(fake.prompts(p), 0, 'Wave made no session with a revoked key');
    assert.equal((await read(t, t.demoToken, 'collection', id)).status, 'created');
    fake.restoreKey();
    await waitStatus(t, t.demoToken, 'collection', id, 'successful', 20_000);
    assert.equal(fake.prompts(p), 1);
    assert.ok(sessionCreates(id).length >= 2, 'the create was sent again once the key worked');
  });

  it('Wave answering 500 at initiation: sent again, and the payer gets one session', async () => {
    await assertPromptedOnceDespite(wave, { method: 'POST', path: '/v1/checkout/sessions', status: 500 });
  });

  it('Wave making the session but its answer never coming: found by our id, never made twice', async () => {
    fake.callbacksPlan({ drop: 1 });
    const second = await assertPromptedOnceDespite(wave, {
      path: '/v1/checkout/sessions',
      timeout: { processed: true },
    });
    assert.equal(sessionCreates(second.id).length, 1, 'Wave was asked to make a session once');
    assert.ok(
      fake.requests('GET', '/v1/checkout/sessions/search').some((r) => r.query.get('client_reference') === second.id),
      'the retry searched for it by client_reference instead',
    );
    const done = await read(t, t.demoToken, 'collection', second.id);
    assert.equal(done.payment_instruction.url, `${fake.url}/c/${fake.sessionOf(second.id)?.id}`);
  });

  it('our collection expiring closes its unpaid Wave session', async () => {
    const p = phone();
    fake.outcomes.set(p, { never: true });
    const { collection_id: id } = await collectionReaching(wave, p, 'pending');
    // The clock passes the collection's expires_at.
    await t.db.query(`UPDATE collections SET expires_at = now() WHERE workspace_id = $1 AND id = $2`, [
      t.demoWorkspaceId,
      id,
    ]);
    await waitStatus(t, t.demoToken, 'collection', id, 'expired');
    const session = fake.sessionOf(id);
    await waitFor('the session expired at Wave', async () =>
      session?.checkout_status === 'expired' ? true : undefined,
    );
    assert.equal(fake.requests('POST', `/v1/checkout/sessions/${session?.id}/expire`).length, 1);
    assert.equal(fake.pay(session?.id ?? ''), false, 'the payer can no longer pay it');
  });

  it('an amount Wave cannot carry (a catalogue giving XOF decimals) is refused at create with 422 amount_not_supported', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'wave-catalogue-'));
    const catalogue = structuredClone(DEFAULT_CATALOGUE);
    catalogue.currencies.XOF = { exponent: 2, min_amount: 100, max_amount: 200_000_000 };
    await writeFile(path.join(dir, 'catalogue.json'), JSON.stringify(catalogue));
    const other = new WaveFake({ actAfterMs: 150 });
    const decimals = await startConnectorApp(
      other,
      {
        type: 'wave',
        name: 'wave',
        rails: ['SN/wave'],
        api_key: 'wave_sn_prod_fake-api-key',
        webhook_secret: 'w',
        return_url: 'https://shop.example/thanks',
      },
      { CATALOGUE_FILE: path.join(dir, 'catalogue.json') },
    );
    try {
      const body = (amount: number) => ({
        amount,
        currency: 'XOF',
        reference: 'fraction',
        customer: { phone_number: '+221771234567' },
      });
      const refused = await request(decimals.t, 'POST', '/v1/collections/SN/rails/wave', {
        token: decimals.t.demoToken,
        body: body(150_050),
        idempotencyKey: `k-${Date.now()}`,
      });
      assertProblem(refused, 422, 'amount_not_supported');
      assert.match(refused.body.detail, /Wave moves whole XOF only: 150050 minor units is 1500\.5 XOF/);
      const whole = await request(decimals.t, 'POST', '/v1/collections/SN/rails/wave', {
        token: decimals.t.demoToken,
        body: body(150_000),
        idempotencyKey: `k-${Date.now()}-2`,
      });
      assert.equal(whole.status, 201, whole.text);
      await waitFor('the session', async () => other.sessionOf(whole.body.collection_id));
      assert.equal(other.sessionOf(whole.body.collection_id)?.amount, '1500', 'sent as whole francs');
      assert.equal(other.requests('POST', '/v1/checkout/sessions').length, 1, 'the refused amount never reached Wave');
    } finally {
      await decimals.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('Wave refunds and payouts', () => {
  it("a refund by the session's refund call reaches successful; the collection becomes refunded", async () => {
    const { paid } = await refundInFull(wave, 2500);
    const session = fake.sessionOf(paid.collection_id);
    assert.equal(fake.requests('POST', `/v1/checkout/sessions/${session?.id}/refund`).length, 1);
    assert.equal(session?.refunded, true);
  });

  it('a payout reaches successful under its idempotency key; one Wave fails releases its reservation', async () => {
    const desk = await payoutDesk(wave, 'SN', 'wave', 'XOF');
    const before = await desk.balance();
    const good = phone();
    const done = await desk.payout(good, 3000, 'successful');
    const sent = fake.requests('POST', '/v1/payout').at(-1);
    assert.equal(sent?.headers['idempotency-key'], done.transaction_id);
    assert.deepEqual(sent?.json, {
      currency: 'XOF',
      receive_amount: '3000',
      mobile: good,
      name: 'Test Recipient',
      client_reference: done.transaction_id,
    });
    const payout = [...fake.payouts.values()].find((x) => x.client_reference === done.transaction_id);
    assert.equal(done.provider_receipt, payout?.id);
    assert.equal(await desk.balance(), before - 3000);

    const bad = phone();
    fake.outcomes.set(bad, { error: 'recipient-not-found' });
    const failed = await desk.payout(bad, 2000, 'failed');
    assert.equal(failed.failure_reason, 'invalid_account');
    assert.equal(await desk.balance(), before - 3000, 'the reservation is released');

    // An answer lost on the way back: the retry asks Wave by our id (client_reference) and pays nobody twice.
    const lost = phone();
    fake.inject({ method: 'POST', path: '/v1/payout', timeout: { processed: true } });
    const again = await desk.payout(lost, 1000, 'successful');
    assert.equal([...fake.payouts.values()].filter((x) => x.mobile === lost).length, 1);
    assert.ok(
      fake.requests('GET', '/v1/payouts/search').some((r) => r.query.get('client_reference') === again.transaction_id),
      'the retry searched for it by client_reference',
    );
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('Wave webhooks reach only the connector', () => {
  it('an operator callback route declares the 401 of a bad signature', async () => {
    const res = await request(t, 'POST', `${webhookPath}`, { body: { type: 'x' } });
    assertProblem(res, 401, 'invalid_signature');
  });
});
