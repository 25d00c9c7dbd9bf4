// The TypeScript client (packages/sdk) against a started service: its resource methods, a retry that
// replays instead of duplicating, pagination over 250 items, webhook verification of a real delivery, typed errors,
// and the retry, timeout and abort rules (the last with a scripted fetch, to control what the network does).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Payments, PaymentsError, type Collection } from '../packages/sdk/src/index.js';
import { createWorkspace, FAST_LIFECYCLE, startTestApp, waitFor, type TestApp } from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp(FAST_LIFECYCLE, { workers: true });
});
after(async () => t?.close());

const order = () => ({
  amount: 1500,
  currency: 'KES',
  reference: `sdk-${randomBytes(4).toString('hex')}`,
  customer: { phone_number: '+254712345678' },
  metadata: { cart: 'sdk' },
});

async function successful(payments: Payments, id: string): Promise<Collection> {
  return waitFor(`collection ${id} successful`, async () => {
    const c = await payments.collections.get(id);
    return c.status === 'successful' ? c : undefined;
  });
}

describe('the audit log', () => {
  it("lists it and exports it whole as one CSV, following the service's Next-Cursor past 10,000 events", async () => {
    const ws = await createWorkspace(t, `sdk-audit-${randomBytes(3).toString('hex')}`);
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });
    // More events than one CSV answer holds (10,000), written straight into the log.
    await t.db.query(
      `INSERT INTO audit_events (workspace_id, id, occurred_at, actor_type, action, status, request_id)
       SELECT $1, gen_random_uuid(), now() - i * interval '1 millisecond', 'api_key', 'sdk.bulk_check', 200, 'req-' || i
       FROM generate_series(1, 10001) AS i`,
      [ws.id],
    );
    const page = await payments.auditEvents.list({ action: 'sdk.bulk_check', limit: 3 }).page(undefined);
    assert.deepEqual(
      page.data.map((e) => e.request_id),
      ['req-1', 'req-2', 'req-3'],
      'newest first',
    );
    const csv = await payments.auditEvents.csv({ action: 'sdk.bulk_check' });
    const lines = csv.trimEnd().split('\r\n');
    assert.equal(lines.filter((l) => l.startsWith('id,')).length, 1, 'one header line');
    assert.equal(lines.length, 1 + 10001);
    const requestIds = new Set(lines.slice(1).map((l) => l.split(',').at(-1)));
    assert.equal(requestIds.size, 10001, 'every event once');
  });
});

describe('resources', () => {
  it('collections, refunds, balances, the workspace and the settlement report', async () => {
    const ws = await createWorkspace(t, `sdk-${randomBytes(3).toString('hex')}`);
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });
    const created = await payments.collections.create('KE', 'mpesa', order());
    assert.equal(created.status, 'created');
    const paid = await successful(payments, created.collection_id);
    assert.equal(paid.amount, 1500);
    const refund = await payments.collections.refund(created.collection_id, { amount: 1500 });
    assert.equal(refund.reason, 'merchant_request');
    assert.equal((await payments.refunds.get(refund.refund_id)).refund_id, refund.refund_id);
    const listed: string[] = [];
    for await (const r of payments.collections.refunds(created.collection_id)) listed.push(r.refund_id);
    assert.deepEqual(listed, [refund.refund_id]);
    await waitFor('the refund to succeed', async () =>
      (await payments.refunds.get(refund.refund_id)).status === 'successful' ? true : undefined,
    );
    const resolved = await payments.sandbox
      .simulateRefund(refund.refund_id, { outcome: 'failed' })
      .catch((e: unknown) => e);
    assert.ok(resolved instanceof PaymentsError && resolved.code === 'transition_not_allowed');
    const balances = await payments.balances.list();
    assert.equal(balances.data.find((b) => b.currency === 'KES')?.available, 0, 'the refund reserved it');
    const workspace = await payments.workspace.update({ late_payment: 'accept' });
    assert.equal(workspace.late_payment, 'accept');
    assert.equal((await payments.workspace.get()).late_payment, 'accept');
    const report = await payments.reports.settlement({ date: new Date().toISOString().slice(0, 10), currency: 'KES' });
    assert.equal(report.rails[0]?.collections.successful.count, 1);
    const csv = await payments.reports.settlementCsv({ date: report.date, currency: 'KES' });
    assert.match(csv, /^section,market,rail,item,count,amount\r\n/);
  });

  it('checkout sessions, webhook endpoints, events, credentials and the sandbox', async () => {
    const ws = await createWorkspace(t, `sdk-${randomBytes(3).toString('hex')}`);
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });
    const session = await payments.checkoutSessions.create({
      amount: 5000,
      currency: 'KES',
      redirect_url: 'https://shop.example/thanks',
    });
    assert.equal((await payments.checkoutSessions.get(session.id)).id, session.id);
    assert.equal((await payments.checkoutSessions.list().firstPage()).data[0]?.id, session.id);

    const endpoint = await payments.webhookEndpoints.create({ url: 'http://127.0.0.1:9/hooks' });
    assert.match(endpoint.secret, /^whsec_/);
    assert.equal((await payments.webhookEndpoints.get(endpoint.id)).url, 'http://127.0.0.1:9/hooks');
    const updated = await payments.webhookEndpoints.update(endpoint.id, { description: 'orders' });
    assert.equal(updated.description, 'orders');
    const rotated = await payments.webhookEndpoints.rotateSecret(endpoint.id);
    assert.notEqual(rotated.secret, endpoint.secret);
    const endpoints: string[] = [];
    for await (const e of payments.webhookEndpoints.list()) endpoints.push(e.id);
    assert.deepEqual(endpoints, [endpoint.id]);

    const c = await payments.collections.create('KE', 'airtel_money', order());
    const simulated = await payments.sandbox.simulateCollection(c.collection_id, { outcome: 'failed' });
    assert.equal(simulated.status, 'failed');
    const events = [];
    for await (const e of payments.events.list({ object_id: c.collection_id })) events.push(e);
    assert.ok(events.some((e) => e.type === 'collection.failed'));
    const first = events[0];
    assert.ok(first);
    assert.equal((await payments.events.get(first.id)).id, first.id);
    await payments.events.resend(first.id, {});
    const deliveries = await payments.events.deliveries(first.id).firstPage();
    assert.ok(deliveries.data.length >= 1);
    await payments.webhookEndpoints.delete(endpoint.id);

    const credential = await payments.credentials.create({ name: 'second' });
    assert.ok(credential.token);
    const again = await payments.credentials.rotate(credential.id);
    assert.notEqual(again.token, credential.token);
    assert.equal((await payments.credentials.revoke(credential.id)).status, 'revoked');
    assert.ok((await payments.credentials.list()).data.length >= 2);
  });

  it('payouts, routes, beneficiaries, market data, risk signals and the admin API', async () => {
    const admin = new Payments({ token: t.adminToken, baseUrl: t.baseUrl });
    const made = await admin.admin.workspaces.create({ name: `sdk-${randomBytes(3).toString('hex')}` });
    assert.ok((await admin.admin.workspaces.list()).data.some((w) => w.id === made.workspace.id));
    const lpCredential = await admin.admin.workspaces.createCredential(made.workspace.id, {
      audience: 'liquidity_provider',
    });
    const payments = new Payments({ token: made.credential.token, baseUrl: t.baseUrl });
    const lp = new Payments({ token: lpCredential.token, baseUrl: t.baseUrl });

    const c = await payments.collections.create('KE', 'mpesa', { ...order(), amount: 10_000 });
    await successful(payments, c.collection_id);
    const route = await lp.routes.create({
      source: 'KES',
      market: 'KE',
      rail: 'mpesa',
      min_amount: 100,
      max_amount: 1_000_000,
    });
    assert.equal((await lp.routes.get(route.route_id)).route_id, route.route_id);
    assert.ok((await payments.routes.list().firstPage()).data.some((r) => r.route_id === route.route_id));
    const beneficiary = await payments.beneficiaries.create({
      name: 'Akinyi',
      market: 'KE',
      rail: 'mpesa',
      phone_number: '+254712340005',
    });
    assert.equal((await payments.beneficiaries.get(beneficiary.beneficiary_id)).name, 'Akinyi');
    assert.equal((await payments.beneficiaries.list().firstPage()).data[0]?.beneficiary_id, beneficiary.beneficiary_id);
    const payout = await payments.payouts.create({
      route_id: route.route_id,
      beneficiary_id: beneficiary.beneficiary_id,
      amount: 1000,
      reference: 'sdk-payout',
    });
    assert.equal((await payments.payouts.get(payout.transaction_id)).transaction_id, payout.transaction_id);
    const settled = await payments.sandbox.simulatePayout(payout.transaction_id, { outcome: 'successful' });
    assert.equal(settled.status, 'successful');
    assert.equal((await payments.payouts.list().firstPage()).data.length, 1);
    assert.equal((await payments.beneficiaries.deactivate(beneficiary.beneficiary_id)).status, 'inactive');
    await lp.routes.update(route.route_id, { status: 'inactive' });

    const source = await admin.marketData.sources.create({
      name: `sdk-${randomBytes(3).toString('hex')}`,
      kind: 'exchange',
    });
    await lp.marketData.rates.post({ source_id: source.source_id, base: 'USDT', quote: 'KES', rate: '129.50' });
    assert.ok((await lp.marketData.rates.list({ pair: 'USDT/KES' }).firstPage()).data.length >= 1);
    assert.ok((await lp.marketData.sources.list().firstPage()).data.length >= 1);
    const retired = await admin.marketData.sources.update(source.source_id, { status: 'inactive' });
    assert.equal(retired.status, 'inactive');
    const stocked = await lp.depositAddresses.stockPool({
      asset: 'USDC',
      network: 'base',
      addresses: [`0x${randomBytes(20).toString('hex')}`],
    });
    assert.equal(stocked.asset, 'USDC');

    const signal = await payments.riskSignals.create({
      type: 'other',
      severity: 'low',
      subject: { type: 'phone_number', id: '+254712345678' },
      description: 'sdk',
    });
    assert.equal((await admin.riskSignals.get(signal.signal_id)).signal_id, signal.signal_id);
    const openIds = async () => (await admin.riskSignals.listOpen().firstPage()).data.map((s) => s.signal_id);
    assert.ok((await openIds()).includes(signal.signal_id), 'listed while open');
    const reviewed = await admin.riskSignals.review(signal.signal_id, { status: 'acknowledged' });
    assert.equal(reviewed.status, 'acknowledged');
    assert.ok(!(await openIds()).includes(signal.signal_id), 'no longer listed once acknowledged');
  });
});

describe('provider prediction', () => {
  it("predicts a number's operator and rails; a number of no market is a PaymentsError with its code", async () => {
    const payments = new Payments({ token: t.demoToken, baseUrl: t.baseUrl });
    assert.deepEqual(await payments.providers.predict({ phone_number: '0733 123 456', market: 'KE' }), {
      phone_number: '+254733123456',
      market: 'KE',
      operator: 'Airtel',
      rails: ['airtel_money'],
      portability: true,
    });
    await assert.rejects(
      payments.providers.predict({ phone_number: '+44 7700 900123' }),
      (err: unknown) => err instanceof PaymentsError && err.problem.code === 'phone_number_country',
    );
  });
});

describe('deposits', () => {
  it('deposit addresses, a sandbox transfer confirmed and credited, deposits listed and read', async () => {
    const ws = await createWorkspace(t, `sdk-${randomBytes(3).toString('hex')}`);
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });
    const address = await payments.depositAddresses.create({ asset: 'USDT', network: 'tron' });
    assert.match(address.address, /^T/);
    assert.equal((await payments.depositAddresses.get(address.deposit_address_id)).address, address.address);
    assert.equal((await payments.depositAddresses.list().firstPage()).data.length, 1);
    const arrived = await payments.sandbox.depositArrives({
      deposit_address_id: address.deposit_address_id,
      amount: 25_000_000,
    });
    assert.equal(arrived.status, 'pending');
    // Confirmed, and credited in the same step when the deposit is kept in its asset.
    const confirmed = await payments.sandbox.simulateDeposit(arrived.deposit_id, { outcome: 'confirmed' });
    assert.ok(['confirmed', 'credited'].includes(confirmed.status), confirmed.status);
    const credited = await waitFor('the deposit credited', async () => {
      const d = await payments.deposits.get(arrived.deposit_id);
      return d.status === 'credited' ? d : undefined;
    });
    assert.equal(credited.amount, 25_000_000);
    const all = [];
    for await (const d of payments.deposits.list()) all.push(d.deposit_id);
    assert.deepEqual(all, [arrived.deposit_id]);
    const usdt = (await payments.balances.list()).data.find((b) => b.currency === 'USDT');
    assert.equal(usdt?.available, 25_000_000);

    // A liquidity provider reports a transfer to an autoconvert address: credited in KES at its own rate.
    const admin = new Payments({ token: t.adminToken, baseUrl: t.baseUrl });
    const lpCredential = await admin.admin.workspaces.createCredential(ws.id, { audience: 'liquidity_provider' });
    const lp = new Payments({ token: lpCredential.token, baseUrl: t.baseUrl });
    const source = await admin.marketData.sources.create({
      name: `sdk-deposits-${randomBytes(3).toString('hex')}`,
      kind: 'exchange',
    });
    await lp.marketData.rates.post({ source_id: source.source_id, base: 'USDT', quote: 'KES', rate: '130' });
    const converting = await payments.depositAddresses.create({
      asset: 'USDT',
      network: 'tron',
      autoconvert_currency: 'KES',
    });
    const reported = await lp.deposits.report({
      network: 'tron',
      address: converting.address,
      asset: 'USDT',
      amount: 10_000_000,
      tx_hash: randomBytes(32).toString('hex'),
      status: 'confirmed',
    });
    assert.equal(reported.status, 'credited');
    assert.ok(reported.credit_id);
    const credit = await payments.deposits.autoconvertCredit(reported.credit_id);
    assert.equal(credit.target_currency, 'KES');
    assert.equal(credit.deposit_id, reported.deposit_id);
  });
});

describe('behaviour', () => {
  it('a POST whose answer is lost after the server committed is retried with the same key: replayed, one collection', async () => {
    const ws = await createWorkspace(t, `sdk-${randomBytes(3).toString('hex')}`);
    let cut = 0;
    const keys: string[] = [];
    // The first POST reaches the service and commits; its answer is then dropped, as a network error.
    const flaky: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      if (request.method === 'POST') keys.push(request.headers.get('idempotency-key') ?? '');
      const response = await fetch(request);
      if (request.method === 'POST' && cut++ === 0) throw new TypeError('fetch failed: socket closed');
      return response;
    };
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl, fetch: flaky, backoffMs: 10 });
    const created = await payments.collections.create('KE', 'mpesa', order());
    assert.equal(keys.length, 2);
    assert.equal(keys[0], keys[1], 'the retry carries the same Idempotency-Key');
    const all = await payments.collections.list().firstPage();
    assert.deepEqual(
      all.data.map((c) => c.collection_id),
      [created.collection_id],
    );
  });

  it('walks every page: 250 collections in pages of 100', async () => {
    const ws = await createWorkspace(t, `sdk-${randomBytes(3).toString('hex')}`);
    const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });
    const made = new Set<string>();
    for (let i = 0; i < 250; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, () => payments.collections.create('KE', 'airtel_money', order())),
      );
      for (const c of batch) made.add(c.collection_id);
    }
    const seen: string[] = [];
    for await (const c of payments.collections.list({ limit: 100 })) seen.push(c.collection_id);
    assert.equal(seen.length, 250);
    assert.deepEqual(new Set(seen), made);
  });

  it('verify accepts a real delivery and refuses a tampered one', async () => {
    const received: { body: string; headers: http.IncomingHttpHeaders }[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ body, headers: req.headers });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const ws = await createWorkspace(t, `sdk-${randomBytes(3).toString('hex')}`);
      const payments = new Payments({ token: ws.token, baseUrl: t.baseUrl });
      const address = server.address() as { port: number };
      const endpoint = await payments.webhookEndpoints.create({ url: `http://127.0.0.1:${address.port}/hooks` });
      const c = await payments.collections.create('KE', 'mpesa', order());
      const delivery = await waitFor('the collection.created delivery', async () =>
        received.find((d) => (JSON.parse(d.body) as { type: string }).type === 'collection.created'),
      );
      const event = payments.webhooks.verify(delivery.body, delivery.headers, endpoint.secret);
      assert.equal(event.type, 'collection.created');
      if (event.type === 'collection.created') assert.equal(event.data.collection_id, c.collection_id);
      assert.throws(() =>
        payments.webhooks.verify(delivery.body.replace('1500', '9999'), delivery.headers, endpoint.secret),
      );
      assert.throws(() =>
        payments.webhooks.verify(delivery.body, delivery.headers, `whsec_${randomBytes(24).toString('base64')}`),
      );
    } finally {
      server.close();
    }
  });

  it('a problem is a PaymentsError with its code, problem document and X-Request-Id', async () => {
    const payments = new Payments({ token: t.demoToken, baseUrl: t.baseUrl });
    const err = await payments.collections.get('01890a5d-ac96-774b-bcce-b302099a8057').catch((e: unknown) => e);
    assert.ok(err instanceof PaymentsError);
    assert.equal(err.status, 404);
    assert.equal(err.code, 'not_found');
    assert.match(err.requestId ?? '', /^[0-9a-f-]{36}$/);
    const invalid = await payments.collections
      .create('KE', 'mpesa', { ...order(), amount: 15.5 })
      .catch((e: unknown) => e as PaymentsError);
    assert.equal(invalid.status, 400);
    assert.ok(invalid.problem.errors?.some((e) => e.field === 'amount'));
  });

  it('429 is retried after Retry-After, within the bounds; a GET that times out is retried, then fails; abort stops at once', async () => {
    const answers = [429, 429, 200];
    const calls: number[] = [];
    const scripted: typeof fetch = async () => {
      calls.push(Date.now());
      const status = answers.shift() ?? 200;
      return status === 429
        ? new Response(
            JSON.stringify({ status, code: 'rate_limited', detail: 'slow down', title: 'Too many', type: 'x' }),
            {
              status,
              headers: { 'retry-after': '0', 'content-type': 'application/problem+json' },
            },
          )
        : new Response(JSON.stringify({ data: [] }), { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const payments = new Payments({ token: 'x', baseUrl: 'http://sdk.invalid', fetch: scripted });
    assert.deepEqual(await payments.balances.list(), { data: [] });
    assert.equal(calls.length, 3);

    const bounded = new Payments({ token: 'x', baseUrl: 'http://sdk.invalid', fetch: scripted, maxRetries: 1 });
    answers.push(429, 429, 429);
    const limited = await bounded.balances.list().catch((e: unknown) => e);
    assert.ok(limited instanceof PaymentsError);
    assert.equal(limited.code, 'rate_limited');

    let attempts = 0;
    const hanging: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        attempts += 1;
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason as Error));
      });
    const slow = new Payments({
      token: 'x',
      baseUrl: 'http://sdk.invalid',
      fetch: hanging,
      maxRetries: 2,
      backoffMs: 1,
    });
    const started = Date.now();
    await assert.rejects(slow.balances.list({ timeoutMs: 50 }));
    assert.equal(attempts, 3, 'a read is retried after a time-out');
    assert.ok(Date.now() - started < 2000);

    const controller = new AbortController();
    const pending = slow.balances.list({ signal: controller.signal });
    controller.abort();
    await assert.rejects(pending, /abort/i);

    attempts = 0;
    await assert.rejects(slow.webhookEndpoints.delete('x', { timeoutMs: 20 }));
    assert.equal(attempts, 1, 'a DELETE without an Idempotency-Key is sent once');
  });
});
