// Signing secrets end to end: after a rotation every delivery is signed with the old and the new secret,
// and rotating often keeps only the two newest earlier secrets signing next to the current one.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createCollection, createWorkspace, waitFor } from './helpers/harness.js';
import {
  WAIT_MS,
  t,
  receiverBase,
  received,
  receiver,
  rotate,
  getEvent,
  newEndpoint,
  successfulCollection,
  startWebhooksApp,
} from './helpers/webhooks-api.js';

startWebhooksApp();

describe('secret rotation end to end', () => {
  it('after a rotation every delivery carries two v1 signatures and verifies with the old and the new secret', async () => {
    const ws = await createWorkspace(t, 'webhooks-rotation');
    const path = `/rotation/${randomUUID()}`;
    const created = await newEndpoint(ws.token, { url: `${receiverBase}${path}` });
    const oldSecret: string = created.secret;
    const rotated = await rotate(ws.token, created.id);
    assert.equal(rotated.status, 200, rotated.text);
    const newSecret: string = rotated.body.secret;
    assert.notEqual(newSecret, oldSecret);

    const collectionId = await successfulCollection(ws.token);
    const mine = await waitFor(
      'the four lifecycle events delivered',
      async () => {
        const got = received.filter((r) => r.path === receiver.path + path);
        return got.length >= 4 ? got : undefined;
      },
      WAIT_MS,
    );
    const types = mine.map((r) => JSON.parse(r.body).type).sort();
    assert.deepEqual(types, [
      'collection.created',
      'collection.pending',
      'collection.processing',
      'collection.successful',
    ]);

    const stranger = new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    for (const r of mine) {
      const headers = r.headers as Record<string, string>;
      const signatures = (headers['webhook-signature'] ?? '').split(' ');
      assert.equal(signatures.length, 2, headers['webhook-signature']);
      for (const s of signatures) assert.match(s, /^v1,[A-Za-z0-9+/]{43}=$/);
      assert.notEqual(signatures[0], signatures[1]);
      const viaOld = new Webhook(oldSecret).verify(r.body, headers);
      const viaNew = new Webhook(newSecret).verify(r.body, headers);
      assert.deepEqual(viaOld, viaNew);
      assert.throws(() => stranger.verify(r.body, headers), /signature/i, 'a third secret must not verify');
      // A tampered body fails with both secrets.
      assert.throws(() => new Webhook(newSecret).verify(r.body.replace('collection.', 'collectioN.'), headers));

      const event = JSON.parse(r.body);
      assert.equal(headers['webhook-id'], event.id);
      assert.equal(headers['content-type'], 'application/json');
      assert.equal(event.data.collection_id, collectionId);
      const stored = await getEvent(ws.token, event.id);
      assert.equal(stored.status, 200, stored.text);
      assert.deepEqual(stored.body, event, 'the delivery carries the event exactly as GET /v1/events/{id} shows it');
    }
  });
});

describe('rotating often', () => {
  it('keeps only the two newest earlier secrets signing, next to the current one', async () => {
    const ws = await createWorkspace(t, 'webhooks-rotate-often');
    const path = `/rotation/${randomUUID()}`;
    const created = await newEndpoint(ws.token, {
      url: `${receiverBase}${path}`,
      enabled_events: ['collection.created'],
    });
    const secrets: string[] = [created.secret];
    for (let i = 0; i < 4; i++) {
      const rotated = await rotate(ws.token, created.id);
      assert.equal(rotated.status, 200, rotated.text);
      secrets.push(rotated.body.secret);
    }
    await createCollection(t, ws.token);
    const [delivery] = await waitFor(
      'the delivery',
      async () => {
        const got = received.filter((r) => r.path === receiver.path + path);
        return got.length >= 1 ? got : undefined;
      },
      WAIT_MS,
    );
    const headers = delivery!.headers as Record<string, string>;
    assert.equal((headers['webhook-signature'] ?? '').split(' ').length, 3, headers['webhook-signature']);
    for (const secret of secrets.slice(2)) new Webhook(secret).verify(delivery!.body, headers);
    for (const secret of secrets.slice(0, 2))
      assert.throws(() => new Webhook(secret).verify(delivery!.body, headers), /signature/i);
  });
});
