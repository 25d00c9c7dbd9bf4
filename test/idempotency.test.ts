// The idempotency engine, exercised through creating a collection (POST /v1/collections/{market}/rails/{rail}).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newKey, request, startTestApp, validCollection, type TestApp } from './helpers/harness.js';
import { canonicalJson, fingerprint } from '../src/platform/idempotency.js';
import { statementsSent } from './helpers/statements.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

const PATH = '/v1/collections/KE/rails/mpesa';
const create = (key: string, body: unknown = validCollection(), token = t.demoToken, path = PATH) =>
  request(t, 'POST', path, { token, body, idempotencyKey: key });

const countCollections = async (reference: string): Promise<number> =>
  (await t.db.query('SELECT count(*)::int AS n FROM collections WHERE reference = $1', [reference])).rows[0].n;

/** The collection.created events of the collections with this reference. */
const countCreatedEvents = async (reference: string): Promise<number> =>
  (
    await t.db.query(
      `SELECT count(*)::int AS n FROM events e JOIN collections c ON c.workspace_id = e.workspace_id AND c.id = e.object_id
       WHERE c.reference = $1 AND e.type = 'collection.created'`,
      [reference],
    )
  ).rows[0].n;

describe('idempotent replay', () => {
  it('a retry with the same key and body returns the stored response byte for byte, with Idempotent-Replayed: true', async () => {
    const key = newKey();
    const body = validCollection();
    const first = await create(key, body);
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const second = await create(key, body);
    assert.equal(second.status, 201);
    assert.equal(second.text, first.text);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.headers.get('location'), first.headers.get('location'));
    assert.notEqual(second.headers.get('x-request-id'), first.headers.get('x-request-id'));
    assert.equal(await countCollections(body.reference), 1);
  });

  it('the same body with its keys in another order is the same request', async () => {
    const key = newKey();
    const body = validCollection();
    const first = await create(key, body);
    const reordered = {
      metadata: body.metadata,
      customer: body.customer,
      reference: body.reference,
      currency: body.currency,
      amount: body.amount,
    };
    const second = await create(key, reordered);
    assert.equal(second.status, 201);
    assert.equal(second.text, first.text);
  });

  it('422 idempotency_key_reused when the same key comes with another body', async () => {
    const key = newKey();
    const body = validCollection();
    assert.equal((await create(key, body)).status, 201);
    const res = await create(key, { ...body, amount: body.amount + 1 });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'idempotency_key_reused');
    assert.equal(await countCollections(body.reference), 1);
  });

  it('422 idempotency_key_reused when the same key comes on another endpoint', async () => {
    const key = newKey();
    const body = validCollection();
    assert.equal((await create(key, body)).status, 201);
    const res = await create(key, body, t.demoToken, '/v1/collections/KE/rails/airtel_money');
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'idempotency_key_reused');
  });

  it('a request rejected by validation stores nothing: the corrected retry with the same key succeeds', async () => {
    const key = newKey();
    const bad = await create(key, validCollection({ amount: 1 }));
    assert.equal(bad.status, 422);
    const good = await create(key, validCollection());
    assert.equal(good.status, 201);
    assert.equal(good.headers.get('idempotent-replayed'), null);
  });
});

describe('concurrency', () => {
  it('keys and bodies with quotes, backslashes and SQL are stored and replayed exactly (the engine writes them as literals)', async () => {
    const key = `k'\\";SELECT/**/pg_sleep(5);--\\\\'${newKey()}`;
    const body = validCollection({
      metadata: { note: "it's a \\ back'slash \\' and ''quotes''; DROP TABLE collections; --", emoji: 'ñ€😀' },
    });
    const first = await create(key, body);
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(first.body.metadata, body.metadata);
    const stored = await t.db.query('SELECT key, response_body FROM idempotency_keys WHERE key = $1', [key]);
    assert.equal(stored.rows.length, 1);
    assert.equal(stored.rows[0].response_body, first.text);
    const again = await create(key, body);
    assert.equal(again.status, 201);
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    // Another key that differs only in its escaping is another key.
    const other = await create(key.replaceAll("'", "''"), body);
    assert.equal(other.status, 201);
    assert.notEqual(other.body.collection_id, first.body.collection_id);
    assert.equal(await countCollections(body.reference), 2);
  });

  it('50 concurrent requests with one key make exactly one collection; every answer is that 201 or a 409', async () => {
    const key = newKey();
    const body = validCollection();
    const responses = await Promise.all(Array.from({ length: 50 }, () => create(key, body)));
    const created = responses.filter((r) => r.status === 201);
    const inUse = responses.filter((r) => r.status === 409);
    assert.equal(created.length + inUse.length, 50, responses.map((r) => r.status).join(','));
    assert.ok(created.length >= 1);
    const ids = new Set(created.map((r) => r.body.collection_id));
    assert.equal(ids.size, 1);
    for (const r of created) assert.equal(r.text, created[0]?.text);
    for (const r of inUse) {
      assert.equal(r.body.code, 'idempotency_key_in_use');
      assert.equal(r.headers.get('retry-after'), '1');
    }
    assert.equal(await countCollections(body.reference), 1);
    const stored = await t.db.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [key]);
    assert.equal(stored.rows[0].n, 1);
    // Once the first has finished, a retry is the replay.
    const retry = await create(key, body);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
  });
});

describe('same-key races in the one-statement create', () => {
  it('20 requests at once with one key: one collection and one event; the others wait on the key and answer the replay', async () => {
    const key = newKey();
    const body = validCollection();
    const { result: responses, statements } = await statementsSent(t.db, () =>
      Promise.all(Array.from({ length: 20 }, () => create(key, body))),
    );
    assert.equal(await countCollections(body.reference), 1);
    assert.equal(await countCreatedEvents(body.reference), 1);
    const fresh = responses.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null);
    assert.equal(fresh.length, 1, responses.map((r) => r.status).join(','));
    const first = fresh[0];
    for (const r of responses) {
      if (r.status === 409) {
        assert.equal(r.body.code, 'idempotency_key_in_use');
        continue;
      }
      assert.equal(r.status, 201);
      assert.equal(r.text, first?.text, 'a byte-identical replay');
      assert.equal(r.headers.get('location'), first?.headers.get('location'));
    }
    // The mechanism: every other request's statement met the key's primary key and was undone whole (it waited there
    // while the first was uncommitted), then read the stored answer. No advisory lock, so no 409 for a key in flight.
    const failed = statements.filter((s) => s.error !== undefined);
    assert.ok(
      failed.every((s) => s.error?.code === '23505' && s.error.constraint === 'idempotency_keys_pkey'),
      JSON.stringify(failed.map((s) => s.error)),
    );
    assert.equal(failed.length, 19, 'each of the 19 others met the stored key');
    assert.equal(responses.filter((r) => r.status === 409).length, 0);
    assert.equal(statements.filter((s) => /pg_try_advisory/.test(s.text)).length, 0);
  });

  it('an outcome past retention, reused by 10 requests at once: one new collection, and the others replay it', async () => {
    const key = newKey();
    const body = validCollection();
    const old = await create(key, body);
    assert.equal(old.status, 201);
    await t.db.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = $1`, [key]);
    const responses = await Promise.all(Array.from({ length: 10 }, () => create(key, body)));
    const created = responses.filter((r) => r.status === 201);
    assert.ok(
      responses.every((r) => r.status === 201 || (r.status === 409 && r.body.code === 'idempotency_key_in_use')),
      responses.map((r) => r.status).join(','),
    );
    const fresh = created.filter((r) => r.headers.get('idempotent-replayed') === null);
    assert.equal(fresh.length, 1, 'one of them made the new collection');
    assert.notEqual(fresh[0]?.body.collection_id, old.body.collection_id);
    for (const r of created) assert.equal(r.text, fresh[0]?.text);
    assert.equal(await countCollections(body.reference), 2, 'the old one and one new one');
    const stored = await t.db.query(
      'SELECT response_body, expires_at > now() AS live FROM idempotency_keys WHERE key = $1',
      [key],
    );
    assert.deepEqual(stored.rows, [{ response_body: fresh[0]?.text, live: true }]);
  });

  it('two requests at once with one key and different bodies: one 201, the other 422 idempotency_key_reused', async () => {
    const key = newKey();
    const a = validCollection();
    const b = validCollection();
    const responses = await Promise.all([create(key, a), create(key, b)]);
    const statuses = responses.map((r) => r.status).sort();
    assert.ok(
      statuses[0] === 201 && (statuses[1] === 422 || statuses[1] === 409),
      responses.map((r) => r.text).join(' | '),
    );
    const refused = responses.find((r) => r.status !== 201);
    assert.equal(refused?.body.code, statuses[1] === 422 ? 'idempotency_key_reused' : 'idempotency_key_in_use');
    assert.equal((await countCollections(a.reference)) + (await countCollections(b.reference)), 1);
  });

  it('a write that fails stores nothing: no answer, no collection, no event; a retry with the same key then succeeds', async () => {
    const key = newKey();
    const body = validCollection();
    // A constraint only this request's reference breaks: the collection's INSERT fails inside the one statement.
    const constraint = `test_refuses_${body.reference.replace(/\W/g, '_')}`;
    await t.db.query(
      `ALTER TABLE collections ADD CONSTRAINT ${constraint} CHECK (reference <> '${body.reference}') NOT VALID`,
    );
    let failed;
    try {
      // Injected: the 500 of a fault is not in the document that `request` checks every answer against.
      failed = await t.app.inject({
        method: 'POST',
        url: PATH,
        headers: { authorization: `Bearer ${t.demoToken}`, 'idempotency-key': key },
        payload: body,
      });
    } finally {
      await t.db.query(`ALTER TABLE collections DROP CONSTRAINT ${constraint}`);
    }
    assert.equal(failed.statusCode, 500, failed.body);
    const left = await t.db.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [key]);
    assert.equal(left.rows[0].n, 0, 'no stored answer');
    assert.equal(await countCollections(body.reference), 0);
    const events = await t.db.query(
      `SELECT count(*)::int AS n FROM events WHERE type = 'collection.created' AND data->>'reference' = $1`,
      [body.reference],
    );
    assert.equal(events.rows[0].n, 0, 'no event');

    const retry = await create(key, body);
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.headers.get('idempotent-replayed'), null);
    assert.equal(await countCollections(body.reference), 1);
    assert.equal(await countCreatedEvents(body.reference), 1);
  });
});

describe('retention', () => {
  it('outcomes are kept 24 hours from the first request', async () => {
    const key = newKey();
    await create(key);
    const { rows } = await t.db.query(
      `SELECT extract(epoch FROM expires_at - created_at)::int AS seconds FROM idempotency_keys WHERE key = $1`,
      [key],
    );
    assert.equal(rows[0].seconds, 86_400);
  });

  it('an outcome past retention no longer replays, and the purge deletes it', async () => {
    const key = newKey();
    const body = validCollection();
    const first = await create(key, body);
    await t.db.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = $1`, [key]);
    const again = await create(key, body);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), null);
    assert.notEqual(again.body.collection_id, first.body.collection_id);

    const other = newKey();
    await create(other);
    await t.db.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = $1`, [other]);
    const purged = await t.services.idempotency.purgeExpired(1000);
    assert.ok(purged.deleted >= 1);
    const left = await t.db.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [other]);
    assert.equal(left.rows[0].n, 0);
  });
});

describe('fingerprint', () => {
  it('canonical JSON sorts keys at every depth and keeps array order', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, 1], c: null } }), '{"a":{"c":null,"d":[2,1]},"b":1}');
    assert.equal(fingerprint('post', '/x', { a: 1, b: 2 }), fingerprint('POST', '/x', { b: 2, a: 1 }));
    assert.notEqual(fingerprint('POST', '/x', { a: [1, 2] }), fingerprint('POST', '/x', { a: [2, 1] }));
    assert.notEqual(fingerprint('POST', '/x', {}), fingerprint('POST', '/y', {}));
  });
});
