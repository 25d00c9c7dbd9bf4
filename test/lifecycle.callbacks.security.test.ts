// Provider callback security: a notice that is not signed with the provider's secret, is stale, altered, for an
// unknown provider or an unknown collection is refused and changes nothing; the genuine notice still applies after.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { signCallback, type CallbackBody } from '../src/modules/providers/callback-protocol.js';
import { assertProblem, type ApiResponse } from './helpers/harness.js';
import {
  callback,
  get,
  makeProcessing,
  notice,
  noticeCount,
  secret,
  snapshot,
  startLifecycleApp,
  type Made,
} from './helpers/lifecycle.js';

startLifecycleApp();

describe('callback security', () => {
  let c: Made;
  let body: CallbackBody;
  let raw: string;

  before(async () => {
    c = await makeProcessing();
    body = await notice(c.id, 'successful');
    raw = JSON.stringify(body);
  });

  /** Sends, expects `check`, and verifies that neither the collection nor the notice log moved. */
  async function refusedWithoutChange(
    send: () => Promise<ApiResponse>,
    check: (res: ApiResponse) => void,
  ): Promise<void> {
    const before = await snapshot(c);
    const notices = await noticeCount();
    const res = await send();
    check(res);
    assert.deepEqual(await snapshot(c), before);
    assert.equal(await noticeCount(), notices);
  }

  it('a signature made with another secret is 401 invalid_signature', async () => {
    await refusedWithoutChange(
      () => callback(body, { headers: signCallback(randomBytes(32).toString('hex'), raw) }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('a missing Provider-Signature header is 401 invalid_signature', async () => {
    await refusedWithoutChange(
      () => callback(body, { headers: { 'content-type': 'application/json' } }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('a malformed Provider-Signature header is 401 invalid_signature', async () => {
    await refusedWithoutChange(
      () => callback(body, { headers: { 'content-type': 'application/json', 'provider-signature': 'nonsense' } }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('a signature older than 5 minutes is 401 invalid_signature', async () => {
    await refusedWithoutChange(
      () => callback(body, { headers: signCallback(secret, raw, Date.now() - 301_000) }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('a body altered after signing is 401 invalid_signature', async () => {
    const altered = JSON.stringify({ ...body, reason: 'x' });
    await refusedWithoutChange(
      () => callback(body, { headers: signCallback(secret, raw), rawBody: altered }),
      (res) => assertProblem(res, 401, 'invalid_signature'),
    );
  });

  it('an unknown provider name is 404', async () => {
    await refusedWithoutChange(
      () => callback(body, { provider: 'acme' }),
      (res) => assertProblem(res, 404, 'not_found'),
    );
  });

  it('a notice for a collection that does not exist is 404', async () => {
    await refusedWithoutChange(
      () => callback({ ...body, merchant_reference: randomUUID() }),
      (res) => assertProblem(res, 404, 'not_found'),
    );
  });

  it('a notice naming the collection in capitals is the same collection (a uuid is read in any case)', async () => {
    const other = await makeProcessing();
    const res = await callback(await notice(other.id.toUpperCase(), 'successful'));
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    assert.equal((await get(other)).status, 'successful');
  });

  it('after all that, the genuine notice still applies', async () => {
    const res = await callback(body);
    assert.deepEqual(res.body, { received: true, outcome: 'applied' });
    assert.equal((await get(c)).status, 'successful');
  });
});
