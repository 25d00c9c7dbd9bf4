// Test events and an endpoint's delivery log: POST /v1/webhooks/endpoints/{id}/test (a signed
// webhook.test event to that endpoint only) and GET /v1/webhooks/endpoints/{id}/deliveries, with who may call them.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  assertProblem,
  createWorkspace,
  liquidityProviderToken,
  newKey,
  request,
  waitFor,
  type ApiResponse,
} from './helpers/harness.js';
import type { ReceivedRequest } from './helpers/receiver.js';
import {
  UUID,
  DELIVERY_FIELDS,
  WAIT_MS,
  t,
  receiver,
  receiverBase,
  received,
  patchEndpoint,
  deleteEndpoint,
  listEvents,
  getEvent,
  deliveries,
  resend,
  newEndpoint,
  assertSameAsMissing,
  withoutSecret,
  startWebhooksApp,
} from './helpers/webhooks-api.js';

startWebhooksApp();

describe("test events and an endpoint's delivery log", () => {
  let ws: { id: string; token: string };
  let endpoint: any;
  let other: any;
  const path = `/test-event/${randomUUID()}`;
  const otherPath = `/test-event/other/${randomUUID()}`;

  const sendTest = (token: string, id: string, key?: string): Promise<ApiResponse> =>
    request(t, 'POST', `/v1/webhooks/endpoints/${id}/test`, {
      token,
      ...(key === undefined ? {} : { idempotencyKey: key }),
    });
  const endpointDeliveries = (token: string, id: string, query = ''): Promise<ApiResponse> =>
    request(t, 'GET', `/v1/webhooks/endpoints/${id}/deliveries${query ? `?${query}` : ''}`, { token });
  /** The delivery as the endpoint's log shows it once its attempt is recorded. */
  const settled = (id: string, deliveryId: string): Promise<any> =>
    waitFor(
      `test delivery ${deliveryId} to get its attempt`,
      async () => {
        const res = await endpointDeliveries(ws.token, id, 'limit=100');
        assert.equal(res.status, 200, res.text);
        const found = res.body.data.find((d: { id: string }) => d.id === deliveryId);
        return found && found.status !== 'pending' ? found : undefined;
      },
      WAIT_MS,
    );

  before(async () => {
    ws = await createWorkspace(t, 'webhooks-test-events');
    // Subscribes to refunds only: a test reaches it anyway.
    endpoint = await newEndpoint(ws.token, { url: `${receiverBase}${path}`, enabled_events: ['refund.successful'] });
    other = await newEndpoint(ws.token, { url: `${receiverBase}${otherPath}` });
  });

  it('test: 202 with one pending test delivery; the relay sends a signed webhook.test event to that endpoint only', async () => {
    const res = await sendTest(ws.token, endpoint.id);
    assert.equal(res.status, 202, res.text);
    const d = res.body;
    assert.deepEqual(Object.keys(d).sort(), DELIVERY_FIELDS);
    assert.match(d.id, UUID);
    assert.equal(d.endpoint_id, endpoint.id);
    assert.equal(d.kind, 'test');
    assert.equal(d.status, 'pending');
    assert.deepEqual(d.attempts, []);

    const sent = await settled(endpoint.id, d.id);
    assert.equal(sent.status, 'succeeded');
    assert.equal(sent.attempts.length, 1);
    assert.equal(sent.attempts[0].status_code, 200);
    assert.equal(sent.attempts[0].response_body, 'ok');

    // The event: listed, typed webhook.test, its data the endpoint (no secret), delivered as it is stored.
    const event = await getEvent(ws.token, d.event_id);
    assert.equal(event.status, 200, event.text);
    assert.equal(event.body.type, 'webhook.test');
    assert.deepEqual(event.body.data, withoutSecret(endpoint));
    const arrived = received.filter((r) => r.path === receiver.path + path && r.headers['webhook-id'] === d.event_id);
    assert.equal(arrived.length, 1);
    const body = (arrived[0] as ReceivedRequest).body;
    assert.deepEqual(JSON.parse(body), event.body);
    new Webhook(endpoint.secret).verify(body, (arrived[0] as ReceivedRequest).headers as Record<string, string>);
    // webhook-timestamp is the attempt's time in seconds, as the API documents.
    assert.equal(
      (arrived[0] as ReceivedRequest).headers['webhook-timestamp'],
      String(Math.floor(Date.parse(sent.attempts[0].created_at) / 1000)),
    );
    assert.equal(
      received.filter((r) => r.path === receiver.path + otherPath).length,
      0,
      'the other endpoint, subscribed to everything, gets nothing',
    );
    const listed = await listEvents(ws.token, 'type=webhook.test');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.data.map((e: { id: string }) => e.id),
      [d.event_id],
    );
    const byEvent = await deliveries(ws.token, d.event_id);
    assert.deepEqual(
      byEvent.body.data.map((x: { id: string }) => x.id),
      [d.id],
    );
  });

  it('test: an Idempotency-Key replays the same delivery and queues one; a disabled endpoint is 409', async () => {
    const key = newKey();
    const first = await sendTest(ws.token, other.id, key);
    assert.equal(first.status, 202, first.text);
    const again = await sendTest(ws.token, other.id, key);
    assert.equal(again.status, 202, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    await settled(other.id, first.body.id);
    const log = await endpointDeliveries(ws.token, other.id, 'limit=100');
    assert.equal(log.body.data.filter((d: { kind: string }) => d.kind === 'test').length, 1);

    assert.equal((await patchEndpoint(ws.token, other.id, { status: 'disabled' })).status, 200);
    assertProblem(await sendTest(ws.token, other.id), 409, 'webhook_endpoint_disabled');
    assert.equal((await patchEndpoint(ws.token, other.id, { status: 'enabled' })).status, 200);
  });

  it('the delivery log: newest first across events and kinds, paged by cursor, filtered by status', async () => {
    const failing = await newEndpoint(ws.token, { url: `${receiverBase}/test-event/failing/${randomUUID()}` });
    receiver.setHandler((req) =>
      req.path.startsWith(`${receiver.path}/test-event/failing/`)
        ? { status: 500, body: 'boom' }
        : { status: 200, body: 'ok' },
    );
    try {
      const made: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await sendTest(ws.token, failing.id);
        assert.equal(res.status, 202, res.text);
        made.push(res.body.id);
        await settled(failing.id, res.body.id);
      }
      // A resend of the first test event to this endpoint joins its log.
      const firstEvent = (await endpointDeliveries(ws.token, failing.id, 'limit=100')).body.data.at(-1).event_id;
      const resent = await resend(ws.token, firstEvent, { endpoint_id: failing.id });
      assert.equal(resent.status, 202, resent.text);
      made.push(resent.body.data[0].id);
      await settled(failing.id, resent.body.data[0].id);

      const all = await endpointDeliveries(ws.token, failing.id, 'limit=100');
      assert.equal(all.status, 200, all.text);
      assert.deepEqual(Object.keys(all.body).sort(), ['data', 'has_more', 'next_cursor']);
      assert.deepEqual(
        all.body.data.map((d: { id: string }) => d.id),
        [...made].reverse(),
      );
      assert.deepEqual(
        all.body.data.map((d: { kind: string }) => d.kind),
        ['resend', 'test', 'test', 'test'],
      );
      for (const d of all.body.data) {
        assert.deepEqual(Object.keys(d).sort(), DELIVERY_FIELDS);
        assert.equal(d.endpoint_id, failing.id);
        assert.equal(d.status, 'failed');
        assert.equal(d.attempts.length, 1, 'a test or a resend is one attempt');
        assert.equal(d.attempts[0].status_code, 500);
        assert.equal(d.attempts[0].response_body, 'boom');
        assert.equal(d.last_error, 'HTTP 500');
      }

      const walked: string[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < 10; i++) {
        const page: ApiResponse = await endpointDeliveries(
          ws.token,
          failing.id,
          `limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        assert.equal(page.status, 200, page.text);
        walked.push(...page.body.data.map((d: { id: string }) => d.id));
        cursor = page.body.next_cursor;
        if (cursor === null) break;
      }
      assert.deepEqual(walked, [...made].reverse());

      assert.deepEqual((await endpointDeliveries(ws.token, failing.id, 'status=succeeded')).body.data, []);
      assert.equal((await endpointDeliveries(ws.token, failing.id, 'status=failed')).body.data.length, 4);
      const ok = await endpointDeliveries(ws.token, endpoint.id, 'status=succeeded');
      assert.ok(ok.body.data.length >= 1);
      assert.ok(ok.body.data.every((d: { status: string }) => d.status === 'succeeded'));

      assertProblem(await endpointDeliveries(ws.token, failing.id, 'status=lost'), 400, 'validation_failed');
      assertProblem(await endpointDeliveries(ws.token, failing.id, 'limit=0'), 400, 'validation_failed');
      assertProblem(await endpointDeliveries(ws.token, failing.id, 'cursor=forged'), 400, 'invalid_cursor');
    } finally {
      receiver.setHandler(() => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' }));
    }
  });

  it("another workspace's endpoint, a deleted one, an unknown id or one that is not a UUID: 404 on both routes", async () => {
    const b = await createWorkspace(t, 'webhooks-test-events-b');
    const missing = randomUUID();
    assertSameAsMissing(await sendTest(b.token, endpoint.id), await sendTest(b.token, missing));
    assertSameAsMissing(await sendTest(b.token, endpoint.id, newKey()), await sendTest(b.token, missing, newKey()));
    assertSameAsMissing(await endpointDeliveries(b.token, endpoint.id), await endpointDeliveries(b.token, missing));
    assertProblem(await sendTest(ws.token, 'not-a-uuid'), 404, 'not_found');
    assertProblem(await endpointDeliveries(ws.token, 'not-a-uuid'), 404, 'not_found');
    const gone = await newEndpoint(ws.token, { url: `${receiverBase}/test-event/deleted` });
    assert.equal((await deleteEndpoint(ws.token, gone.id)).status, 204);
    assertProblem(await sendTest(ws.token, gone.id), 404, 'not_found');
    assertProblem(await endpointDeliveries(ws.token, gone.id), 404, 'not_found');
    // Nothing was queued for A's endpoint by B.
    const log = await endpointDeliveries(ws.token, endpoint.id, 'limit=100');
    assert.equal(log.body.data.length, 1);
  });

  it('integrator tokens only: 401 without a valid token, 403 for liquidity_provider and admin tokens', async () => {
    const lpToken = await liquidityProviderToken(t, ws.id);
    for (const [method, url] of [
      ['POST', `/v1/webhooks/endpoints/${endpoint.id}/test`],
      ['GET', `/v1/webhooks/endpoints/${endpoint.id}/deliveries`],
    ] as const) {
      assertProblem(await request(t, method, url), 401, 'unauthorized');
      assertProblem(await request(t, method, url, { token: 'not-a-token' }), 401, 'unauthorized');
      for (const token of [lpToken, t.adminToken])
        assertProblem(await request(t, method, url, { token }), 403, 'forbidden');
    }
    const log = await endpointDeliveries(ws.token, endpoint.id, 'limit=100');
    assert.equal(log.body.data.length, 1, 'the refused tests queued nothing');
  });
});
