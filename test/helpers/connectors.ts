// The service with one operator connector pointed at that operator's local fake (fakes/), its workers running, and
// PUBLIC_BASE_URL naming its real port so the fake's callbacks reach it. Plus the waits and the steps the connector
// tests share (every operator must survive an expired token, a repeated callback, a failed initiation, and refund
// and pay out), and a Daraja entry in the documented shape for the tests of PROVIDERS_FILE itself.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Fault, FakeOperator } from '../../fakes/fake-server.js';
import {
  DARAJA_FAKE_CERTIFICATE,
  FAKE_INITIATOR_PASSWORD,
  SANDBOX_PASSKEY,
  SANDBOX_SHORTCODE,
} from '../../fakes/mpesa-daraja.js';
import {
  liquidityProviderToken,
  newKey,
  request,
  requestRefund,
  startTestApp,
  waitFor,
  type ApiResponse,
  type TestApp,
  type TestAppOptions,
} from './harness.js';

/** A port free on loopback right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

export const CALLBACK_TOKEN = 'cb_0123456789abcdef0123456789';

export interface ConnectorApp {
  t: TestApp;
  /** `{PUBLIC_BASE_URL}/v1/providers/{name}/callbacks/{token}`. */
  callbackBase: string;
  close(): Promise<void>;
}

/**
 * Starts `fake`, then the service (sandbox: other rails keep the simulator) with `entry` as its one connector, its
 * base_url the fake's. `close` stops both.
 */
export async function startConnectorApp(
  fake: FakeOperator,
  entry: Record<string, unknown>,
  env: Record<string, string> = {},
  /** Where the test's database is made, and how the workers reach it (`TestAppOptions`). */
  options: Pick<TestAppOptions, 'server' | 'workerDatabaseUrl'> = {},
): Promise<ConnectorApp> {
  await fake.start();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'connector-'));
  const file = path.join(dir, 'providers.json');
  await writeFile(
    file,
    JSON.stringify({ connectors: [{ callback_token: CALLBACK_TOKEN, ...entry, base_url: fake.url }] }),
  );
  const port = await freePort();
  const t = await startTestApp(
    {
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      PROVIDERS_FILE: file,
      WORKER_INTERVAL_MS: '20',
      RECONCILE_AFTER_SECONDS: '2',
      OPERATOR_TIMEOUT_MS: '1000',
      ...env,
    },
    { workers: true, ...options },
  );
  return {
    t,
    callbackBase: `http://127.0.0.1:${port}/v1/providers/${String(entry.name)}/callbacks/${CALLBACK_TOKEN}`,
    async close() {
      await t.close();
      await rm(dir, { recursive: true, force: true });
      await fake.stop();
    },
  };
}

type Kind = 'collection' | 'refund' | 'payout';
const READ: Record<Kind, string> = {
  collection: '/v1/collections/',
  refund: '/v1/refunds/',
  payout: '/v1/api/transactions/',
};

export async function read(t: TestApp, token: string, kind: Kind, id: string): Promise<Record<string, any>> {
  const res = await request(t, 'GET', `${READ[kind]}${id}`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Waits until the object reaches `status` (fails at once if it reaches another final one first). */
export async function waitStatus(
  t: TestApp,
  token: string,
  kind: Kind,
  id: string,
  status: string,
  timeoutMs = 15_000,
): Promise<Record<string, any>> {
  const finals = ['successful', 'failed', 'expired', 'refunded', 'reversed'];
  return waitFor(
    `${kind} ${id} to be ${status}`,
    async () => {
      const body = await read(t, token, kind, id);
      if (body.status === status) return body;
      // A successful collection may still be refunded; an expired one paid late (then refunded, by policy).
      const mayMoveOn =
        (body.status === 'successful' && status === 'refunded') ||
        (body.status === 'expired' && (status === 'successful' || status === 'refunded'));
      if (finals.includes(body.status) && !mayMoveOn) {
        throw new Error(`${kind} ${id} became ${body.status} (${String(body.failure_reason)}), not ${status}`);
      }
      return undefined;
    },
    timeoutMs,
  );
}

/** The event types recorded about an object, oldest first. */
export async function eventsAbout(
  t: TestApp,
  token: string,
  id: string,
): Promise<{ type: string; data: Record<string, any> }[]> {
  const res = await request(t, 'GET', `/v1/events?object_id=${id}&limit=100`, { token });
  assert.equal(res.status, 200, res.text);
  return (res.body.data as { type: string; data: Record<string, any> }[]).reverse();
}

/** Milliseconds since `start`, for the figures the connector tests report. */
export const since = (start: number): number => Math.round(performance.now() - start);

/** One operator's test file as the shared steps below see it: the app, the fake, its payers, and a collection. */
export interface Operator {
  t: TestApp;
  fake: FakeOperator;
  /** A payer's number of its own per test, so outcomes set for one never touch another. */
  phone(): string;
  collect(phone: string, amount?: number): Promise<ApiResponse>;
  /** How many times the operator prompted the payer. */
  prompts(phone: string): number;
}

/** A collection from `phone` (accepted), once it reaches `status`. */
export async function collectionReaching(
  op: Operator,
  phone: string,
  status: string,
  amount?: number,
  timeoutMs?: number,
): Promise<Record<string, any>> {
  const created = await op.collect(phone, amount);
  assert.equal(created.status, 201, created.text);
  return waitStatus(op.t, op.t.demoToken, 'collection', created.body.collection_id, status, timeoutMs);
}

/** Asserts the events of a collection paid in one go: created → pending → processing → successful, with the receipt. */
export async function assertPaidEvents(t: TestApp, id: string, receipt: unknown): Promise<void> {
  const events = await eventsAbout(t, t.demoToken, id);
  assert.deepEqual(
    events.map((e) => e.type),
    ['collection.created', 'collection.pending', 'collection.processing', 'collection.successful'],
  );
  assert.equal(events.at(-1)?.data.provider_receipt, receipt);
}

/** Asserts that once a cached token expires, the next collection costs one new token and prompts its payer once. */
export async function assertOneNewTokenOnExpiry(op: Operator, tokensIssued: () => number): Promise<void> {
  await op.collect(op.phone()); // a token is cached
  await new Promise((r) => setTimeout(r, 300));
  const before = tokensIssued();
  op.fake.expireTokens();
  const p = op.phone();
  await collectionReaching(op, p, 'successful');
  assert.equal(tokensIssued(), before + 1);
  assert.equal(op.prompts(p), 1);
}

/** Asserts that a callback the operator sends twice makes one transition; `callbacksAbout` counts those sent. */
export async function assertOneTransitionForTwoCallbacks(
  op: Operator,
  callbacksAbout: (id: string) => number,
): Promise<void> {
  op.fake.callbacksPlan({ duplicate: 1 });
  const { collection_id: id } = await collectionReaching(op, op.phone(), 'successful');
  await waitFor('both callbacks', async () => (callbacksAbout(id) === 2 ? true : undefined));
  await new Promise((r) => setTimeout(r, 300));
  const events = await eventsAbout(op.t, op.t.demoToken, id);
  assert.equal(events.filter((e) => e.type === 'collection.successful').length, 1);
}

/** Asserts that a collection whose initiation meets `fault` still reaches successful, its payer prompted once. */
export async function assertPromptedOnceDespite(
  op: Operator,
  fault: Fault,
  timeoutMs = 20_000,
): Promise<{ phone: string; id: string }> {
  const p = op.phone();
  op.fake.inject(fault);
  const done = await collectionReaching(op, p, 'successful', undefined, timeoutMs);
  assert.equal(op.prompts(p), 1);
  return { phone: p, id: done.collection_id };
}

/** A paid collection of `amount` refunded in full: the refund reaches successful and the collection refunded. */
export async function refundInFull(
  op: Operator,
  amount: number,
): Promise<{ paid: Record<string, any>; refund: Record<string, any> }> {
  const { t } = op;
  const paid = await collectionReaching(op, op.phone(), 'successful', amount);
  const res = await requestRefund(t, t.demoToken, paid.collection_id, amount);
  assert.equal(res.status, 201, res.text);
  const refund = await waitStatus(t, t.demoToken, 'refund', res.body.refund_id, 'successful');
  assert.equal((await read(t, t.demoToken, 'collection', paid.collection_id)).status, 'refunded');
  return { paid, refund };
}

/** What the payout tests need: an offramp route of the rail, beneficiaries on it, the balance, and commits. */
export interface PayoutDesk {
  beneficiary(phone: string): Promise<string>;
  /** The demo workspace's available balance in the route's currency. */
  balance(): Promise<number>;
  commit(beneficiaryId: string, amount: number): Promise<ApiResponse>;
  /** A payout of `amount` to a new beneficiary of that phone (committed), once it reaches `status`. */
  payout(phone: string, amount: number, status: string): Promise<Record<string, any>>;
}

/** Funds the demo workspace with a collection of 100.00 through the operator, then opens a desk on its rail. */
export async function payoutDesk(op: Operator, market: string, rail: string, currency: string): Promise<PayoutDesk> {
  const { t } = op;
  await collectionReaching(op, op.phone(), 'successful', 10_000);
  const route = await request(t, 'POST', '/v1/api/routes', {
    token: await liquidityProviderToken(t),
    body: { source: currency, market, rail, min_amount: 100, max_amount: 1_000_000 },
  });
  assert.equal(route.status, 201, route.text);
  const desk: PayoutDesk = {
    async beneficiary(phone) {
      const res = await request(t, 'POST', '/v1/api/beneficiaries', {
        token: t.demoToken,
        body: { name: 'Test Recipient', market, rail, phone_number: phone },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.beneficiary_id as string;
    },
    async balance() {
      const res = await request(t, 'GET', '/v1/balances', { token: t.demoToken });
      return (
        (res.body.data as { currency: string; available: number }[]).find((b) => b.currency === currency)?.available ??
        0
      );
    },
    commit(beneficiaryId, amount) {
      return request(t, 'POST', '/api/transactions/commit', {
        token: t.demoToken,
        body: { route_id: route.body.route_id, beneficiary_id: beneficiaryId, amount, reference: `po-${newKey()}` },
        idempotencyKey: newKey(),
      });
    },
    async payout(phone, amount, status) {
      const res = await desk.commit(await desk.beneficiary(phone), amount);
      assert.equal(res.status, 201, res.text);
      return waitStatus(t, t.demoToken, 'payout', res.body.transaction_id, status);
    },
  };
  return desk;
}

/** A Daraja connector entry in the documented shape, for the tests of PROVIDERS_FILE itself (nothing runs it). */
export const DARAJA_ENTRY = {
  type: 'mpesa_daraja',
  name: 'mkopo',
  rails: ['KE/mpesa'],
  base_url: 'https://sandbox.example.co.ke',
  callback_token: 'a'.repeat(24),
  consumer_key: 'k',
  consumer_secret: 's',
  shortcode: '174379',
  passkey: 'p',
  transaction_type: 'CustomerPayBillOnline',
  b2c: { shortcode: '600000', initiator_name: 'testapi', security_credential: 'c' },
};

/** The Daraja connector as the tests run it against the Daraja fake (its base_url and callback_token are added where it is started). */
export const DARAJA_FAKE_ENTRY = {
  type: 'mpesa_daraja',
  name: 'daraja',
  rails: ['KE/mpesa'],
  consumer_key: 'fake-consumer-key',
  consumer_secret: 'fake-consumer-secret',
  shortcode: SANDBOX_SHORTCODE,
  passkey: SANDBOX_PASSKEY,
  transaction_type: 'CustomerPayBillOnline',
  // The initiator's password with the fake's certificate: the connector encrypts it, the fake decrypts it.
  b2c: {
    shortcode: '600000',
    initiator_name: 'testapi',
    initiator_password: FAKE_INITIATOR_PASSWORD,
    certificate: DARAJA_FAKE_CERTIFICATE,
  },
};

/** The MoMo connector (Ghana) as the tests run it against the MoMo fake (its base_url and callback_token are added where it is started). */
export const MOMO_FAKE_ENTRY = {
  type: 'mtn_momo',
  name: 'mtn',
  rails: ['GH/mtn_momo'],
  target_environment: 'mtnghana',
  collection: {
    subscription_key: 'fake-collection-key',
    api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a01',
    api_key: 'fake-collection-api-key',
  },
  disbursement: {
    subscription_key: 'fake-disbursement-key',
    api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a02',
    api_key: 'fake-disbursement-api-key',
  },
};

/** The Airtel connector (Kenya) as the tests run it against the Airtel fake; `pin` is the fake's. */
export const AIRTEL_FAKE_ENTRY = {
  type: 'airtel_money',
  name: 'airtel',
  rails: ['KE/airtel_money'],
  client_id: 'fake-client-id',
  client_secret: 'fake-client-secret',
  country: 'KE',
  currency: 'KES',
};
