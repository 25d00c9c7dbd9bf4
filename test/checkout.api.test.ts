// Hosted checkout through HTTP: sessions (create, read), the by-token endpoints (no API key), attempts that follow
// their collection, expiry without any request, and the completion events with the session's metadata.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  assertProblem,
  createWorkspace,
  FAST_LIFECYCLE,
  newKey,
  request,
  startTestApp,
  waitFor,
  type ApiResponse,
  type TestApp,
} from './helpers/harness.js';
import { clientKey } from '../src/platform/rate-limit.js';
import { returnUrl } from '../src/modules/checkout/checkout.schemas.js';
import { MAX_ATTEMPTS } from '../src/modules/checkout/checkout.service.js';

const PUBLIC_BASE_URL = 'https://pay.example.test';
const METADATA = { order_id: 'ord-7731', secret_note: 'internal-margin-12pct' };

let t: TestApp;
before(async () => {
  t = await startTestApp({ ...FAST_LIFECYCLE, PUBLIC_BASE_URL }, { workers: true });
});
after(async () => t.close());

const sessionBody = (overrides: Record<string, unknown> = {}) => ({
  amount: 150_000,
  currency: 'KES',
  redirect_url: 'https://shop.example/thanks?cart=9',
  reference: 'cart-9',
  metadata: METADATA,
  ...overrides,
});

async function createSession(overrides: Record<string, unknown> = {}, token = t.demoToken): Promise<ApiResponse> {
  const res = await request(t, 'POST', '/v1/checkout/sessions', { token, body: sessionBody(overrides) });
  assert.equal(res.status, 201, res.text);
  return res;
}

const tokenOf = (session: { session_url: string }): string => session.session_url.split('/').pop() as string;
const byToken = (token: string) => request(t, 'GET', `/v1/checkout/by-token/${token}`);
const pay = (token: string, phone: string, key = newKey(), rail = 'mpesa') =>
  request(t, 'POST', `/v1/checkout/by-token/${token}/pay`, {
    body: { rail, customer: { phone_number: phone } },
    idempotencyKey: key,
  });
const readSession = (id: string, token = t.demoToken) => request(t, 'GET', `/v1/checkout/sessions/${id}`, { token });

async function sessionWhen(id: string, status: string, timeoutMs = 10_000): Promise<Record<string, any>> {
  return waitFor(
    `session ${id} ${status}`,
    async () => {
      const res = await readSession(id);
      return res.body.status === status ? res.body : undefined;
    },
    timeoutMs,
  );
}

describe('POST /v1/checkout/sessions: create a session', () => {
  it('201 with the session: open, session_url on PUBLIC_BASE_URL with a random token that is not the id, Location', async () => {
    const before = Date.now();
    const res = await createSession();
    const s = res.body;
    assert.deepEqual(Object.keys(s).sort(), [
      'amount',
      'attempts',
      'collection_id',
      'completed_at',
      'created_at',
      'currency',
      'customer',
      'expires_at',
      'failure_reason',
      'id',
      'market',
      'metadata',
      'rail',
      'redirect_url',
      'reference',
      'session_url',
      'status',
      'updated_at',
    ]);
    assert.equal(s.status, 'open');
    assert.equal(s.amount, 150_000);
    assert.equal(s.currency, 'KES');
    assert.equal(s.market, 'KE', 'the only market using KES');
    assert.equal(s.collection_id, null);
    assert.equal(s.completed_at, null);
    assert.deepEqual(s.metadata, METADATA);
    assert.equal(res.headers.get('location'), `/v1/checkout/sessions/${s.id}`);
    const token = tokenOf(s);
    assert.match(s.session_url, /^https:\/\/pay\.example\.test\/checkout\/[A-Za-z0-9_-]{43}$/);
    assert.ok(!token.includes(s.id) && !token.includes(s.id.replace(/-/g, '')), 'the token is not derived from the id');
    const lifetime = Date.parse(s.expires_at) - Date.parse(s.created_at);
    assert.equal(lifetime, 3600 * 1000, 'default expiry: one hour');
    assert.ok(Date.parse(s.created_at) >= before - 5);
    const other = await createSession();
    assert.notEqual(tokenOf(other.body), token);
  });

  it('expires_in sets the expiry; the market may be given; a prefilled phone is kept', async () => {
    const res = await createSession({
      currency: 'XOF',
      market: 'CI',
      amount: 5000,
      expires_in: 600,
      customer: { phone_number: '+2250701020304' },
    });
    assert.equal(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at), 600_000);
    assert.equal(res.body.market, 'CI');
    assert.deepEqual(res.body.customer, { phone_number: '+2250701020304' });
  });

  it('bad input: clear problems with stable codes and field errors, nothing created', async () => {
    const cases: [Record<string, unknown>, number, string, string?][] = [
      [{ redirect_url: 'ftp://shop.example/x' }, 400, 'invalid_redirect_url', 'redirect_url'],
      [{ redirect_url: '/thanks' }, 400, 'invalid_redirect_url', 'redirect_url'],
      [{ redirect_url: 'https://user:pw@shop.example/' }, 400, 'invalid_redirect_url', 'redirect_url'],
      [{ currency: 'EUR' }, 400, 'invalid_currency', 'currency'],
      [{ currency: 'GHS', market: 'KE' }, 400, 'invalid_currency', 'currency'],
      [{ market: 'FR' }, 400, 'invalid_market', 'market'],
      [{ amount: 1 }, 422, 'amount_out_of_range', 'amount'],
      [{ amount: 100.5 }, 400, 'validation_failed', 'amount'],
      [{ amount: '1500' }, 400, 'validation_failed', 'amount'],
      [{ expires_in: 10 }, 400, 'validation_failed', 'expires_in'],
      [{ customer: { phone_number: '0712345678' } }, 400, 'invalid_customer', 'customer.phone_number'],
      [{ colour: 'red' }, 400, 'validation_failed'],
    ];
    const { body: before } = await request(t, 'GET', '/v1/checkout/sessions?limit=100', { token: t.demoToken });
    for (const [overrides, status, code, field] of cases) {
      const res = await request(t, 'POST', '/v1/checkout/sessions', {
        token: t.demoToken,
        body: sessionBody(overrides),
      });
      assertProblem(res, status, code);
      if (field)
        assert.ok(
          res.body.errors?.some((e: { field: string }) => e.field === field),
          `${code}: field ${field} in ${res.text}`,
        );
    }
    const missing = await request(t, 'POST', '/v1/checkout/sessions', {
      token: t.demoToken,
      body: { amount: 1000, currency: 'KES' },
    });
    assertProblem(missing, 400, 'validation_failed');
    assert.ok(missing.body.errors.some((e: { field: string }) => e.field === 'redirect_url'));
    const { body: afterList } = await request(t, 'GET', '/v1/checkout/sessions?limit=100', { token: t.demoToken });
    assert.equal(afterList.data.length, before.data.length, 'no session was created by a refused request');
  });

  it('an Idempotency-Key replays the stored session; another body with the same key is 422', async () => {
    const key = newKey();
    const first = await request(t, 'POST', '/v1/checkout/sessions', {
      token: t.demoToken,
      body: sessionBody(),
      idempotencyKey: key,
    });
    const again = await request(t, 'POST', '/v1/checkout/sessions', {
      token: t.demoToken,
      body: sessionBody(),
      idempotencyKey: key,
    });
    assert.equal(first.status, 201);
    assert.equal(again.status, 201);
    assert.equal(again.text, first.text, 'byte-identical replay');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const other = await request(t, 'POST', '/v1/checkout/sessions', {
      token: t.demoToken,
      body: sessionBody({ amount: 2000 }),
      idempotencyKey: key,
    });
    assertProblem(other, 422, 'idempotency_key_reused');
  });

  it('401 without a token, 403 for another audience', async () => {
    assertProblem(await request(t, 'POST', '/v1/checkout/sessions', { body: sessionBody() }), 401, 'unauthorized');
    assertProblem(
      await request(t, 'POST', '/v1/checkout/sessions', { token: t.adminToken, body: sessionBody() }),
      403,
      'forbidden',
    );
    assertProblem(await request(t, 'GET', '/v1/checkout/sessions', { token: t.adminToken }), 403, 'forbidden');
  });
});

describe('GET /v1/checkout/sessions/{id}: read a session', () => {
  it("another workspace's session is 404, exactly like a missing one; a malformed id is 404", async () => {
    const { body: s } = await createSession();
    const other = await createWorkspace(t, 'checkout-other');
    assertProblem(await readSession(s.id, other.token), 404, 'not_found');
    assertProblem(await readSession('0190a5f4-0000-7000-8000-000000000000'), 404, 'not_found');
    assertProblem(await readSession('not-a-uuid'), 404, 'not_found');
    assertProblem(await request(t, 'GET', `/v1/checkout/sessions/${s.id}`), 401, 'unauthorized');
    const listed = await request(t, 'GET', '/v1/checkout/sessions', { token: other.token });
    assert.deepEqual(listed.body.data, [], 'lists show only the workspace’s own sessions');
  });

  it('lists sessions newest first, filtered by status', async () => {
    const ws = await createWorkspace(t, 'checkout-list');
    const a = await createSession({}, ws.token);
    const b = await createSession({}, ws.token);
    const res = await request(t, 'GET', '/v1/checkout/sessions?status=open&limit=1', { token: ws.token });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.body.data.map((s: { id: string }) => s.id),
      [b.body.id],
    );
    assert.equal(res.body.has_more, true);
    const next = await request(
      t,
      'GET',
      `/v1/checkout/sessions?status=open&limit=1&cursor=${encodeURIComponent(res.body.next_cursor)}`,
      { token: ws.token },
    );
    assert.deepEqual(
      next.body.data.map((s: { id: string }) => s.id),
      [a.body.id],
    );
    const complete = await request(t, 'GET', '/v1/checkout/sessions?status=complete', { token: ws.token });
    assert.deepEqual(complete.body.data, []);
  });
});

describe('/v1/checkout/by-token/{token}: the by-token endpoints', () => {
  it('need no API key and show only what the payer needs: never metadata, the session id or other ids', async () => {
    const { body: s } = await createSession();
    const res = await byToken(tokenOf(s));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    const v = res.body;
    assert.equal(v.status, 'open');
    assert.equal(v.merchant_name, 'Demo Shop', "the workspace's display name");
    assert.equal(v.amount, 150_000);
    assert.equal(v.amount_display, 'KES 1,500.00');
    assert.equal(v.language, 'en');
    assert.deepEqual(v.phone, { country_code: '254', national_digits: 9 });
    assert.deepEqual(
      v.rails.map((r: { name: string }) => r.name),
      ['M-Pesa', 'Airtel Money'],
    );
    assert.equal(v.attempt, null);
    assert.equal(v.return_url, null);
    for (const secret of [
      'metadata',
      'ord-7731',
      'internal-margin-12pct',
      'order_id',
      s.id,
      'cart-9',
      'redirect_url',
      'shop.example',
    ]) {
      assert.ok(!res.text.includes(secret), `the payer view must not contain ${secret}`);
    }
  });

  it('a wrong or malformed token is 404; the page for it is a 404 HTML page', async () => {
    assertProblem(await byToken('A'.repeat(43)), 404, 'not_found');
    assertProblem(await byToken('nope'), 404, 'not_found');
    assertProblem(await pay('A'.repeat(43), '+254712340000'), 404, 'not_found');
    const page = await request(t, 'GET', `/checkout/${'A'.repeat(43)}`);
    assert.equal(page.status, 404);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.text, /Payment link not found/);
  });

  it('pay: the Idempotency-Key is required; bad details are 400 with field errors; the session stays open', async () => {
    const { body: s } = await createSession();
    const token = tokenOf(s);
    const noKey = await request(t, 'POST', `/v1/checkout/by-token/${token}/pay`, {
      body: { rail: 'mpesa', customer: { phone_number: '+254712340000' } },
    });
    assertProblem(noKey, 422, 'idempotency_key_missing');
    const badPhone = await pay(token, '+25471234');
    assertProblem(badPhone, 400, 'invalid_customer');
    assert.equal(badPhone.body.errors[0].field, 'customer.phone_number');
    assertProblem(await pay(token, '+254712340000', newKey(), 'wave'), 400, 'invalid_rail');
    const unknownField = await request(t, 'POST', `/v1/checkout/by-token/${token}/pay`, {
      body: { rail: 'mpesa', customer: { phone_number: '+254712340000' }, amount: 1 },
      idempotencyKey: newKey(),
    });
    assertProblem(unknownField, 400, 'validation_failed');
    assert.equal((await readSession(s.id)).body.status, 'open');
    assert.equal((await readSession(s.id)).body.attempts, 0);
  });

  it('pay starts one attempt: a retry with the same key is the stored answer; another attempt while it runs is 409', async () => {
    const { body: s } = await createSession();
    const token = tokenOf(s);
    const key = newKey();
    // 0005: stays processing until driven by hand, so the attempt is still running below.
    const first = await pay(token, '+254712340005', key);
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.status, 'processing');
    assert.equal(first.body.attempt.rail, 'mpesa');
    assert.equal(first.body.attempt.payment_instruction.type, 'push_prompt');
    assert.match(first.body.attempt.payment_instruction.message, /Approve the M-Pesa prompt for KES 1,500\.00/);
    assert.ok(!first.text.includes('collection_id') && !first.text.includes('ord-7731'));
    const replay = await pay(token, '+254712340005', key);
    assert.equal(replay.text, first.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assertProblem(await pay(token, '+254712340000'), 409, 'checkout_session_not_open');
    const session = (await readSession(s.id)).body;
    assert.equal(session.status, 'processing');
    assert.equal(session.attempts, 1, 'the replay made no second attempt');
    const collection = await request(t, 'GET', `/v1/collections/${session.collection_id}`, { token: t.demoToken });
    assert.equal(collection.body.amount, 150_000);
    assert.equal(collection.body.reference, 'cart-9');
    assert.deepEqual(collection.body.metadata, METADATA, "the attempt's collection carries the session's metadata");
  });

  it('two attempts at once with different keys: exactly one starts', async () => {
    const { body: s } = await createSession();
    const token = tokenOf(s);
    const results = await Promise.all([
      pay(token, '+254712340005'),
      pay(token, '+254712340005'),
      pay(token, '+254712340005'),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409]);
    assert.equal((await readSession(s.id)).body.attempts, 1);
  });
});

describe('the session follows its attempt', () => {
  it('success: polling GET /v1/checkout/sessions/{id} shows complete; checkout.session.completed is recorded with the metadata; the view gives the return URL', async () => {
    const { body: s } = await createSession();
    const token = tokenOf(s);
    assert.equal((await pay(token, '+254712340000')).status, 201);
    const done = await sessionWhen(s.id, 'complete');
    assert.ok(done.completed_at, 'completed_at is set');
    assert.equal(done.failure_reason, null);
    const collection = await request(t, 'GET', `/v1/collections/${done.collection_id}`, { token: t.demoToken });
    assert.equal(collection.body.status, 'successful');
    const view = (await byToken(token)).body;
    assert.equal(view.status, 'complete');
    const back = new URL(view.return_url);
    assert.equal(back.origin + back.pathname, 'https://shop.example/thanks');
    assert.equal(back.searchParams.get('cart'), '9', 'the redirect URL keeps its own query');
    assert.equal(back.searchParams.get('session_id'), s.id);
    assert.equal(back.searchParams.get('status'), 'complete');
    const events = await request(t, 'GET', `/v1/events?object_id=${s.id}`, { token: t.demoToken });
    assert.deepEqual(
      events.body.data.map((e: { type: string }) => e.type),
      ['checkout.session.completed'],
    );
    const event = events.body.data[0];
    assert.deepEqual(event.data.metadata, METADATA);
    assert.equal(event.data.status, 'complete');
    assert.equal(event.data.id, s.id);
    assertProblem(await pay(token, '+254712340000'), 409, 'checkout_session_not_open');
  });

  it('a failed attempt opens the session again with the reason; a second attempt with a good number completes it', async () => {
    const { body: s } = await createSession();
    const token = tokenOf(s);
    assert.equal((await pay(token, '+254712340002')).status, 201); // 0002: insufficient funds at once
    // The pay answer made it processing, so the next open is the attempt's failure.
    const reopened = await sessionWhen(s.id, 'open');
    assert.equal(reopened.attempts, 1);
    assert.equal(reopened.failure_reason, 'insufficient_funds');
    const view = (await byToken(token)).body;
    assert.equal(view.status, 'open');
    assert.equal(view.attempt.failure_reason, 'insufficient_funds');
    assert.equal(view.attempt.status, 'failed');
    assert.equal((await pay(token, '+254712340000')).status, 201);
    const done = await sessionWhen(s.id, 'complete');
    assert.equal(done.attempts, 2);
    assert.notEqual(done.collection_id, reopened.collection_id);
    const events = await request(t, 'GET', `/v1/events?object_id=${s.id}`, { token: t.demoToken });
    assert.deepEqual(
      events.body.data.map((e: { type: string }) => e.type),
      ['checkout.session.completed'],
      'a failed attempt is not a session event',
    );
  });
});

describe('expiry', () => {
  it('an open session expires at expires_at with no request arriving; checkout.session.expired carries the metadata', async () => {
    const { body: s } = await createSession();
    await t.db.query(`UPDATE checkout_sessions SET expires_at = now() + interval '300 milliseconds' WHERE id = $1`, [
      s.id,
    ]);
    const expired = await sessionWhen(s.id, 'expired');
    assert.equal(expired.completed_at, null);
    const events = await request(t, 'GET', `/v1/events?type=checkout.session.expired&object_id=${s.id}`, {
      token: t.demoToken,
    });
    assert.equal(events.body.data.length, 1);
    assert.deepEqual(events.body.data[0].data.metadata, METADATA);
    const view = (await byToken(tokenOf(s))).body;
    assert.equal(view.status, 'expired');
    assert.equal(new URL(view.return_url).searchParams.get('status'), 'expired');
    assertProblem(await pay(tokenOf(s), '+254712340000'), 409, 'checkout_session_expired');
  });

  it('an attempt the payer is on is not cut short: past expires_at the session waits for it and completes when it succeeds', async () => {
    const { body: s } = await createSession();
    await t.db.query(`UPDATE checkout_sessions SET expires_at = now() + interval '300 milliseconds' WHERE id = $1`, [
      s.id,
    ]);
    const started = await pay(tokenOf(s), '+254712340005'); // 0005: stays processing until driven
    assert.equal(started.status, 201, started.text);
    const { collection_id: collectionId, expires_at: sessionExpiry } = (await readSession(s.id)).body;
    const collection = (await request(t, 'GET', `/v1/collections/${collectionId}`, { token: t.demoToken })).body;
    assert.equal(
      Date.parse(collection.expires_at) - Date.parse(collection.created_at),
      600_000,
      "the attempt keeps the rail's expiry",
    );
    await waitFor('the session expiry to pass', async () =>
      Date.now() > Date.parse(sessionExpiry) + 300 ? true : undefined,
    );
    assert.equal((await readSession(s.id)).body.status, 'processing', 'not expired while the payer may still approve');
    const driven = await request(t, 'POST', `/v1/sandbox/collections/${collectionId}/simulate`, {
      token: t.demoToken,
      body: { outcome: 'successful' },
    });
    assert.ok(driven.status < 300, driven.text);
    const done = await sessionWhen(s.id, 'complete');
    assert.ok(Date.parse(done.completed_at) > Date.parse(done.expires_at));
    const events = await request(t, 'GET', `/v1/events?object_id=${s.id}`, { token: t.demoToken });
    assert.deepEqual(
      events.body.data.map((e: { type: string }) => e.type),
      ['checkout.session.completed'],
      'never expired, then paid',
    );
  });

  it('an attempt that fails after expires_at expires the session, with the reason', async () => {
    // On an app without workers: no expiry sweep, which would also expire a session opened again past its
    // expires_at (with the same reason and the same one event), so only the attempt's failure can expire it here.
    const held = await startTestApp({ PUBLIC_BASE_URL });
    try {
      const created = await request(held, 'POST', '/v1/checkout/sessions', {
        token: held.demoToken,
        body: sessionBody(),
      });
      assert.equal(created.status, 201, created.text);
      const s = created.body;
      const paid = await request(held, 'POST', `/v1/checkout/by-token/${tokenOf(s)}/pay`, {
        body: { rail: 'mpesa', customer: { phone_number: '+254712340005' } },
        idempotencyKey: newKey(),
      });
      assert.equal(paid.status, 201, paid.text);
      await held.db.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        s.id,
      ]);
      const read = async (url: string) => (await request(held, 'GET', url, { token: held.demoToken })).body;
      const collectionId = (await read(`/v1/checkout/sessions/${s.id}`)).collection_id;
      // failed is allowed from every status the attempt can be in by now (created here: nothing initiates it).
      const driven = await request(held, 'POST', `/v1/sandbox/collections/${collectionId}/simulate`, {
        token: held.demoToken,
        body: { outcome: 'failed' },
      });
      assert.ok(driven.status < 300, driven.text);
      const expired = await read(`/v1/checkout/sessions/${s.id}`);
      assert.equal(expired.status, 'expired', 'expired by the failed attempt, not opened again');
      const collection = await read(`/v1/collections/${collectionId}`);
      assert.equal(collection.status, 'failed');
      assert.equal(expired.failure_reason, collection.failure_reason);
      const events = await read(`/v1/events?object_id=${s.id}`);
      assert.deepEqual(
        events.data.map((e: { type: string }) => e.type),
        ['checkout.session.expired'],
      );
    } finally {
      await held.close();
    }
  });

  it('an unauthorised attempt that expires after expires_at expires the session with reason expired', async () => {
    const { body: s } = await createSession();
    assert.equal((await pay(tokenOf(s), '+254712340003')).status, 201); // 0003: pending, never authorised
    await t.db.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [s.id]);
    const collectionId = (await readSession(s.id)).body.collection_id;
    // The expiry sweep ends it at its own expires_at; bring that forward instead of waiting the rail's 10 minutes.
    await t.db.query(`UPDATE collections SET expires_at = now() WHERE id = $1`, [collectionId]);
    const expired = await sessionWhen(s.id, 'expired');
    assert.equal(expired.failure_reason, 'expired');
    assert.equal(
      (await request(t, 'GET', `/v1/collections/${collectionId}`, { token: t.demoToken })).body.status,
      'expired',
    );
  });

  it(`after ${MAX_ATTEMPTS} failed attempts the session expires: a link cannot prompt phone after phone`, async () => {
    const { body: s } = await createSession();
    const token = tokenOf(s);
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      assert.equal((await pay(token, '+254712340002')).status, 201, `attempt ${n}`);
      await waitFor(`attempt ${n} to fail`, async () => {
        const now = (await readSession(s.id)).body;
        return now.status !== 'processing' && now.attempts === n ? now : undefined;
      });
    }
    const final = (await readSession(s.id)).body;
    assert.equal(final.status, 'expired');
    assert.equal(final.failure_reason, 'insufficient_funds');
    assertProblem(await pay(token, '+254712340000'), 409, 'checkout_session_expired');
  });
});

describe('late payments of an attempt', () => {
  const simulate = (token: string, collectionId: string, outcome: string) =>
    request(t, 'POST', `/v1/sandbox/collections/${collectionId}/simulate`, { token, body: { outcome } });

  /** A workspace with the policy, and a session of it whose first attempt (0003: never authorised) has expired. */
  async function expiredAttempt(policy: 'refund' | 'accept', name: string) {
    const ws = await createWorkspace(t, name);
    const set = await request(t, 'PATCH', '/v1/workspace', { token: ws.token, body: { late_payment: policy } });
    assert.equal(set.status, 200, set.text);
    const { body: s } = await createSession({}, ws.token);
    assert.equal((await pay(tokenOf(s), '+254712340003')).status, 201);
    const collectionId: string = (await readSession(s.id, ws.token)).body.collection_id;
    await waitFor('the attempt to be pending', async () => {
      const c = await request(t, 'GET', `/v1/collections/${collectionId}`, { token: ws.token });
      return c.body.status === 'pending' ? true : undefined;
    });
    assert.equal((await simulate(ws.token, collectionId, 'expired')).status, 200);
    return { ws, s, token: tokenOf(s), collectionId };
  }

  const refundsOf = async (token: string, collectionId: string) =>
    (await request(t, 'GET', `/v1/collections/${collectionId}/refunds`, { token })).body.data as Record<string, any>[];

  it('refund (the default): the session stays open and says the money is going back; the payer may pay again', async () => {
    const { ws, s, token, collectionId } = await expiredAttempt('refund', 'checkout-late-refund');
    const open = await readSession(s.id, ws.token);
    assert.equal(open.body.status, 'open');
    assert.equal(open.body.failure_reason, 'expired');

    assert.equal((await simulate(ws.token, collectionId, 'successful')).status, 200);
    const after = await readSession(s.id, ws.token);
    assert.equal(after.body.status, 'open');
    assert.equal(after.body.failure_reason, 'late_payment_refunded');
    assert.equal((await byToken(token)).body.attempt.failure_reason, 'late_payment_refunded');
    const [refund] = await refundsOf(ws.token, collectionId);
    assert.equal(refund?.reason, 'late_payment');
    // The payer can still pay, and that completes the session.
    assert.equal((await pay(token, '+254712340000')).status, 201);
    await waitFor('the second attempt to complete the session', async () =>
      (await readSession(s.id, ws.token)).body.status === 'complete' ? true : undefined,
    );
  });

  it('accept: the late payment pays the session, even one that expired meanwhile', async () => {
    const { ws, s, collectionId } = await expiredAttempt('accept', 'checkout-late-accept');
    await t.db.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [s.id]);
    await waitFor('the session to expire', async () =>
      (await readSession(s.id, ws.token)).body.status === 'expired' ? true : undefined,
    );
    assert.equal((await simulate(ws.token, collectionId, 'successful')).status, 200);
    const done = await readSession(s.id, ws.token);
    assert.equal(done.body.status, 'complete');
    assert.deepEqual(await refundsOf(ws.token, collectionId), []);
    const events = await request(t, 'GET', `/v1/events?object_id=${s.id}`, { token: ws.token });
    assert.deepEqual(
      events.body.data.map((e: { type: string }) => e.type),
      ['checkout.session.completed', 'checkout.session.expired'],
    );
  });

  it('accept, but the payer already tried again: the late payment is refunded all the same, and the new attempt goes on', async () => {
    const { ws, s, token, collectionId } = await expiredAttempt('accept', 'checkout-late-retried');
    assert.equal((await pay(token, '+254712340003')).status, 201);
    const retried = await readSession(s.id, ws.token);
    assert.equal(retried.body.status, 'processing');
    assert.notEqual(retried.body.collection_id, collectionId);

    assert.equal((await simulate(ws.token, collectionId, 'successful')).status, 200);
    const [refund] = await refundsOf(ws.token, collectionId);
    assert.equal(refund?.reason, 'late_payment');
    const still = await readSession(s.id, ws.token);
    assert.equal(still.body.status, 'processing');
    assert.equal(still.body.collection_id, retried.body.collection_id);
  });
});

describe('what the payer is shown', () => {
  it("a bank-transfer attempt names the account after the merchant, never the integrator's reference or an id", async () => {
    const { body: s } = await createSession({ currency: 'NGN', amount: 500_000, reference: 'internal-ref-42' });
    const res = await request(t, 'POST', `/v1/checkout/by-token/${tokenOf(s)}/pay`, {
      body: { rail: 'bank_transfer', customer: { name: 'Chinedu Okafor' } },
      idempotencyKey: newKey(),
    });
    assert.equal(res.status, 201, res.text);
    const instruction = res.body.attempt.payment_instruction;
    assert.equal(instruction.type, 'bank_transfer');
    assert.equal(instruction.account_name, 'Demo Shop');
    assert.match(instruction.account_number, /^\d{10}$/);
    for (const secret of ['internal-ref-42', s.id, 'ord-7731'])
      assert.ok(!res.text.includes(secret), `the payer view must not contain ${secret}`);
    const view = await byToken(tokenOf(s));
    assert.ok(!view.text.includes('internal-ref-42') && !view.text.includes(s.id));
  });

  it("the return URL keeps the shop's query byte for byte and its fragment last", () => {
    const id = '0190a5f4-0000-7000-8000-000000000000';
    assert.equal(
      returnUrl({ id, status: 'complete', redirect_url: 'https://shop.example/r?sig=a%20b&flag#done' }),
      `https://shop.example/r?sig=a%20b&flag&session_id=${id}&status=complete#done`,
    );
    assert.equal(
      returnUrl({ id, status: 'expired', redirect_url: 'https://shop.example/r' }),
      `https://shop.example/r?session_id=${id}&status=expired`,
    );
    assert.equal(
      returnUrl({ id, status: 'expired', redirect_url: 'https://shop.example/r?' }),
      `https://shop.example/r?session_id=${id}&status=expired`,
    );
  });
});

describe('the hosted page', () => {
  it('is served with a strict CSP, no metadata, English for KE and French for CI', async () => {
    const { body: s } = await createSession();
    const page = await request(t, 'GET', `/checkout/${tokenOf(s)}`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'));
    // The inline script (page/checkout.client.ts, bundled) and style (page/checkout.css) are the ones the CSP pins.
    const script = /<script>([^]*?)<\/script>/.exec(page.text)?.[1] ?? '';
    const style = /<style>([^]*?)<\/style>/.exec(page.text)?.[1] ?? '';
    assert.match(script, /^("use strict";)?\(\(\)=>\{.*\}\)\(\);$/s, 'one bundled, self-contained script');
    assert.ok(!/\bimport\b|: string/.test(script), 'no TypeScript or module syntax left in the script');
    const pinned = (source: string): string => `'sha256-${createHash('sha256').update(source).digest('base64')}'`;
    assert.ok(csp.includes(`script-src ${pinned(script)}`), 'the CSP pins the served script');
    assert.ok(csp.includes(`style-src ${pinned(style)}`), 'the CSP pins the served style');
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    assert.match(page.text, /<html lang="en">/);
    assert.ok(!/src=|href="http/.test(page.text), 'no external asset');
    for (const secret of ['ord-7731', 'internal-margin-12pct', s.id])
      assert.ok(!page.text.includes(secret), `the page must not contain ${secret}`);
    const { body: fr } = await createSession({ currency: 'XOF', market: 'CI', amount: 5000 });
    const frPage = await request(t, 'GET', `/checkout/${tokenOf(fr)}`);
    assert.match(frPage.text, /<html lang="fr">/);
    assert.match(frPage.text, /Payer avec/);
    assert.match(frPage.text, /Orange Money/);
  });
});

describe('rate limits', () => {
  it('the by-token endpoints and the page are limited per link and client: 429 rate_limited with Retry-After', async () => {
    const limited = await startTestApp({ CHECKOUT_RATE_LIMIT_PER_SECOND: '1', CHECKOUT_RATE_LIMIT_BURST: '3' });
    try {
      const res = await request(limited, 'POST', '/v1/checkout/sessions', {
        token: limited.demoToken,
        body: sessionBody(),
      });
      const token = tokenOf(res.body);
      const statuses: number[] = [];
      let last: ApiResponse | undefined;
      for (let i = 0; i < 5; i++) {
        last = await request(limited, 'GET', `/v1/checkout/by-token/${token}`);
        statuses.push(last.status);
      }
      assert.deepEqual(statuses.slice(0, 3), [200, 200, 200]);
      assert.ok(last);
      assertProblem(last, 429, 'rate_limited');
      assert.ok(Number(last.headers.get('retry-after')) >= 1);
      const page = await request(limited, 'GET', `/checkout/${token}`);
      assert.equal(page.status, 429);
      // Another link from the same client has its own bucket.
      const other = await request(limited, 'POST', '/v1/checkout/sessions', {
        token: limited.demoToken,
        body: sessionBody(),
      });
      assert.equal((await request(limited, 'GET', `/v1/checkout/by-token/${tokenOf(other.body)}`)).status, 200);
      // Without TRUST_PROXY, X-Forwarded-For is not believed: it buys no fresh bucket.
      const spoofed = await request(limited, 'GET', `/v1/checkout/by-token/${token}`, {
        headers: { 'x-forwarded-for': '198.51.100.9' },
      });
      assertProblem(spoofed, 429, 'rate_limited');
    } finally {
      await limited.close();
    }
  });

  it('behind a trusted proxy each payer counts separately; an IPv6 client counts by its /64', async () => {
    const proxied = await startTestApp({
      CHECKOUT_RATE_LIMIT_PER_SECOND: '1',
      CHECKOUT_RATE_LIMIT_BURST: '2',
      TRUST_PROXY: '1',
    });
    try {
      const res = await request(proxied, 'POST', '/v1/checkout/sessions', {
        token: proxied.demoToken,
        body: sessionBody(),
      });
      const link = `/v1/checkout/by-token/${tokenOf(res.body)}`;
      const from = (ip: string) => request(proxied, 'GET', link, { headers: { 'x-forwarded-for': ip } });
      assert.deepEqual(
        [(await from('198.51.100.7')).status, (await from('198.51.100.7')).status, (await from('198.51.100.7')).status],
        [200, 200, 429],
      );
      assert.equal((await from('198.51.100.8')).status, 200, 'another payer behind the same proxy');
      assert.deepEqual(
        [
          (await from('2001:db8:1:2::1')).status,
          (await from('2001:db8:1:2:aaaa::9')).status,
          (await from('2001:db8:1:2:ffff::7')).status,
        ],
        [200, 200, 429],
      );
      assert.equal((await from('2001:db8:1:3::1')).status, 200, 'another /64');
    } finally {
      await proxied.close();
    }
    assert.equal(clientKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
    assert.equal(clientKey('::ffff:198.51.100.7'), '198.51.100.7');
    assert.equal(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(clientKey('203.0.113.5'), '203.0.113.5');
  });
});
