// Webhook delivery end to end: real local receivers behind the relay that the
// background workers run, every delivery checked with the `standardwebhooks` package. Three apps, each with
// its retry schedule shortened by configuration (WEBHOOK_RETRY_SCHEDULE), never by a branch in code:
// - `main`: '0s,300ms,600ms,300ms,300ms', WEBHOOK_TIMEOUT_MS=3000: transitions, retries, resend, a slow
//   endpoint, two relays on one database, the 4 KB response excerpt;
// - `short`: '0s,100ms' (3 attempts in all): exhausting the schedule, Retry-After;
// - `gone`: '0s,30s': a delivery waits 30 s after its second failure, so it is pending when a 410 arrives.
// Each test works in a workspace of its own, so its endpoints see only its own events.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { WebhookRelay } from '../src/modules/webhooks/relay.js';
import {
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  newKey,
  request,
  requestRefund,
  startTestApp,
  type TestApp,
  waitFor,
} from './helpers/harness.js';
import { recordEvents } from './helpers/events.js';
import { startReceiver, type Receiver, type ReceivedRequest } from './helpers/receiver.js';

const WAIT_MS = 15_000;
const JITTER = 0.1;
const SUCCESS_PHONE = '+254712340000';
const METADATA = {
  order_id: 'A-1017',
  cart: { items: 2, skus: ['sku-1', 'sku-2'], gift: false },
  note: 'café ✓',
  nothing: null,
};
const BODY_KEYS = ['data', 'id', 'timestamp', 'type'];
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// ---------------------------------------------------------------------------------------------------------
// Helpers

type Api = { baseUrl: string };

/** An app whose workers deliver webhooks on `schedule` (WEBHOOK_RETRY_SCHEDULE), polling for them every 20 ms. */
const startWebhookApp = (schedule: string, env: Record<string, string> = {}): Promise<TestApp> =>
  startTestApp(
    { ...FAST_LIFECYCLE, WEBHOOK_POLL_MS: '20', WEBHOOK_RETRY_SCHEDULE: schedule, ...env },
    { workers: true },
  );

interface Endpoint {
  id: string;
  secret: string;
  url: string;
}

async function addEndpoint(t: Api, token: string, url: string, enabledEvents?: string[]): Promise<Endpoint> {
  const res = await request(t, 'POST', '/v1/webhooks/endpoints', {
    token,
    body: { url, ...(enabledEvents ? { enabled_events: enabledEvents } : {}) },
  });
  assert.equal(res.status, 201, res.text);
  assert.match(res.body.secret, /^whsec_/);
  return { id: res.body.id, secret: res.body.secret, url };
}

async function newCollection(t: Api, token: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await createCollection(t, token, { customer: { phone_number: SUCCESS_PHONE }, ...overrides });
  assert.equal(res.status, 201, res.text);
  return res.body.collection_id as string;
}

async function waitCollection(t: Api, token: string, id: string, status: string): Promise<any> {
  let last = '';
  try {
    return await waitFor(
      `collection ${id} to become ${status}`,
      async () => {
        const res = await request(t, 'GET', `/v1/collections/${id}`, { token });
        assert.equal(res.status, 200, res.text);
        last = res.body.status;
        return res.body.status === status ? res.body : undefined;
      },
      WAIT_MS,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message} (last seen: ${last})`, { cause: err });
  }
}

/** The events about one object (collection or refund), newest first. */
async function eventsOf(t: Api, token: string, objectId: string, type?: string): Promise<any[]> {
  const res = await request(t, 'GET', `/v1/events?object_id=${objectId}&limit=100${type ? `&type=${type}` : ''}`, {
    token,
  });
  assert.equal(res.status, 200, res.text);
  return res.body.data as any[];
}

/** The single event of `type` about `objectId`, once it exists. */
async function eventOf(t: Api, token: string, objectId: string, type: string): Promise<any> {
  return waitFor(
    `${type} event of ${objectId}`,
    async () => {
      const events = await eventsOf(t, token, objectId, type);
      assert.ok(events.length <= 1, `at most one ${type} event for ${objectId}, got ${events.length}`);
      return events[0];
    },
    WAIT_MS,
  );
}

async function deliveriesOf(t: Api, token: string, eventId: string): Promise<any[]> {
  const res = await request(t, 'GET', `/v1/events/${eventId}/deliveries?limit=100`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body.data as any[];
}

/** Waits until the event's one 'event' delivery to `endpointId` satisfies `ready`; returns it. */
async function waitDelivery(
  t: Api,
  token: string,
  eventId: string,
  endpointId: string,
  what: string,
  ready: (d: any) => boolean,
): Promise<any> {
  let last: unknown;
  try {
    return await waitFor(
      `delivery of ${eventId} to ${endpointId}: ${what}`,
      async () => {
        const found = (await deliveriesOf(t, token, eventId)).filter(
          (d) => d.endpoint_id === endpointId && d.kind === 'event',
        );
        assert.ok(found.length <= 1, `one delivery per event and endpoint, got ${found.length}`);
        last = found[0];
        return found[0] && ready(found[0]) ? found[0] : undefined;
      },
      WAIT_MS,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(last)}`, { cause: err });
  }
}

/** An endpoint at `url` for collection.created only, and that event of a new collection, once recorded. */
async function createdEventAt(t: Api, token: string, url: string): Promise<{ endpoint: Endpoint; event: any }> {
  const endpoint = await addEndpoint(t, token, url, ['collection.created']);
  const event = await eventOf(t, token, await newCollection(t, token), 'collection.created');
  return { endpoint, event };
}

/** The event's one delivery to the endpoint, once it succeeded. */
const waitSucceeded = (t: Api, token: string, eventId: string, endpointId: string): Promise<any> =>
  waitDelivery(t, token, eventId, endpointId, 'succeeded', (d) => d.status === 'succeeded');

/** Checks that it came to the endpoint's URL, with the Standard Webhooks signature (the package integrators use); returns the parsed body. */
function verified({ secret, url }: Endpoint, r: ReceivedRequest): any {
  const { pathname, search } = new URL(url);
  assert.equal(r.method, 'POST');
  assert.equal(r.path, pathname + search);
  assert.match(r.headers['content-type'] ?? '', /^application\/json/);
  assert.doesNotThrow(
    () => new Webhook(secret).verify(r.body, r.headers),
    `standardwebhooks verifies delivery ${r.headers['webhook-id']}`,
  );
  const body = JSON.parse(r.body);
  assert.deepEqual(
    Object.keys(body).sort(),
    BODY_KEYS,
    `body is exactly {id, type, timestamp, data}: ${r.body.slice(0, 200)}`,
  );
  assert.equal(r.headers['webhook-id'], body.id, 'webhook-id is the event id');
  assert.match(body.timestamp, ISO_MS);
  return body;
}

const requestsFor = (receiver: Receiver, webhookId: string): ReceivedRequest[] =>
  receiver.requests.filter((r) => r.headers['webhook-id'] === webhookId);

function gaps(rs: ReceivedRequest[]): number[] {
  return rs.slice(1).map((r, i) => r.at - (rs[i] as ReceivedRequest).at);
}

// ---------------------------------------------------------------------------------------------------------

describe('webhooks on the main schedule (0s,300ms,600ms,300ms,300ms; 3 s timeout)', () => {
  const SCHEDULE_MS = [0, 300, 600, 300, 300];
  let t: TestApp;
  before(async () => {
    t = await startWebhookApp('0s,300ms,600ms,300ms,300ms', { WEBHOOK_TIMEOUT_MS: '3000' });
  });
  after(async () => t?.close());

  it('delivers one verified event per transition of a collection that goes created → successful → refunded, each with its metadata', async () => {
    const ws = await createWorkspace(t, 'webhooks transitions');
    const receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
    try {
      const endpoint = await addEndpoint(t, ws.token, receiver.url);
      const collectionId = await newCollection(t, ws.token, { metadata: METADATA });
      await waitCollection(t, ws.token, collectionId, 'successful');
      const refund = await requestRefund(t, ws.token, collectionId, 1500);
      assert.equal(refund.status, 201, refund.text);
      const refundId = refund.body.refund_id as string;
      await waitCollection(t, ws.token, collectionId, 'refunded');

      const expected = [
        'collection.created',
        'collection.pending',
        'collection.processing',
        'collection.successful',
        'refund.requested',
        'refund.pending',
        'refund.successful',
        'collection.refunded',
      ];
      await waitFor(
        `${expected.length} deliveries`,
        async () => (receiver.requests.length >= expected.length ? true : undefined),
        WAIT_MS,
      );
      await sleep(500); // anything extra (a duplicate) would arrive now
      assert.equal(
        receiver.requests.length,
        expected.length,
        `received: ${receiver.requests.map((r) => JSON.parse(r.body).type).join(', ')}`,
      );

      const bodies = receiver.requests.map((r) => verified(endpoint, r));
      assert.deepEqual(bodies.map((b) => b.type).sort(), [...expected].sort(), 'one event per transition');
      assert.equal(new Set(bodies.map((b) => b.id)).size, expected.length, 'distinct event ids');
      for (const body of bodies) {
        assert.deepEqual(body.data.metadata, METADATA, `${body.type} carries the collection's metadata unchanged`);
        assert.equal(body.data.collection_id, collectionId, `${body.type} is about the collection`);
        if (body.type.startsWith('refund.')) assert.equal(body.data.refund_id, refundId);
        // The body is the event exactly as the events API shows it.
        const event = await request(t, 'GET', `/v1/events/${body.id}`, { token: ws.token });
        assert.equal(event.status, 200, event.text);
        assert.deepEqual(body, event.body);
      }
      // Every event the workspace recorded about the collection and the refund was delivered, once.
      const recorded = [...(await eventsOf(t, ws.token, collectionId)), ...(await eventsOf(t, ws.token, refundId))]
        .map((e) => e.id)
        .sort();
      assert.deepEqual(bodies.map((b) => b.id).sort(), recorded);
    } finally {
      await receiver.close();
    }
  });

  it('retries a failing receiver on the configured schedule: the fourth attempt gets through, same webhook-id each time, all logged', async () => {
    const ws = await createWorkspace(t, 'webhooks retries');
    const receiver = await startReceiver((r) => {
      const n = requestsFor(receiver, r.headers['webhook-id'] ?? '').length;
      return n <= 3 ? { status: 500, body: `failure #${n}` } : { status: 200, body: 'finally' };
    });
    try {
      const { endpoint, event } = await createdEventAt(t, ws.token, receiver.url);
      const delivery = await waitSucceeded(t, ws.token, event.id, endpoint.id);
      await sleep(700); // more than a retry delay: nothing more may come
      const got = receiver.requests;
      assert.equal(got.length, 4, 'three failures, then one success, then nothing');
      for (const r of got) assert.deepEqual(verified(endpoint, r), event);
      assert.deepEqual(
        got.map((r) => r.headers['webhook-id']),
        [event.id, event.id, event.id, event.id],
      );

      const between = gaps(got);
      console.log(`retry gaps (ms): ${between.join(', ')}`);
      between.forEach((gap, i) => {
        const delay = SCHEDULE_MS[i] as number;
        assert.ok(
          gap >= Math.floor(delay * (1 - JITTER)) - 2,
          `attempt ${i + 2} came ${gap} ms after attempt ${i + 1}: before the configured ${delay} ms (−10%)`,
        );
        assert.ok(
          gap <= delay * (1 + JITTER) + 2000,
          `attempt ${i + 2} came ${gap} ms after attempt ${i + 1}: far later than the configured ${delay} ms`,
        );
      });

      assert.equal(delivery.kind, 'event');
      assert.equal(delivery.next_attempt_at, null);
      assert.equal(delivery.last_error, null);
      assert.deepEqual(
        delivery.attempts.map((a: any) => a.attempt),
        [1, 2, 3, 4],
      );
      delivery.attempts.slice(0, 3).forEach((a: any, i: number) => {
        assert.equal(a.succeeded, false, `attempt ${a.attempt} failed`);
        assert.equal(a.status_code, 500);
        assert.equal(a.response_body, `failure #${i + 1}`);
        assert.equal(a.url, receiver.url);
        assert.ok(Number.isInteger(a.duration_ms) && a.duration_ms >= 0);
      });
      const last = delivery.attempts[3];
      assert.equal(last.succeeded, true);
      assert.equal(last.status_code, 200);
      assert.equal(last.response_body, 'finally');
      assert.equal(last.error, null);
    } finally {
      await receiver.close();
    }
  });

  it('resend makes a new attempt with the same webhook-id, and it verifies', async () => {
    const ws = await createWorkspace(t, 'webhooks resend');
    const receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
    try {
      const { endpoint, event } = await createdEventAt(t, ws.token, receiver.url);
      const original = await waitSucceeded(t, ws.token, event.id, endpoint.id);
      assert.equal(receiver.requests.length, 1);

      const resend = await request(t, 'POST', `/v1/events/${event.id}/resend`, {
        token: ws.token,
        body: { endpoint_id: endpoint.id },
        idempotencyKey: newKey(),
      });
      assert.equal(resend.status, 202, resend.text);
      assert.equal(resend.body.data.length, 1);
      const queued = resend.body.data[0];
      assert.equal(queued.kind, 'resend');
      assert.equal(queued.endpoint_id, endpoint.id);
      assert.equal(queued.event_id, event.id);
      assert.notEqual(queued.id, original.id, 'a new delivery');

      await waitFor('the resent delivery', async () => (receiver.requests.length >= 2 ? true : undefined), WAIT_MS);
      const [first, second] = receiver.requests as [ReceivedRequest, ReceivedRequest];
      assert.equal(second.headers['webhook-id'], first.headers['webhook-id']);
      assert.equal(second.headers['webhook-id'], event.id);
      assert.deepEqual(verified(endpoint, second), verified(endpoint, first));

      const resent = await waitFor(
        'the resend logged',
        async () => {
          const d = (await deliveriesOf(t, ws.token, event.id)).find((x) => x.id === queued.id);
          return d && d.status === 'succeeded' ? d : undefined;
        },
        WAIT_MS,
      );
      assert.equal(resent.attempts.length, 1);
      assert.equal(resent.attempts[0].succeeded, true);
      assert.equal(resent.attempts[0].status_code, 200);
      await sleep(300);
      assert.equal(receiver.requests.length, 2, 'one new attempt, no more');
    } finally {
      await receiver.close();
    }
  });

  it('a slow endpoint does not hold up another: the fast one gets everything at once, the slow one logs its timeouts', async () => {
    const ws = await createWorkspace(t, 'webhooks slow endpoint');
    const slow = await startReceiver(() => ({ hang: true }));
    const fast = await startReceiver(() => ({ status: 200, body: 'ok' }));
    let slowId: string | undefined;
    try {
      const slowEndpoint = await addEndpoint(t, ws.token, slow.url);
      slowId = slowEndpoint.id;
      const fastEndpoint = await addEndpoint(t, ws.token, fast.url);
      const started = Date.now();
      const ids = await Promise.all([1, 2, 3, 4].map(() => newCollection(t, ws.token)));
      const expected = ids.length * 4; // created, pending, processing, successful
      await waitFor(
        `${expected} deliveries at the fast endpoint`,
        async () => (fast.requests.length >= expected ? true : undefined),
        WAIT_MS,
      );
      const elapsed = (fast.requests[expected - 1] as ReceivedRequest).at - started;
      console.log(
        `fast endpoint had all ${expected} events after ${elapsed} ms; the slow one had received ${slow.requests.length} requests`,
      );
      assert.ok(
        elapsed < 3000,
        `the fast endpoint got all its events after ${elapsed} ms, not before the slow one's 3000 ms timeout`,
      );
      assert.ok(slow.requests.length > 0, 'the slow endpoint was being called meanwhile');
      for (const r of fast.requests) verified(fastEndpoint, r);
      for (const r of slow.requests) verified(slowEndpoint, r);
      assert.equal(
        new Set(fast.requests.map((r) => r.headers['webhook-id'])).size,
        fast.requests.length,
        'each event once at the fast endpoint',
      );

      const created = await eventOf(t, ws.token, ids[0] as string, 'collection.created');
      const timedOut = await waitDelivery(
        t,
        ws.token,
        created.id,
        slowEndpoint.id,
        'a timed-out attempt',
        (d) => d.attempts.length >= 1,
      );
      const attempt = timedOut.attempts[0];
      assert.equal(attempt.error, 'timed out after 3000 ms');
      assert.equal(attempt.status_code, null);
      assert.equal(attempt.response_body, null);
      assert.equal(attempt.succeeded, false);
      assert.ok(attempt.duration_ms >= 2990 && attempt.duration_ms < 6000, `duration ${attempt.duration_ms} ms`);
      const onFast = await waitSucceeded(t, ws.token, created.id, fastEndpoint.id);
      assert.equal(onFast.attempts.length, 1);
    } finally {
      // Stop the slow endpoint's retries before letting its held connections go.
      if (slowId)
        await request(t, 'PATCH', `/v1/webhooks/endpoints/${slowId}`, {
          token: ws.token,
          body: { status: 'disabled' },
        });
      await slow.close();
      await fast.close();
    }
  });

  it('two relays on one database never send the same attempt twice', async () => {
    const ws = await createWorkspace(t, 'webhooks two relays');
    const receiver = await startReceiver(() => ({ status: 200, body: 'ok', delayMs: 50 }));
    // A second worker process's relay: the options src/workers/index.ts builds, its own metrics registry.
    const registry = new Registry();
    const second = new WebhookRelay(
      t.db,
      {
        env: t.config.paymentsEnv,
        retryScheduleMs: t.config.webhookRetryScheduleMs,
        timeoutMs: t.config.webhookTimeoutMs,
        concurrency: t.config.webhookConcurrency,
        endpointConcurrency: t.config.webhookEndpointConcurrency,
        box: t.box,
        registry,
      },
      t.app.log,
    );
    let running = true;
    const loop = (async () => {
      while (running) {
        await second.tick();
        await sleep(5);
      }
    })();
    try {
      const endpoint = await addEndpoint(t, ws.token, receiver.url);
      const ids = await Promise.all(Array.from({ length: 8 }, () => newCollection(t, ws.token)));
      const expected = ids.length * 4;
      const settled = async (): Promise<true | undefined> => {
        const { rows } = await t.db.query<{ n: number; done: number }>(
          `SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'succeeded')::int AS done FROM webhook_deliveries WHERE workspace_id = $1`,
          [ws.id],
        );
        const row = rows[0];
        return row && row.n === expected && row.done === expected ? true : undefined;
      };
      await waitFor(`${expected} deliveries succeeded`, settled, WAIT_MS);
      running = false;
      await loop;
      await second.stop();
      await sleep(300);

      const ids_ = receiver.requests.map((r) => r.headers['webhook-id']);
      assert.equal(receiver.requests.length, expected, `${receiver.requests.length} requests for ${expected} events`);
      assert.equal(new Set(ids_).size, expected, 'every webhook-id exactly once');
      for (const r of receiver.requests) verified(endpoint, r);
      const { rows } = await t.db.query<{ id: string; attempts: number; logged: number }>(
        `SELECT d.id, d.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS logged
         FROM webhook_deliveries d WHERE d.workspace_id = $1`,
        [ws.id],
      );
      assert.equal(rows.length, expected);
      for (const row of rows) {
        assert.equal(row.attempts, 1, `delivery ${row.id} counted ${row.attempts} attempts`);
        assert.equal(row.logged, 1, `delivery ${row.id} logged ${row.logged} attempts`);
      }
      const bySecond = ((await registry.getSingleMetric('webhook_attempts_total')?.get())?.values ?? []).reduce(
        (sum, v) => sum + v.value,
        0,
      );
      console.log(`the second relay made ${bySecond} of the ${expected} attempts`);
      assert.ok(
        bySecond > 0 && bySecond < expected,
        `both relays took part (the second made ${bySecond} of ${expected} attempts)`,
      );
    } finally {
      running = false;
      await loop;
      await second.stop();
      await receiver.close();
    }
  });

  it('a backlog for one endpoint goes out at its full share and never more: each event once, at most WEBHOOK_ENDPOINT_CONCURRENCY at a time', async () => {
    const ws = await createWorkspace(t, 'webhooks backlog share');
    let open = 0;
    let most = 0;
    const receiver = await startReceiver(async () => {
      open++;
      most = Math.max(most, open);
      await sleep(30);
      open--;
      return { status: 200 };
    });
    const count = 60;
    try {
      const endpoint = await addEndpoint(t, ws.token, receiver.url, ['payout.created']);
      // A backlog at once: 60 events recorded in one statement, as a burst of changes would leave them.
      await recordEvents(t.db, ws.id, 'payout.created', count, { n: 1 });
      await waitFor(`${count} deliveries`, async () => (receiver.requests.length >= count ? true : undefined), WAIT_MS);
      await sleep(300);
      assert.equal(receiver.requests.length, count, 'no attempt twice');
      assert.equal(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size, count, 'every event once');
      for (const r of receiver.requests) verified(endpoint, r);
      assert.equal(
        most,
        t.config.webhookEndpointConcurrency,
        `at most ${t.config.webhookEndpointConcurrency} at once, and that many were used (${most})`,
      );
    } finally {
      await receiver.close();
    }
  });

  it("another endpoint's event is not held back while busy endpoints drain their backlogs", async () => {
    const ws = await createWorkspace(t, 'webhooks behind a backlog');
    let busySent = 0;
    const busy = await Promise.all(
      [1, 2, 3, 4, 5, 6].map(() =>
        startReceiver(async () => {
          await sleep(1);
          busySent++;
          return { status: 200 };
        }),
      ),
    );
    const other = await startReceiver(() => ({ status: 200 }));
    const backlog = 6 * 400;
    try {
      for (const receiver of busy) await addEndpoint(t, ws.token, receiver.url, ['payout.created']);
      await addEndpoint(t, ws.token, other.url, ['payout.failed']);
      // 400 events for each of six endpoints, each answering after 1 ms, 8 at a time per endpoint.
      await recordEvents(t.db, ws.id, 'payout.created', 400);
      await waitFor('the backlogs under way', async () => (busySent >= 100 ? true : undefined), WAIT_MS);
      await recordEvents(t.db, ws.id, 'payout.failed', 1);
      await waitFor(
        "the other endpoint's event",
        async () => (other.requests.length === 1 ? true : undefined),
        WAIT_MS,
      );
      const sentBefore = busySent;
      console.log(`the other endpoint had its event when the busy ones had ${sentBefore} of ${backlog}`);
      assert.ok(
        sentBefore < backlog,
        `the other endpoint waited until the busy ones had all ${backlog} of their events`,
      );
      await waitFor(`all ${backlog}`, async () => (busySent >= backlog ? true : undefined), WAIT_MS);
    } finally {
      for (const receiver of busy) await receiver.close();
      await other.close();
    }
  });

  it('logs the first 4096 bytes of a longer response body', async () => {
    const ws = await createWorkspace(t, 'webhooks excerpt');
    const long = (seed: number): string =>
      Array.from({ length: 10_000 }, (_, i) => String.fromCharCode(97 + ((i + seed) % 26))).join('');
    const receiver = await startReceiver((_r, index) =>
      index === 0 ? { status: 500, body: long(0) } : { status: 200, body: long(7) },
    );
    try {
      const { endpoint, event } = await createdEventAt(t, ws.token, receiver.url);
      const delivery = await waitSucceeded(t, ws.token, event.id, endpoint.id);
      assert.equal(delivery.attempts.length, 2);
      const [failed, ok] = delivery.attempts;
      assert.equal(failed.status_code, 500);
      assert.equal(failed.response_body, long(0).slice(0, 4096));
      assert.equal(ok.status_code, 200);
      assert.equal(ok.response_body, long(7).slice(0, 4096));
      assert.equal(Buffer.byteLength(ok.response_body), 4096);
    } finally {
      await receiver.close();
    }
  });
});

describe('webhooks on a short schedule (0s,100ms: three attempts in all)', () => {
  let t: TestApp;
  before(async () => {
    t = await startWebhookApp('0s,100ms');
  });
  after(async () => t?.close());

  it('an always-failing receiver gets exactly three attempts, then the delivery is failed', async () => {
    const ws = await createWorkspace(t, 'webhooks exhausted');
    const receiver = await startReceiver(() => ({ status: 500, body: 'down' }));
    try {
      const { endpoint, event } = await createdEventAt(t, ws.token, receiver.url);
      const delivery = await waitDelivery(t, ws.token, event.id, endpoint.id, 'failed', (d) => d.status === 'failed');
      await sleep(600); // several times the last delay: a fourth attempt would come now
      assert.equal(receiver.requests.length, 3);
      const between = gaps(receiver.requests);
      console.log(`gaps (ms): ${between.join(', ')}`);
      assert.ok((between[0] as number) < 2000, `the first retry is immediate, yet came after ${between[0]} ms`);
      assert.ok(
        (between[1] as number) >= 90 - 2,
        `the second retry waits 100 ms (−10%), yet came after ${between[1]} ms`,
      );
      for (const r of receiver.requests) assert.deepEqual(verified(endpoint, r), event);
      assert.equal(delivery.next_attempt_at, null);
      assert.equal(typeof delivery.last_error, 'string');
      assert.deepEqual(
        delivery.attempts.map((a: any) => [a.attempt, a.status_code, a.succeeded, a.response_body]),
        [
          [1, 500, false, 'down'],
          [2, 500, false, 'down'],
          [3, 500, false, 'down'],
        ],
      );
      const again = await waitDelivery(t, ws.token, event.id, endpoint.id, 'still failed', () => true);
      assert.equal(again.status, 'failed');
      assert.equal(again.attempts.length, 3);
    } finally {
      await receiver.close();
    }
  });

  it('honours Retry-After (seconds) on 429 and on 503: the next attempt does not come before it', async () => {
    const ws = await createWorkspace(t, 'webhooks retry-after');
    const receiver = await startReceiver((_r, index) => {
      if (index === 0) return { status: 429, headers: { 'retry-after': '2' }, body: 'slow down' };
      if (index === 1) return { status: 503, headers: { 'retry-after': '2' }, body: 'maintenance' };
      return { status: 200, body: 'ok' };
    });
    try {
      const { endpoint, event } = await createdEventAt(t, ws.token, receiver.url);
      const delivery = await waitSucceeded(t, ws.token, event.id, endpoint.id);
      assert.equal(receiver.requests.length, 3);
      for (const r of receiver.requests) assert.deepEqual(verified(endpoint, r), event);
      const between = gaps(receiver.requests);
      console.log(`Retry-After gaps (ms): ${between.join(', ')}`);
      assert.ok(
        (between[0] as number) >= 2000 - 2,
        `after a 429 with Retry-After: 2 the next attempt came after ${between[0]} ms`,
      );
      assert.ok(
        (between[1] as number) >= 2000 - 2,
        `after a 503 with Retry-After: 2 the next attempt came after ${between[1]} ms`,
      );
      for (const gap of between) assert.ok(gap < 2000 + 3000, `Retry-After 2 s, yet ${gap} ms between attempts`);
      assert.deepEqual(
        delivery.attempts.map((a: any) => [a.attempt, a.status_code, a.succeeded]),
        [
          [1, 429, false],
          [2, 503, false],
          [3, 200, true],
        ],
      );
    } finally {
      await receiver.close();
    }
  });
});

describe('webhooks: 410 Gone (schedule 0s,30s)', () => {
  let t: TestApp;
  before(async () => {
    t = await startWebhookApp('0s,30s');
  });
  after(async () => t?.close());

  it('410 disables the endpoint, fails its pending delivery, and later events are not delivered there', async () => {
    const ws = await createWorkspace(t, 'webhooks gone');
    let answer = 500;
    const receiver = await startReceiver(() => ({ status: answer, body: answer === 410 ? 'gone' : 'not yet' }));
    try {
      const endpoint = await addEndpoint(t, ws.token, receiver.url, ['collection.created']);
      // A delivery that failed twice waits 30 s for its third attempt: pending.
      const first = await eventOf(t, ws.token, await newCollection(t, ws.token), 'collection.created');
      const waiting = await waitDelivery(
        t,
        ws.token,
        first.id,
        endpoint.id,
        'pending after two failures',
        (d) => d.attempts.length === 2,
      );
      assert.equal(waiting.status, 'pending');
      assert.notEqual(waiting.next_attempt_at, null);

      answer = 410;
      const second = await eventOf(t, ws.token, await newCollection(t, ws.token), 'collection.created');
      const goneDelivery = await waitDelivery(
        t,
        ws.token,
        second.id,
        endpoint.id,
        'answered 410',
        (d) => d.status !== 'pending',
      );
      assert.equal(goneDelivery.status, 'failed');
      assert.deepEqual(
        goneDelivery.attempts.map((a: any) => [a.attempt, a.status_code, a.succeeded]),
        [[1, 410, false]],
      );

      const shown = await request(t, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`, { token: ws.token });
      assert.equal(shown.status, 200, shown.text);
      assert.equal(shown.body.status, 'disabled');
      assert.equal(shown.body.disabled_reason, 'endpoint_gone');

      const stopped = (await deliveriesOf(t, ws.token, first.id)).find((d) => d.endpoint_id === endpoint.id);
      assert.equal(stopped.status, 'failed', 'the pending delivery is failed');
      assert.equal(stopped.next_attempt_at, null);
      assert.equal(stopped.attempts.length, 2);

      // A later event: published by the relay, delivered nowhere.
      const before_ = receiver.requests.length;
      const third = await eventOf(t, ws.token, await newCollection(t, ws.token), 'collection.created');
      await waitFor(
        'the later event published',
        async () => {
          const { rows } = await t.db.query<{ published_at: Date | null }>(
            'SELECT published_at FROM outbox WHERE event_id = $1',
            [third.id],
          );
          return rows[0]?.published_at ? true : undefined;
        },
        WAIT_MS,
      );
      await sleep(500);
      assert.deepEqual(await deliveriesOf(t, ws.token, third.id), []);
      assert.equal(receiver.requests.length, before_, 'nothing more reached the disabled endpoint');
      assert.equal(requestsFor(receiver, third.id).length, 0);
      for (const r of receiver.requests) verified(endpoint, r);
    } finally {
      await receiver.close();
    }
  });
});
