// The M-Pesa Daraja connector against the Daraja fake (fakes/mpesa-daraja.ts): STK Push collections, refunds by
// Reversal and payouts by B2C (confirmed by Transaction Status), the six mapped STK result codes, whole-shilling
// amounts, callbacks lost, repeated or forged, a token that expires in flight, and an outage or a lost answer at
// initiation, with the payer prompted once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { DarajaFake, SANDBOX_PASSKEY, SANDBOX_SHORTCODE } from '../fakes/mpesa-daraja.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { darajaTimestamp } from '../src/modules/providers/mpesa-daraja/daraja.connector.js';
import {
  assertOneNewTokenOnExpiry,
  assertOneTransitionForTwoCallbacks,
  assertPaidEvents,
  assertPromptedOnceDespite,
  collectionReaching,
  DARAJA_FAKE_ENTRY,
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
import { startPgProxy } from './helpers/pg-proxy.js';

const fake = new DarajaFake({ actAfterMs: 150 });
// The workers reach the database through a proxy that can lose a statement's answer.
const proxy = await startPgProxy(process.env.TEST_DATABASE_URL ?? '');
const app = await startConnectorApp(fake, DARAJA_FAKE_ENTRY, {}, { workerDatabaseUrl: (url) => proxy.url(url) });
after(async () => {
  await app.close();
  await proxy.close();
});
const t = app.t;

let numbers = 0;
const phone = (): string => `+2547220${String(100_000 + (numbers += 1)).slice(-5)}`;
const msisdn = (p: string): string => p.slice(1);
const collect = (p: string, amount = 1500) =>
  createCollection(t, t.demoToken, { amount, customer: { phone_number: p } });
const mpesa: Operator = { t, fake, phone, collect, prompts: (p) => fake.prompts(msisdn(p)) };
/** The STK pushes that reached the fake for a number. */
const pushes = (p: string) =>
  fake.requests('POST', '/mpesa/stkpush/v1/processrequest').filter((r) => (r.json as any)?.PhoneNumber === msisdn(p));

describe('M-Pesa collections by STK Push', () => {
  it('a payment reaches successful with its M-Pesa receipt kept on the collection and in its events', async () => {
    const p = phone();
    const start = performance.now();
    const done = await collectionReaching(mpesa, p, 'successful');
    const elapsed = since(start);
    const id = done.collection_id as string;
    const push = [...fake.stk.values()].find((s) => s.phone === msisdn(p));
    assert.ok(push);
    assert.match(done.provider_receipt, /^[A-Z0-9]{10}$/);
    assert.equal(done.provider_receipt, push.receipt);
    const sent = pushes(p)[0]?.json as Record<string, unknown>;
    assert.equal(sent.Amount, 15, 'whole shillings');
    assert.equal(sent.PartyA, msisdn(p));
    assert.equal(sent.PartyB, SANDBOX_SHORTCODE);
    assert.equal(sent.CallBackURL, `${app.callbackBase}/stk/${id}`);
    assert.match(String(sent.Timestamp), /^20[0-9]{12}$/);
    assert.equal(
      sent.Password,
      Buffer.from(`${SANDBOX_SHORTCODE}${SANDBOX_PASSKEY}${String(sent.Timestamp)}`).toString('base64'),
    );
    assert.ok(String(sent.AccountReference).length <= 12);
    assert.equal(pushes(p).length, 1);
    await assertPaidEvents(t, id, push.receipt);
    process.stdout.write(`# Daraja: create → successful with the callback on time: ${elapsed} ms\n`);
  });

  it('the Timestamp is Nairobi time', () => {
    assert.equal(darajaTimestamp(new Date('2026-11-23T22:30:05.123Z')), '20261124013005');
  });

  for (const [code, expected] of [
    ['1', 'insufficient_funds'],
    ['1032', 'payer_declined'],
    ['1037', 'payer_unreachable'],
    ['2001', 'wrong_pin'],
    ['1019', 'prompt_expired'],
    ['1001', 'payer_busy'],
  ] as const) {
    it(`STK result ${code} fails the collection with ${expected}`, async () => {
      const p = phone();
      fake.outcomes.set(msisdn(p), code);
      const failed = await collectionReaching(mpesa, p, 'failed');
      assert.equal(failed.failure_reason, expected);
    });
  }

  it('a second push to a payer already prompted fails at once as payer_busy (Daraja cannot lock the subscriber)', async () => {
    const p = phone();
    fake.outcomes.set(msisdn(p), 'never');
    await collectionReaching(mpesa, p, 'pending');
    const failed = await collectionReaching(mpesa, p, 'failed');
    assert.equal(failed.failure_reason, 'payer_busy');
  });

  it('an amount that is not whole shillings is refused at create, before anything is sent', async () => {
    const p = phone();
    const res = await collect(p, 1550);
    assertProblem(res, 422, 'amount_not_supported');
    assert.equal(res.body.errors[0].field, 'amount');
    assert.match(res.body.detail, /15\.5 KES/);
    assert.equal(pushes(p).length, 0);
  });

  it('a lost callback: the collection still completes, by STK Push Query', async () => {
    fake.callbacksPlan({ drop: 1 });
    const p = phone();
    const start = performance.now();
    const done = await collectionReaching(mpesa, p, 'successful');
    process.stdout.write(
      `# Daraja: create → successful with the callback lost (RECONCILE_AFTER_SECONDS=2): ${since(start)} ms\n`,
    );
    // The mechanism: this collection's callback was dropped and never reached us, so only the query could move it,
    // and the query for its CheckoutRequestID did run.
    const id = done.collection_id as string;
    assert.ok(
      fake.dropped.some((d) => d.url.endsWith(`/stk/${id}`)),
      'the callback of this collection was the one dropped',
    );
    assert.equal(fake.callbacks.filter((c) => c.url.endsWith(`/stk/${id}`)).length, 0, 'no callback reached us');
    const push = [...fake.stk.values()].find((s) => s.phone === msisdn(p));
    assert.ok(push);
    assert.ok(
      fake
        .requests('POST', '/mpesa/stkpushquery/v1/query')
        .some((r) => (r.json as any)?.CheckoutRequestID === push.checkoutRequestId),
      'STK Push Query asked about its push',
    );
  });

  it('a callback received twice makes one transition', async () => {
    await assertOneTransitionForTwoCallbacks(
      mpesa,
      (id) => fake.callbacks.filter((c) => c.url.endsWith(`/stk/${id}`)).length,
    );
  });

  it('a forged callback changes nothing: a wrong token is 404, and one the STK query contradicts is ignored', async () => {
    const p = phone();
    fake.outcomes.set(msisdn(p), 'never');
    const pending = await collectionReaching(mpesa, p, 'pending');
    const id = pending.collection_id as string;
    assert.equal(pending.provider_receipt, null);
    const push = [...fake.stk.values()].find((s) => s.phone === msisdn(p));
    const forged = {
      Body: {
        stkCallback: {
          MerchantRequestID: push?.merchantRequestId,
          CheckoutRequestID: push?.checkoutRequestId,
          ResultCode: 0,
          ResultDesc: 'The service request is processed successfully.',
          CallbackMetadata: {
            Item: [
              { Name: 'Amount', Value: 15 },
              { Name: 'MpesaReceiptNumber', Value: 'FORGED0001' },
            ],
          },
        },
      },
    };
    assertProblem(
      await request(t, 'POST', `/v1/providers/daraja/callbacks/cb_wrong_token_000000000/stk/${id}`, { body: forged }),
      404,
      'not_found',
    );
    const res = await request(t, 'POST', `${app.callbackBase.replace(t.baseUrl, '')}/stk/${id}`, { body: forged });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { ResultCode: 0, ResultDesc: 'Accepted' });
    await new Promise((r) => setTimeout(r, 5000));
    const now = await read(t, t.demoToken, 'collection', id);
    assert.equal(now.status, 'pending');
    assert.equal(now.provider_receipt, null);
    assert.ok(
      fake
        .requests('POST', '/mpesa/stkpushquery/v1/query')
        .some((r) => (r.json as any).CheckoutRequestID === push?.checkoutRequestId),
      'the operator was asked',
    );

    // Naming another push's CheckoutRequestID (a real, paid one): ignored, without even asking.
    const other = [...fake.stk.values()].find((s) => s.resultCode === '0');
    assert.ok(other);
    const borrowed = structuredClone(forged);
    borrowed.Body.stkCallback.CheckoutRequestID = other.checkoutRequestId;
    assert.equal(
      (await request(t, 'POST', `${app.callbackBase.replace(t.baseUrl, '')}/stk/${id}`, { body: borrowed })).status,
      200,
    );
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await read(t, t.demoToken, 'collection', id)).status, 'pending');
  });

  it('a token expiring in flight: one new token ("Invalid Access Token" once), and the payer is prompted once', async () => {
    await assertOneNewTokenOnExpiry(mpesa, () => fake.requests('GET', '/oauth/v1/generate').length);
  });

  it('Daraja refusing an STK push with its gateway’s 500 (spike arrest) before looking at it: retried, and the payer prompted once', async () => {
    const { phone: p } = await assertPromptedOnceDespite(mpesa, {
      path: '/stkpush/',
      status: 500,
      body: { requestId: 'x', errorCode: '500.003.02', errorMessage: 'Error Occurred: Spike Arrest Violation' },
    });
    assert.equal(pushes(p).length, 2, 'sent again after the 500');
  });

  it('an internal 500 from Daraja after it prompted the payer: not sent again; the callback completes it, with one prompt', async () => {
    // The callback is held back for longer than the retry's backoff (2 s after a first attempt), so the 500 alone
    // decides: a push that may have reached the payer is recorded pending at once, without a reference, and never
    // pushed again. (With the callback on time, 150 ms after the push, it completes the collection before any retry:
    // one push would be seen whether or not the 500 was taken for "nothing happened".)
    const p = phone();
    fake.inject({ path: '/stkpush/', status: 500, processed: true });
    fake.callbacksPlan({ delayMs: 4000 });
    try {
      const waiting = await collectionReaching(mpesa, p, 'pending');
      const id = waiting.collection_id as string;
      const callbacksOf = () => fake.callbacks.filter((c) => c.url.endsWith(`/stk/${id}`));
      assert.equal(pushes(p).length, 1, 'pending on the 500 itself, not after a second push');
      assert.equal(callbacksOf().length, 0, 'pending before any callback');
      await waitStatus(t, t.demoToken, 'collection', id, 'successful');
      await waitFor('its callback', async () => (callbacksOf().length === 1 ? true : undefined));
      assert.equal(pushes(p).length, 1, 'not pushed again while its callback was awaited');
      assert.equal(fake.prompts(msisdn(p)), 1);
    } finally {
      fake.callbacksPlan({ delayMs: 0 });
    }
  });

  it('an STK push whose answer is lost is not sent again: its callback completes it, with one prompt', async () => {
    const p = phone();
    fake.inject({ path: '/stkpush/', timeout: { processed: true } });
    fake.callbacksPlan({ delayMs: 1500 });
    const waiting = await collectionReaching(mpesa, p, 'pending');
    const id = waiting.collection_id as string;
    assert.equal(waiting.status, 'pending');
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    // The sweep's STK query may see the success before Transaction Status confirms the receipt: it follows.
    const receipt = await waitFor(
      'the receipt',
      async () => (await read(t, t.demoToken, 'collection', id)).provider_receipt ?? undefined,
    );
    fake.callbacksPlan({ delayMs: 0 });
    assert.equal(receipt, [...fake.stk.values()].find((s) => s.phone === msisdn(p))?.receipt);
    assert.equal(pushes(p).length, 1);
    assert.equal(fake.prompts(msisdn(p)), 1);
  });
  it('an initiation whose sender claimed it and died before recording an answer is never pushed again: pending, awaiting its callback or expiry', async () => {
    const p = phone();
    // The first push is refused before Daraja looks at it (nothing reached the payer), so the sweep will retry it.
    fake.inject({
      path: '/stkpush/',
      status: 500,
      body: { requestId: 'x', errorCode: '500.003.02', errorMessage: 'Error Occurred: Spike Arrest Violation' },
    });
    const res = await collect(p);
    assert.equal(res.status, 201);
    const id = res.body.collection_id as string;
    await waitFor('the refused push', async () => (pushes(p).length === 1 ? true : undefined));
    await waitFor('its retry scheduled', async () => {
      const { rows } = await t.db.query<{ sent_at: Date | null; later: boolean }>(
        'SELECT sent_at, submit_after > now() AS later FROM collections WHERE id = $1',
        [id],
      );
      return rows[0]?.sent_at === null && rows[0]?.later ? true : undefined;
    });
    // Now as a sender leaves it that claimed it, may have pushed, and was killed before the answer was recorded.
    await t.db.query("UPDATE collections SET sent_at = now() - interval '40 seconds' WHERE id = $1", [id]);
    const after = await waitStatus(t, t.demoToken, 'collection', id, 'pending');
    assert.equal(pushes(p).length, 1, 'not pushed again');
    assert.equal(fake.prompts(msisdn(p)), 0);
    const { rows } = await t.db.query<{ provider_reference: string | null }>(
      'SELECT provider_reference FROM collections WHERE id = $1',
      [id],
    );
    assert.equal(rows[0]?.provider_reference, null, 'pending as a push whose answer was lost');
    assert.equal(after.status, 'pending');
  });
});

describe('M-Pesa initiations whose claim is in doubt', () => {
  it('a claim whose answer is lost as it commits is released and sent: the payer is prompted once, and pays', async () => {
    const p = phone();
    // The sender's claim of the new collection commits, and its answer never reaches the sender (as a failover's fast
    // shutdown cuts a commit waiting for its standby). Kept marked as maybe sent, it would never be pushed: after the
    // lease the next sender would take it as a push whose answer was lost, and wait for a callback that cannot come.
    const lost = proxy.loseAnswerTo('sent_before_claim = t.sent_at');
    const res = await collect(p);
    assert.equal(res.status, 201, res.text);
    const id = res.body.collection_id as string;
    assert.deepEqual(await lost, ['UPDATE 1'], 'the claim took the row and committed');
    // Released by the sender that knows it sent nothing, then claimed again and pushed, well within the lease (20 s
    // here): a collection left to the lease would be pending with no push.
    await waitStatus(t, t.demoToken, 'collection', id, 'successful');
    assert.equal(pushes(p).length, 1, 'pushed once');
    assert.equal(fake.prompts(msisdn(p)), 1);
    const { rows } = await t.db.query<{ provider_reference: string | null }>(
      'SELECT provider_reference FROM collections WHERE id = $1',
      [id],
    );
    assert.equal(
      rows[0]?.provider_reference,
      [...fake.stk.values()].find((s) => s.phone === msisdn(p))?.checkoutRequestId,
    );
  });
});

describe('M-Pesa late payments', () => {
  it('a payer who approves after the collection expired is paid back by Reversal, under the default policy', async () => {
    const p = phone();
    fake.outcomes.set(msisdn(p), 'never'); // the payer leaves the prompt on screen
    const { collection_id: id } = await collectionReaching(mpesa, p, 'pending', 3000);
    // Our expiry comes before the operator's prompt times out: bring it forward rather than wait the rail's.
    await t.db.query('UPDATE collections SET expires_at = now() WHERE id = $1', [id]);
    await waitStatus(t, t.demoToken, 'collection', id, 'expired');

    const start = performance.now();
    assert.ok(fake.payerAnswersNow(msisdn(p)), 'the payer approves now');
    const refunded = await waitStatus(t, t.demoToken, 'collection', id, 'refunded', 30_000);
    const elapsed = since(start);
    const push = [...fake.stk.values()].find((s) => s.phone === msisdn(p));
    assert.equal(refunded.provider_receipt, push?.receipt, 'the receipt of the late payment');
    const types = (await eventsAbout(t, t.demoToken, id)).map((e) => e.type);
    assert.deepEqual(types.slice(-4), [
      'collection.expired',
      'collection.late_payment',
      'collection.successful',
      'collection.refunded',
    ]);
    const refunds = await request(t, 'GET', `/v1/collections/${id}/refunds`, { token: t.demoToken });
    const [refund] = refunds.body.data as Record<string, any>[];
    assert.equal(refund?.reason, 'late_payment');
    assert.equal(refund?.status, 'successful');
    const reversal = fake
      .requests('POST', '/mpesa/reversal/v1/request')
      .find((r) => (r.json as any).TransactionID === push?.receipt);
    assert.ok(reversal, 'the late payment was reversed at M-Pesa');
    assert.equal((reversal.json as any).Amount, 30);
    assert.deepEqual(await verifyLedger(t.db), []);
    process.stdout.write(`# Daraja: late payment → money back to the payer (collection refunded): ${elapsed} ms\n`);
  });
});

describe('M-Pesa refunds by Reversal and payouts by B2C', () => {
  it('a refund reverses the collection’s receipt and reaches successful once Transaction Status confirms it', async () => {
    const { paid, refund: done } = await refundInFull(mpesa, 2500);
    assert.match(done.provider_receipt, /^[A-Z0-9]{10}$/);
    const reversal = fake.requests('POST', '/mpesa/reversal/v1/request').at(-1)?.json as any;
    assert.equal(reversal.TransactionID, paid.provider_receipt);
    assert.equal(reversal.CommandID, 'TransactionReversal');
    assert.equal(reversal.RecieverIdentifierType, '11');
    assert.equal(reversal.Amount, 25);
    const asked = reversal
      ? fake.requests('POST', '/mpesa/transactionstatus/v1/query').map((r) => (r.json as any).OriginalConversationID)
      : [];
    const movement = fake.movements.get(done.provider_receipt);
    assert.equal(movement?.kind, 'reversal');
    assert.ok(
      asked.includes(movement?.originatorConversationId),
      'confirmed by Transaction Status, asked by our own request’s id',
    );
  });

  it('a B2C payout reaches successful; one M-Pesa refuses releases its reservation', async () => {
    const { beneficiary, balance, commit, payout } = await payoutDesk(mpesa, 'KE', 'mpesa', 'KES');
    const before = await balance();
    const good = phone();
    const done = await payout(good, 3000, 'successful');
    assert.match(done.provider_receipt, /^[A-Z0-9]{10}$/);
    const b2c = fake.requests('POST', '/mpesa/b2c/v3/paymentrequest').at(-1)?.json as any;
    assert.equal(b2c.OriginatorConversationID, done.transaction_id);
    assert.equal(b2c.PartyB, msisdn(good));
    assert.equal(b2c.Amount, 30);
    assert.equal(await balance(), before - 3000);

    // Not whole shillings after the route's fee: refused at commit.
    assertProblem(await commit(await beneficiary(phone()), 3050), 422, 'amount_not_supported');

    const bad = phone();
    fake.outcomes.set(msisdn(bad), '2040');
    const failed = await payout(bad, 2000, 'failed');
    assert.equal(failed.failure_reason, 'invalid_account');
    assert.equal(await balance(), before - 3000, 'the reservation is released');
    assert.deepEqual(await verifyLedger(t.db), []);

    // Every B2C attempt goes unanswered, though M-Pesa acted on the first, and its result callback is lost. Giving up
    // asks Transaction Status, whose answer comes by callback: nothing is released on a guess, and the answer
    // (paid) settles the payout.
    const lost = phone();
    fake.inject({ path: '/b2c/', timeout: { processed: true }, times: 100 });
    fake.callbacksPlan({ drop: 1 });
    const unanswered = await commit(await beneficiary(lost), 1000);
    const id = unanswered.body.transaction_id as string;
    await waitFor('the first attempt', async () =>
      fake.requests('POST', '/b2c/').some((r) => (r.json as any).OriginatorConversationID === id) ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 1200)); // OPERATOR_TIMEOUT_MS: the attempt has timed out
    assert.equal((await read(t, t.demoToken, 'payout', id)).status, 'created');
    t.services.submitter.kick('payout', t.demoWorkspaceId, id, 11);
    const settled = await waitStatus(t, t.demoToken, 'payout', id, 'successful');
    fake.clearFaults();
    assert.ok(settled.provider_receipt);
    assert.equal(await balance(), before - 4000, 'paid once, never released');
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('reconciliation against the M-Pesa organisation statement', () => {
  /** Runs `npm run reconcile` on this app's database with `statement` as the export. */
  function reconcileCli(statement: string): { status: number | null; stdout: string; stderr: string } {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'statement-'));
    const file = path.join(dir, 'statement.csv');
    writeFileSync(file, statement);
    try {
      const res = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'src/cli/reconcile.ts', '--connector', 'daraja', '--statement', file],
        { env: { ...process.env, DATABASE_URL: t.config.databaseUrl, DATA_DIR: t.config.dataDir }, encoding: 'utf8' },
      );
      return { status: res.status, stdout: res.stdout, stderr: res.stderr };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('the statement as M-Pesa exports it matches; three planted differences are each listed, and the exit code is 1', async () => {
    // Let every result of the earlier tests land first: a settled movement is on both sides, or on neither.
    await new Promise((r) => setTimeout(r, 1000));
    const statement = fake.organisationStatement();
    const clean = reconcileCli(statement);
    assert.equal(clean.status, 0, clean.stdout + clean.stderr);
    assert.match(clean.stdout, /amount or status mismatches: 0\n/);

    const lines = statement.split('\n');
    // Two payments we hold by their receipt: one's amount is changed, the other's row is dropped.
    const { rows: ours } = await t.db.query<{ provider_receipt: string }>(
      "SELECT provider_receipt FROM collections WHERE provider = 'daraja' AND provider_receipt IS NOT NULL",
    );
    const receipts = new Set(ours.map((r) => r.provider_receipt));
    const paidIn = lines.filter(
      (l) => l.includes(',Pay Bill Online,Completed,') && receipts.has(l.split(',')[0] as string),
    );
    assert.ok(paidIn.length >= 3, 'the earlier tests made payments');
    const [changed, dropped] = [paidIn[0] as string, paidIn[1] as string];
    const planted = lines
      .filter((l) => l !== dropped)
      .map((l) => (l === changed ? l.replace(/,Completed,"?([0-9,]+)\.00"?,/, ',Completed,1.00,') : l));
    planted.push(
      `TZZ9999999,${changed.split(',')[1]},${changed.split(',')[1]},Pay Bill Online,Completed,250.00,,0.00,true,Pay Bill Online,254700000000 - Stranger,,`,
    );
    const res = reconcileCli(planted.join('\n'));
    assert.equal(res.status, 1, res.stdout + res.stderr);
    assert.match(res.stdout, /amount or status mismatches: 1\n.*amount: ours \d+, operator 100 \(minor units\)/);
    assert.match(res.stdout, /on the statement, not here: 1\n.*TZZ9999999/);
    assert.match(res.stdout, new RegExp(`here, not on the statement: 1\\n\\s+${dropped.split(',')[0]}: collection`));
    process.stdout.write(
      `# npm run reconcile on a statement with three planted differences:\n${res.stdout.replace(/^/gm, '#   ')}\n`,
    );
  });
});
