// The dashboard's sign-in over HTTP, without a browser: the sign-in form's one-time value is a
// server-side record taken once (empty, missing, made-up, replayed, raced and expired values are refused), the way
// back after sign-in stays under /dashboard whatever `next` says, sign-out ends the session server-side, and a request
// that arrives without the session cookie (as a cross-site one does) clears nothing and ends nothing.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/harness.js';

/** The service's own origin as configured: `next` may name it, and nothing else. */
const ORIGIN = 'http://dash.example.test:8080';

let t: TestApp;

before(async () => {
  t = await startTestApp({ PUBLIC_BASE_URL: ORIGIN });
});
after(async () => {
  await t.close();
});

interface SignInForm {
  /** The form's hidden one-time value. */
  csrf: string;
  /** `dashboard_signin=<value>`, as the browser would send it back. */
  cookie: string;
  /** The whole Set-Cookie line, attributes included. */
  setCookie: string;
  /** The form's hidden `next`. */
  next: string;
}

async function drawForm(query = ''): Promise<SignInForm> {
  const res = await fetch(`${t.baseUrl}/dashboard/sign-in${query}`);
  assert.equal(res.status, 200);
  const page = await res.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  const next = /name="next" value="([^"]*)"/.exec(page)?.[1];
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('dashboard_signin='));
  assert.ok(csrf && next !== undefined && setCookie);
  return { csrf, cookie: setCookie.split(';')[0] ?? '', setCookie, next: next.replaceAll('&amp;', '&') };
}

/** Posts the sign-in form with exactly these fields (undefined: left out) and this Cookie header (undefined: none). */
function postSignIn(fields: Record<string, string | undefined>, cookie?: string): Promise<Response> {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) body.set(name, value);
  return fetch(`${t.baseUrl}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie === undefined ? {} : { cookie }) },
    body: body.toString(),
  });
}

/** A session cookie (`dashboard_session=<id>`) from a regular sign-in. */
async function signedIn(next = '/dashboard'): Promise<{ cookie: string; res: Response }> {
  const form = await drawForm();
  const res = await postSignIn({ csrf: form.csrf, token: t.demoToken, next }, form.cookie);
  assert.equal(res.status, 303);
  const cookie = setCookieOf(res, 'dashboard_session')?.split(';')[0];
  assert.ok(cookie, 'a session cookie');
  return { cookie, res };
}

const setCookieOf = (res: Response, name: string): string | undefined =>
  res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));

const sessionCount = async (): Promise<number> =>
  (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM dashboard_sessions')).rows[0]?.n ?? -1;

const nonceHash = (value: string): Buffer => createHash('sha256').update(value).digest();

/** A sign-in refused for its form's value: 403, the form again, no session opened. */
async function assertRefusedForm(res: Response, sessionsBefore: number, what: string): Promise<void> {
  assert.equal(res.status, 403, what);
  assert.match(await res.text(), /The sign-in form expired/, what);
  assert.equal(setCookieOf(res, 'dashboard_session'), undefined, `${what}: no session cookie`);
  assert.equal(await sessionCount(), sessionsBefore, `${what}: no session row`);
}

describe('dashboard sign-in: the form’s one-time value is a server-side record', () => {
  it('stores each drawn form’s value by its hash, for an hour, and sets it in a Strict cookie', async () => {
    const form = await drawForm();
    assert.match(form.setCookie, /HttpOnly/);
    assert.match(form.setCookie, /SameSite=Strict/);
    assert.match(form.setCookie, /Path=\/dashboard/);
    assert.match(form.setCookie, /Max-Age=3600/);
    assert.equal(form.cookie, `dashboard_signin=${form.csrf}`);
    const { rows } = await t.db.query<{ seconds: number }>(
      `SELECT extract(epoch FROM expires_at - now())::int AS seconds FROM dashboard_signin_nonces WHERE nonce_hash = $1`,
      [nonceHash(form.csrf)],
    );
    assert.equal(rows.length, 1, 'one row for the value, keyed by its SHA-256');
    assert.ok(rows[0] && rows[0].seconds > 3500 && rows[0].seconds <= 3600, `expires in ${rows[0]?.seconds} s`);
  });

  it('refuses an empty or missing value, with or without a cookie to match', async () => {
    const own = await drawForm();
    const cases: [string, Record<string, string | undefined>, string | undefined][] = [
      ['empty field, no cookie (the probe’s case)', { csrf: '' }, undefined],
      ['no field, no cookie', {}, undefined],
      ['empty field, empty cookie', { csrf: '' }, 'dashboard_signin='],
      ['no field, empty cookie', {}, 'dashboard_signin='],
      ['a real value in the field, no cookie (a form the attacker drew for himself)', { csrf: own.csrf }, undefined],
      ['a real value in the cookie, no field', {}, own.cookie],
    ];
    for (const [what, fields, cookie] of cases) {
      const before = await sessionCount();
      await assertRefusedForm(await postSignIn({ ...fields, token: t.demoToken }, cookie), before, what);
    }
  });

  it('refuses a value the attacker chose for both the cookie and the form: no record exists for it', async () => {
    const chosen = 'attacker-chosen-value-0123456789abcdefghijk';
    const before = await sessionCount();
    const res = await postSignIn({ csrf: chosen, token: t.demoToken }, `dashboard_signin=${chosen}`);
    await assertRefusedForm(res, before, 'attacker-chosen value');
  });

  it('refuses a real value in the form that is not the one in this browser’s cookie', async () => {
    const victim = await drawForm();
    const attacker = await drawForm();
    const before = await sessionCount();
    await assertRefusedForm(
      await postSignIn({ csrf: attacker.csrf, token: t.demoToken }, victim.cookie),
      before,
      'another browser’s value',
    );
  });

  it('accepts a value once: posting it again is refused, even when its first post had a bad token', async () => {
    const form = await drawForm();
    const first = await postSignIn({ csrf: form.csrf, token: t.demoToken }, form.cookie);
    assert.equal(first.status, 303);
    assert.ok(setCookieOf(first, 'dashboard_session'));
    const before = await sessionCount();
    await assertRefusedForm(
      await postSignIn({ csrf: form.csrf, token: t.demoToken }, form.cookie),
      before,
      'replay after success',
    );

    const other = await drawForm();
    const badToken = await postSignIn({ csrf: other.csrf, token: 'not-a-token' }, other.cookie);
    assert.equal(badToken.status, 401);
    await assertRefusedForm(
      await postSignIn({ csrf: other.csrf, token: t.demoToken }, other.cookie),
      before,
      'replay after a refused token',
    );
    const { rows } = await t.db.query('SELECT 1 FROM dashboard_signin_nonces WHERE nonce_hash = ANY($1)', [
      [nonceHash(form.csrf), nonceHash(other.csrf)],
    ]);
    assert.equal(rows.length, 0, 'both values are gone from the database');
  });

  it('two posts of one value at once: exactly one signs in', async () => {
    const form = await drawForm();
    const before = await sessionCount();
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => postSignIn({ csrf: form.csrf, token: t.demoToken }, form.cookie)),
    );
    assert.deepEqual(answers.map((r) => r.status).sort(), [303, 403, 403, 403]);
    assert.equal(await sessionCount(), before + 1);
  });

  it('refuses an expired value, and deletes it', async () => {
    const form = await drawForm();
    await t.db.query(
      `UPDATE dashboard_signin_nonces SET expires_at = now() - interval '1 second' WHERE nonce_hash = $1`,
      [nonceHash(form.csrf)],
    );
    const before = await sessionCount();
    await assertRefusedForm(await postSignIn({ csrf: form.csrf, token: t.demoToken }, form.cookie), before, 'expired');
    const { rows } = await t.db.query('SELECT 1 FROM dashboard_signin_nonces WHERE nonce_hash = $1', [
      nonceHash(form.csrf),
    ]);
    assert.equal(rows.length, 0);
  });

  it('deletes expired values of forms never posted as new forms are drawn', async () => {
    await t.db.query('DELETE FROM dashboard_signin_nonces');
    await t.db.query(
      `INSERT INTO dashboard_signin_nonces (nonce_hash, expires_at)
       SELECT sha256(i::text::bytea), now() - interval '1 minute' FROM generate_series(1, 15) i`,
    );
    await drawForm();
    const { rows } = await t.db.query<{ expired: number; live: number }>(
      `SELECT count(*) FILTER (WHERE expires_at < now())::int AS expired, count(*) FILTER (WHERE expires_at >= now())::int AS live
       FROM dashboard_signin_nonces`,
    );
    assert.deepEqual(rows[0], { expired: 5, live: 1 }, 'ten expired rows went with the new form');
  });
});

describe('dashboard sign-in: the way back (`next`) is a page under /dashboard after normalisation', () => {
  const hostile = [
    '/dashboard/../../x',
    '/dashboard/..',
    '/dashboard/../v1/collections',
    '/dashboard/collections/../../v1/balances',
    '/dashboard/%2e%2e/x',
    '/dashboard/%2E%2E/%2e%2e/x',
    '/dashboard/.%2e/x',
    '/dashboard/..%2fx',
    '/dashboard%2f..%2fv1',
    '/dashboard/..%2F..%2Fv1%2Fcollections',
    '/dashboard/%5c..%5cx',
    '/dashboard/%252e%252e/x',
    '/dashboard\\..\\x',
    '/dashboard/\\evil.example',
    '/dashboard/\\collections',
    '/dashboard/col\tlections',
    '/dashboard/..\\evil.example',
    '/\\evil.example/dashboard',
    '\\\\evil.example/dashboard',
    '//evil.example/dashboard/collections',
    '///evil.example/dashboard/collections',
    '/dashboard/..//evil.example',
    '\t//evil.example/dashboard/collections',
    '/\t/evil.example/dashboard',
    ' /dashboard/../x',
    'https://evil.example/dashboard/collections',
    'http://dash.example.test.evil.example/dashboard/collections',
    'http://dash.example.test:8081/dashboard/collections',
    'https://dash.example.test:8080/dashboard/collections',
    'http://dash.example.test:8080@evil.example/dashboard/collections',
    'javascript:alert(1)//dashboard',
    'data:text/html,<script>alert(1)</script>',
    '/dashboardx',
    '/dashboard-evil/x',
    '/v1/collections',
    'dashboard',
    '',
  ];

  it('sends every hostile value to /dashboard, on the form and after signing in', async () => {
    for (const next of hostile) {
      const form = await drawForm(`?next=${encodeURIComponent(next)}`);
      assert.equal(form.next, '/dashboard', `the form's next for ${JSON.stringify(next)}`);
      const res = await postSignIn({ csrf: form.csrf, token: t.demoToken, next }, form.cookie);
      assert.equal(res.status, 303);
      assert.equal(res.headers.get('location'), '/dashboard', JSON.stringify(next));
    }
  });

  it('keeps a dashboard page, normalised, with its query', async () => {
    const cases: [string, string][] = [
      ['/dashboard', '/dashboard'],
      ['/dashboard/', '/dashboard/'],
      ['/dashboard/collections?status=failed&q=a%2Fb', '/dashboard/collections?status=failed&q=a%2Fb'],
      ['/dashboard/./collections', '/dashboard/collections'],
      ['/dashboard/refunds/../payouts', '/dashboard/payouts'],
      [`${ORIGIN}/dashboard/payouts?page=2`, '/dashboard/payouts?page=2'],
      ['/dashboard/collections#latest', '/dashboard/collections'],
    ];
    for (const [next, expected] of cases) {
      const form = await drawForm();
      const res = await postSignIn({ csrf: form.csrf, token: t.demoToken, next }, form.cookie);
      assert.equal(res.headers.get('location'), expected, next);
    }
  });

  it('a signed-in visit to the sign-in page goes to the normalised way back too', async () => {
    const { cookie } = await signedIn();
    for (const [next, expected] of [
      ['/dashboard/../../x', '/dashboard'],
      ['/dashboard/refunds', '/dashboard/refunds'],
    ]) {
      const res = await fetch(`${t.baseUrl}/dashboard/sign-in?next=${encodeURIComponent(next ?? '')}`, {
        headers: { cookie },
        redirect: 'manual',
      });
      assert.equal(res.status, 303);
      assert.equal(res.headers.get('location'), expected, next);
    }
  });
});

describe('dashboard sign-out, and requests without the session cookie', () => {
  /** The session's CSRF token, from the sign-out form of a page. */
  async function csrfOf(cookie: string): Promise<string> {
    const page = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie } });
    assert.equal(page.status, 200);
    const csrf = /action="\/dashboard\/sign-out"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)"/.exec(
      await page.text(),
    )?.[1];
    assert.ok(csrf, 'the sign-out form carries the CSRF token');
    return csrf;
  }

  it('signs out with the CSRF token: the session row is deleted, the cookie cleared, the old cookie refused', async () => {
    const { cookie } = await signedIn();
    const idHash = createHash('sha256').update(cookie.slice('dashboard_session='.length)).digest();
    const csrf = await csrfOf(cookie);
    const out = await fetch(`${t.baseUrl}/dashboard/sign-out`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({ csrf }).toString(),
    });
    assert.equal(out.status, 303);
    assert.equal(out.headers.get('location'), '/dashboard/sign-in');
    const cleared = setCookieOf(out, 'dashboard_session');
    assert.ok(cleared, 'the answer clears the session cookie');
    assert.match(cleared, /^dashboard_session=;/);
    assert.match(cleared, /Expires=Thu, 01 Jan 1970/);
    assert.match(cleared, /Path=\/dashboard/);
    const { rows } = await t.db.query('SELECT 1 FROM dashboard_sessions WHERE id_hash = $1', [idHash]);
    assert.equal(rows.length, 0, 'the session is gone server-side');
    // A copy of the old cookie (kept by an attacker, or a browser that missed the answer) opens nothing.
    const again = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(again.status, 303);
    assert.equal(again.headers.get('location'), '/dashboard/sign-in?next=%2Fdashboard');
  });

  it('a request without the session cookie (as a cross-site one arrives) clears nothing and ends no session', async () => {
    const { cookie } = await signedIn();
    const before = await sessionCount();
    // A link followed from another site with a Strict cookie, an image, a frame: no cookie comes with it.
    const page = await fetch(`${t.baseUrl}/dashboard/collections`, { redirect: 'manual' });
    assert.equal(page.status, 303);
    assert.equal(page.headers.get('location'), '/dashboard/sign-in?next=%2Fdashboard%2Fcollections');
    assert.equal(setCookieOf(page, 'dashboard_session'), undefined, 'no Set-Cookie for the session');
    // A sign-out posted from another site: the Lax cookie does not come with it either.
    const forged = await fetch(`${t.baseUrl}/dashboard/sign-out`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'csrf=',
    });
    assert.equal(forged.status, 303);
    assert.equal(setCookieOf(forged, 'dashboard_session'), undefined, 'no Set-Cookie for the session');
    assert.equal(await sessionCount(), before, 'no session ended');
    const still = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(still.status, 200, 'the session still works');
  });

  it('a cookie naming no live session is cleared', async () => {
    const res = await fetch(`${t.baseUrl}/dashboard`, {
      headers: { cookie: 'dashboard_session=no-such-session' },
      redirect: 'manual',
    });
    assert.equal(res.status, 303);
    assert.match(setCookieOf(res, 'dashboard_session') ?? '', /^dashboard_session=;.*Expires=Thu, 01 Jan 1970/);
  });
});
