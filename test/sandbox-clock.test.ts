// The sandbox test clock (docs/guides/sandbox-clock.md) over HTTP, with the background workers on: after
// POST /v1/sandbox/clock/advance a pending collection past its expiry becomes expired with its event and webhook, an
// open checkout session expires, a webhook retry due in an hour is attempted, an idempotency key past its retention is
// free again. Each is checked with its mechanism (the deadline pulled by exactly the duration, the stored outcome
// gone) and against a second workspace whose deadlines must not move. Also: the clock's answer, the move's own
// idempotency, bad durations, and 404 in production.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadCatalogue, MarketCatalogue } from '../src/modules/catalogue/catalogue.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  newKey,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
  validCollection,
  waitFor,
} from './helpers/harness.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const HOUR = 3600;
const DAY = 86_400;
/** 0003: pending, never authorised; KE/airtel_money expires after 600 s, so nothing expires here by real time. */
const NEVER_PAYS = '+254712340003';
/** 0005: stays processing until driven by hand (so a simulation can fail it). */
const STAYS_PROCESSING = '+254712340005';

let t: TestApp;
let receiver: Receiver;
/** Two sandbox workspaces of their own: `a` moves its clock, `b` never does. */
let a: { id: string; token: string };
let b: { id: string; token: string };

before(async () => {
  // The first attempt of a webhook to each workspace's endpoint fails; every later one succeeds.
  const seen = new Set<string>();
  receiver = await startReceiver((req) => {
    if (seen.has(req.path)) return { status: 200 };
    seen.add(req.path);
    return { status: 500 };
  });
  // A failed attempt is tried again after an hour (± 10 %): only a moved clock gets there within the test.
  t = await startTestApp(
    { ...FAST_LIFECYCLE, WEBHOOK_POLL_MS: '20', WEBHOOK_RETRY_SCHEDULE: '1h,1h' },
    { workers: true },
  );
  a = await createWorkspace(t, 'clock-a');
  b = await createWorkspace(t, 'clock-b');
  for (const [ws, name] of [
    [a, 'a'],
    [b, 'b'],
  ] as const) {
    const res = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: `${receiver.url}?ws=${name}`, enabled_events: ['collection.expired', 'collection.failed'] },
    });
    assert.equal(res.status, 201, res.text);
  }
});
after(async () => {
  await t?.close();
  await receiver?.close();
});

const clock = (token: string): Promise<ApiResponse> => request(t, 'GET', '/v1/sandbox/clock', { token });
const advance = (token: string, body: unknown, idempotencyKey?: string): Promise<ApiResponse> =>
  request(t, 'POST', '/v1/sandbox/clock/advance', {
    token,
    body,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  });

async function advanced(token: string, seconds: number): Promise<any> {
  const res = await advance(token, { seconds }, newKey());
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function collectionRow(id: string): Promise<{ status: string; expires_at: Date }> {
  const { rows } = await t.db.query<{ status: string; expires_at: Date }>(
    'SELECT status, expires_at FROM collections WHERE id = $1',
    [id],
  );
  assert.ok(rows[0], `collection ${id} exists`);
  return rows[0];
}

async function pendingCollection(ws: { token: string }, phone = NEVER_PAYS): Promise<string> {
  const res = await createCollection(
    t,
    ws.token,
    { customer: { phone_number: phone } },
    '/v1/collections/KE/rails/airtel_money',
  );
  assert.equal(res.status, 201, res.text);
  const id = res.body.collection_id as string;
  await waitFor(`collection ${id} pending`, async () =>
    (await collectionRow(id)).status === (phone === NEVER_PAYS ? 'pending' : 'processing') ? true : undefined,
  );
  return id;
}

async function eventTypes(token: string, id: string): Promise<string[]> {
  const res = await request(t, 'GET', `/v1/events?object_id=${id}&limit=100`, { token });
  assert.equal(res.status, 200, res.text);
  return (res.body.data as { type: string }[]).map((e) => e.type).sort();
}

interface DeliveryRow {
  status: string;
  attempts: number;
  next_attempt_at: Date | null;
}

/** The (only) webhook delivery of the events about `objectId`; undefined while the relay has not made it yet. */
async function deliveryOf(objectId: string): Promise<DeliveryRow | undefined> {
  const { rows } = await t.db.query<DeliveryRow>(
    `SELECT d.status, d.attempts, d.next_attempt_at FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
     WHERE e.object_id = $1 AND d.kind <> 'test'`,
    [objectId],
  );
  assert.ok(rows.length <= 1, `one delivery about ${objectId}`);
  return rows[0];
}

/** A delivery whose first attempt failed and whose retry waits its hour (not one in its first attempt: leased). */
const retryWaits = (d: DeliveryRow): boolean =>
  d.attempts === 1 && d.status === 'pending' && (d.next_attempt_at?.getTime() ?? 0) > Date.now() + 50 * 60_000;

const hooksTo = (name: string) => receiver.requests.filter((r) => r.path.endsWith(`?ws=${name}`));

describe('the clock of a sandbox workspace', () => {
  it('starts at the server time: offset 0, never advanced', async () => {
    const res = await clock(a.token);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.workspace_id, a.id);
    assert.equal(res.body.offset_seconds, 0);
    assert.equal(res.body.now, res.body.server_time);
    assert.equal(res.body.advanced_at, null);
    assert.equal(res.body.moved, undefined, 'only the answer to a move says what moved');
    assert.ok(Math.abs(Date.parse(res.body.server_time) - Date.now()) < 60_000);
  });

  it("needs an integrator token: none is 401, a liquidity provider's is 403", async () => {
    assertProblem(await request(t, 'GET', '/v1/sandbox/clock'), 401, 'unauthorized');
    assertProblem(await request(t, 'POST', '/v1/sandbox/clock/advance', { body: { seconds: 1 } }), 401, 'unauthorized');
    const lp = await liquidityProviderToken(t, a.id);
    assertProblem(await clock(lp), 403, 'forbidden');
    assertProblem(await advance(lp, { seconds: 1 }, newKey()), 403, 'forbidden');
    assert.equal((await clock(a.token)).body.offset_seconds, 0);
  });

  it('refuses a duration that is not 1 to 2592000 whole seconds, or an unknown field, with 400 and moves nothing', async () => {
    for (const body of [
      {},
      { seconds: 0 },
      { seconds: -5 },
      { seconds: 2_592_001 },
      { seconds: 1.5 },
      { seconds: '900' },
      { seconds: 'PT15M' },
      { seconds: 60, days: 1 },
    ]) {
      const res = await advance(a.token, body, newKey());
      assertProblem(res, 400, 'validation_failed');
    }
    const capped = await advance(a.token, { seconds: 2_592_001 });
    assert.ok(
      (capped.body.errors as { field: string }[]).some((e) => e.field === 'seconds'),
      `the cap names the field: ${capped.text}`,
    );
    assert.equal((await clock(a.token)).body.offset_seconds, 0);
  });
});

describe('advancing the clock', () => {
  it('expires a pending collection and an open checkout session past their expiry, with events and a webhook; the other workspace keeps its deadlines', async () => {
    const mine = await pendingCollection(a);
    const theirs = await pendingCollection(b);
    const session = async (ws: { token: string }) => {
      const res = await request(t, 'POST', '/v1/checkout/sessions', {
        token: ws.token,
        body: { amount: 1500, currency: 'KES', redirect_url: 'https://shop.example/thanks', expires_in: 600 },
      });
      assert.equal(res.status, 201, res.text);
      return res.body as { id: string; expires_at: string };
    };
    const mySession = await session(a);
    const theirSession = await session(b);
    const before = { mine: await collectionRow(mine), theirs: await collectionRow(theirs) };

    const moved = await advanced(a.token, 900);
    assert.equal(moved.offset_seconds, 900);
    assert.equal(Date.parse(moved.now) - Date.parse(moved.server_time), 900_000);
    assert.ok(moved.moved.collections >= 1, JSON.stringify(moved));
    assert.ok(moved.moved.checkout_sessions >= 1, JSON.stringify(moved));

    // The mechanism: the deadline pulled exactly 900 s earlier, in the transaction of the move (already committed).
    const expired = await waitFor('my collection expired', async () => {
      const r = await request(t, 'GET', `/v1/collections/${mine}`, { token: a.token });
      return r.body.status === 'expired' ? r.body : undefined;
    });
    assert.equal(Date.parse(expired.expires_at), before.mine.expires_at.getTime() - 900_000);
    assert.ok(Date.parse(expired.expires_at) <= Date.now());
    assert.ok((await eventTypes(a.token, mine)).includes('collection.expired'));
    const hook = await waitFor('the webhook of the expiry', async () => hooksTo('a')[0]);
    const payload = JSON.parse(hook.body) as { type: string; data: { collection_id: string } };
    assert.equal(payload.type, 'collection.expired');
    assert.equal(payload.data.collection_id, mine);

    const sessionNow = await waitFor('my session expired', async () => {
      const r = await request(t, 'GET', `/v1/checkout/sessions/${mySession.id}`, { token: a.token });
      return r.body.status === 'expired' ? r.body : undefined;
    });
    assert.equal(Date.parse(sessionNow.expires_at), Date.parse(mySession.expires_at) - 900_000);

    // The other workspace: the same kind of collection and session, untouched to the millisecond, still open.
    const theirsNow = await collectionRow(theirs);
    assert.equal(theirsNow.status, 'pending');
    assert.equal(theirsNow.expires_at.getTime(), before.theirs.expires_at.getTime());
    const theirSessionNow = await request(t, 'GET', `/v1/checkout/sessions/${theirSession.id}`, { token: b.token });
    assert.equal(theirSessionNow.body.status, 'open');
    assert.equal(theirSessionNow.body.expires_at, theirSession.expires_at);
    assert.equal((await clock(b.token)).body.offset_seconds, 0);
    assert.equal(hooksTo('b').length, 0);
  });

  it("attempts a webhook retry that was due in an hour; the other workspace's retry stays an hour away", async () => {
    // Workspace a's expiry webhook failed its first attempt above: its retry waits an hour.
    const mine = (
      await t.db.query<{ object_id: string }>(
        `SELECT object_id FROM events WHERE workspace_id = $1 AND type = 'collection.expired'`,
        [a.id],
      )
    ).rows[0]?.object_id;
    assert.ok(mine);
    const waiting = await waitFor('a retry scheduled', async () => {
      const d = await deliveryOf(mine);
      return d && retryWaits(d) ? d : undefined;
    });
    assert.ok(waiting.next_attempt_at && waiting.next_attempt_at.getTime() > Date.now() + 50 * 60_000);

    // Workspace b: a failed collection's webhook fails its first attempt too, and waits its hour.
    const theirs = await pendingCollection(b, STAYS_PROCESSING);
    const failed = await request(t, 'POST', `/v1/sandbox/collections/${theirs}/simulate`, {
      token: b.token,
      body: { outcome: 'failed' },
    });
    assert.equal(failed.status, 200, failed.text);
    const theirWaiting = await waitFor('their retry scheduled', async () => {
      const d = await deliveryOf(theirs);
      return d && retryWaits(d) ? d : undefined;
    });
    assert.equal(hooksTo('b').length, 1);

    const moved = await advanced(a.token, 4000);
    assert.ok(moved.moved.webhook_deliveries >= 1, JSON.stringify(moved));
    const done = await waitFor('the retry delivered', async () => {
      const d = await deliveryOf(mine);
      return d?.status === 'succeeded' ? d : undefined;
    });
    assert.equal(done.attempts, 2);
    assert.equal(hooksTo('a').length, 2);
    assert.equal(hooksTo('a')[1]?.headers['webhook-id'], hooksTo('a')[0]?.headers['webhook-id']);

    const theirsNow = await deliveryOf(theirs);
    assert.ok(theirsNow);
    assert.equal(theirsNow.status, 'pending');
    assert.equal(theirsNow.attempts, 1);
    assert.equal(theirsNow.next_attempt_at?.getTime(), theirWaiting.next_attempt_at?.getTime());
    assert.equal(hooksTo('b').length, 1);
  });

  it("asks the provider about an operation quiet for RECONCILE_AFTER_SECONDS by the workspace's clock: a lost callback is recovered; the other workspace's is not asked", async () => {
    // 0005 rests in processing at the simulator; then the simulator reports successful and the callback is lost (its
    // step recorded as sent, no notice applied), in both workspaces.
    const mine = await pendingCollection(a, STAYS_PROCESSING);
    const theirs = await pendingCollection(b, STAYS_PROCESSING);
    await waitFor('both at rest at the simulator', async () => {
      const { rows } = await t.db.query(
        'SELECT 1 FROM sandbox_operations WHERE object_id = ANY($1) AND next_at IS NULL',
        [[mine, theirs]],
      );
      return rows.length === 2 ? true : undefined;
    });
    await t.db.query(
      `UPDATE sandbox_operations SET script = script || '{successful}'::text[], next_step = next_step + 1
       WHERE object_id = ANY($1)`,
      [[mine, theirs]],
    );
    const checked = async (id: string) =>
      (await t.db.query<{ checked_at: Date | null }>('SELECT checked_at FROM collections WHERE id = $1', [id])).rows[0]
        ?.checked_at ?? null;
    assert.equal(t.config.reconcileAfterSeconds, 120);
    assert.equal(await checked(mine), null, 'not asked yet: quiet for less than 120 s');

    // A move of 60 s makes due only what had been quiet for 60 s already: nothing here.
    await advanced(a.token, 60);
    assert.equal(await checked(mine), null);
    assert.equal((await collectionRow(mine)).status, 'processing');

    // A move of 120 s makes every operation in flight due. The move asks before it answers.
    await advanced(a.token, 120);
    assert.ok(await checked(mine), 'the status query was made');
    assert.equal((await collectionRow(mine)).status, 'successful');
    const events = await eventTypes(a.token, mine);
    assert.ok(events.includes('collection.successful'), events.join());

    assert.equal(await checked(theirs), null, "the other workspace's operation was not asked");
    assert.equal((await collectionRow(theirs)).status, 'processing');
  });

  it("frees an idempotency key past its retention (24 h): the key can be reused; the other workspace's is still held", async () => {
    const key = newKey();
    const create = (ws: { token: string }, reference: string) =>
      request(t, 'POST', '/v1/collections/KE/rails/airtel_money', {
        token: ws.token,
        body: validCollection({ reference }),
        idempotencyKey: key,
      });
    const first = await create(a, 'first');
    assert.equal(first.status, 201, first.text);
    assert.equal((await create(b, 'first')).status, 201);
    assertProblem(await create(a, 'second'), 422, 'idempotency_key_reused');

    const moved = await advanced(a.token, DAY);
    assert.ok(moved.moved.idempotency_records_deleted >= 1, JSON.stringify(moved));
    // The mechanism: the stored outcome is gone from the table, not merely ignored.
    const stored = async (workspaceId: string) =>
      (await t.db.query('SELECT 1 FROM idempotency_keys WHERE workspace_id = $1 AND key = $2', [workspaceId, key]))
        .rowCount;
    assert.equal(await stored(a.id), 0);
    assert.equal(await stored(b.id), 1);

    const reused = await create(a, 'second');
    assert.equal(reused.status, 201, reused.text);
    assert.notEqual(reused.body.collection_id, first.body.collection_id);
    assert.equal(reused.body.reference, 'second');
    assertProblem(await create(b, 'second'), 422, 'idempotency_key_reused');
  });

  it('is idempotent: the same key answers the same move once; another body with it is 422', async () => {
    const before = (await clock(a.token)).body.offset_seconds as number;
    const key = newKey();
    const first = await advance(a.token, { seconds: 60 }, key);
    assert.equal(first.status, 200, first.text);
    const again = await advance(a.token, { seconds: 60 }, key);
    assert.equal(again.status, 200);
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assertProblem(await advance(a.token, { seconds: 61 }, key), 422, 'idempotency_key_reused');

    const now = (await clock(a.token)).body;
    assert.equal(now.offset_seconds, before + 60);
    assert.equal(Date.parse(now.now) - Date.parse(now.server_time), (before + 60) * 1000);
    assert.equal(now.advanced_at, first.body.advanced_at);

    // Each move is in the audit log on the workspace, the replay too (a request of its own); refused ones name none.
    const log = await request(t, 'GET', '/v1/audit-events?action=sandbox_clock.advance&limit=100', { token: a.token });
    assert.equal(log.status, 200, log.text);
    const entries = log.body.data as { object_type: string; object_id: string | null; status: number }[];
    const answered = entries.filter((e) => e.status === 200);
    assert.ok(answered.length >= 2, log.text);
    assert.ok(
      answered.every((e) => e.object_type === 'workspace' && e.object_id === a.id),
      log.text,
    );
    assert.ok(
      entries.some((e) => e.status === 422 && e.object_id === null),
      log.text,
    );
  });

  it("adds up the moves and never touches the other workspace's clock", async () => {
    const start = (await clock(a.token)).body.offset_seconds as number;
    await advanced(a.token, HOUR);
    const res = await advance(a.token, { seconds: 30 });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.offset_seconds, start + HOUR + 30);
    assert.equal((await clock(a.token)).body.offset_seconds, start + HOUR + 30);
    const other = (await clock(b.token)).body;
    assert.equal(other.offset_seconds, 0);
    assert.equal(other.advanced_at, null);
  });
});

describe('in production', () => {
  let prod: TestApp;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'clock-prod-'));
    const file = path.join(dir, 'providers.json');
    const rails = new MarketCatalogue(loadCatalogue(undefined)).marketCodes().map((m) => `${m}/*`);
    const gateway = {
      name: 'acme',
      base_url: 'https://gw.example',
      api_key: 'k',
      callback_secret: 'c'.repeat(32),
      rails,
    };
    await writeFile(file, JSON.stringify({ gateways: [gateway] }));
    prod = await startTestApp({ PAYMENTS_ENV: 'production', PROVIDERS_FILE: file });
  });
  after(async () => {
    await prod?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the clock routes are unknown: 404, and no workspace moves', async () => {
    assertProblem(await request(prod, 'GET', '/v1/sandbox/clock', { token: prod.demoToken }), 404, 'not_found');
    assertProblem(
      await request(prod, 'POST', '/v1/sandbox/clock/advance', {
        token: prod.demoToken,
        body: { seconds: 900 },
        idempotencyKey: newKey(),
      }),
      404,
      'not_found',
    );
    const { rows } = await prod.db.query<{ moved: string }>(
      'SELECT count(*)::text AS moved FROM workspaces WHERE clock_offset_seconds <> 0 OR clock_advanced_at IS NOT NULL',
    );
    assert.equal(rows[0]?.moved, '0');
  });
});
