// Operator float (docs/guides/operator-float.md) against the operator fakes over HTTP: Daraja's Account Balance
// (answered by result callback, matched by its ConversationID), MoMo's collection and disbursement account/balance and
// Airtel's balance enquiry are read and stored with the time read; an operator down or silent shows `unknown` with
// the error (never a 500); a threshold crossing raises one event each way, in the operator workspace; the fakes refuse
// a bad credential and the float says why; one node reads per interval.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { AirtelFake } from '../fakes/airtel-money.js';
import { DarajaFake } from '../fakes/mpesa-daraja.js';
import { MomoFake } from '../fakes/mtn-momo.js';
import { loadCatalogue, MarketCatalogue } from '../src/modules/catalogue/catalogue.js';
import { DarajaConnector, type DarajaSettings } from '../src/modules/providers/mpesa-daraja/daraja.connector.js';
import type { OperatorConnector } from '../src/modules/providers/provider.js';
import {
  AIRTEL_FAKE_ENTRY,
  CALLBACK_TOKEN,
  DARAJA_FAKE_ENTRY,
  freePort,
  MOMO_FAKE_ENTRY,
} from './helpers/connectors.js';
import { assertProblem, request, startTestApp, waitFor, type TestApp } from './helpers/harness.js';

const PIN =
  'KYJExln8rZwb14G1K5UE5YF/lD7KheNUM171MUEG3/f/QD8nmNKRsa44UZkh6A4cR7p5Bhd4LE1tNbM8sgy3VI0wGEhIYjfQ3EmjvI5hXbzp4lk8rTvDJQ==';
const daraja = new DarajaFake({ actAfterMs: 50 });
const momo = new MomoFake({ targetEnvironment: 'mtnghana', currency: 'GHS' });
// A second MoMo fake whose credentials the connector `mtn-bad` gets wrong.
const momoRw = new MomoFake({ targetEnvironment: 'mtnrwanda', currency: 'RWF' });
const airtel = new AirtelFake({ country: 'KE', currency: 'KES', pin: PIN });
await Promise.all([daraja.start(), momo.start(), momoRw.start(), airtel.start()]);

const momoEntry = (name: string, rails: string[], baseUrl: string, targetEnvironment: string, wrong = false) => ({
  ...MOMO_FAKE_ENTRY,
  name,
  rails,
  base_url: baseUrl,
  callback_token: CALLBACK_TOKEN,
  target_environment: targetEnvironment,
  collection: {
    ...MOMO_FAKE_ENTRY.collection,
    ...(wrong ? { subscription_key: 'not-the-collection-key' } : {}),
  },
  disbursement: {
    ...MOMO_FAKE_ENTRY.disbursement,
    ...(wrong ? { api_key: 'not-the-disbursement-api-key' } : {}),
  },
});
const connectors = [
  { ...DARAJA_FAKE_ENTRY, base_url: daraja.url, callback_token: CALLBACK_TOKEN },
  momoEntry('mtn', ['GH/mtn_momo'], momo.url, 'mtnghana'),
  momoEntry('mtn-bad', ['RW/mtn_momo'], momoRw.url, 'mtnrwanda', true),
  { ...AIRTEL_FAKE_ENTRY, base_url: airtel.url, callback_token: CALLBACK_TOKEN, pin: PIN },
];
const dir = await mkdtemp(path.join(os.tmpdir(), 'float-'));
const providersFile = path.join(dir, 'providers.json');
await writeFile(providersFile, JSON.stringify({ connectors }));

/** The app as `npm start` runs it with those connectors; `workers` runs the scheduled reads. */
async function startApp(workers: boolean, intervalMs: number): Promise<{ t: TestApp; port: number }> {
  const port = await freePort();
  const t = await startTestApp(
    {
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      PROVIDERS_FILE: providersFile,
      OPERATOR_TIMEOUT_MS: '1000',
      OPERATOR_FLOAT_INTERVAL_MS: String(intervalMs),
      // GHS 1,000.00 on MoMo's disbursement account; KES 100.00 on each Airtel account.
      OPERATOR_FLOAT_THRESHOLDS: 'mtn/disbursement=100000,airtel=10000',
    },
    { workers },
  );
  return { t, port };
}

const { t, port } = await startApp(false, 60_000);
after(async () => {
  await t.close();
  await Promise.all([daraja.stop(), momo.stop(), momoRw.stop(), airtel.stop()]);
  await rm(dir, { recursive: true, force: true });
});
const callbackBase = (name: string) => `http://127.0.0.1:${port}/v1/providers/${name}/callbacks/${CALLBACK_TOKEN}`;

interface Account {
  connector: string;
  account: string;
  currency: string | null;
  balance: number | null;
  read_at: string | null;
  threshold: number | null;
  status: 'ok' | 'low' | 'unknown';
  error: string | null;
  error_at: string | null;
}

async function float(): Promise<Account[]> {
  const res = await request(t, 'GET', '/v1/admin/operator-float', { token: t.adminToken });
  assert.equal(res.status, 200, res.text);
  return res.body.data as Account[];
}
async function account(connector: string, name: string): Promise<Account | undefined> {
  return (await float()).find((a) => a.connector === connector && a.account === name);
}
function connector(name: string): OperatorConnector {
  const c = t.services.providers.connector(name);
  assert.ok(c, `connector ${name}`);
  return c;
}
/** Reads one connector now (the scheduled round's work, without its once-per-interval claim). */
const readNow = (name: string) => t.services.operatorFloat.read(connector(name));

/** An `integrator` key of the operator workspace (the admin token's `wsp`): what lists the operator's own events. */
async function operatorEventsToken(): Promise<string> {
  const claims = JSON.parse(Buffer.from(t.adminToken.split('.')[1] ?? '', 'base64url').toString('utf8'));
  const res = await request(t, 'POST', `/v1/admin/workspaces/${claims.wsp}/credentials`, {
    token: t.adminToken,
    body: { audience: 'integrator', name: 'float events' },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.token as string;
}
async function eventsOfType(token: string, type: string): Promise<any[]> {
  const res = await request(t, 'GET', `/v1/events?type=${type}&limit=100`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

describe('operator float: balances read from each operator and stored', () => {
  it('before any read, each connector that gives balances is listed as unknown, not read yet', async () => {
    const all = await float();
    for (const name of ['daraja', 'mtn', 'mtn-bad', 'airtel']) {
      const row = all.find((a) => a.connector === name);
      assert.ok(row, name);
      assert.equal(row.status, 'unknown');
      assert.equal(row.error, 'not read yet');
    }
  });

  it("MoMo: each product's account/balance is read with that product's token and subscription key", async () => {
    momo.portal.collection = 250.5;
    momo.portal.disbursement = 5000;
    const before = momo.requests('GET', '/account/balance').length;
    await readNow('mtn');
    const collection = await account('mtn', 'collection');
    const disbursement = await account('mtn', 'disbursement');
    assert.deepEqual(
      { ...collection, read_at: undefined },
      {
        connector: 'mtn',
        account: 'collection',
        currency: 'GHS',
        balance: 25050,
        read_at: undefined,
        threshold: null,
        status: 'ok',
        error: null,
        error_at: null,
      },
    );
    assert.equal(disbursement?.balance, 500000);
    assert.equal(disbursement?.threshold, 100000);
    assert.equal(disbursement?.status, 'ok');
    assert.ok(Date.now() - Date.parse(collection?.read_at ?? '') < 10_000, 'read_at is the time of the read');
    // The mechanism: the fake received one GET per product, each with that product's credentials.
    const sent = momo.requests('GET', '/account/balance').slice(before);
    assert.deepEqual(sent.map((r) => r.path).sort(), [
      '/collection/v1_0/account/balance',
      '/disbursement/v1_0/account/balance',
    ]);
    for (const r of sent) {
      const product = r.path.split('/')[1];
      assert.equal(r.headers['ocp-apim-subscription-key'], `fake-${product}-key`);
      assert.equal(r.headers['x-target-environment'], 'mtnghana');
      assert.match(String(r.headers.authorization), /^Bearer /);
    }
  });

  it("Airtel: the wallet's balance enquiry is read with X-Country and X-Currency", async () => {
    airtel.portalBalance = 1234.5;
    await readNow('airtel');
    const wallet = await account('airtel', 'wallet');
    assert.equal(wallet?.balance, 123450);
    assert.equal(wallet?.currency, 'KES');
    assert.equal(wallet?.status, 'ok');
    assert.equal(wallet?.threshold, 10000, 'the connector-wide threshold applies to its account');
    const sent = airtel.requests('GET', '/standard/v1/users/balance').at(-1);
    assert.equal(sent?.headers['x-country'], 'KE');
    assert.equal(sent?.headers['x-currency'], 'KES');
    assert.match(String(sent?.headers.authorization), /^Bearer /);
  });

  it("Daraja: Account Balance is answered by result callback, matched by its ConversationID, and each account's available balance stored", async () => {
    daraja.portal['Utility Account'] = 75_000;
    const sentBefore = daraja.requests('POST', '/mpesa/accountbalance/v1/query').length;
    await readNow('daraja');
    const utility = await waitFor('the Utility Account balance', async () => {
      const a = await account('daraja', 'Utility Account');
      return a?.balance === 7_500_000 ? a : undefined;
    });
    assert.equal(utility.currency, 'KES');
    assert.equal(utility.status, 'ok');
    const names = (await float()).filter((a) => a.connector === 'daraja').map((a) => a.account);
    assert.deepEqual(names, [
      'Charges Paid Account',
      'Float Account',
      'Organization Settlement Account',
      'Utility Account',
      'Working Account',
    ]);
    // The mechanism: one query as the initiator of the B2C shortcode, its ResultURL on our callback route, and the
    // fake's result callback to it answered 200.
    const sent = daraja.requests('POST', '/mpesa/accountbalance/v1/query').slice(sentBefore);
    assert.equal(sent.length, 1);
    const body = sent[0]?.json as Record<string, string>;
    assert.equal(body.CommandID, 'AccountBalance');
    assert.equal(body.Initiator, 'testapi');
    assert.equal(body.PartyA, '600000');
    assert.equal(body.IdentifierType, '4');
    assert.match(body.ResultURL ?? '', new RegExp(`^${callbackBase('daraja')}/balance-result/[0-9a-f-]{36}$`));
    const answered = daraja.callbacks.filter((c) => c.url === body.ResultURL);
    assert.equal(answered.length, 1);
    assert.equal(answered[0]?.status, 200);
  });

  it('a Daraja balance result that answers no query of ours changes nothing', async () => {
    const before = await account('daraja', 'Utility Account');
    const forged = {
      Result: {
        ResultType: 0,
        ResultCode: 0,
        ResultDesc: 'The service request is processed successfully.',
        OriginatorConversationID: '1234-5678901-1',
        ConversationID: 'AG_20261128_000000000000000forged',
        TransactionID: 'NLJ0000000',
        ResultParameters: {
          ResultParameter: [{ Key: 'AccountBalance', Value: 'Utility Account|KES|1.00|1.00|0.00|0.00' }],
        },
      },
    };
    const res = await request(
      t,
      'POST',
      `/v1/providers/daraja/callbacks/${CALLBACK_TOKEN}/balance-result/${crypto.randomUUID()}`,
      {
        body: forged,
      },
    );
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { ResultCode: 0, ResultDesc: 'Accepted' });
    assert.deepEqual(await account('daraja', 'Utility Account'), before);
  });
});

describe('operator float: an operator down, silent or refusing shows unknown with the error', () => {
  it('MoMo answering 503 on the disbursement balance: that account is unknown with the error, the other still read', async () => {
    const before = await account('mtn', 'disbursement');
    momo.inject({ path: '/disbursement/v1_0/account/balance', status: 503 });
    await readNow('mtn');
    const disbursement = await account('mtn', 'disbursement');
    assert.equal(disbursement?.status, 'unknown');
    assert.match(disbursement?.error ?? '', /503/);
    assert.ok(disbursement?.error_at);
    assert.equal(disbursement?.balance, before?.balance, 'the last balance read is kept beside the error');
    assert.equal(disbursement?.read_at, before?.read_at);
    assert.equal((await account('mtn', 'collection'))?.status, 'ok');
  });

  it('Airtel not answering within OPERATOR_TIMEOUT_MS: unknown with the time-out, and the API still answers 200', async () => {
    airtel.inject({ path: '/standard/v1/users/balance', timeout: { processed: false } });
    await readNow('airtel');
    const wallet = await account('airtel', 'wallet');
    assert.equal(wallet?.status, 'unknown');
    assert.match(wallet?.error ?? '', /no answer within 1000 ms/);
    // Read again once Airtel answers: ok, the error gone.
    await readNow('airtel');
    const back = await account('airtel', 'wallet');
    assert.equal(back?.status, 'ok');
    assert.equal(back?.error, null);
  });

  it('MoMo refusing a wrong subscription key and a wrong API key: each account unknown with the refusal', async () => {
    await readNow('mtn-bad');
    const collection = await account('mtn-bad', 'collection');
    const disbursement = await account('mtn-bad', 'disbursement');
    assert.equal(collection?.status, 'unknown');
    assert.match(collection?.error ?? '', /collection token request answered 401 .*invalid subscription key/);
    assert.equal(disbursement?.status, 'unknown');
    assert.match(disbursement?.error ?? '', /disbursement token request answered 500 .*login_failed/);
    // The fake refused what it was sent: the wrong keys reached it, and no balance was ever asked without a token.
    const asked = momoRw.requests('POST', '/collection/token/');
    assert.ok(asked.length >= 1);
    assert.equal(asked.at(-1)?.headers['ocp-apim-subscription-key'], 'not-the-collection-key');
    const disbursementAsked = momoRw.requests('POST', '/disbursement/token/').at(-1);
    const basic = Buffer.from(String(disbursementAsked?.headers.authorization).slice(6), 'base64').toString('utf8');
    assert.equal(basic.split(':')[1], 'not-the-disbursement-api-key');
    assert.equal(momoRw.requests('GET', '/account/balance').length, 0, 'no token, no balance call');
  });

  it("Daraja refusing the initiator's SecurityCredential: its result 2001 makes each account unknown with it", async () => {
    // The same connector's name and callback address, with the initiator's password wrong: Daraja accepts the query,
    // then answers ResultCode 2001 at the ResultURL, as it documents for invalid initiator information.
    const settings = {
      ...DARAJA_FAKE_ENTRY,
      base_url: daraja.url,
      callback_token: CALLBACK_TOKEN,
      b2c: { ...DARAJA_FAKE_ENTRY.b2c, initiator_password: 'not-the-password' },
    } as unknown as DarajaSettings;
    const wrong = new DarajaConnector(settings, {
      db: t.workerDb,
      box: t.box,
      callbackBase: callbackBase('daraja'),
      catalogue: new MarketCatalogue(loadCatalogue(undefined)),
      timeoutMs: 1000,
      log: t.app.log,
      balances: t.services.operatorFloat,
    });
    await t.services.operatorFloat.read(wrong);
    const utility = await waitFor('the refusal to be recorded', async () => {
      const a = await account('daraja', 'Utility Account');
      return a?.status === 'unknown' ? a : undefined;
    });
    assert.match(utility.error ?? '', /ResultCode 2001: The initiator information is invalid/);
    assert.equal(utility.balance, 7_500_000, 'the last balance read is kept');
  });
});

describe('operator float: a threshold crossing raises one event each way', () => {
  it('operator.float_low once when MoMo disbursement drops below its threshold, operator.float_restored once when topped up', async () => {
    const token = await operatorEventsToken();
    momo.portal.disbursement = 5000;
    await readNow('mtn');
    assert.equal((await account('mtn', 'disbursement'))?.status, 'ok');
    assert.equal((await eventsOfType(token, 'operator.float_low')).length, 0);

    momo.portal.disbursement = 500;
    await readNow('mtn');
    await readNow('mtn');
    await readNow('mtn');
    const low = await account('mtn', 'disbursement');
    assert.equal(low?.status, 'low');
    assert.equal(low?.balance, 50000);
    const lows = await eventsOfType(token, 'operator.float_low');
    assert.equal(lows.length, 1, 'one event for the crossing, not one per read');
    assert.equal(lows[0].data.connector, 'mtn');
    assert.equal(lows[0].data.account, 'disbursement');
    assert.equal(lows[0].data.balance, 50000);
    assert.equal(lows[0].data.status, 'low');

    // An unknown read in between is no crossing.
    momo.inject({ path: '/disbursement/v1_0/account/balance', status: 500 });
    await readNow('mtn');
    assert.equal((await eventsOfType(token, 'operator.float_restored')).length, 0);

    momo.portal.disbursement = 2000;
    await readNow('mtn');
    await readNow('mtn');
    assert.equal((await account('mtn', 'disbursement'))?.status, 'ok');
    const restored = await eventsOfType(token, 'operator.float_restored');
    assert.equal(restored.length, 1);
    assert.equal(restored[0].data.balance, 200000);
    assert.equal((await eventsOfType(token, 'operator.float_low')).length, 1);
    // Only in the operator workspace: a merchant's workspace sees none.
    assert.equal((await eventsOfType(t.demoToken, 'operator.float_low')).length, 0);
  });

  it('two rounds at once (two nodes): one reads each connector, the other finds it claimed', async () => {
    const before = momo.requests('GET', '/account/balance').length;
    await Promise.all([t.services.operatorFloat.readDue(), t.services.operatorFloat.readDue()]);
    assert.equal(momo.requests('GET', '/account/balance').length - before, 2, 'one GET per product, once');
    await t.services.operatorFloat.readDue();
    assert.equal(momo.requests('GET', '/account/balance').length - before, 2, 'not again within the interval');
  });
});

describe('operator float: the admin API', () => {
  it('needs an admin token: none is 401, an integrator token 403', async () => {
    assertProblem(await request(t, 'GET', '/v1/admin/operator-float'), 401, 'unauthorized');
    assertProblem(await request(t, 'GET', '/v1/admin/operator-float', { token: t.demoToken }), 403, 'forbidden');
  });
});

describe('operator float: the schedule', () => {
  it('a started service reads every connector on its own, at OPERATOR_FLOAT_INTERVAL_MS', async () => {
    const other = await startApp(true, 1000);
    const mine = (url: string | undefined) => url?.startsWith(`http://127.0.0.1:${other.port}/`) === true;
    try {
      const data = await waitFor(
        'the scheduled reads',
        async () => {
          const r = await request(other.t, 'GET', '/v1/admin/operator-float', { token: other.t.adminToken });
          const all = r.body.data as Account[];
          const read = (c: string, a: string) => all.find((x) => x.connector === c && x.account === a)?.read_at;
          return read('mtn', 'disbursement') && read('airtel', 'wallet') && read('daraja', 'Utility Account')
            ? all
            : undefined;
        },
        15_000,
      );
      assert.equal(data.find((a) => a.connector === 'mtn' && a.account === 'disbursement')?.balance, 200000);
      assert.ok(
        daraja.requests('POST', '/mpesa/accountbalance/v1/query').some((r) => mine((r.json as any)?.ResultURL)),
        'the schedule sent Daraja its own query',
      );
    } finally {
      // Stop the schedule, and let Daraja's answers to its last queries arrive before the server closes.
      await other.t.workers?.stop();
      const asked = () =>
        daraja.requests('POST', '/mpesa/accountbalance/v1/query').filter((r) => mine((r.json as any)?.ResultURL))
          .length;
      await waitFor('the last Daraja answers', async () =>
        daraja.callbacks.filter((c) => mine(c.url)).length >= asked() ? true : undefined,
      );
      await other.t.close();
    }
  });
});
