// Webhook endpoints, the happy paths: create (the secret shown once), list and page, read, change,
// enable and disable, delete and rotate the secret, through HTTP with the workers running (test/helpers/webhooks-api.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { assertProblem, createWorkspace, newKey, type ApiResponse } from './helpers/harness.js';
import {
  ISO_MS,
  UUID,
  SECRET,
  ENDPOINT_FIELDS,
  t,
  createEndpoint,
  getEndpoint,
  listEndpoints,
  patchEndpoint,
  deleteEndpoint,
  rotate,
  getEvent,
  deliveries,
  resend,
  allEndpoints,
  newEndpoint,
  withoutSecret,
  startWebhooksApp,
} from './helpers/webhooks-api.js';

startWebhooksApp();

describe('endpoints: create, list, read, change, delete', () => {
  let ws: { id: string; token: string };
  before(async () => {
    ws = await createWorkspace(t, 'webhooks-crud');
  });

  it('create: 201 with every field, the secret once, Location; defaults to every event type and no description', async () => {
    const before = Date.now();
    const res = await createEndpoint(ws.token, {
      url: 'https://example.com/hooks?source=payments',
      enabled_events: ['collection.successful', 'refund.successful'],
      description: 'primary receiver',
    });
    assert.equal(res.status, 201, res.text);
    const e = res.body;
    assert.deepEqual(Object.keys(e).sort(), [...ENDPOINT_FIELDS, 'secret'].sort());
    assert.match(e.id, UUID);
    assert.equal(e.url, 'https://example.com/hooks?source=payments');
    assert.deepEqual(e.enabled_events, ['collection.successful', 'refund.successful']);
    assert.equal(e.description, 'primary receiver');
    assert.equal(e.status, 'enabled');
    assert.equal(e.disabled_reason, null);
    assert.equal(e.previous_secret_expires_at, null);
    assert.match(e.secret, SECRET);
    assert.match(e.created_at, ISO_MS);
    assert.equal(e.updated_at, e.created_at);
    assert.ok(Math.abs(Date.parse(e.created_at) - before) < 60_000);
    assert.equal(res.headers.get('location'), `/v1/webhooks/endpoints/${e.id}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(res.headers.get('idempotent-replayed'), null);

    const plain = await newEndpoint(ws.token, { url: 'http://127.0.0.1:9/plain' });
    assert.deepEqual(plain.enabled_events, ['*']);
    assert.equal(plain.description, null);
    assert.match(plain.secret, SECRET);
    assert.notEqual(plain.secret, e.secret, 'every endpoint has a secret of its own');
  });

  it('GET and the list show exactly the created endpoint without its secret, newest first', async () => {
    const first = await newEndpoint(ws.token, { url: 'https://example.com/first', description: 'one' });
    const second = await newEndpoint(ws.token, {
      url: 'https://example.com/second',
      enabled_events: ['collection.failed'],
    });

    const got = await getEndpoint(ws.token, first.id);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, withoutSecret(first));
    assert.ok(!got.text.includes('whsec_'), 'GET shows no secret');

    const list = await listEndpoints(ws.token);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(Object.keys(list.body).sort(), ['data', 'has_more', 'next_cursor']);
    assert.ok(!list.text.includes('whsec_'), 'the list shows no secret');
    const ids = list.body.data.map((e: { id: string }) => e.id);
    assert.ok(ids.indexOf(second.id) < ids.indexOf(first.id) && ids.indexOf(second.id) >= 0, 'newest first');
    assert.deepEqual(list.body.data[ids.indexOf(second.id)], withoutSecret(second));
    for (const e of list.body.data) assert.deepEqual(Object.keys(e).sort(), ENDPOINT_FIELDS);
    assert.equal(list.body.has_more, false);
    assert.equal(list.body.next_cursor, null);
  });

  it('the list pages with limit and cursor, without repeats', async () => {
    const all = (await allEndpoints(ws.token)).map((e) => e.id);
    assert.ok(all.length >= 3);
    const walked: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 50; i++) {
      const page: ApiResponse = await listEndpoints(
        ws.token,
        `limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(page.status, 200, page.text);
      assert.equal(page.body.data.length, 1);
      walked.push(page.body.data[0].id);
      cursor = page.body.next_cursor;
      assert.equal(page.body.has_more, cursor !== null);
      if (!page.body.has_more) break;
    }
    assert.deepEqual(walked, all);
  });

  it('PATCH changes url, events and description; description null removes it; GET agrees', async () => {
    const e = await newEndpoint(ws.token, { url: 'https://example.com/old', description: 'old note' });
    await new Promise((r) => setTimeout(r, 5));
    const res = await patchEndpoint(ws.token, e.id, {
      url: 'https://example.org/new',
      enabled_events: ['refund.failed', 'collection.expired'],
      description: 'new note',
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ENDPOINT_FIELDS);
    assert.ok(!res.text.includes('whsec_'));
    assert.equal(res.body.id, e.id);
    assert.equal(res.body.url, 'https://example.org/new');
    assert.deepEqual(res.body.enabled_events, ['refund.failed', 'collection.expired']);
    assert.equal(res.body.description, 'new note');
    assert.equal(res.body.status, 'enabled');
    assert.equal(res.body.created_at, e.created_at);
    assert.ok(Date.parse(res.body.updated_at) > Date.parse(e.updated_at), 'updated_at moves');
    assert.deepEqual((await getEndpoint(ws.token, e.id)).body, res.body);

    const cleared = await patchEndpoint(ws.token, e.id, { description: null });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.description, null);
    assert.equal(cleared.body.url, 'https://example.org/new', 'fields not named stay as they were');
    assert.deepEqual(cleared.body.enabled_events, ['refund.failed', 'collection.expired']);
    assert.equal((await getEndpoint(ws.token, e.id)).body.description, null);
  });

  it('PATCH status: disabled sets disabled_by_user, enabled clears it; the list filters by status', async () => {
    const e = await newEndpoint(ws.token, { url: 'https://example.com/toggle' });
    const off = await patchEndpoint(ws.token, e.id, { status: 'disabled' });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.status, 'disabled');
    assert.equal(off.body.disabled_reason, 'disabled_by_user');
    assert.deepEqual((await getEndpoint(ws.token, e.id)).body, off.body);

    const disabled = await listEndpoints(ws.token, 'status=disabled&limit=100');
    assert.equal(disabled.status, 200, disabled.text);
    assert.deepEqual(
      disabled.body.data.map((x: { id: string }) => x.id),
      [e.id],
    );
    const enabled = await listEndpoints(ws.token, 'status=enabled&limit=100');
    assert.ok(enabled.body.data.length > 0);
    assert.ok(enabled.body.data.every((x: { id: string; status: string }) => x.id !== e.id && x.status === 'enabled'));
    assertProblem(await listEndpoints(ws.token, 'status=paused'), 400, 'validation_failed');

    const on = await patchEndpoint(ws.token, e.id, { status: 'enabled' });
    assert.equal(on.status, 200, on.text);
    assert.equal(on.body.status, 'enabled');
    assert.equal(on.body.disabled_reason, null);
    assert.deepEqual((await listEndpoints(ws.token, 'status=disabled')).body.data, []);
  });

  it('DELETE: 204 with no body, then GET, PATCH, rotate and DELETE are 404 and the list leaves it out', async () => {
    const e = await newEndpoint(ws.token, { url: 'https://example.com/doomed' });
    const del = await deleteEndpoint(ws.token, e.id);
    assert.equal(del.status, 204, del.text);
    assert.equal(del.text, '');
    assertProblem(await getEndpoint(ws.token, e.id), 404, 'not_found');
    assertProblem(await deleteEndpoint(ws.token, e.id), 404, 'not_found');
    assertProblem(await patchEndpoint(ws.token, e.id, { description: 'x' }), 404, 'not_found');
    assertProblem(await rotate(ws.token, e.id), 404, 'not_found');
    assert.ok(!(await allEndpoints(ws.token)).some((x) => x.id === e.id));
  });

  it('rotate-secret: 200 with a new secret and previous_secret_expires_at 24 h ahead; GET and list show the date, never a secret', async () => {
    const e = await newEndpoint(ws.token, { url: 'https://example.com/rotating' });
    const before = Date.now();
    const res = await rotate(ws.token, e.id);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), [...ENDPOINT_FIELDS, 'secret'].sort());
    assert.equal(res.body.id, e.id);
    assert.match(res.body.secret, SECRET);
    assert.notEqual(res.body.secret, e.secret);
    assert.match(res.body.previous_secret_expires_at, ISO_MS);
    const ahead = Date.parse(res.body.previous_secret_expires_at) - before;
    assert.ok(ahead > 24 * 3600_000 - 60_000 && ahead < 24 * 3600_000 + 60_000, `expires ${ahead} ms ahead`);
    assert.equal(res.body.url, e.url);
    assert.equal(res.body.status, 'enabled');

    const got = await getEndpoint(ws.token, e.id);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.previous_secret_expires_at, res.body.previous_secret_expires_at);
    assert.ok(!got.text.includes('whsec_'));
    const list = await listEndpoints(ws.token, 'limit=100');
    assert.ok(!list.text.includes('whsec_'));
    assert.equal(
      list.body.data.find((x: { id: string }) => x.id === e.id).previous_secret_expires_at,
      res.body.previous_secret_expires_at,
    );

    // Under an Idempotency-Key a retried rotation answers the same secret and rotates once.
    const key = newKey();
    const r1 = await rotate(ws.token, e.id, key);
    const r2 = await rotate(ws.token, e.id, key);
    assert.equal(r1.status, 200, r1.text);
    assert.equal(r2.status, 200, r2.text);
    assert.equal(r2.text, r1.text);
    assert.equal(r2.headers.get('idempotent-replayed'), 'true');
    assert.notEqual(r1.body.secret, res.body.secret);
    // Rotated once: the endpoint is as the first rotation left it (a second rotation would move updated_at and
    // previous_secret_expires_at, which the replayed answer alone cannot show).
    assert.deepEqual((await getEndpoint(ws.token, e.id)).body, withoutSecret(r1.body));
  });

  it('an id that is not a UUID is 404 on every route that takes one', async () => {
    for (const id of ['nope', '123', 'not-a-uuid-at-all']) {
      assertProblem(await getEndpoint(ws.token, id), 404, 'not_found');
      assertProblem(await patchEndpoint(ws.token, id, { description: 'x' }), 404, 'not_found');
      assertProblem(await deleteEndpoint(ws.token, id), 404, 'not_found');
      assertProblem(await rotate(ws.token, id), 404, 'not_found');
      assertProblem(await getEvent(ws.token, id), 404, 'not_found');
      assertProblem(await deliveries(ws.token, id), 404, 'not_found');
      assertProblem(await resend(ws.token, id), 404, 'not_found');
    }
    const missing = randomUUID();
    assertProblem(await getEndpoint(ws.token, missing), 404, 'not_found');
    assertProblem(await getEvent(ws.token, missing), 404, 'not_found');
    assertProblem(await deliveries(ws.token, missing), 404, 'not_found');
    assertProblem(await resend(ws.token, missing), 404, 'not_found');
  });
});
