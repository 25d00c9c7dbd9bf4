// A backlog for one slow endpoint must not hold up anyone else's webhooks: the relay leaves an endpoint
// that already has its share of attempts in flight out of the window it claims from.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createWorkspace, request, startTestApp, waitFor, type TestApp } from './helpers/harness.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

describe('a slow endpoint with a deep backlog', () => {
  let t: TestApp;
  let slow: Receiver;
  let fast: Receiver;

  before(async () => {
    t = await startTestApp({ WEBHOOK_TIMEOUT_MS: '4000', WEBHOOK_POLL_MS: '20', WEBHOOK_ENDPOINT_CONCURRENCY: '8' }, { workers: true });
    slow = await startReceiver(() => ({ hang: true }));
    fast = await startReceiver(() => ({ status: 200 }));
  });
  after(async () => {
    await slow.close();
    await fast.close();
    await t.close();
  });

  /** Events with their outbox rows, as the lifecycle writes them. */
  async function recordEvents(workspaceId: string, count: number, at: Date): Promise<void> {
    await t.db.query(
      `WITH e AS (INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
         SELECT gen_random_uuid(), $1, 'collection.created', 'collection', gen_random_uuid(), '{"metadata":{}}', $3
         FROM generate_series(1, $2) RETURNING id, workspace_id, created_at)
       INSERT INTO outbox (workspace_id, event_id, created_at) SELECT workspace_id, id, created_at FROM e`,
      [workspaceId, count, at],
    );
  }

  it('another workspace still gets its events at once while 1,200 wait for an endpoint that never answers', async () => {
    const stuck = await createWorkspace(t, 'stuck');
    const healthy = await createWorkspace(t, 'healthy');
    const slowEndpoint = await request(t, 'POST', '/v1/webhooks/endpoints', { token: stuck.token, body: { url: slow.url } });
    assert.equal(slowEndpoint.status, 201);
    await new Promise((r) => setTimeout(r, 5));
    await recordEvents(stuck.id, 1200, new Date());
    await waitFor('8 attempts hanging at the slow endpoint', async () => (slow.requests.length >= 8 ? true : undefined), 15_000);

    const fastEndpoint = await request(t, 'POST', '/v1/webhooks/endpoints', { token: healthy.token, body: { url: fast.url } });
    assert.equal(fastEndpoint.status, 201);
    await new Promise((r) => setTimeout(r, 5));
    const sent = Date.now();
    await recordEvents(healthy.id, 3, new Date());
    // The slow endpoint's 1,192 waiting deliveries are all older than these three.
    await waitFor('the healthy workspace’s 3 events', async () => (fast.requests.length >= 3 ? true : undefined), 3000);
    assert.ok(Date.now() - sent < 3000, `took ${Date.now() - sent} ms`);
    assert.equal(slow.requests.length, 8, 'the slow endpoint still has only its 8 slots');
  });
});
