// Invitations, password resets and password changes over HTTP: a link is stored by its hash, works once, expires,
// and is shown to whoever issued it (no mail server); accepting sets the invitee's password and makes the member with
// the invited role; an owner's reset link replaces a password and ends the member's sessions; a member's own change
// needs the current password and ends its other sessions; who may invite or reset is checked; every write is in the
// audit log under whoever made it.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MembersService, type Role } from '../src/modules/members/members.service.js';
import { createWorkspace, signInForm, startTestApp, type TestApp } from './helpers/harness.js';
import { codeFor, forgetLastStep, giveSecondFactor } from './helpers/second-factor.js';

const ORIGIN = 'http://dash.example.test:8080';
const PASSWORD = 'the owner passphrase';

let t: TestApp;
let members: MembersService;
const ids: Record<string, string> = {};
/** The TOTP secrets of the members that need a second factor (owners and admins). */
const secrets: Record<string, string> = {};

before(async () => {
  t = await startTestApp({ PUBLIC_BASE_URL: ORIGIN });
  members = new MembersService(t.services.tokens, t.config.paymentsEnv);
  for (const [email, role] of [
    ['owner@links.test', 'owner'],
    ['admin@links.test', 'admin'],
    ['dev@links.test', 'developer'],
    ['target@links.test', 'support'],
  ] as [string, Role][]) {
    const made = await members.create(t.db, t.demoWorkspaceId, { email, password: PASSWORD, role });
    assert.ok(made.ok);
    ids[email] = made.member.id;
    if (role === 'owner' || role === 'admin')
      secrets[email] = (await giveSecondFactor(t, t.demoWorkspaceId, { id: made.member.id, email })).secret;
  }
});
after(async () => t.close());

/** A fresh sign-in form: its one-time value and cookie. */
const drawForm = (path = '/dashboard/sign-in'): Promise<{ csrf: string; cookie: string; status: number }> =>
  signInForm(t.baseUrl, path);

function post(path: string, fields: Record<string, string>, cookie?: string): Promise<Response> {
  return fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  });
}

const sessionOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .find((c) => c.startsWith('dashboard_session='))
    ?.split(';')[0];

/** Signs in as a member, with a code when it has a second factor; the session cookie, or undefined when refused. */
async function signIn(email: string, password: string): Promise<string | undefined> {
  const form = await drawForm();
  const res = await post('/dashboard/sign-in/password', { csrf: form.csrf, email, password }, form.cookie);
  const secret = secrets[email];
  if (res.status !== 200 || secret === undefined) return sessionOf(res);
  const cookie = ['dashboard_signin', 'dashboard_second_step']
    .map(
      (name) =>
        res.headers
          .getSetCookie()
          .find((c) => c.startsWith(`${name}=`))
          ?.split(';')[0],
    )
    .join('; ');
  const csrf = /name="csrf" value="([^"]+)"/.exec(await res.text())?.[1] ?? '';
  await forgetLastStep(t, ids[email] ?? '');
  return sessionOf(await post('/dashboard/sign-in/second-factor', { csrf, code: codeFor(secret) }, cookie));
}

/** A session's CSRF token, from a page's form. */
async function csrfOf(cookie: string, path = '/dashboard/members'): Promise<string> {
  const page = await (await fetch(`${t.baseUrl}${path}`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  assert.ok(csrf, `a form on ${path}`);
  return csrf;
}

/** Posts a session's form and answers the response. */
async function act(cookie: string, path: string, fields: Record<string, string>): Promise<Response> {
  return post(path, { csrf: await csrfOf(cookie), ...fields }, cookie);
}

const linkIn = (page: string): string => {
  const link = new RegExp(`${ORIGIN}/dashboard/links/[0-9a-f-]{36}/[A-Za-z0-9_-]{43}`).exec(page)?.[0];
  assert.ok(link, 'the page shows the link');
  return link.slice(ORIGIN.length);
};

async function audited(res: Response): Promise<{ action: string; actor_type: string; actor_id: string | null }[]> {
  return (
    await t.db.query<{ action: string; actor_type: string; actor_id: string | null }>(
      `SELECT action, actor_type, actor_id::text FROM audit_events WHERE request_id = $1 AND action LIKE 'member.%'`,
      [res.headers.get('x-request-id')],
    )
  ).rows;
}

const sessionsOf = async (memberId: string): Promise<number> =>
  (await t.db.query('SELECT 1 FROM dashboard_sessions WHERE member_id = $1', [memberId])).rowCount ?? 0;

describe('invitations', () => {
  it('shows the inviter a one-time link stored by its hash; accepting it makes the member with the role and password', async () => {
    const owner = await signIn('owner@links.test', PASSWORD);
    assert.ok(owner);
    const res = await act(owner, '/dashboard/members/invitations', { email: 'New.Person@links.test', role: 'finance' });
    assert.equal(res.status, 200);
    const path = linkIn(await res.text());
    const token = path.split('/').pop() as string;
    assert.deepEqual(await audited(res), [
      { action: 'member.invite', actor_type: 'member', actor_id: ids['owner@links.test'] as string },
    ]);
    const { rows } = await t.db.query<{ purpose: string; role: string; hours: number }>(
      `SELECT purpose, role, round(extract(epoch FROM expires_at - created_at) / 3600)::int AS hours
         FROM member_links WHERE token_hash = $1`,
      [createHash('sha256').update(token).digest()],
    );
    assert.deepEqual(rows, [{ purpose: 'invitation', role: 'finance', hours: 72 }]);

    // A password too short is refused on the page and leaves the link usable.
    let form = await drawForm(path);
    assert.equal(form.status, 200);
    const short = await post(path, { csrf: form.csrf, password: 'short' }, form.cookie);
    assert.equal(short.status, 400);
    assert.match(await short.text(), /at least 12 characters/);
    // Without the form's one-time value, nothing happens.
    assert.equal((await post(path, { password: 'a good long password' })).status, 403);

    form = await drawForm(path);
    const joined = await post(path, { csrf: form.csrf, password: 'a good long password' }, form.cookie);
    assert.equal(joined.status, 303);
    assert.equal(joined.headers.get('location'), '/dashboard/sign-in');
    const made = await t.db.query<{ id: string; role: string }>(
      `SELECT id::text, role FROM members WHERE email = 'New.Person@links.test'`,
    );
    assert.equal(made.rows[0]?.role, 'finance');
    assert.deepEqual(await audited(joined), [
      { action: 'member.invitation_accept', actor_type: 'member', actor_id: made.rows[0]?.id as string },
    ]);
    assert.ok(await signIn('new.person@links.test', 'a good long password'));
    // Used once: the link is gone.
    assert.equal((await drawForm(path)).status, 404);
    form = await drawForm();
    assert.equal((await post(path, { csrf: form.csrf, password: 'another long password' }, form.cookie)).status, 404);
  });

  it('refuses an expired link, an email that is already a member, and an inviter whose role may not invite', async () => {
    const admin = await signIn('admin@links.test', PASSWORD);
    assert.ok(admin);
    const res = await act(admin, '/dashboard/members/invitations', { email: 'late@links.test', role: 'viewer' });
    const path = linkIn(await res.text());
    await t.db.query(
      `UPDATE member_links SET expires_at = now() - interval '1 second' WHERE email = 'late@links.test'`,
    );
    assert.equal((await drawForm(path)).status, 404);
    // The next link issued in the workspace deletes the expired one.
    assert.equal((await t.db.query(`SELECT 1 FROM member_links WHERE email = 'late@links.test'`)).rowCount, 1);
    await act(admin, '/dashboard/members/invitations', { email: 'later@links.test', role: 'viewer' });
    assert.equal((await t.db.query(`SELECT 1 FROM member_links WHERE email = 'late@links.test'`)).rowCount, 0);

    const taken = await act(admin, '/dashboard/members/invitations', { email: 'DEV@links.test', role: 'viewer' });
    assert.equal(taken.status, 409);
    assert.match(await taken.text(), /already belongs to a member/);

    const dev = await signIn('dev@links.test', PASSWORD);
    assert.ok(dev);
    const refused = await act(dev, '/dashboard/members/invitations', { email: 'x@links.test', role: 'owner' });
    assert.equal(refused.status, 403);
    assert.equal((await t.db.query(`SELECT 1 FROM member_links WHERE email = 'x@links.test'`)).rowCount, 0);
  });

  it('may be made from a session opened with a token (the break-glass path), recorded under its credential', async () => {
    // A workspace with no owner yet: the break-glass path is for its first owner.
    const fresh = await createWorkspace(t, 'Links break-glass');
    const form = await drawForm();
    const cookie = sessionOf(await post('/dashboard/sign-in', { csrf: form.csrf, token: fresh.token }, form.cookie));
    assert.ok(cookie);
    const res = await act(cookie, '/dashboard/members/invitations', { email: 'glass@links.test', role: 'owner' });
    assert.equal(res.status, 200);
    const [row] = await audited(res);
    assert.equal(row?.actor_type, 'dashboard');
  });

  it('a token no longer signs in once the workspace has an owner, and the refusal says how members sign in', async () => {
    const fresh = await createWorkspace(t, 'Links owned');
    const tokenSignIn = async () => {
      const form = await drawForm();
      return post('/dashboard/sign-in', { csrf: form.csrf, token: fresh.token }, form.cookie);
    };
    assert.ok(sessionOf(await tokenSignIn()), 'no owner yet: the token signs in');
    const made = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, fresh.id, {
      email: 'first-owner@links.test',
      password: PASSWORD,
      role: 'owner',
    });
    assert.ok(made.ok);
    const refused = await tokenSignIn();
    assert.equal(refused.status, 401);
    assert.equal(sessionOf(refused), undefined);
    assert.match(await refused.text(), /This workspace has an owner, so a token no longer signs in/);
    const { rows } = await t.db.query(
      `SELECT action, status FROM audit_events WHERE workspace_id = $1 AND action LIKE 'dashboard.sign_in%'
        ORDER BY occurred_at`,
      [fresh.id],
    );
    assert.deepEqual(
      rows.map((r) => [r.action, r.status]),
      [
        ['dashboard.sign_in', 303],
        ['dashboard.sign_in_failed', 401],
      ],
    );
  });
});

describe('passwords', () => {
  it('an owner’s reset link replaces the password once and ends every session of the member', async () => {
    const target = ids['target@links.test'] as string;
    assert.ok(await signIn('target@links.test', PASSWORD));
    assert.ok(await signIn('target@links.test', PASSWORD));
    assert.equal(await sessionsOf(target), 2);

    const admin = await signIn('admin@links.test', PASSWORD);
    assert.ok(admin);
    const refused = await act(admin, `/dashboard/members/${target}/password-reset`, {});
    assert.equal(refused.status, 403, 'an admin may not issue a reset link');

    const owner = await signIn('owner@links.test', PASSWORD);
    assert.ok(owner);
    for (const id of ['not-a-member', '00000000-0000-7000-8000-000000000000']) {
      const unknown = await act(owner, `/dashboard/members/${id}/password-reset`, {});
      assert.equal(unknown.status, 404, id);
      assert.match(await unknown.text(), /There is no such member/);
    }
    const res = await act(owner, `/dashboard/members/${target}/password-reset`, {});
    assert.equal(res.status, 200);
    const path = linkIn(await res.text());
    assert.deepEqual(await audited(res), [
      { action: 'member.password_reset_link', actor_type: 'member', actor_id: ids['owner@links.test'] as string },
    ]);
    const form = await drawForm(path);
    const set = await post(path, { csrf: form.csrf, password: 'a brand new passphrase' }, form.cookie);
    assert.equal(set.status, 303);
    assert.deepEqual(await audited(set), [{ action: 'member.password_reset', actor_type: 'member', actor_id: target }]);
    assert.equal(await sessionsOf(target), 0);
    assert.equal(await signIn('target@links.test', PASSWORD), undefined);
    assert.ok(await signIn('target@links.test', 'a brand new passphrase'));
    assert.equal((await drawForm(path)).status, 404, 'used once');
  });

  it('a member changes its own password with the current one; its other sessions end, this one stays', async () => {
    const dev = ids['dev@links.test'] as string;
    const other = await signIn('dev@links.test', PASSWORD);
    const here = await signIn('dev@links.test', PASSWORD);
    assert.ok(other && here);
    const csrf = await csrfOf(here, '/dashboard/account');
    const wrong = await post(
      '/dashboard/account/password',
      { csrf, current_password: 'not it at all', new_password: 'a new dev passphrase' },
      here,
    );
    assert.equal(wrong.status, 400);
    assert.match(await wrong.text(), /current password is not right/);
    assert.ok(await signIn('dev@links.test', PASSWORD), 'nothing changed');

    const res = await post(
      '/dashboard/account/password',
      { csrf, current_password: PASSWORD, new_password: 'a new dev passphrase' },
      here,
    );
    assert.equal(res.status, 303);
    assert.deepEqual(await audited(res), [{ action: 'member.password_change', actor_type: 'member', actor_id: dev }]);
    const still = await fetch(`${t.baseUrl}/dashboard/account`, { headers: { cookie: here }, redirect: 'manual' });
    assert.equal(still.status, 200, 'the session that changed it stays');
    const ended = await fetch(`${t.baseUrl}/dashboard/account`, { headers: { cookie: other }, redirect: 'manual' });
    assert.equal(ended.status, 303, 'the other session ended');
    assert.equal(await signIn('dev@links.test', PASSWORD), undefined);
    assert.ok(await signIn('dev@links.test', 'a new dev passphrase'));
  });
});
