// The payer's prompt under a burst: while the initiations queued in the process are behind by more than half of
// INITIATION_MAX_WAIT_MS (a new one would wait as long again), a new collection is refused with 503 `overloaded` and
// Retry-After, and nothing is created; once the queue has caught up, collections are accepted again.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MomoFake } from '../fakes/mtn-momo.js';
import { startConnectorApp } from './helpers/connectors.js';
import { assertProblem, newKey, request, validCollection, waitFor } from './helpers/harness.js';

const fake = new MomoFake({ actAfterMs: 60_000, targetEnvironment: 'mtnghana' });
const app = await startConnectorApp(
  fake,
  {
    type: 'mtn_momo',
    name: 'mtn',
    rails: ['GH/mtn_momo'],
    target_environment: 'mtnghana',
    poll_seconds: 60,
    collection: {
      subscription_key: 'fake-collection-key',
      api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a01',
      api_key: 'fake-collection-api-key',
    },
    disbursement: {
      subscription_key: 'fake-disbursement-key',
      api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a02',
      api_key: 'fake-disbursement-api-key',
    },
  },
  // One initiation in flight at a time, and a prompt may wait 200 ms in the queue.
  { INITIATION_CONCURRENCY: '1', INITIATION_MAX_WAIT_MS: '200', OPERATOR_TIMEOUT_MS: '5000' },
);
after(async () => app.close());
const t = app.t;

const collect = (phone: string, reference: string, idempotencyKey = newKey()) =>
  request(t, 'POST', '/v1/collections/GH/rails/mtn_momo', {
    token: t.demoToken,
    body: validCollection({ currency: 'GHS', amount: 1500, reference, customer: { phone_number: phone } }),
    idempotencyKey,
  });

const statusOf = async (reference: string): Promise<string | undefined> => {
  const { rows } = await t.db.query<{ status: string }>('SELECT status FROM collections WHERE reference = $1', [
    reference,
  ]);
  return rows[0]?.status;
};

test('a collection whose prompt would wait too long is refused with 503 overloaded, and accepted once the queue caught up', async () => {
  // A warm process: its first claim (a new connection, a first plan) is slower than the 200 ms allowed here.
  assert.equal((await collect('+233241000009', 'warm-up')).status, 201);
  await waitFor('the warm-up initiated', async () => ((await statusOf('warm-up')) === 'pending' ? true : undefined));
  // The operator takes 1.5 s to answer each request to pay: the first is in flight, the second queues behind it.
  fake.inject({ path: 'requesttopay', delayMs: 1500, times: 2 });
  assert.equal((await collect('+233241000001', 'burst-1')).status, 201);
  const burst2Key = newKey();
  const burst2 = await collect('+233241000002', 'burst-2', burst2Key);
  assert.equal(burst2.status, 201, burst2.text);
  await sleep(400);
  assert.ok(t.services.submitter.waitingMs() > 200, 'the second initiation is still queued');
  const refused = await collect('+233241000003', 'burst-3');
  assertProblem(refused, 503, 'overloaded');
  assert.equal(refused.headers.get('retry-after'), '1');
  assert.equal(await statusOf('burst-3'), undefined, 'nothing was created');
  // A retry of a collection accepted before the refusals began is answered with its replay, not refused.
  const retried = await collect('+233241000002', 'burst-2', burst2Key);
  assert.equal(retried.status, 201, retried.text);
  assert.equal(retried.headers.get('idempotent-replayed'), 'true');
  assert.equal(retried.body.collection_id, burst2.body.collection_id);
  assert.ok(t.services.submitter.waitingMs() > 200, 'new collections were still refused when the retry came');
  // Both queued prompts go out; then the queue is empty and collections are accepted again.
  await waitFor('both initiated', async () =>
    (await statusOf('burst-1')) === 'pending' && (await statusOf('burst-2')) === 'pending' ? true : undefined,
  );
  assert.equal(t.services.submitter.waitingMs(), 0);
  assert.equal((await collect('+233241000003', 'burst-3')).status, 201);
});
