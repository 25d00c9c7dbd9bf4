// Risk signals through HTTP: the open ones, one, report one, the admin's review, the built-in
// rules firing on their pattern and not on ordinary traffic, and payer phone numbers masked for liquidity providers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { maskPhoneNumber, maskPhoneNumbersIn, maskPhoneNumbersInJson } from '../src/platform/phone-mask.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  newKey,
  request,
  requestRefund,
  startTestApp,
  waitFor,
  type TestApp,
} from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp(FAST_LIFECYCLE, { workers: true });
});
after(async () => t.close());

const report = (overrides: Record<string, unknown> = {}) => ({
  type: 'fraud_suspected',
  severity: 'high',
  subject: { type: 'phone_number', id: '+254712345678' },
  description: 'Same number used on 14 accounts today.',
  details: { accounts: 14 },
  ...overrides,
});
const create = (token: string, body: unknown, key?: string) =>
  request(t, 'POST', '/v1/api/risk/signals', { token, body, ...(key === undefined ? {} : { idempotencyKey: key }) });
/** The admin's review of a signal: a PATCH of its status (and note). */
const review = (id: string, body: unknown) =>
  request(t, 'PATCH', `/v1/api/risk/signals/${id}`, { token: t.adminToken, body });
const openSignals = async (token: string) =>
  (await request(t, 'GET', '/v1/api/risk/signals/open?limit=100', { token })).body.data as Record<string, any>[];

describe('POST /v1/api/risk/signals: report a signal', () => {
  it('201 with the signal: open, source from the token, in the caller’s workspace, Location; a key replays it', async () => {
    const key = newKey();
    const res = await create(t.demoToken, report(), key);
    assert.equal(res.status, 201, res.text);
    const s = res.body;
    assert.deepEqual(Object.keys(s).sort(), [
      'acknowledged_at',
      'created_at',
      'description',
      'details',
      'resolution_note',
      'resolved_at',
      'severity',
      'signal_id',
      'source',
      'status',
      'subject',
      'type',
      'updated_at',
      'workspace_id',
    ]);
    assert.equal(s.status, 'open');
    assert.equal(s.source, 'integrator');
    assert.equal(s.workspace_id, t.demoWorkspaceId);
    assert.deepEqual(s.subject, { type: 'phone_number', id: '+254712345678' });
    assert.equal(res.headers.get('location'), `/v1/api/risk/signals/${s.signal_id}`);
    const again = await create(t.demoToken, report(), key);
    assert.equal(again.text, res.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
  });

  it('bad input is 400 with field details; no token is 401; an integrator naming another workspace is 403', async () => {
    for (const [body, field] of [
      [report({ type: 'aliens' }), 'type'],
      [report({ severity: 'urgent' }), 'severity'],
      [report({ subject: { type: 'phone_number' } }), 'subject.id'],
      [report({ description: '' }), 'description'],
      [report({ colour: 'red' }), 'colour'],
      [report({ details: { blob: 'x'.repeat(17 * 1024) } }), 'details'],
    ] as const) {
      const res = await create(t.demoToken, body);
      assertProblem(res, 400, 'validation_failed');
      assert.ok(
        res.body.errors.some((e: { field: string }) => e.field === field || e.field.startsWith(field)),
        `${field} in ${res.text}`,
      );
    }
    assertProblem(await request(t, 'POST', '/v1/api/risk/signals', { body: report() }), 401, 'unauthorized');
    const other = await createWorkspace(t, 'risk-target');
    assertProblem(await create(t.demoToken, report({ workspace_id: other.id })), 403, 'forbidden');
  });

  it('the admin may raise one about another workspace, which then sees it; an unknown workspace is 404', async () => {
    const ws = await createWorkspace(t, 'risk-admin-raised');
    const res = await create(t.adminToken, report({ workspace_id: ws.id, type: 'sanctions_match' }));
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.source, 'admin');
    assert.equal(res.body.workspace_id, ws.id);
    assert.ok((await openSignals(ws.token)).some((s) => s.signal_id === res.body.signal_id));
    assertProblem(
      await create(t.adminToken, report({ workspace_id: '0190a5f4-0000-7000-8000-000000000000' })),
      404,
      'not_found',
    );
  });
});

describe('read one, list the open ones', () => {
  it("another workspace's signal is 404; the admin reads any; a malformed id is 404", async () => {
    const { body: s } = await create(t.demoToken, report());
    const other = await createWorkspace(t, 'risk-other');
    assert.equal((await request(t, 'GET', `/v1/api/risk/signals/${s.signal_id}`, { token: t.demoToken })).status, 200);
    assertProblem(
      await request(t, 'GET', `/v1/api/risk/signals/${s.signal_id}`, { token: other.token }),
      404,
      'not_found',
    );
    assert.equal(
      (await request(t, 'GET', `/v1/api/risk/signals/${s.signal_id}`, { token: t.adminToken })).body.signal_id,
      s.signal_id,
    );
    assertProblem(await request(t, 'GET', '/v1/api/risk/signals/nope', { token: t.demoToken }), 404, 'not_found');
    assertProblem(await request(t, 'GET', `/v1/api/risk/signals/${s.signal_id}`), 401, 'unauthorized');
    assert.ok(
      !(await openSignals(other.token)).some((x) => x.signal_id === s.signal_id),
      "another workspace's list never shows it",
    );
  });

  it('open lists only open ones, newest first; the admin list spans workspaces; review moves them out', async () => {
    const ws = await createWorkspace(t, 'risk-review');
    const a = (await create(ws.token, report({ description: 'first' }))).body;
    const b = (await create(ws.token, report({ description: 'second' }))).body;
    assert.deepEqual(
      (await openSignals(ws.token)).map((s) => s.signal_id),
      [b.signal_id, a.signal_id],
    );
    const adminView = (await openSignals(t.adminToken)).map((s) => s.signal_id);
    assert.ok(adminView.includes(a.signal_id) && adminView.includes(b.signal_id));

    assertProblem(
      await request(t, 'PATCH', `/v1/api/risk/signals/${a.signal_id}`, {
        token: ws.token,
        body: { status: 'resolved' },
      }),
      403,
      'forbidden',
    );
    const ack = await review(a.signal_id, { status: 'acknowledged', note: 'looking' });
    assert.equal(ack.status, 200, ack.text);
    assert.equal(ack.body.status, 'acknowledged');
    assert.ok(ack.body.acknowledged_at);
    const done = await review(a.signal_id, { status: 'resolved', note: 'false alarm' });
    assert.equal(done.body.status, 'resolved');
    assert.equal(done.body.resolution_note, 'false alarm');
    assert.ok(done.body.resolved_at);
    assertProblem(await review(a.signal_id, { status: 'acknowledged' }), 409, 'transition_not_allowed');
    assertProblem(await review(a.signal_id, { status: 'closed' }), 400, 'validation_failed');
    assertProblem(await review('0190a5f4-0000-7000-8000-000000000000', { status: 'resolved' }), 404, 'not_found');
    assert.deepEqual(
      (await openSignals(ws.token)).map((s) => s.signal_id),
      [b.signal_id],
      'a resolved signal is no longer open',
    );
  });
});

describe('built-in rules', () => {
  async function collectAndWait(token: string, phone: string, status: string): Promise<string> {
    const res = await createCollection(t, token, { customer: { phone_number: phone } });
    assert.equal(res.status, 201, res.text);
    const id = res.body.collection_id as string;
    await waitFor(`collection ${id} ${status}`, async () => {
      const c = await request(t, 'GET', `/v1/collections/${id}`, { token });
      return c.body.status === status ? true : undefined;
    });
    return id;
  }

  it('repeated_failed_collections: a number failing 3 times within the hour raises one signal, with its event', async () => {
    const ws = await createWorkspace(t, 'risk-failures');
    for (let i = 0; i < 3; i++) await collectAndWait(ws.token, '+254711110002', 'failed');
    const signals = (await openSignals(ws.token)).filter((s) => s.type === 'repeated_failed_collections');
    assert.equal(signals.length, 1);
    assert.deepEqual(signals[0]?.subject, { type: 'phone_number', id: '+254711110002' });
    assert.equal(signals[0]?.source, 'rule');
    assert.equal(signals[0]?.details.count, 3);
    // The pattern going on adds nothing while the signal is open.
    await collectAndWait(ws.token, '+254711110002', 'failed');
    assert.equal((await openSignals(ws.token)).filter((s) => s.type === 'repeated_failed_collections').length, 1);
    const events = await request(t, 'GET', '/v1/events?type=risk_signal.created', { token: ws.token });
    assert.equal(events.body.data.length, 1);
    assert.equal(events.body.data[0].data.signal_id, signals[0]?.signal_id);
  });

  it('repeated_failed_collections stays quiet on ordinary traffic: two failures, and failures spread over numbers', async () => {
    const ws = await createWorkspace(t, 'risk-ordinary');
    await collectAndWait(ws.token, '+254722220002', 'failed');
    await collectAndWait(ws.token, '+254722220002', 'failed');
    await collectAndWait(ws.token, '+254733330002', 'failed');
    await collectAndWait(ws.token, '+254744440002', 'failed');
    await collectAndWait(ws.token, '+254722220000', 'successful');
    assert.deepEqual(await openSignals(ws.token), []);
  });

  it('refund_burst: the fifth refund within ten minutes raises a high signal; four do not', async () => {
    const burst = await createWorkspace(t, 'risk-refunds');
    const calm = await createWorkspace(t, 'risk-refunds-calm');
    const refundAll = async (token: string, n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const id = await collectAndWait(token, `+2547555500${10 + i}`, 'successful');
        const res = await requestRefund(t, token, id, 1500);
        assert.equal(res.status, 201, res.text);
      }
    };
    await refundAll(calm.token, 4);
    assert.deepEqual(await openSignals(calm.token), [], 'four refunds are ordinary');
    await refundAll(burst.token, 5);
    const signals = await openSignals(burst.token);
    assert.equal(signals.length, 1);
    assert.equal(signals[0]?.type, 'refund_burst');
    assert.equal(signals[0]?.severity, 'high');
    assert.deepEqual(signals[0]?.subject, { type: 'workspace', id: burst.id });
  });
  it('failures that arrive at the same moment are all counted: three at once raise exactly one signal', async () => {
    const ws = await createWorkspace(t, 'risk-concurrent-failures');
    const ids = await Promise.all([0, 1, 2].map(() => collectAndWait(ws.token, '+254766660002', 'failed')));
    assert.equal(ids.length, 3);
    assert.equal((await openSignals(ws.token)).filter((x) => x.type === 'repeated_failed_collections').length, 1);
  });

  it('refunds requested at the same moment are all counted: five at once raise exactly one refund_burst', async () => {
    const ws = await createWorkspace(t, 'risk-concurrent-refunds');
    const ids = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => collectAndWait(ws.token, `+2547666600${20 + i}`, 'successful')),
    );
    const answers = await Promise.all(ids.map((id) => requestRefund(t, ws.token, id, 1500)));
    assert.deepEqual(
      answers.map((a) => a.status),
      [201, 201, 201, 201, 201],
    );
    assert.equal((await openSignals(ws.token)).filter((x) => x.type === 'refund_burst').length, 1);
  });

  it('the windows hold: failures older than an hour and refunds older than ten minutes do not count', async () => {
    const ws = await createWorkspace(t, 'risk-windows');
    const old = [
      await collectAndWait(ws.token, '+254777770002', 'failed'),
      await collectAndWait(ws.token, '+254777770002', 'failed'),
    ];
    await t.db.query(`UPDATE collections SET updated_at = now() - interval '61 minutes' WHERE id = ANY($1::uuid[])`, [
      old,
    ]);
    await collectAndWait(ws.token, '+254777770002', 'failed');
    assert.deepEqual(await openSignals(ws.token), [], 'two of the three failures are outside the hour');

    const refunded: string[] = [];
    for (let i = 0; i < 4; i++) {
      const id = await collectAndWait(ws.token, `+2547777700${30 + i}`, 'successful');
      assert.equal((await requestRefund(t, ws.token, id, 1500)).status, 201);
      refunded.push(id);
    }
    await t.db.query(
      `UPDATE refunds SET requested_at = now() - interval '11 minutes' WHERE collection_id = ANY($1::uuid[])`,
      [refunded],
    );
    const last = await collectAndWait(ws.token, '+254777770040', 'successful');
    assert.equal((await requestRefund(t, ws.token, last, 1500)).status, 201);
    assert.deepEqual(await openSignals(ws.token), [], 'four of the five refunds are outside ten minutes');
  });

  it('provider errors are not the payer’s doing: three provider failures of one number raise nothing', async () => {
    const ws = await createWorkspace(t, 'risk-outage');
    for (let i = 0; i < 3; i++) {
      const id = await collectAndWait(ws.token, '+254788880005', 'processing'); // 0005: stays processing until driven
      const driven = await request(t, 'POST', `/v1/sandbox/collections/${id}/simulate`, {
        token: ws.token,
        body: { outcome: 'failed', reason: 'provider_error' },
      });
      assert.ok(driven.status < 300, driven.text);
    }
    assert.deepEqual(await openSignals(ws.token), []);
  });

  it('after a review, only new failures count: the next failure of a resolved number raises nothing', async () => {
    const ws = await createWorkspace(t, 'risk-after-review');
    for (let i = 0; i < 3; i++) await collectAndWait(ws.token, '+254799990002', 'failed');
    const [signal] = await openSignals(ws.token);
    assert.ok(signal);
    const done = await review(signal.signal_id, { status: 'resolved', note: 'payer confirmed' });
    assert.equal(done.status, 200);
    await collectAndWait(ws.token, '+254799990002', 'failed');
    assert.deepEqual(await openSignals(ws.token), [], 'the failures before the signal were already seen');
  });
});

describe('liquidity providers see payer phone numbers masked', () => {
  it('the rule: country code and last 4 digits kept (2 for a national number under 8 digits), one * per digit', () => {
    assert.equal(maskPhoneNumber('+254712345678'), '+254*****5678');
    assert.equal(maskPhoneNumber('+12025550123'), '+1******0123');
    assert.equal(maskPhoneNumber('+447911123456'), '+44******3456');
    assert.equal(maskPhoneNumber('+2481234567'), '+248*****67');
    assert.equal(maskPhoneNumber('0712345678'), '******5678', 'not E.164: no country code kept, digits masked alike');
    assert.equal(
      maskPhoneNumbersIn('3 collections from +254712345678 failed; also +255754000111.'),
      '3 collections from +254*****5678 failed; also +255*****0111.',
    );
    assert.equal(maskPhoneNumbersIn('order +12 and invoice 2547123456789'), 'order +12 and invoice 2547123456789');
    assert.deepEqual(
      maskPhoneNumbersInJson({ accounts: 14, phones: ['+254712345678'], nested: { '+254712345678': 'seen' } }),
      { accounts: 14, phones: ['+254*****5678'], nested: { '+254*****5678': 'seen' } },
    );
  });

  it('an LP token lists and reads a signal about a phone masked everywhere; integrator and admin see it whole', async () => {
    const ws = await createWorkspace(t, 'risk-lp-privacy');
    const lpToken = await liquidityProviderToken(t, ws.id);
    const phone = '+254712345678';
    const reported = await create(
      ws.token,
      report({
        description: `Same number ${phone} used on 14 accounts today.`,
        details: { accounts: 14, numbers: [phone], [phone]: 'first seen' },
      }),
    );
    assert.equal(reported.status, 201, reported.text);
    const id = reported.body.signal_id as string;
    const note = await review(id, { status: 'acknowledged', note: `Called ${phone}, no answer.` });
    assert.equal(note.status, 200, note.text);

    const masked = {
      subject: { type: 'phone_number', id: '+254*****5678' },
      description: 'Same number +254*****5678 used on 14 accounts today.',
      details: { accounts: 14, numbers: ['+254*****5678'], '+254*****5678': 'first seen' },
      resolution_note: 'Called +254*****5678, no answer.',
    };
    const whole = {
      subject: { type: 'phone_number', id: phone },
      description: `Same number ${phone} used on 14 accounts today.`,
      details: { accounts: 14, numbers: [phone], [phone]: 'first seen' },
      resolution_note: `Called ${phone}, no answer.`,
    };
    const shown = (s: Record<string, any>) => ({
      subject: s.subject,
      description: s.description,
      details: s.details,
      resolution_note: s.resolution_note,
    });
    const got = async (token: string) => {
      const res = await request(t, 'GET', `/v1/api/risk/signals/${id}`, { token });
      assert.equal(res.status, 200, res.text);
      return shown(res.body);
    };
    assert.deepEqual(await got(lpToken), masked);
    assert.doesNotMatch(
      (await request(t, 'GET', `/v1/api/risk/signals/${id}`, { token: lpToken })).text,
      /712345678|2547123/,
    );
    assert.deepEqual(await got(ws.token), whole);
    assert.deepEqual(await got(t.adminToken), whole);

    // The list (acknowledged signals are no longer open: a fresh one, raised by the rule about a number).
    for (let i = 0; i < 3; i++) {
      const res = await createCollection(t, ws.token, { customer: { phone_number: '+254711110002' } });
      assert.equal(res.status, 201, res.text);
      await waitFor('the collection to fail', async () => {
        const c = await request(t, 'GET', `/v1/collections/${res.body.collection_id}`, { token: ws.token });
        return c.body.status === 'failed' ? true : undefined;
      });
    }
    const lpList = await openSignals(lpToken);
    assert.equal(lpList.length, 1);
    assert.deepEqual(lpList[0]?.subject, { type: 'phone_number', id: '+254*****0002' });
    assert.match(lpList[0]?.description, /^3 collections from \+254\*\*\*\*\*0002 were declined/);
    const integratorList = await openSignals(ws.token);
    assert.deepEqual(integratorList[0]?.subject, { type: 'phone_number', id: '+254711110002' });
    assert.match(integratorList[0]?.description, /from \+254711110002 /);
    assert.ok((await openSignals(t.adminToken)).some((s) => s.subject.id === '+254711110002'));
  });

  it('an LP cannot look a signal up by the full number: the list has no subject filter (400), and its own report comes back masked', async () => {
    const ws = await createWorkspace(t, 'risk-lp-filter');
    const lpToken = await liquidityProviderToken(t, ws.id);
    assert.equal((await create(ws.token, report())).status, 201);
    for (const query of ['subject_id=%2B254712345678', 'subject=%2B254712345678', 'phone_number=%2B254712345678']) {
      assertProblem(
        await request(t, 'GET', `/v1/api/risk/signals/open?${query}`, { token: lpToken }),
        400,
        'validation_failed',
      );
    }
    const own = await create(lpToken, report({ description: 'Reported by the partner about +254712345678.' }));
    assert.equal(own.status, 201, own.text);
    assert.equal(own.body.source, 'liquidity_provider');
    assert.deepEqual(own.body.subject, { type: 'phone_number', id: '+254*****5678' });
    assert.equal(own.body.description, 'Reported by the partner about +254*****5678.');
    const forIntegrator = await request(t, 'GET', `/v1/api/risk/signals/${own.body.signal_id}`, { token: ws.token });
    assert.deepEqual(forIntegrator.body.subject, { type: 'phone_number', id: '+254712345678' });
  });
});
