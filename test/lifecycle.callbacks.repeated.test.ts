// Provider callbacks received more than once (a repeated provider notice changes nothing): the same signed notice
// again, several copies at once, and another notice reporting the status the collection already has are each applied
// once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { signCallback } from '../src/modules/providers/callback-protocol.js';
import { request } from './helpers/harness.js';
import {
  assertEvents,
  CALLBACKS,
  callback,
  makeProcessing,
  notice,
  postings,
  secret,
  snapshot,
  startLifecycleApp,
  t,
} from './helpers/lifecycle.js';

startLifecycleApp();

describe('a repeated notice is applied once', () => {
  it('the same signed callback twice: applied, then duplicate; one event, one posting', async () => {
    const c = await makeProcessing();
    const body = await notice(c.id, 'successful');
    const raw = JSON.stringify(body);
    const headers = signCallback(secret, raw);
    const first = await request(t, 'POST', CALLBACKS, { rawBody: raw, headers });
    assert.deepEqual(first.body, { received: true, outcome: 'applied' });
    const after = await snapshot(c);
    const second = await request(t, 'POST', CALLBACKS, { rawBody: raw, headers });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body, { received: true, outcome: 'duplicate' });
    assert.deepEqual(await snapshot(c), after);
    await assertEvents(c, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(c.id), ['collection_successful']);
  });

  it('the same signed callback 5 times at once: applied exactly once', async () => {
    const c = await makeProcessing();
    const body = await notice(c.id, 'successful');
    const raw = JSON.stringify(body);
    const headers = signCallback(secret, raw);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => request(t, 'POST', CALLBACKS, { rawBody: raw, headers })),
    );
    for (const a of answers) assert.equal(a.status, 200, a.text);
    assert.deepEqual(answers.map((a) => a.body.outcome).sort(), [
      'applied',
      'duplicate',
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    await assertEvents(c, ['created', 'pending', 'processing', 'successful']);
    assert.deepEqual(await postings(c.id), ['collection_successful']);
    const later = await request(t, 'POST', CALLBACKS, { rawBody: raw, headers });
    assert.deepEqual(later.body, { received: true, outcome: 'duplicate' });
    assert.deepEqual(await postings(c.id), ['collection_successful']);

    // Known by its notice id, not by the status: after the collection has moved on, the old notice is still a duplicate.
    const reversal = await callback(await notice(c.id, 'reversed'));
    assert.deepEqual(reversal.body, { received: true, outcome: 'applied' });
    const replay = await request(t, 'POST', CALLBACKS, { rawBody: raw, headers });
    assert.deepEqual(replay.body, { received: true, outcome: 'duplicate' });
    await assertEvents(c, ['created', 'pending', 'processing', 'successful', 'reversed']);
    assert.deepEqual(await postings(c.id), ['collection_successful', 'collection_reversed']);
  });

  it('another notice reporting the status the collection already has changes nothing', async () => {
    const c = await makeProcessing({ successful: true });
    const before = await snapshot(c);
    const res = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'duplicate' });
    assert.deepEqual(await snapshot(c), before);
  });
});
