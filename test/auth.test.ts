// Authentication: bearer tokens (ES256 JWTs signed by the service) and credentials: who gets 401, who gets 403,
// rotation and revocation that take effect at once, minting rules, workspace isolation of credentials, bootstrap.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  SignJWT,
  decodeJwt,
  decodeProtectedHeader,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type CryptoKey,
} from 'jose';
import { insertCredential } from '../src/modules/credentials/credentials.repository.js';
import { loadServiceKeys } from '../src/platform/secrets.js';
import {
  createWorkspace,
  newKey,
  request,
  startTestApp,
  validCollection,
  type ApiResponse,
  type TestApp,
  assertProblem,
} from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The two protected integrator routes every token case is tried on, with a raw Authorization header (or none). */
async function callProtected(authorization: string | undefined): Promise<{ list: ApiResponse; create: ApiResponse }> {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  const list = await request(t, 'GET', '/v1/collections', { headers });
  const create = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
    headers,
    body: validCollection(),
    idempotencyKey: newKey(),
  });
  return { list, create };
}

async function assertUnauthorized(authorization: string | undefined): Promise<void> {
  const { list, create } = await callProtected(authorization);
  assertProblem(list, 401, 'unauthorized');
  assertProblem(create, 401, 'unauthorized');
}

/** Both protected routes succeed with this token: the control that makes every 401 case meaningful. */
async function assertAccepted(token: string): Promise<void> {
  const { list, create } = await callProtected(`Bearer ${token}`);
  assert.equal(list.status, 200, list.text);
  assert.equal(create.status, 201, create.text);
}

const get = (url: string, token: string) => request(t, 'GET', url, { token });
const post = (url: string, token: string, body?: unknown) => request(t, 'POST', url, { token, body });

const b64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');
const decodeSegment = (segment: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));

function segments(token: string): [string, string, string] {
  const parts = token.split('.');
  assert.equal(parts.length, 3, 'a compact JWS has three segments');
  return parts as [string, string, string];
}

/** A new workspace with its first integrator token and that credential's id. */
async function workspace(name: string): Promise<{ id: string; token: string; credentialId: string }> {
  const ws = await createWorkspace(t, name);
  const sub = decodeJwt(ws.token).sub;
  assert.ok(sub);
  return { ...ws, credentialId: sub };
}

/** Signs the given claims as the service would, with any key. */
async function sign(
  key: CryptoKey,
  kid: string,
  claims: { sub: string; aud: string; wsp: string; env: string; jti: string; iat?: number },
): Promise<string> {
  const jwt = new SignJWT({ wsp: claims.wsp, env: claims.env })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
    .setSubject(claims.sub)
    .setAudience(claims.aud)
    .setJti(claims.jti);
  if (claims.iat !== undefined) jwt.setIssuedAt(claims.iat);
  else jwt.setIssuedAt();
  return jwt.sign(key);
}

function realClaims(token: string): { sub: string; aud: string; wsp: string; env: string; jti: string; iat: number } {
  const c = decodeJwt(token) as Record<string, unknown>;
  return {
    sub: c.sub as string,
    aud: c.aud as string,
    wsp: c.wsp as string,
    env: c.env as string,
    jti: c.jti as string,
    iat: c.iat as number,
  };
}

describe('missing or malformed Authorization header: 401 unauthorized', () => {
  it('a real integrator token is accepted on both protected routes (control)', async () => {
    await assertAccepted(t.demoToken);
  });

  it('no Authorization header is 401 unauthorized as a problem document with code, status and request_id', async () => {
    await assertUnauthorized(undefined);
  });

  it('a garbage bearer token is 401', async () => {
    await assertUnauthorized('Bearer garbage');
    await assertUnauthorized('Bearer a.b.c');
    await assertUnauthorized(`Bearer ${'x'.repeat(2000)}`);
  });

  it('"Bearer" with an empty token is 401', async () => {
    await assertUnauthorized('Bearer ');
    await assertUnauthorized('Bearer');
    await assertUnauthorized('Bearer      ');
  });

  it('a non-Bearer scheme is 401, even when it carries a real token', async () => {
    await assertUnauthorized(`Basic ${Buffer.from('demo:secret').toString('base64')}`);
    await assertUnauthorized(`Basic ${t.demoToken}`);
    await assertUnauthorized(`Token ${t.demoToken}`);
    await assertUnauthorized(t.demoToken);
  });
});

describe('forged and tampered tokens: 401 unauthorized', () => {
  it('a tampered signature segment is 401', async () => {
    const [h, p, s] = segments(t.demoToken);
    const mid = Math.floor(s.length / 2);
    const flip = (c: string) => (c === 'A' ? 'B' : 'A');
    const flippedMiddle = s.slice(0, mid) + flip(s[mid] as string) + s.slice(mid + 1);
    const flippedFirst = flip(s[0] as string) + s.slice(1);
    const reversed = [...s].reverse().join('');
    for (const sig of [flippedMiddle, flippedFirst, reversed]) {
      assert.notEqual(sig, s);
      await assertUnauthorized(`Bearer ${h}.${p}.${sig}`);
    }
    await assertAccepted(t.demoToken); // the original still works: only the tampering was refused
  });

  it('a payload with another wsp but the original signature is 401', async () => {
    const other = await workspace('tamper-wsp');
    const [h, p, s] = segments(t.demoToken);
    const payload = decodeSegment(p);
    assert.equal(payload.wsp, t.demoWorkspaceId);
    payload.wsp = other.id;
    await assertUnauthorized(`Bearer ${h}.${b64url(JSON.stringify(payload))}.${s}`);
  });

  it('a payload with aud changed to admin but the original signature is 401 on an admin route (not 403, not 200)', async () => {
    const [h, p, s] = segments(t.demoToken);
    const payload = decodeSegment(p);
    assert.equal(payload.aud, 'integrator');
    payload.aud = 'admin';
    const forged = `${h}.${b64url(JSON.stringify(payload))}.${s}`;
    assertProblem(await get('/v1/admin/workspaces', forged), 401, 'unauthorized');
    await assertUnauthorized(`Bearer ${forged}`);
  });

  it('an alg:none token carrying the real claims and an empty signature is 401', async () => {
    const [, p] = segments(t.demoToken);
    const header = b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    await assertUnauthorized(`Bearer ${header}.${p}.`);
    const noneAdmin = b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    assertProblem(await get('/v1/admin/workspaces', `${noneAdmin}.${segments(t.adminToken)[1]}.`), 401, 'unauthorized');
  });

  it('an HS256 token signed with the public key (JWK or PEM bytes) or any secret is 401 (algorithm swap)', async () => {
    const keys = await loadServiceKeys(t.db, t.box);
    const [, p] = segments(t.demoToken);
    const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: keys.kid }));
    const jwk = await exportJWK(keys.publicKey);
    const secrets = [
      JSON.stringify(jwk),
      JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }),
      await exportSPKI(keys.publicKey),
      'secret',
      '',
    ];
    for (const secret of secrets) {
      const sig = createHmac('sha256', secret).update(`${header}.${p}`).digest('base64url');
      await assertUnauthorized(`Bearer ${header}.${p}.${sig}`);
    }
  });

  it('a token correctly signed with a different ES256 key is 401, even with the service kid', async () => {
    const keys = await loadServiceKeys(t.db, t.box);
    const { privateKey } = await generateKeyPair('ES256');
    const claims = realClaims(t.demoToken);
    await assertUnauthorized(`Bearer ${await sign(privateKey, keys.kid, claims)}`);
    await assertUnauthorized(`Bearer ${await sign(privateKey, 'another-kid', claims)}`);
  });

  it('a token signed with the service key for env production is 401 in a sandbox deployment', async () => {
    const keys = await loadServiceKeys(t.db, t.box);
    const claims = realClaims(t.demoToken);
    assert.equal(claims.env, 'sandbox');
    // Control: the same construction with env sandbox is accepted, so the 401 below is about env alone.
    await assertAccepted(await sign(keys.privateKey, keys.kid, claims));
    await assertUnauthorized(`Bearer ${await sign(keys.privateKey, keys.kid, { ...claims, env: 'production' })}`);
  });

  it("a token signed with the service key whose jti is not the credential's live token id is 401", async () => {
    const keys = await loadServiceKeys(t.db, t.box);
    const claims = realClaims(t.demoToken);
    await assertUnauthorized(`Bearer ${await sign(keys.privateKey, keys.kid, { ...claims, jti: randomUUID() })}`);
  });
});

describe("a correctly signed token whose aud or env differs from its stored credential's: 401 unauthorized", () => {
  /** Both answers are the same problem as a forged token's, detail included: nothing tells which claim failed. */
  async function assertRefusedLikeForged(res: ApiResponse): Promise<void> {
    assertProblem(res, 401, 'unauthorized');
    const forged = await get('/v1/workspace', 'garbage');
    assert.equal(res.body.detail, forged.body.detail);
  }

  it('an integrator credential signed as aud admin is 401 on an admin route (not 200) and everywhere else', async () => {
    const keys = await loadServiceKeys(t.db, t.box);
    const claims = realClaims(t.demoToken);
    assert.equal(claims.aud, 'integrator');
    // Control: the same construction with the stored audience is accepted, so the 401s below are about aud alone.
    await assertAccepted(await sign(keys.privateKey, keys.kid, claims));
    const asAdmin = await sign(keys.privateKey, keys.kid, { ...claims, aud: 'admin' });
    await assertRefusedLikeForged(await get('/v1/admin/workspaces', asAdmin));
    await assertRefusedLikeForged(await post('/v1/admin/workspaces', asAdmin, { name: 'escalated' }));
    await assertRefusedLikeForged(await get('/v1/workspace', asAdmin));
    const asLp = await sign(keys.privateKey, keys.kid, { ...claims, aud: 'liquidity_provider' });
    await assertRefusedLikeForged(await get('/v1/workspace', asLp));
    assert.equal(
      (await get('/v1/admin/workspaces', t.adminToken)).body.data.some((w: any) => w.name === 'escalated'),
      false,
    );
  });

  it('the admin credential signed as aud integrator is 401 on the integrator routes (not 200)', async () => {
    const keys = await loadServiceKeys(t.db, t.box);
    const claims = realClaims(t.adminToken);
    assert.equal(claims.aud, 'admin');
    await assertUnauthorized(`Bearer ${await sign(keys.privateKey, keys.kid, { ...claims, aud: 'integrator' })}`);
    assert.equal((await get('/v1/admin/workspaces', t.adminToken)).status, 200); // the real admin token is untouched
  });

  it("a credential stored for production, its token signed with the deployment's env sandbox, is 401", async () => {
    // No API makes such a credential in a sandbox deployment; it stands for a row the token's env disagrees with.
    const keys = await loadServiceKeys(t.db, t.box);
    const ws = await workspace('env-mismatch');
    const stored = await insertCredential(t.db, ws.id, {
      id: randomUUID(),
      audience: 'integrator',
      environment: 'production',
      name: 'production credential',
      tokenId: randomUUID(),
      createdAt: new Date(),
    });
    const claims = { sub: stored.id, aud: 'integrator', wsp: ws.id, jti: stored.token_id };
    // Its token as minted for its stored environment fails on PAYMENTS_ENV, as before.
    await assertUnauthorized(`Bearer ${await sign(keys.privateKey, keys.kid, { ...claims, env: 'production' })}`);
    const sandbox = await sign(keys.privateKey, keys.kid, { ...claims, env: 'sandbox' });
    await assertUnauthorized(`Bearer ${sandbox}`);
    await assertRefusedLikeForged(await get('/v1/workspace', sandbox));
    await assertAccepted(ws.token); // the workspace's own credential still works
  });
});

describe('audience: a valid token on a route for another audience is 403 forbidden', () => {
  it('the admin token on the collection routes is 403 forbidden', async () => {
    assertProblem(await get('/v1/collections', t.adminToken), 403, 'forbidden');
    const create = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: t.adminToken,
      body: validCollection(),
      idempotencyKey: newKey(),
    });
    assertProblem(create, 403, 'forbidden');
  });

  it('an integrator token on GET /v1/admin/workspaces is 403 forbidden, the admin token gets 200', async () => {
    assertProblem(await get('/v1/admin/workspaces', t.demoToken), 403, 'forbidden');
    assert.equal((await get('/v1/admin/workspaces', t.adminToken)).status, 200);
  });

  it('an integrator token cannot create workspaces or admin-mint credentials (403), and nothing is created', async () => {
    const before = (await get('/v1/admin/workspaces', t.adminToken)).body.data.length;
    assertProblem(await post('/v1/admin/workspaces', t.demoToken, { name: 'sneaky' }), 403, 'forbidden');
    assertProblem(
      await post(`/v1/admin/workspaces/${t.demoWorkspaceId}/credentials`, t.demoToken, { audience: 'admin' }),
      403,
      'forbidden',
    );
    assert.equal((await get('/v1/admin/workspaces', t.adminToken)).body.data.length, before);
  });
});

describe('rotation', () => {
  it('rotate returns 200 with a new token; the old token is 401 on the very next request; the new one works', async () => {
    const ws = await workspace('rotate-me');
    await assertAccepted(ws.token); // the old token has been verified (and may be cached) before rotation

    const rot = await post(`/v1/credentials/${ws.credentialId}/rotate`, ws.token);
    assert.equal(rot.status, 200, rot.text);
    assert.equal(typeof rot.body.token, 'string');
    assert.notEqual(rot.body.token, ws.token);
    assert.equal(rot.body.id, ws.credentialId);
    assert.equal(rot.body.workspace_id, ws.id);
    assert.equal(rot.body.audience, 'integrator');
    assert.equal(rot.body.status, 'active');
    assert.match(rot.body.rotated_at, ISO_MS);
    assert.equal(rot.body.revoked_at, null);
    const newClaims = realClaims(rot.body.token);
    assert.equal(newClaims.sub, ws.credentialId);
    assert.notEqual(newClaims.jti, realClaims(ws.token).jti);

    await assertUnauthorized(`Bearer ${ws.token}`);
    await assertAccepted(rot.body.token);
  });

  it('GET /v1/credentials lists the rotated credential with rotated_at set and never shows a token', async () => {
    const ws = await workspace('rotate-list');
    const beforeList = await get('/v1/credentials', ws.token);
    assert.equal(beforeList.status, 200);
    assert.equal(beforeList.body.data.find((c: any) => c.id === ws.credentialId)?.rotated_at, null);

    const rot = await post(`/v1/credentials/${ws.credentialId}/rotate`, ws.token);
    assert.equal(rot.status, 200, rot.text);
    const list = await get('/v1/credentials', rot.body.token);
    assert.equal(list.status, 200, list.text);
    const entry = list.body.data.find((c: any) => c.id === ws.credentialId);
    assert.ok(entry, 'the rotated credential is listed');
    assert.equal(entry.rotated_at, rot.body.rotated_at);
    assert.equal(entry.status, 'active');
    for (const c of list.body.data) assert.equal('token' in c, false, 'a listed credential has no token field');
    assert.equal(list.text.includes(rot.body.token), false);
    assert.equal(list.text.includes(ws.token), false);
    assert.equal(list.text.includes('"token"'), false);
  });

  it('rotating twice kills the first rotated token too: only the newest token works', async () => {
    const ws = await workspace('rotate-twice');
    const first = await post(`/v1/credentials/${ws.credentialId}/rotate`, ws.token);
    assert.equal(first.status, 200, first.text);
    await assertAccepted(first.body.token);
    const second = await post(`/v1/credentials/${ws.credentialId}/rotate`, first.body.token);
    assert.equal(second.status, 200, second.text);
    await assertUnauthorized(`Bearer ${ws.token}`);
    await assertUnauthorized(`Bearer ${first.body.token}`);
    await assertAccepted(second.body.token);
  });

  it('rotation never hands out a token of an audience the caller may not mint (a liquidity_provider cannot rotate an admin credential into an admin token)', async () => {
    // The operator workspace holds the admin credential; the admin gives it a second admin credential and a
    // liquidity_provider one (both allowed). The liquidity_provider may not mint an admin token (POST /v1/credentials
    // says 403), so it must not be able to obtain one by rotating the admin credential either.
    const admin2 = await post('/v1/credentials', t.adminToken, { audience: 'admin', name: 'second admin' });
    assert.equal(admin2.status, 201, admin2.text);
    const lp = await post('/v1/credentials', t.adminToken, { audience: 'liquidity_provider', name: 'partner' });
    assert.equal(lp.status, 201, lp.text);
    assertProblem(await post('/v1/credentials', lp.body.token, { audience: 'admin' }), 403, 'forbidden');

    const rot = await post(`/v1/credentials/${admin2.body.id}/rotate`, lp.body.token);
    assertProblem(rot, 403, 'forbidden');
    // The admin credential is untouched: its token still works.
    assert.equal((await get('/v1/admin/workspaces', admin2.body.token)).status, 200);
  });
});

describe('revocation', () => {
  it('a weaker audience cannot revoke a stronger credential (403), and the admin token keeps working', async () => {
    const admin2 = await post('/v1/credentials', t.adminToken, { audience: 'admin', name: 'admin to keep' });
    const lp = await post('/v1/credentials', t.adminToken, { audience: 'liquidity_provider', name: 'partner 2' });
    assert.equal(lp.status, 201, lp.text);
    const del = await request(t, 'DELETE', `/v1/credentials/${admin2.body.id}`, { token: lp.body.token });
    assertProblem(del, 403, 'forbidden');
    assert.equal((await get('/v1/admin/workspaces', admin2.body.token)).status, 200);
  });

  it('DELETE answers 200 with status revoked; that token is 401 right after; other credentials keep working', async () => {
    const ws = await workspace('revoke-me');
    const second = await post('/v1/credentials', ws.token, { name: 'to be revoked' });
    assert.equal(second.status, 201, second.text);
    await assertAccepted(second.body.token);

    const del = await request(t, 'DELETE', `/v1/credentials/${second.body.id}`, { token: ws.token });
    assert.equal(del.status, 200, del.text);
    assert.equal(del.body.id, second.body.id);
    assert.equal(del.body.status, 'revoked');
    assert.match(del.body.revoked_at, ISO_MS);
    assert.equal('token' in del.body, false);

    await assertUnauthorized(`Bearer ${second.body.token}`);
    await assertAccepted(ws.token);
    const list = await get('/v1/credentials', ws.token);
    assert.equal(list.body.data.find((c: any) => c.id === second.body.id)?.status, 'revoked');
  });

  it('a second DELETE answers the same record with 200', async () => {
    const ws = await workspace('revoke-twice');
    const second = await post('/v1/credentials', ws.token, {});
    assert.equal(second.status, 201, second.text);
    const first = await request(t, 'DELETE', `/v1/credentials/${second.body.id}`, { token: ws.token });
    assert.equal(first.status, 200, first.text);
    const again = await request(t, 'DELETE', `/v1/credentials/${second.body.id}`, { token: ws.token });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, first.body);
  });

  it('rotating a revoked credential is 404 not_found and gives no token', async () => {
    const ws = await workspace('revoke-rotate');
    const second = await post('/v1/credentials', ws.token, {});
    assert.equal(second.status, 201, second.text);
    assert.equal((await request(t, 'DELETE', `/v1/credentials/${second.body.id}`, { token: ws.token })).status, 200);
    const rot = await post(`/v1/credentials/${second.body.id}/rotate`, ws.token);
    assertProblem(rot, 404, 'not_found');
    assert.equal(rot.text.includes('"token"'), false);
    await assertUnauthorized(`Bearer ${second.body.token}`);
  });

  it('a credential that revokes itself: its own token is 401 from the next request', async () => {
    const ws = await workspace('revoke-self');
    const del = await request(t, 'DELETE', `/v1/credentials/${ws.credentialId}`, { token: ws.token });
    assert.equal(del.status, 200, del.text);
    assert.equal(del.body.status, 'revoked');
    await assertUnauthorized(`Bearer ${ws.token}`);
  });
});

describe('credentials are scoped to their workspace', () => {
  it("rotate or delete of another workspace's credential is 404 not_found, and that credential keeps working", async () => {
    const a = await workspace('cred-iso-a');
    const b = await workspace('cred-iso-b');
    const missing = await post(`/v1/credentials/${randomUUID()}/rotate`, b.token);
    assertProblem(missing, 404, 'not_found');

    const rot = await post(`/v1/credentials/${a.credentialId}/rotate`, b.token);
    assertProblem(rot, 404, 'not_found');
    assert.equal(rot.body.detail, missing.body.detail, "another workspace's id answers exactly as a missing id");
    const del = await request(t, 'DELETE', `/v1/credentials/${a.credentialId}`, { token: b.token });
    assertProblem(del, 404, 'not_found');

    await assertAccepted(a.token);
    const entry = (await get('/v1/credentials', a.token)).body.data.find((c: any) => c.id === a.credentialId);
    assert.equal(entry.status, 'active');
    assert.equal(entry.rotated_at, null);
    assert.equal(entry.revoked_at, null);
  });

  it("GET /v1/credentials shows only the caller's workspace", async () => {
    const a = await workspace('cred-list-a');
    const b = await workspace('cred-list-b');
    const listA = await get('/v1/credentials', a.token);
    const listB = await get('/v1/credentials', b.token);
    assert.ok(listA.body.data.some((c: any) => c.id === a.credentialId));
    assert.equal(
      listB.body.data.some((c: any) => c.id === a.credentialId),
      false,
    );
    for (const c of listB.body.data) assert.equal(c.workspace_id, b.id);
  });
});

describe('minting rules', () => {
  it('an integrator may create an integrator credential (no audience, or audience integrator): 201 with a working token', async () => {
    const ws = await workspace('mint-integrator');
    const plain = await post('/v1/credentials', ws.token, {});
    assert.equal(plain.status, 201, plain.text);
    assert.equal(plain.body.audience, 'integrator');
    assert.equal(plain.body.workspace_id, ws.id);
    assert.equal(plain.body.environment, 'sandbox');
    assert.equal(plain.body.status, 'active');
    assert.match(plain.body.id, UUID);
    await assertAccepted(plain.body.token);

    const named = await post('/v1/credentials', ws.token, { audience: 'integrator', name: 'checkout server' });
    assert.equal(named.status, 201, named.text);
    assert.equal(named.body.audience, 'integrator');
    assert.equal(named.body.name, 'checkout server');
    await assertAccepted(named.body.token);
    assert.equal((await get('/v1/workspace', named.body.token)).body.id, ws.id);
  });

  it('an integrator asking for audience admin or liquidity_provider is 403 forbidden, and nothing is created', async () => {
    const ws = await workspace('mint-escalate');
    const before = (await get('/v1/credentials', ws.token)).body.data.length;
    assertProblem(await post('/v1/credentials', ws.token, { audience: 'admin' }), 403, 'forbidden');
    assertProblem(await post('/v1/credentials', ws.token, { audience: 'liquidity_provider' }), 403, 'forbidden');
    assert.equal((await get('/v1/credentials', ws.token)).body.data.length, before);
  });

  it('the admin creates a workspace: 201 with the workspace and a first integrator token that works', async () => {
    const res = await post('/v1/admin/workspaces', t.adminToken, { name: 'acme' });
    assert.equal(res.status, 201, res.text);
    const { workspace: w, credential } = res.body;
    assert.match(w.id, UUID);
    assert.equal(w.name, 'acme');
    assert.equal(w.environment, 'sandbox');
    assert.equal(credential.audience, 'integrator');
    assert.equal(credential.workspace_id, w.id);
    assert.equal(typeof credential.token, 'string');
    await assertAccepted(credential.token);
    assert.equal((await get('/v1/workspace', credential.token)).body.id, w.id);
    const listed = (await get('/v1/admin/workspaces', t.adminToken)).body.data;
    assert.ok(listed.some((x: any) => x.id === w.id));
  });

  it('the admin mints a liquidity_provider credential in a workspace: 201, audience liquidity_provider, not an integrator', async () => {
    const ws = await workspace('lp-target');
    const res = await post(`/v1/admin/workspaces/${ws.id}/credentials`, t.adminToken, {
      audience: 'liquidity_provider',
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.audience, 'liquidity_provider');
    assert.equal(res.body.workspace_id, ws.id);
    assert.equal(typeof res.body.token, 'string');
    const claims = realClaims(res.body.token);
    assert.equal(claims.aud, 'liquidity_provider');
    assert.equal(claims.wsp, ws.id);
    assert.equal((await get('/v1/workspace', res.body.token)).body.id, ws.id);
    assertProblem(await get('/v1/collections', res.body.token), 403, 'forbidden');
  });

  it('the admin minting in an unknown workspace is 404 not_found', async () => {
    assertProblem(
      await post(`/v1/admin/workspaces/${randomUUID()}/credentials`, t.adminToken, { audience: 'integrator' }),
      404,
      'not_found',
    );
    assertProblem(
      await post('/v1/admin/workspaces/not-a-uuid/credentials', t.adminToken, { audience: 'integrator' }),
      404,
      'not_found',
    );
  });
});

describe('bootstrap credentials', () => {
  it("the harness's demo token works on the integrator routes", async () => {
    await assertAccepted(t.demoToken);
    assert.equal((await get('/v1/workspace', t.demoToken)).body.id, t.demoWorkspaceId);
  });

  it('tokens are ES256 with a kid; claims are sub, aud, wsp, env, iat, jti and no exp', async () => {
    const keys = await loadServiceKeys(t.db, t.box);
    for (const [token, aud] of [
      [t.demoToken, 'integrator'],
      [t.adminToken, 'admin'],
    ] as const) {
      const header = decodeProtectedHeader(token);
      assert.equal(header.alg, 'ES256');
      assert.equal(typeof header.kid, 'string');
      assert.ok((header.kid as string).length > 0);
      assert.equal(header.kid, keys.kid);
      const claims = decodeJwt(token);
      assert.deepEqual(Object.keys(claims).sort(), ['aud', 'env', 'iat', 'jti', 'sub', 'wsp']);
      assert.equal('exp' in claims, false);
      assert.equal(claims.aud, aud);
      assert.equal(claims.env, 'sandbox');
      assert.match(claims.sub as string, UUID);
      assert.match(claims.jti as string, UUID);
      assert.match(claims.wsp as string, UUID);
      assert.equal(typeof claims.iat, 'number');
      assert.ok((claims.iat as number) <= Math.ceil(Date.now() / 1000));
    }
    assert.equal(decodeJwt(t.demoToken).wsp, t.demoWorkspaceId);
  });

  it('the admin token lists the demo workspace', async () => {
    const res = await get('/v1/admin/workspaces', t.adminToken);
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.data.some((w: any) => w.id === t.demoWorkspaceId && w.name === 'demo'));
  });
});

describe('idempotent token-issuing routes', () => {
  it('a replay of a credential creation reaches only the credential that made it; anyone else in the workspace gets 422', async () => {
    const ws = await workspace('replay-scope');
    const other = await post('/v1/credentials', ws.token, { name: 'second integrator' });
    assert.equal(other.status, 201, other.text);
    const first = await request(t, 'POST', '/v1/credentials', {
      token: ws.token,
      body: { name: 'ci' },
      idempotencyKey: 'cred-key-1',
    });
    assert.equal(first.status, 201, first.text);
    const replay = await request(t, 'POST', '/v1/credentials', {
      token: ws.token,
      body: { name: 'ci' },
      idempotencyKey: 'cred-key-1',
    });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.text, first.text);
    const stranger = await request(t, 'POST', '/v1/credentials', {
      token: other.body.token,
      body: { name: 'ci' },
      idempotencyKey: 'cred-key-1',
    });
    assertProblem(stranger, 422, 'idempotency_key_reused');
    assert.equal(stranger.text.includes(first.body.token), false);
  });

  it('a caller who may not rotate a credential gets 403 even with the key of an earlier rotation', async () => {
    const admin2 = await post('/v1/credentials', t.adminToken, { audience: 'admin', name: 'admin rotated with a key' });
    const lp = await post('/v1/credentials', t.adminToken, { audience: 'liquidity_provider', name: 'partner 3' });
    const rotated = await request(t, 'POST', `/v1/credentials/${admin2.body.id}/rotate`, {
      token: admin2.body.token,
      idempotencyKey: 'rot-key-1',
    });
    assert.equal(rotated.status, 200, rotated.text);
    const replay = await request(t, 'POST', `/v1/credentials/${admin2.body.id}/rotate`, {
      token: lp.body.token,
      idempotencyKey: 'rot-key-1',
    });
    assertProblem(replay, 403, 'forbidden');
  });
});
