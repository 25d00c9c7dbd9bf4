// Who may call the webhook and events routes: integrator tokens only (401 without a valid token, 403 for
// the other roles), and workspaces never see or touch each other's endpoints and events (404 exactly as a missing id).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  liquidityProviderToken,
  newKey,
  request,
} from './helpers/harness.js';
import {
  t,
  receiverBase,
  getEndpoint,
  patchEndpoint,
  deleteEndpoint,
  rotate,
  listEvents,
  getEvent,
  deliveries,
  resend,
  allEndpoints,
  newEndpoint,
  eventsOf,
  assertSameAsMissing,
  withoutSecret,
  startWebhooksApp,
} from './helpers/webhooks-api.js';

startWebhooksApp();

describe('access: integrator tokens only', () => {
  let lpToken: string;
  let endpoint: any;
  let eventId: string;
  let ws: { id: string; token: string };

  before(async () => {
    ws = await createWorkspace(t, 'webhooks-access');
    lpToken = await liquidityProviderToken(t, ws.id);
    endpoint = await newEndpoint(ws.token, { url: `${receiverBase}/access`, description: 'access' });
    const c = await createCollection(t, ws.token);
    assert.equal(c.status, 201, c.text);
    const events = await eventsOf(ws.token, c.body.collection_id);
    assert.ok(events.length > 0);
    eventId = events[0].id;
  });

  // Real ids of the same workspace, so a wrongly admitted call would succeed rather than 404.
  const routes = (): [string, string, unknown][] => [
    ['POST', '/v1/webhooks/endpoints', { url: 'https://example.com/intruder' }],
    ['GET', '/v1/webhooks/endpoints', undefined],
    ['GET', `/v1/webhooks/endpoints/${endpoint.id}`, undefined],
    ['PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { description: 'changed by an intruder' }],
    ['DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, undefined],
    ['POST', `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`, undefined],
    ['GET', '/v1/events', undefined],
    ['GET', `/v1/events/${eventId}`, undefined],
    ['GET', `/v1/events/${eventId}/deliveries`, undefined],
    ['POST', `/v1/events/${eventId}/resend`, { endpoint_id: endpoint.id }],
  ];

  it('without a token or with a bad one: 401 unauthorized on all 10 routes', async () => {
    assert.equal(routes().length, 10);
    for (const [method, url, body] of routes()) {
      assertProblem(await request(t, method, url, { body }), 401, 'unauthorized');
      assertProblem(await request(t, method, url, { body, token: 'not-a-token' }), 401, 'unauthorized');
    }
  });

  it('with a liquidity_provider or an admin token: 403 forbidden on all 10 routes, and nothing changes', async () => {
    for (const [method, url, body] of routes()) {
      for (const token of [lpToken, t.adminToken]) {
        const res = await request(t, method, url, { body, token });
        assertProblem(res, 403, 'forbidden');
        assert.ok(!res.text.includes('whsec_'));
      }
    }
    assert.deepEqual(
      (await getEndpoint(ws.token, endpoint.id)).body,
      withoutSecret(endpoint),
      'not patched, rotated or deleted',
    );
    assert.deepEqual(
      (await allEndpoints(ws.token)).map((e) => e.id),
      [endpoint.id],
      'nothing created',
    );
    assert.equal(
      (await deliveries(ws.token, eventId)).body.data.filter((d: { kind: string }) => d.kind === 'resend').length,
      0,
      'no resend queued',
    );
  });
});

// 4. Workspaces

describe('workspaces never see each other’s endpoints and events', () => {
  let a: { id: string; token: string };
  let b: { id: string; token: string };
  let aEndpoint: any;
  let aEventId: string;
  let aCollection: string;
  let bEventId: string;
  let bEndpoint: any;

  before(async () => {
    a = await createWorkspace(t, 'webhooks-a');
    b = await createWorkspace(t, 'webhooks-b');
    aEndpoint = await newEndpoint(a.token, { url: `${receiverBase}/ws-a`, description: 'A' });
    bEndpoint = await newEndpoint(b.token, { url: `${receiverBase}/ws-b`, description: 'B' });
    const ca = await createCollection(t, a.token);
    assert.equal(ca.status, 201, ca.text);
    aCollection = ca.body.collection_id;
    aEventId = (await eventsOf(a.token, aCollection))[0].id;
    const cb = await createCollection(t, b.token);
    assert.equal(cb.status, 201, cb.text);
    bEventId = (await eventsOf(b.token, cb.body.collection_id))[0].id;
  });

  it("B's GET, PATCH, DELETE and rotate of A's endpoint answer 404 exactly as a missing id, and change nothing", async () => {
    const missing = randomUUID();
    assertSameAsMissing(await getEndpoint(b.token, aEndpoint.id), await getEndpoint(b.token, missing));
    assertSameAsMissing(
      await patchEndpoint(b.token, aEndpoint.id, { status: 'disabled' }),
      await patchEndpoint(b.token, missing, { status: 'disabled' }),
    );
    assertSameAsMissing(await rotate(b.token, aEndpoint.id), await rotate(b.token, missing));
    assertSameAsMissing(await rotate(b.token, aEndpoint.id, newKey()), await rotate(b.token, missing, newKey()));
    assertSameAsMissing(await deleteEndpoint(b.token, aEndpoint.id), await deleteEndpoint(b.token, missing));
    const got = await getEndpoint(a.token, aEndpoint.id);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, withoutSecret(aEndpoint), 'still enabled, not rotated, not deleted');
  });

  it("B's GET, deliveries and resend of A's event answer 404 exactly as a missing id; resending to A's endpoint is 404", async () => {
    const missing = randomUUID();
    assertSameAsMissing(await getEvent(b.token, aEventId), await getEvent(b.token, missing));
    assertSameAsMissing(await deliveries(b.token, aEventId), await deliveries(b.token, missing));
    assertSameAsMissing(await resend(b.token, aEventId), await resend(b.token, missing));
    assertSameAsMissing(
      await resend(b.token, aEventId, { endpoint_id: bEndpoint.id }),
      await resend(b.token, missing, { endpoint_id: bEndpoint.id }),
    );
    // B's own event, A's endpoint: the endpoint is not B's.
    assertSameAsMissing(
      await resend(b.token, bEventId, { endpoint_id: aEndpoint.id }),
      await resend(b.token, bEventId, { endpoint_id: randomUUID() }),
    );
    const aDeliveries = await deliveries(a.token, aEventId);
    assert.equal(aDeliveries.status, 200, aDeliveries.text);
    assert.ok(
      aDeliveries.body.data.every(
        (d: { kind: string; endpoint_id: string }) => d.kind === 'event' && d.endpoint_id === aEndpoint.id,
      ),
    );
  });

  it("B's lists show none of A's endpoints or events", async () => {
    assert.deepEqual(
      (await allEndpoints(b.token)).map((e) => e.id),
      [bEndpoint.id],
    );
    const bEvents = await listEvents(b.token, 'limit=100');
    assert.equal(bEvents.status, 200, bEvents.text);
    assert.ok(bEvents.body.data.length > 0);
    assert.ok(
      bEvents.body.data.every(
        (e: { id: string; data: { collection_id: string } }) =>
          e.id !== aEventId && e.data.collection_id !== aCollection,
      ),
    );
    assert.deepEqual((await listEvents(b.token, `object_id=${aCollection}`)).body.data, []);
    assert.ok((await eventsOf(a.token, aCollection)).length > 0);
  });
});
