// Recording an event wakes the webhook relay of the same process once its transaction commits (the after-commit
// hook, src/platform/after-commit.ts), so an event goes out at once, not at the relay's next poll. The relay here polls
// once a minute (WEBHOOK_POLL_MS=60000, its first poll at start): every delivery below must arrive within
// seconds, which only a wake explains.
// - collection.created: written with the collection in one statement in autocommit (no transaction to note it on);
// - collection.successful: recorded by the lifecycle in a transaction of the background's batcher;
// - webhook.test: a delivery written directly (no outbox row), the path that was woken before.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  request,
  startTestApp,
  type TestApp,
  waitFor,
} from './helpers/harness.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const POLL_MS = 60_000;
/** Well before the next poll: a woken relay delivers in milliseconds; a slow machine gets ample room. */
const PROMPTLY_MS = 5_000;
const SUCCESS_PHONE = '+254712340000';

let t: TestApp;
let receiver: Receiver;
let token: string;

/** The first delivery of `type` about `objectId`, with when it arrived; waits no longer than PROMPTLY_MS. */
async function delivered(type: string, objectId: string): Promise<{ at: number; timestamp: number }> {
  return waitFor(
    `${type} of ${objectId} delivered`,
    async () => {
      for (const r of receiver.requests) {
        const body = JSON.parse(r.body) as { type: string; timestamp: string; data: Record<string, unknown> };
        const id = body.data.collection_id ?? body.data.id;
        if (body.type === type && id === objectId) return { at: r.at, timestamp: Date.parse(body.timestamp) };
      }
      return undefined;
    },
    PROMPTLY_MS,
  );
}

describe('recording an event wakes the relay in the same process', () => {
  before(async () => {
    t = await startTestApp({ ...FAST_LIFECYCLE, WEBHOOK_POLL_MS: String(POLL_MS) }, { workers: true });
    assert.equal(t.config.webhookPollMs, POLL_MS);
    receiver = await startReceiver();
    ({ token } = await createWorkspace(t, 'wake'));
    const res = await request(t, 'POST', '/v1/webhooks/endpoints', { token, body: { url: receiver.url } });
    assert.equal(res.status, 201, res.text);
  });

  after(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('delivers collection.created and collection.successful long before the next poll', async () => {
    const started = Date.now();
    const res = await createCollection(t, token, { customer: { phone_number: SUCCESS_PHONE } });
    assert.equal(res.status, 201, res.text);
    const id = res.body.collection_id as string;

    const created = await delivered('collection.created', id);
    assert.ok(created.at - started < PROMPTLY_MS, `collection.created arrived ${created.at - started} ms after`);

    const successful = await delivered('collection.successful', id);
    assert.ok(
      successful.at - successful.timestamp < PROMPTLY_MS,
      `collection.successful arrived ${successful.at - successful.timestamp} ms after it was recorded`,
    );
    // Both well inside one poll interval, counted from the app's start (its one poll so far).
    assert.ok(Date.now() - started < POLL_MS / 2);
  });

  it('still sends a test event at once (a delivery written directly, no outbox row)', async () => {
    const endpoints = await request(t, 'GET', '/v1/webhooks/endpoints', { token });
    assert.equal(endpoints.status, 200, endpoints.text);
    const endpointId = endpoints.body.data[0].id as string;
    const before = receiver.requests.length;
    const started = Date.now();
    const res = await request(t, 'POST', `/v1/webhooks/endpoints/${endpointId}/test`, { token });
    assert.equal(res.status, 202, res.text);
    const arrived = await waitFor(
      'the test event delivered',
      async () => receiver.requests.slice(before).find((r) => JSON.parse(r.body).type === 'webhook.test'),
      PROMPTLY_MS,
    );
    assert.ok(arrived.at - started < PROMPTLY_MS);
  });
});
