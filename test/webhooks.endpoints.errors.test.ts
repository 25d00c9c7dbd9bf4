// Webhook endpoints and events, the errors: unusable URLs, bad bodies and queries are 400 naming the
// field, and nothing is created or changed.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { assertProblem, createCollection, createWorkspace } from './helpers/harness.js';
import {
  t,
  createEndpoint,
  getEndpoint,
  listEndpoints,
  patchEndpoint,
  deleteEndpoint,
  listEvents,
  resend,
  allEndpoints,
  newEndpoint,
  withoutSecret,
  hasFieldError,
  startWebhooksApp,
} from './helpers/webhooks-api.js';

startWebhooksApp();

describe('endpoints: validation', () => {
  let ws: { id: string; token: string };
  let existing: any;
  before(async () => {
    ws = await createWorkspace(t, 'webhooks-validation');
    existing = await newEndpoint(ws.token, { url: 'https://example.com/ok', description: 'kept' });
  });

  it('unusable URLs are 400 invalid_webhook_url with a url field error, and nothing is created', async () => {
    const before = await allEndpoints(ws.token);
    for (const url of [
      'not a url',
      'example.com/hooks',
      'ftp://example.com/hooks',
      'javascript:alert(1)',
      'https://user:pass@example.com/hooks',
      'https://user@example.com/hooks',
      'https://example.com/hooks#fragment',
    ]) {
      const res = await createEndpoint(ws.token, { url });
      assertProblem(res, 400, 'invalid_webhook_url');
      assert.ok(hasFieldError(res, 'url'), `${url}: ${res.text}`);
    }
    assert.deepEqual(await allEndpoints(ws.token), before);
  });

  it('a URL over 2048 characters or an empty one is 400 invalid_webhook_url with a url field error, and nothing is created', async () => {
    const before = await allEndpoints(ws.token);
    const long = `https://example.com/${'a'.repeat(2049 - 'https://example.com/'.length)}`;
    assert.equal(long.length, 2049);
    for (const url of [long, '']) {
      const res = await createEndpoint(ws.token, { url });
      assertProblem(res, 400, 'invalid_webhook_url');
      assert.ok(hasFieldError(res, 'url'), res.text);
    }
    // Exactly 2048 characters is still accepted.
    const ok = await createEndpoint(ws.token, { url: long.slice(0, 2048) });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.url.length, 2048);
    assert.equal((await deleteEndpoint(ws.token, ok.body.id)).status, 204);
    assert.deepEqual(await allEndpoints(ws.token), before);
  });

  it('bad bodies are 400 validation_failed naming the field, and nothing is created', async () => {
    const before = await allEndpoints(ws.token);
    const url = 'https://example.com/hooks';
    const cases: [unknown, string][] = [
      [{ url, enabled_events: ['collection.nope'] }, 'enabled_events.0'],
      [{ url, enabled_events: ['collection.successful', 'payout.sent'] }, 'enabled_events.1'],
      [{ url, enabled_events: ['collection.successful', 'collection.successful'] }, 'enabled_events'],
      [{ url, enabled_events: ['*', '*'] }, 'enabled_events'],
      [{ url, enabled_events: [] }, 'enabled_events'],
      [{ url, enabled_events: 'collection.successful' }, 'enabled_events'],
      [{ url, secret: 'whsec_mine' }, 'secret'],
      [{ url, events: ['*'] }, 'events'],
      [{ url, description: 'x'.repeat(501) }, 'description'],
      [{ url, description: 7 }, 'description'],
      [{ url: 42 }, 'url'],
      [{ enabled_events: ['*'] }, 'url'],
    ];
    for (const [body, field] of cases) {
      const res = await createEndpoint(ws.token, body);
      assertProblem(res, 400, 'validation_failed');
      assert.ok(
        hasFieldError(res, field),
        `${JSON.stringify(body).slice(0, 80)} → expected a ${field} error: ${res.text}`,
      );
    }
    assert.deepEqual(await allEndpoints(ws.token), before);
  });

  it('PATCH: {} , unknown fields, bad values and bad URLs are 400 and change nothing', async () => {
    const empty = await patchEndpoint(ws.token, existing.id, {});
    assertProblem(empty, 400, 'validation_failed');
    assert.ok(Array.isArray(empty.body.errors) && empty.body.errors.length > 0, empty.text);

    const cases: [unknown, string, string][] = [
      [{ secret: 'whsec_x' }, 'validation_failed', 'secret'],
      [{ status: 'paused' }, 'validation_failed', 'status'],
      [{ status: null }, 'validation_failed', 'status'],
      [{ enabled_events: [] }, 'validation_failed', 'enabled_events'],
      [{ enabled_events: ['collection.nope'] }, 'validation_failed', 'enabled_events.0'],
      [{ enabled_events: ['*', '*'] }, 'validation_failed', 'enabled_events'],
      [{ url: null }, 'validation_failed', 'url'],
      [{ url: 'ftp://example.com/x' }, 'invalid_webhook_url', 'url'],
      [{ url: 'https://a:b@example.com/x' }, 'invalid_webhook_url', 'url'],
      [{ url: 'https://example.com/x#y' }, 'invalid_webhook_url', 'url'],
    ];
    for (const [body, code, field] of cases) {
      const res = await patchEndpoint(ws.token, existing.id, body);
      assertProblem(res, 400, code);
      assert.ok(hasFieldError(res, field), `${JSON.stringify(body)} → expected a ${field} error: ${res.text}`);
    }
    assert.deepEqual(
      (await getEndpoint(ws.token, existing.id)).body,
      withoutSecret(existing),
      'refused changes leave the endpoint as it was',
    );
  });

  it('list query parameters are checked: limit 1..100, a tampered cursor is 400 invalid_cursor', async () => {
    assertProblem(await listEndpoints(ws.token, 'limit=0'), 400, 'validation_failed');
    assertProblem(await listEndpoints(ws.token, 'limit=101'), 400, 'validation_failed');
    assertProblem(await listEndpoints(ws.token, 'colour=blue'), 400, 'validation_failed');
    await newEndpoint(ws.token, { url: 'https://example.com/second' });
    const page = await listEndpoints(ws.token, 'limit=1');
    assert.equal(page.status, 200, page.text);
    const cursor: string = page.body.next_cursor;
    assert.equal(typeof cursor, 'string');
    const tampered = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BB' : 'AA');
    assertProblem(await listEndpoints(ws.token, `cursor=${encodeURIComponent(tampered)}`), 400, 'invalid_cursor');
    assertProblem(await listEndpoints(ws.token, 'cursor=garbage'), 400, 'invalid_cursor');
  });
});

describe('ids in bodies and queries', () => {
  it('a urn:uuid: id is a 400 naming the field, not a server error', async () => {
    const res = await listEvents(t.demoToken, 'object_id=urn:uuid:00000000-0000-4000-8000-000000000000');
    assertProblem(res, 400, 'validation_failed');
    assert.ok(hasFieldError(res, 'object_id'), res.text);
    const collection = (await createCollection(t, t.demoToken)).body;
    const event = (await listEvents(t.demoToken, `object_id=${collection.collection_id}`)).body.data[0];
    const resent = await resend(t.demoToken, event.id, {
      endpoint_id: 'urn:uuid:00000000-0000-4000-8000-000000000000',
    });
    assertProblem(resent, 400, 'validation_failed');
    assert.ok(hasFieldError(resent, 'endpoint_id'), resent.text);
  });
});
