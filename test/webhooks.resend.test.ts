// An event's deliveries and resend: GET /v1/events/{id}/deliveries with each attempt, and
// POST /v1/events/{id}/resend to a named endpoint or to every enabled subscriber, and its refusals.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { assertProblem, createWorkspace, request, waitFor, type ApiResponse } from './helpers/harness.js';
import type { ReceivedRequest } from './helpers/receiver.js';
import {
  UUID,
  DELIVERY_FIELDS,
  WAIT_MS,
  t,
  receiverBase,
  received,
  receiver,
  patchEndpoint,
  deleteEndpoint,
  deliveries,
  resend,
  newEndpoint,
  successfulCollection,
  eventsOf,
  startWebhooksApp,
} from './helpers/webhooks-api.js';

startWebhooksApp();

describe('deliveries and resend', () => {
  let ws: { id: string; token: string };
  let all: any; // subscribes to '*'
  let successOnly: any; // collection.successful only
  let refundsOnly: any; // refund.* only: never subscribed to collection events
  let pendingEvent: any;
  let successfulEvent: any;
  const pathAll = `/resend/all/${randomUUID()}`;
  const pathSuccess = `/resend/success/${randomUUID()}`;
  const pathRefunds = `/resend/refunds/${randomUUID()}`;

  before(async () => {
    ws = await createWorkspace(t, 'webhooks-resend');
    all = await newEndpoint(ws.token, { url: `${receiverBase}${pathAll}` });
    successOnly = await newEndpoint(ws.token, {
      url: `${receiverBase}${pathSuccess}`,
      enabled_events: ['collection.successful'],
    });
    refundsOnly = await newEndpoint(ws.token, {
      url: `${receiverBase}${pathRefunds}`,
      enabled_events: ['refund.successful', 'refund.failed'],
    });
    const collectionId = await successfulCollection(ws.token);
    const events = await eventsOf(ws.token, collectionId);
    pendingEvent = events.find((e) => e.type === 'collection.pending');
    successfulEvent = events.find((e) => e.type === 'collection.successful');
    assert.ok(pendingEvent && successfulEvent);
    // Wait for the normal deliveries, so later counts only see resends.
    await waitFor(
      'the successful event delivered to both subscribers',
      async () => {
        const res = await deliveries(ws.token, successfulEvent.id);
        return res.body.data.length === 2 && res.body.data.every((d: { status: string }) => d.status === 'succeeded')
          ? true
          : undefined;
      },
      WAIT_MS,
    );
  });

  it('deliveries: one per subscribed endpoint, each with its attempt log', async () => {
    const res = await deliveries(ws.token, successfulEvent.id);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['data', 'has_more', 'next_cursor']);
    assert.deepEqual(
      res.body.data.map((d: { endpoint_id: string }) => d.endpoint_id).sort(),
      [all.id, successOnly.id].sort(),
    );
    for (const d of res.body.data) {
      assert.deepEqual(Object.keys(d).sort(), DELIVERY_FIELDS);
      assert.equal(d.event_id, successfulEvent.id);
      assert.equal(d.kind, 'event');
      assert.equal(d.status, 'succeeded');
      assert.equal(d.next_attempt_at, null);
      assert.equal(d.last_error, null);
      assert.equal(d.attempts.length, 1);
      const [a] = d.attempts;
      assert.deepEqual(Object.keys(a).sort(), [
        'attempt',
        'created_at',
        'duration_ms',
        'error',
        'response_body',
        'status_code',
        'succeeded',
        'url',
      ]);
      assert.equal(a.attempt, 1);
      assert.equal(a.status_code, 200);
      assert.equal(a.response_body, 'ok');
      assert.equal(a.error, null);
      assert.equal(a.succeeded, true);
      assert.equal(a.url, d.endpoint_id === all.id ? all.url : successOnly.url);
    }
    // The pending event went to the '*' endpoint only.
    const pending = await waitFor(
      'the pending event delivered',
      async () => {
        const r = await deliveries(ws.token, pendingEvent.id);
        return r.body.data.length === 1 && r.body.data[0].status === 'succeeded' ? r : undefined;
      },
      WAIT_MS,
    );
    assert.equal(pending.body.data[0].endpoint_id, all.id);
    assertProblem(await deliveries(ws.token, successfulEvent.id, 'limit=0'), 400, 'validation_failed');
  });

  // The fan-out stamps deliveries with a millisecond time: a cursor (milliseconds) walks them all.
  it('paging the deliveries of one fan-out with limit=1 walks every delivery exactly once', async () => {
    const full = (await deliveries(ws.token, successfulEvent.id, 'limit=100')).body.data.map(
      (d: { id: string }) => d.id,
    );
    assert.equal(full.length, 2, 'two endpoints subscribe, so two deliveries');
    const walked: string[] = [];
    let cursor: string | null = null;
    let lastPage: ApiResponse | undefined;
    for (let i = 0; i < 5; i++) {
      const page: ApiResponse = await deliveries(
        ws.token,
        successfulEvent.id,
        `limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(page.status, 200, page.text);
      walked.push(...page.body.data.map((d: { id: string }) => d.id));
      lastPage = page;
      cursor = page.body.next_cursor;
      if (cursor === null) break;
    }
    assert.deepEqual(walked, full);
    assert.equal(lastPage?.body.has_more, false);
    assertProblem(await deliveries(ws.token, successfulEvent.id, 'limit=0'), 400, 'validation_failed');
  });

  it('resend to a named endpoint: 202 with one pending resend delivery, which the relay sends with the same webhook-id', async () => {
    const res = await resend(ws.token, successfulEvent.id, { endpoint_id: successOnly.id });
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(Object.keys(res.body), ['data']);
    assert.equal(res.body.data.length, 1);
    const [d] = res.body.data;
    assert.deepEqual(Object.keys(d).sort(), DELIVERY_FIELDS);
    assert.match(d.id, UUID);
    assert.equal(d.event_id, successfulEvent.id);
    assert.equal(d.endpoint_id, successOnly.id);
    assert.equal(d.kind, 'resend');
    assert.equal(d.status, 'pending');
    assert.deepEqual(d.attempts, []);

    const sent = await waitFor(
      'the resend delivery to get an attempt',
      async () => {
        const list = await deliveries(ws.token, successfulEvent.id, 'limit=100');
        const found = list.body.data.find((x: { id: string }) => x.id === d.id);
        return found && found.status !== 'pending' ? found : undefined;
      },
      WAIT_MS,
    );
    assert.equal(sent.kind, 'resend');
    assert.equal(sent.status, 'succeeded');
    assert.equal(sent.attempts.length, 1);
    assert.equal(sent.attempts[0].succeeded, true);
    assert.equal(sent.attempts[0].status_code, 200);

    const copies = received.filter(
      (r) => r.path === receiver.path + pathSuccess && r.headers['webhook-id'] === successfulEvent.id,
    );
    assert.equal(copies.length, 2, 'the original delivery and the resend');
    assert.deepEqual(JSON.parse((copies[1] as ReceivedRequest).body), successfulEvent);
    new Webhook(successOnly.secret).verify(
      (copies[1] as ReceivedRequest).body,
      (copies[1] as ReceivedRequest).headers as Record<string, string>,
    );
  });

  it('resend without an endpoint: 202 to every enabled subscribed endpoint (no body, an empty body or {})', async () => {
    for (const send of [
      () => resend(ws.token, successfulEvent.id),
      () =>
        request(t, 'POST', `/v1/events/${successfulEvent.id}/resend`, {
          token: ws.token,
          rawBody: '',
          headers: { 'content-type': 'application/json' },
        }),
      () => resend(ws.token, successfulEvent.id, {}),
    ]) {
      const res = await send();
      assert.equal(res.status, 202, res.text);
      assert.deepEqual(
        res.body.data.map((d: { endpoint_id: string }) => d.endpoint_id).sort(),
        [all.id, successOnly.id].sort(),
      );
      assert.ok(
        res.body.data.every(
          (d: { kind: string; status: string; event_id: string }) =>
            d.kind === 'resend' && d.status === 'pending' && d.event_id === successfulEvent.id,
        ),
      );
    }
    const pending = await resend(ws.token, pendingEvent.id);
    assert.equal(pending.status, 202, pending.text);
    assert.deepEqual(
      pending.body.data.map((d: { endpoint_id: string }) => d.endpoint_id),
      [all.id],
      'only endpoints subscribed to the type',
    );

    await waitFor(
      'every resend sent',
      async () => {
        const list = await deliveries(ws.token, successfulEvent.id, 'limit=100');
        const resends = list.body.data.filter((d: { kind: string }) => d.kind === 'resend');
        return resends.length === 7 &&
          resends.every(
            (d: { status: string; attempts: unknown[] }) => d.status === 'succeeded' && d.attempts.length === 1,
          )
          ? true
          : undefined;
      },
      WAIT_MS,
    );
    assert.ok(
      !received.some((r) => r.path === receiver.path + pathRefunds),
      'the refund-only endpoint never received a collection event',
    );
  });

  it('resend: 400 for bad bodies, 404 for a deleted or unknown endpoint', async () => {
    assertProblem(await resend(ws.token, successfulEvent.id, { endpoint_id: 'nope' }), 400, 'validation_failed');
    assertProblem(await resend(ws.token, successfulEvent.id, { endpoints: [all.id] }), 400, 'validation_failed');
    assertProblem(await resend(ws.token, successfulEvent.id, { endpoint_id: randomUUID() }), 404, 'not_found');
    const gone = await newEndpoint(ws.token, { url: `${receiverBase}/resend/deleted` });
    assert.equal((await deleteEndpoint(ws.token, gone.id)).status, 204);
    assertProblem(await resend(ws.token, successfulEvent.id, { endpoint_id: gone.id }), 404, 'not_found');
  });

  it('resend: 409 webhook_endpoint_disabled for a disabled endpoint, 409 no_webhook_endpoints when none subscribed is enabled', async () => {
    assert.equal((await patchEndpoint(ws.token, successOnly.id, { status: 'disabled' })).status, 200);
    const before = (await deliveries(ws.token, successfulEvent.id, 'limit=100')).body.data.length;
    assertProblem(
      await resend(ws.token, successfulEvent.id, { endpoint_id: successOnly.id }),
      409,
      'webhook_endpoint_disabled',
    );
    // Without a name only the enabled subscriber is sent to.
    const toEnabled = await resend(ws.token, successfulEvent.id);
    assert.equal(toEnabled.status, 202, toEnabled.text);
    assert.deepEqual(
      toEnabled.body.data.map((d: { endpoint_id: string }) => d.endpoint_id),
      [all.id],
    );

    assert.equal((await patchEndpoint(ws.token, all.id, { status: 'disabled' })).status, 200);
    assertProblem(await resend(ws.token, pendingEvent.id), 409, 'no_webhook_endpoints');
    assertProblem(await resend(ws.token, successfulEvent.id), 409, 'no_webhook_endpoints');
    const after = (await deliveries(ws.token, successfulEvent.id, 'limit=100')).body.data.length;
    assert.equal(after, before + 1, 'the refused resends queued nothing');
    // refundsOnly is enabled but does not subscribe; it can still be named explicitly.
    const named = await resend(ws.token, pendingEvent.id, { endpoint_id: refundsOnly.id });
    assert.equal(named.status, 202, named.text);

    // Enabled again: resending works again.
    assert.equal((await patchEndpoint(ws.token, successOnly.id, { status: 'enabled' })).status, 200);
    const back = await resend(ws.token, successfulEvent.id, { endpoint_id: successOnly.id });
    assert.equal(back.status, 202, back.text);
  });
});
