// Issue 34, item 8: refused tokens never lock out valid ones. Refused tokens from an address are limited (401, then
// 429 with Retry-After) and only they are counted; a valid token from that same address is served as usual, even while
// the address is over its limit. And a flood stays cheap: a forged token never reaches the credential lookup.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SignJWT, decodeJwt, generateKeyPair, type CryptoKey } from 'jose';
import {
  assertProblem,
  createWorkspace,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
} from './helpers/harness.js';

// One refusal back every 6 s: each step below takes well under that, so the counts are exact.
const LIMIT = 10;
const REFILL_MS = 60_000 / LIMIT;

let t: TestApp;
let forger: CryptoKey;
before(async () => {
  // TRUST_PROXY only for the rotated-key case, which names its own address; the flood sends no X-Forwarded-For, so it
  // comes from 127.0.0.1 like the real client beside it.
  t = await startTestApp({ AUTH_FAILURES_PER_MINUTE: String(LIMIT), TRUST_PROXY: 'true' });
  ({ privateKey: forger } = await generateKeyPair('ES256'));
});
after(async () => t?.close());

/**
 * A forged token: the demo credential's claims (someone who knows everything but the signing key), a fresh jti, and
 * a well-formed ES256 signature by another key, so the service has to check the signature to refuse it.
 */
async function forged(): Promise<string> {
  const real = decodeJwt(t.demoToken);
  return new SignJWT({ wsp: real.wsp, env: real.env })
    .setProtectedHeader({ alg: 'ES256', kid: 'service', typ: 'JWT' })
    .setSubject(String(real.sub))
    .setAudience(String(real.aud))
    .setJti(randomUUID())
    .setIssuedAt()
    .sign(forger);
}

/** The token ids the app looked up in the credentials table (findLiveToken's statement), from now until `stop`. */
function watchTokenLookups(): { tokenIds: string[]; stop: () => void } {
  const tokenIds: string[] = [];
  const original = t.db.query;
  const watched = (...args: unknown[]): unknown => {
    const [text, values] = args;
    if (typeof text === 'string' && /FROM credentials\s+WHERE .*token_id = \$3/s.test(text) && Array.isArray(values))
      tokenIds.push(String(values[2]));
    return (original as (...a: unknown[]) => unknown).apply(t.db, args);
  };
  t.db.query = watched as typeof t.db.query;
  return { tokenIds, stop: () => (t.db.query = original) };
}

const list = (token: string, headers: Record<string, string> = {}) =>
  request(t, 'GET', '/v1/collections', { token, headers });

function assertLimited(res: ApiResponse): void {
  assertProblem(res, 429, 'rate_limited');
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= REFILL_MS / 1000, `Retry-After ${res.headers.get('retry-after')}`);
}

describe('refused tokens never lock out valid ones', () => {
  it('a flood of forged tokens from 127.0.0.1 turns into 429, while valid tokens from 127.0.0.1 are all served and charged nothing', async () => {
    const started = Date.now();
    // All but one of the address's refusals: 401, as a refused token is.
    for (let i = 0; i < LIMIT - 1; i++) assertProblem(await list(await forged()), 401, 'unauthorized');
    // Valid tokens now cost the address nothing: after twenty of them, exactly one refusal is still left.
    for (let i = 0; i < 20; i++) {
      const ok = await list(t.demoToken);
      assert.equal(ok.status, 200, ok.text);
    }
    assertProblem(await list(await forged()), 401, 'unauthorized');
    assertLimited(await list(await forged()));
    assert.ok(Date.now() - started < REFILL_MS, 'the counting steps took longer than one refill');

    // The flood: 300 forged tokens in batches of ten at once, each batch with two valid requests among them.
    const lookups = watchTokenLookups();
    const floodStarted = Date.now();
    const forgedAnswers: ApiResponse[] = [];
    const validAnswers: ApiResponse[] = [];
    try {
      for (let batch = 0; batch < 30; batch++) {
        const tokens = await Promise.all(Array.from({ length: 10 }, () => forged()));
        const [valid1, valid2, ...rest] = await Promise.all([
          list(t.demoToken),
          list(t.demoToken),
          ...tokens.map((token) => list(token)),
        ]);
        validAnswers.push(valid1 as ApiResponse, valid2 as ApiResponse);
        forgedAnswers.push(...rest);
      }
    } finally {
      lookups.stop();
    }
    const floodMs = Date.now() - floodStarted;
    assert.equal(forgedAnswers.length, 300);
    assert.equal(validAnswers.length, 60);
    for (const ok of validAnswers) assert.equal(ok.status, 200, ok.text);
    // Every forged token was counted: 429, bar the refusals the bucket refilled while the flood ran.
    const refused = forgedAnswers.filter((res) => res.status === 401);
    for (const res of forgedAnswers) if (res.status !== 401) assertLimited(res);
    for (const res of refused) assertProblem(res, 401, 'unauthorized');
    assert.ok(
      refused.length <= Math.ceil((Date.now() - started) / REFILL_MS),
      `${refused.length} of 300 forged tokens got 401 in a flood of ${floodMs} ms`,
    );
    // The store was asked about the valid requests only: not one forged token cost a database query.
    const demoTokenId = String(decodeJwt(t.demoToken).jti);
    assert.equal(lookups.tokenIds.length, 60, `credential lookups during the flood: ${lookups.tokenIds.length}`);
    assert.ok(lookups.tokenIds.every((id) => id === demoTokenId));

    // After the flood the address is still over its limit for refused tokens, and valid tokens are still served:
    // the admin token gets its usual 403 on an integrator route, not 429.
    assertLimited(await list(await forged()));
    assert.equal((await list(t.demoToken)).status, 200);
    assertProblem(await list(t.adminToken), 403, 'forbidden');
    assertLimited(await list('not-even-a-jwt'));
  });

  it("a forgotten process's rotated-out key is limited like a forged token, asked about once, and the new key from the same address keeps working", async () => {
    const from = { 'x-forwarded-for': '198.51.100.34' };
    const ws = await createWorkspace(t, 'rotated-behind-one-nat');
    const credentialId = String(decodeJwt(ws.token).sub);
    const rotated = await request(t, 'POST', `/v1/credentials/${credentialId}/rotate`, { token: ws.token });
    assert.equal(rotated.status, 200, rotated.text);
    const fresh = rotated.body.token as string;
    const staleTokenId = String(decodeJwt(ws.token).jti);

    const lookups = watchTokenLookups();
    const stale: ApiResponse[] = [];
    try {
      for (let i = 0; i < 3 * LIMIT; i++) {
        stale.push(await list(ws.token, from));
        const ok = await list(fresh, from);
        assert.equal(ok.status, 200, `request ${i} with the new key: ${ok.text}`);
      }
    } finally {
      lookups.stop();
    }
    stale.slice(0, LIMIT).forEach((res) => assertProblem(res, 401, 'unauthorized'));
    stale.slice(LIMIT).forEach(assertLimited);
    // The rotated-out token is dead for good: the store was asked about it once, not once per request.
    assert.equal(lookups.tokenIds.filter((id) => id === staleTokenId).length, 1);
  });
});
