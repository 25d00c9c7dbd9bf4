// Late payments: a success reported after a collection expired, under the workspace's late payment
// policy (refund, the default, or accept), and that policy as PATCH /v1/workspace sets it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { listObjectEvents } from '../src/modules/events/events.repository.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { assertProblem, createWorkspace, request, requestRefund } from './helpers/harness.js';
import {
  atRest,
  callback,
  get,
  make,
  notice,
  postings,
  simulate,
  startLifecycleApp,
  t,
  type Made,
} from './helpers/lifecycle.js';

startLifecycleApp();

describe('late payments', () => {
  const types = async (c: Made): Promise<string[]> =>
    (await listObjectEvents(t.db, c.workspaceId, c.id)).map((e) => e.type);

  async function balance(token: string): Promise<number> {
    const res = await request(t, 'GET', '/v1/balances', { token });
    return res.body.data.find((b: { currency: string }) => b.currency === 'KES')?.available ?? 0;
  }

  /** A pending collection of a fresh workspace (with `policy`, when given), expired by the simulate endpoint. */
  async function expiredCollection(name: string, policy?: 'refund' | 'accept'): Promise<Made> {
    const ws = await createWorkspace(t, `late-${name}-${randomBytes(3).toString('hex')}`);
    if (policy) {
      const set = await request(t, 'PATCH', '/v1/workspace', { token: ws.token, body: { late_payment: policy } });
      assert.equal(set.status, 200, set.text);
      assert.equal(set.body.late_payment, policy);
    }
    const c = await make('0003', { token: ws.token, workspaceId: ws.id });
    await atRest(c.id, 'pending');
    assert.equal((await simulate(c, 'expired')).status, 200);
    return c;
  }

  it('refund (the default): a success reported after expiry is applied, told first as collection.late_payment, and sent back by a system refund', async () => {
    const c = await expiredCollection('refund');
    const res = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });

    await atRest(c.id, 'refunded');
    const events = await listObjectEvents(t.db, c.workspaceId, c.id);
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'collection.created',
        'collection.pending',
        'collection.expired',
        'collection.late_payment',
        'collection.successful',
        'collection.refunded',
      ],
    );
    assert.equal((events[3]?.data as { status: string }).status, 'successful');
    const refunds = await request(t, 'GET', `/v1/collections/${c.id}/refunds`, { token: c.token });
    assert.equal(refunds.body.data.length, 1);
    const refund = refunds.body.data[0];
    assert.equal(refund.reason, 'late_payment');
    assert.equal(refund.status, 'successful');
    assert.equal(refund.amount, c.amount);
    assert.deepEqual(
      (await listObjectEvents(t.db, c.workspaceId, refund.refund_id)).map((e) => e.type),
      ['refund.requested', 'refund.pending', 'refund.successful'],
    );
    assert.deepEqual(await postings(c.id), ['collection_successful']);
    assert.deepEqual(await postings(refund.refund_id), ['refund_reserved', 'refund_settled']);
    assert.equal(await balance(c.token), 0);
    assert.deepEqual(await verifyLedger(t.db), []);

    // The same success again changes nothing: no second credit, no second refund.
    const again = await callback(await notice(c.id, 'successful'));
    assert.deepEqual(again.body, { received: true, outcome: 'refused' });
    assert.deepEqual(
      await types(c),
      events.map((e) => e.type),
    );
  });

  it('accept: the late payment is credited and stays successful; the merchant is told all the same', async () => {
    const c = await expiredCollection('accept', 'accept');
    const res = await simulate(c, 'successful');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'successful');
    assert.deepEqual(await types(c), [
      'collection.created',
      'collection.pending',
      'collection.expired',
      'collection.late_payment',
      'collection.successful',
    ]);
    const refunds = await request(t, 'GET', `/v1/collections/${c.id}/refunds`, { token: c.token });
    assert.deepEqual(refunds.body.data, []);
    assert.equal(await balance(c.token), c.amount);
    assert.deepEqual(await verifyLedger(t.db), []);
  });

  it('an expired collection still refuses failed and reversed, and a refund request', async () => {
    const c = await expiredCollection('refusals');
    for (const outcome of ['failed', 'reversed'])
      assertProblem(await simulate(c, outcome), 409, 'transition_not_allowed');
    const refund = await requestRefund(t, c.token, c.id, c.amount);
    assertProblem(refund, 409, 'collection_not_refundable');
    assert.equal((await get(c)).status, 'expired');
  });
});

describe('the late payment policy (PATCH /v1/workspace)', () => {
  it('defaults to refund; an integrator sets it; anything else is 400 validation_failed and changes nothing', async () => {
    const ws = await createWorkspace(t, `late-policy-${randomBytes(3).toString('hex')}`);
    const read = await request(t, 'GET', '/v1/workspace', { token: ws.token });
    assert.equal(read.body.late_payment, 'refund');
    for (const body of [{ late_payment: 'keep' }, {}, { late_payment: 'accept', name: 'x' }, { late_payment: null }]) {
      const res = await request(t, 'PATCH', '/v1/workspace', { token: ws.token, body });
      assertProblem(res, 400, 'validation_failed');
    }
    assert.equal((await request(t, 'GET', '/v1/workspace', { token: ws.token })).body.late_payment, 'refund');
    const set = await request(t, 'PATCH', '/v1/workspace', { token: ws.token, body: { late_payment: 'accept' } });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.late_payment, 'accept');
    assert.equal((await request(t, 'GET', '/v1/workspace', { token: ws.token })).body.late_payment, 'accept');
    assertProblem(
      await request(t, 'PATCH', '/v1/workspace', { body: { late_payment: 'refund' } }),
      401,
      'unauthorized',
    );
  });
});
