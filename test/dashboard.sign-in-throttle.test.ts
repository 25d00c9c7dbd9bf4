// Failed dashboard sign-ins slow the next ones down, per account and per address, with a growing block: past 5
// failures for an email (known or not) or 20 from an address, each further failure blocks its key for twice as long
// (1 s, 2 s, 4 s …); a blocked sign-in is answered 429 with Retry-After before the password is checked, says nothing of
// which key is blocked, and opens nothing; a member's sign-in clears its account's count; counts start over after an
// hour. The token form (the break-glass path) is limited per address the same way. Each client is its own address
// (TRUST_PROXY is on and every request names one in X-Forwarded-For).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MembersService } from '../src/modules/members/members.service.js';
import { signInForm, startTestApp, type TestApp } from './helpers/harness.js';

const PASSWORD = 'the right passphrase';
const EMAIL = 'throttled@demo.test';

let t: TestApp;

before(async () => {
  t = await startTestApp({ TRUST_PROXY: 'true' });
  const members = new MembersService(t.services.tokens, t.config.paymentsEnv);
  for (const email of [EMAIL, 'other@demo.test', 'unlucky@demo.test']) {
    const made = await members.create(t.db, t.demoWorkspaceId, { email, password: PASSWORD, role: 'viewer' });
    assert.ok(made.ok);
  }
});
after(async () => t.close());

async function post(path: string, fields: Record<string, string>, address: string): Promise<Response> {
  const { csrf, cookie } = await signInForm(t.baseUrl, '/dashboard/sign-in', { 'x-forwarded-for': address });
  return fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, 'x-forwarded-for': address },
    body: new URLSearchParams({ ...fields, csrf, next: '/dashboard' }).toString(),
  });
}

const member = (email: string, password: string, address: string) =>
  post('/dashboard/sign-in/password', { email, password }, address);

const keyHash = (key: string): Buffer => createHash('sha256').update(key).digest();

/** The stored count and block length (seconds) of a key, or undefined when it has no row. */
async function stored(key: string): Promise<{ failures: number; block: number } | undefined> {
  const { rows } = await t.db.query<{ failures: number; block: number }>(
    `SELECT failures, round(extract(epoch FROM blocked_until - last_failed_at))::int AS block
       FROM dashboard_sign_in_failures WHERE key_hash = $1`,
    [keyHash(key)],
  );
  return rows[0];
}

/** Ends a key's block now, as time passing would. */
const unblock = (key: string) =>
  t.db.query('UPDATE dashboard_sign_in_failures SET blocked_until = now() WHERE key_hash = $1', [keyHash(key)]);

/**
 * Holds a key's block for a minute, as a longer run of failures would: the blocks measured here last 1 s, which a slow
 * machine could let run out before the next request arrives.
 */
const hold = (key: string) =>
  t.db.query(
    `UPDATE dashboard_sign_in_failures SET blocked_until = now() + interval '1 minute'
      WHERE key_hash = $1 AND blocked_until > last_failed_at`,
    [keyHash(key)],
  );

const hasSession = (res: Response) => res.headers.getSetCookie().some((c) => c.startsWith('dashboard_session='));

async function assertBlocked(res: Response, what: string): Promise<void> {
  assert.equal(res.status, 429, what);
  const retry = Number(res.headers.get('retry-after'));
  assert.ok(retry >= 1 && retry <= 900, `${what}: Retry-After ${retry}`);
  assert.match(await res.text(), /Too many failed sign-ins\. Wait \d+ (seconds|minutes), then try again\./, what);
  assert.equal(hasSession(res), false, `${what}: no session`);
  const audited = await t.db.query('SELECT 1 FROM audit_events WHERE request_id = $1', [
    res.headers.get('x-request-id'),
  ]);
  assert.equal(audited.rowCount, 0, `${what}: a refusal before trying is not an attempt in the audit log`);
}

describe('dashboard sign-in: failures slow the next ones down', () => {
  it('blocks an account after 5 failures, for 1 s, then 2 s, then 4 s, from any address, even with the right password', async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await member(EMAIL, `wrong ${i}`, '198.51.100.1');
      assert.equal(res.status, 401, `failure ${i} is answered as a failure`);
    }
    assert.deepEqual(await stored(`account:${EMAIL}`), { failures: 5, block: 0 }, 'free failures block nothing');
    assert.equal((await member(EMAIL, 'wrong 6', '198.51.100.1')).status, 401);
    assert.deepEqual(await stored(`account:${EMAIL}`), { failures: 6, block: 1 });
    // Blocked: the right password from another address is refused too, before it is checked.
    await hold(`account:${EMAIL}`);
    await assertBlocked(await member(EMAIL.toUpperCase(), PASSWORD, '198.51.100.2'), 'right password while blocked');
    assert.equal((await stored(`account:${EMAIL}`))?.failures, 6, 'a blocked attempt counts nothing');

    await unblock(`account:${EMAIL}`);
    assert.equal((await member(EMAIL, 'wrong 7', '198.51.100.3')).status, 401);
    assert.deepEqual(await stored(`account:${EMAIL}`), { failures: 7, block: 2 });
    await unblock(`account:${EMAIL}`);
    assert.equal((await member(EMAIL, 'wrong 8', '198.51.100.3')).status, 401);
    assert.deepEqual(await stored(`account:${EMAIL}`), { failures: 8, block: 4 });

    // Once the block is over, the right password signs in and the account's count is gone.
    await unblock(`account:${EMAIL}`);
    const res = await member(EMAIL, PASSWORD, '198.51.100.4');
    assert.equal(res.status, 303);
    assert.ok(hasSession(res));
    assert.equal(await stored(`account:${EMAIL}`), undefined);
  });

  it('treats an email that names no member the same way, so the limit tells nothing of which emails exist', async () => {
    for (let i = 1; i <= 6; i++) assert.equal((await member('ghost@demo.test', 'x', '198.51.100.10')).status, 401);
    assert.deepEqual(await stored('account:ghost@demo.test'), { failures: 6, block: 1 });
    await hold('account:ghost@demo.test');
    await assertBlocked(await member('ghost@demo.test', 'x', '198.51.100.11'), 'unknown email while blocked');
  });

  it('blocks an address after 20 failures, whatever emails it tries, but not the same accounts elsewhere', async () => {
    const address = '203.0.113.50';
    for (let i = 1; i <= 21; i++) {
      const res = await member(`guess${i}@demo.test`, 'x', address);
      assert.equal(res.status, 401, `failure ${i}`);
    }
    assert.deepEqual(await stored(`address:${address}`), { failures: 21, block: 1 });
    await hold(`address:${address}`);
    await assertBlocked(await member('other@demo.test', PASSWORD, address), 'a fresh account from a blocked address');
    const elsewhere = await member('other@demo.test', PASSWORD, '203.0.113.51');
    assert.equal(elsewhere.status, 303, 'the same member from another address');
  });

  it('counts an IPv6 /64 as one address', async () => {
    for (let i = 1; i <= 21; i++) {
      const res = await member(`v6-${i}@demo.test`, 'x', `2001:db8:1:2::${i.toString(16)}`);
      assert.equal(res.status, 401, `failure ${i}`);
    }
    assert.deepEqual(await stored('address:2001:db8:1:2::/64'), { failures: 21, block: 1 });
    await hold('address:2001:db8:1:2::/64');
    await assertBlocked(
      await member('other@demo.test', PASSWORD, '2001:db8:1:2:ffff::1'),
      'another address of the /64',
    );
  });

  it('starts a count over after an hour without a failure', async () => {
    for (let i = 1; i <= 6; i++) await member('unlucky@demo.test', 'x', '198.51.100.20');
    assert.deepEqual(await stored('account:unlucky@demo.test'), { failures: 6, block: 1 });
    await t.db.query(
      `UPDATE dashboard_sign_in_failures SET last_failed_at = now() - interval '61 minutes',
              blocked_until = now() - interval '61 minutes' WHERE key_hash = $1`,
      [keyHash('account:unlucky@demo.test')],
    );
    assert.equal((await member('unlucky@demo.test', 'x', '198.51.100.21')).status, 401);
    assert.deepEqual(await stored('account:unlucky@demo.test'), { failures: 1, block: 0 });
  });

  it('limits the token form (the break-glass path) per address the same way', async () => {
    const address = '192.0.2.77';
    for (let i = 1; i <= 21; i++) {
      const res = await post('/dashboard/sign-in', { token: `not-a-token-${i}` }, address);
      assert.equal(res.status, 401, `failure ${i}`);
    }
    assert.deepEqual(await stored(`address:${address}`), { failures: 21, block: 1 });
    await hold(`address:${address}`);
    await assertBlocked(await post('/dashboard/sign-in', { token: t.demoToken }, address), 'a valid token');
    const elsewhere = await post('/dashboard/sign-in', { token: t.demoToken }, '192.0.2.78');
    assert.equal(elsewhere.status, 303);
  });
});
