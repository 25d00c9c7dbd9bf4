// Webhook endpoints under limits, retries and races: at most 16 endpoints per workspace (20 concurrent
// creations leave 16), an idempotent creation made once, and disabling or deleting an endpoint while the relay fans
// out an event to it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertProblem, createCollection, createWorkspace, newKey } from './helpers/harness.js';
import {
  t,
  receiverBase,
  createEndpoint,
  patchEndpoint,
  deleteEndpoint,
  rotate,
  listEvents,
  allEndpoints,
  newEndpoint,
  startWebhooksApp,
} from './helpers/webhooks-api.js';

startWebhooksApp();

describe('at most 16 endpoints per workspace', () => {
  it('16 are accepted, the 17th is 409 webhook_endpoint_limit_reached (disabled ones count); after a delete one more fits', async () => {
    const ws = await createWorkspace(t, 'webhooks-limit');
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) ids.push((await newEndpoint(ws.token, { url: `https://example.com/hook/${i}` })).id);
    assert.equal((await allEndpoints(ws.token)).length, 16);
    const over = await createEndpoint(ws.token, { url: 'https://example.com/hook/17' });
    assertProblem(over, 409, 'webhook_endpoint_limit_reached');
    const idempotentOver = await createEndpoint(ws.token, { url: 'https://example.com/hook/17' }, newKey());
    assertProblem(idempotentOver, 409, 'webhook_endpoint_limit_reached');

    assert.equal((await patchEndpoint(ws.token, ids[0] as string, { status: 'disabled' })).status, 200);
    assertProblem(
      await createEndpoint(ws.token, { url: 'https://example.com/hook/17' }),
      409,
      'webhook_endpoint_limit_reached',
    );

    assert.equal((await deleteEndpoint(ws.token, ids[3] as string)).status, 204);
    const again = await createEndpoint(ws.token, { url: 'https://example.com/hook/again' });
    assert.equal(again.status, 201, again.text);
    assertProblem(
      await createEndpoint(ws.token, { url: 'https://example.com/hook/18' }),
      409,
      'webhook_endpoint_limit_reached',
    );
    assert.equal((await allEndpoints(ws.token)).length, 16);

    // The limit is per workspace: another workspace is unaffected.
    const other = await createWorkspace(t, 'webhooks-limit-other');
    assert.equal((await createEndpoint(other.token, { url: 'https://example.com/hook/x' })).status, 201);
  });

  it('20 concurrent creations in a fresh workspace leave exactly 16', async () => {
    const ws = await createWorkspace(t, 'webhooks-limit-race');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => createEndpoint(ws.token, { url: `https://example.com/race/${i}` })),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(
      statuses,
      [...Array(16).fill(201), ...Array(4).fill(409)],
      results.map((r) => `${r.status} ${r.text.slice(0, 80)}`).join('\n'),
    );
    for (const r of results.filter((x) => x.status === 409)) assertProblem(r, 409, 'webhook_endpoint_limit_reached');
    const listed = await allEndpoints(ws.token);
    assert.equal(listed.length, 16);
    assert.deepEqual(
      new Set(listed.map((e) => e.id)),
      new Set(results.filter((r) => r.status === 201).map((r) => r.body.id)),
    );
  });
});

// 6. Idempotency

describe('idempotent creation', () => {
  it('same key and body: the same response (same id and secret) with Idempotent-Replayed, one endpoint; another body: 422', async () => {
    const ws = await createWorkspace(t, 'webhooks-idem');
    const key = newKey();
    const body = { url: 'https://example.com/idem', enabled_events: ['collection.successful'], description: 'once' };
    const first = await createEndpoint(ws.token, body, key);
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null);

    // Same body with its keys in another order: the same fingerprint.
    const second = await createEndpoint(
      ws.token,
      { description: 'once', enabled_events: ['collection.successful'], url: 'https://example.com/idem' },
      key,
    );
    assert.equal(second.status, 201, second.text);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.text, first.text, 'byte-identical body');
    assert.equal(second.body.id, first.body.id);
    assert.equal(second.body.secret, first.body.secret);
    assert.equal(second.headers.get('location'), first.headers.get('location'));

    const reused = await createEndpoint(ws.token, { ...body, description: 'twice' }, key);
    assertProblem(reused, 422, 'idempotency_key_reused');
    // Another route with the same key is also a reuse.
    assertProblem(await rotate(ws.token, first.body.id, key), 422, 'idempotency_key_reused');

    assert.deepEqual(
      (await allEndpoints(ws.token)).map((e) => e.id),
      [first.body.id],
    );

    // A request refused by validation stores nothing: the key is still free for a good request.
    const key2 = newKey();
    assertProblem(await createEndpoint(ws.token, { url: 'ftp://example.com/x' }, key2), 400, 'invalid_webhook_url');
    const later = await createEndpoint(ws.token, { url: 'https://example.com/later' }, key2);
    assert.equal(later.status, 201, later.text);
    assert.equal(later.headers.get('idempotent-replayed'), null);
    assertProblem(await createEndpoint(ws.token, body, 'bad key with spaces'), 422, 'idempotency_key_invalid');
  });
});

describe('disabling while the relay fans out', () => {
  // The relay reads an event's endpoints FOR SHARE while it inserts their deliveries; disabling or deleting
  // locks the endpoint first and only then fails its pending deliveries. So a delivery the relay is still
  // committing when the endpoint is disabled is failed too, never sent to a disabled endpoint.
  for (const how of ['PATCH status disabled', 'DELETE'] as const) {
    it(`${how} waits for a fan-out in progress and fails the delivery it made`, async () => {
      const ws = await createWorkspace(t, `race-${how.length}`);
      const endpoint = (await createEndpoint(ws.token, { url: `${receiverBase}/race` })).body;
      const event = (await createCollection(t, ws.token)).body;
      const eventId = (await listEvents(ws.token, `object_id=${event.collection_id}&type=collection.created`)).body
        .data[0].id as string;
      const relay = await t.db.connect();
      try {
        await relay.query('BEGIN');
        // What the fan-out does: share-lock the enabled endpoints, then insert a pending delivery.
        const shared = await relay.query(
          "SELECT id FROM webhook_endpoints WHERE id = $1 AND status = 'enabled' FOR SHARE",
          [endpoint.id],
        );
        assert.equal(shared.rowCount, 1);
        const change =
          how === 'DELETE'
            ? deleteEndpoint(ws.token, endpoint.id)
            : patchEndpoint(ws.token, endpoint.id, { status: 'disabled' });
        let settled = false;
        void change.then(() => (settled = true));
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(settled, false, 'the change waits for the fan-out to commit');
        await relay.query(
          `INSERT INTO webhook_deliveries (id, workspace_id, event_id, endpoint_id, kind, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
           VALUES (gen_random_uuid(), $1, $2, $3, 'resend', 'pending', 0, 1, now() + interval '1 hour', now(), now())`,
          [ws.id, eventId, endpoint.id],
        );
        await relay.query('COMMIT');
        assert.ok([200, 204].includes((await change).status));
      } finally {
        relay.release();
      }
      const { rows } = await t.db.query<{ status: string }>(
        'SELECT status FROM webhook_deliveries WHERE endpoint_id = $1',
        [endpoint.id],
      );
      assert.ok(rows.length >= 1);
      assert.deepEqual(
        rows.map((r) => r.status).filter((s) => s === 'pending'),
        [],
        'no delivery is left pending for a disabled endpoint',
      );
    });
  }
});
