// Dashboard sessions over HTTP, without a browser: who may sign in, the cookie's attributes, the CSRF checks, the
// idle limit, a revoked key ending its sessions, the purge, where sign-in may send you back to, and the headers
// every page carries.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { purgeDashboardSessions } from '../src/workers/retention.js';
import { IDLE_LIMIT_MS } from '../src/modules/dashboard/sessions.js';
import { liquidityProviderToken, request, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(async () => {
  await t.close();
});

/** The sign-in form's one-time value and the cookie that goes with it. */
async function signInForm(): Promise<{ csrf: string; cookie: string }> {
  const res = await fetch(`${t.baseUrl}/dashboard/sign-in`);
  assert.equal(res.status, 200);
  const html = await res.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('dashboard_signin='));
  assert.ok(csrf && cookie);
  return { csrf, cookie: cookie.split(';')[0] ?? '' };
}

async function postSignIn(token: string, next = '/dashboard'): Promise<Response> {
  const form = await signInForm();
  return fetch(`${t.baseUrl}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: form.cookie },
    body: new URLSearchParams({ csrf: form.csrf, token, next }).toString(),
  });
}

const sessionCookie = (res: Response): string | undefined =>
  res.headers
    .getSetCookie()
    .find((c) => c.startsWith('dashboard_session='))
    ?.split(';')[0];

describe('dashboard sessions', () => {
  it('signs in integrator and admin tokens with an HttpOnly, SameSite=Lax cookie scoped to /dashboard', async () => {
    for (const token of [t.demoToken, t.adminToken]) {
      const res = await postSignIn(token);
      assert.equal(res.status, 303);
      const raw = res.headers.getSetCookie().find((c) => c.startsWith('dashboard_session='));
      assert.ok(raw, 'a session cookie');
      assert.match(raw, /HttpOnly/);
      // Lax: a link from another site opens the page signed in; a cross-site POST carries no cookie (the CSRF token
      // is still required on every form).
      assert.match(raw, /SameSite=Lax/);
      assert.match(raw, /Path=\/dashboard/);
      // Sandbox over http here; production sets Secure.
      assert.doesNotMatch(raw, /Secure/);
      const home = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie: sessionCookie(res) ?? '' } });
      assert.equal(home.status, 200);
    }
  });

  it('refuses a liquidity provider token, a garbage token and a form without its one-time value', async () => {
    const lp = await postSignIn(await liquidityProviderToken(t));
    assert.equal(lp.status, 401);
    assert.match(await lp.text(), /liquidity_provider token cannot sign in/);
    assert.equal(sessionCookie(lp), undefined);
    const garbage = await postSignIn('eyJhbGciOi.garbage.token');
    assert.equal(garbage.status, 401);
    const noNonce = await fetch(`${t.baseUrl}/dashboard/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: 'x', token: t.demoToken }).toString(),
    });
    assert.equal(noNonce.status, 403);
    assert.equal(sessionCookie(noNonce), undefined);
  });

  it('sends you back only to a dashboard page after signing in', async () => {
    const cases: [string, string][] = [
      ['/dashboard/collections?status=failed', '/dashboard/collections?status=failed'],
      ['https://evil.example/dashboard', '/dashboard'],
      ['//evil.example/dashboard', '/dashboard'],
      ['/dashboard/..//evil.example', '/dashboard'],
      ['/v1/collections', '/dashboard'],
    ];
    for (const [next, expected] of cases) {
      const res = await postSignIn(t.demoToken, next);
      assert.equal(res.headers.get('location'), expected, next);
    }
  });

  it('refuses a form posted without the session’s CSRF token', async () => {
    const cookie = sessionCookie(await postSignIn(t.demoToken)) ?? '';
    const forged = await fetch(`${t.baseUrl}/dashboard/sign-out`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: 'csrf=guess',
    });
    assert.equal(forged.status, 403);
    const still = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(still.status, 200, 'the session survived the forged sign-out');
  });

  it('ends a session after 12 idle hours, and every session of a revoked key at once; the purge deletes idle ones', async () => {
    const idle = sessionCookie(await postSignIn(t.demoToken)) ?? '';
    assert.equal((await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie: idle } })).status, 200);
    const { rows: before } = await t.db.query('SELECT count(*)::int AS n FROM dashboard_sessions');
    await t.db.query(
      `UPDATE dashboard_sessions SET last_seen_at = now() - make_interval(secs => $1)
       WHERE last_seen_at = (SELECT max(last_seen_at) FROM dashboard_sessions)`,
      [IDLE_LIMIT_MS / 1000 + 60],
    );
    const expired = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie: idle }, redirect: 'manual' });
    assert.equal(expired.status, 303);
    const { rows: afterIdle } = await t.db.query('SELECT count(*)::int AS n FROM dashboard_sessions');
    assert.equal(afterIdle[0].n, before[0].n - 1, 'an idle session is deleted, not only refused');

    const key = await request(t, 'POST', '/v1/credentials', {
      token: t.demoToken,
      body: { name: 'to revoke' },
      idempotencyKey: `k-${Date.now()}`,
    });
    assert.equal(key.status, 201, key.text);
    const cookie = sessionCookie(await postSignIn(key.body.token)) ?? '';
    assert.equal((await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie } })).status, 200);
    const revoked = await request(t, 'DELETE', `/v1/credentials/${key.body.id}`, { token: t.demoToken });
    assert.equal(revoked.status, 200, revoked.text);
    const after = await fetch(`${t.baseUrl}/dashboard?page=2`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(after.status, 303);
    assert.equal(after.headers.get('location'), '/dashboard/sign-in?next=%2Fdashboard%3Fpage%3D2');

    await t.db.query(`UPDATE dashboard_sessions SET last_seen_at = now() - interval '13 hours'`);
    const purged = await purgeDashboardSessions(t.db, 2);
    assert.ok(purged.deleted >= 5, `purged ${purged.deleted}`);
    const { rows } = await t.db.query('SELECT count(*)::int AS n FROM dashboard_sessions');
    assert.equal(rows[0].n, 0);
  });

  it('serves pages with a strict CSP, no caching and no framing, and keeps them out of the API document', async () => {
    const res = await fetch(`${t.baseUrl}/dashboard/sign-in`);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[^']+'/);
    assert.match(csp, /form-action 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    // The inline style and script are exactly what the CSP admits by hash (a formatter's whitespace would break it).
    const page = await res.text();
    for (const [element, directive] of [
      ['style', 'style-src'],
      ['script', 'script-src'],
    ] as const) {
      const body = new RegExp(`<${element}>([\\s\\S]*?)</${element}>`).exec(page)?.[1] ?? '';
      const hash = createHash('sha256').update(body).digest('base64');
      assert.ok(csp.includes(`${directive} 'sha256-${hash}'`), `the page's ${element} is not the one the CSP admits`);
    }
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    const doc = await request(t, 'GET', '/v1/openapi.json');
    assert.ok(!Object.keys(doc.body.paths).some((p) => p.startsWith('/dashboard')));
    const missing = await fetch(`${t.baseUrl}/dashboard/no-such-page`);
    assert.equal(missing.status, 404);
    assert.match(missing.headers.get('content-type') ?? '', /text\/html/);
  });
});
