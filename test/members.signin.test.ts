// Dashboard members over HTTP, without a browser: a member is made with an argon2id hash (never the password) and a
// credential of its own; signing in by email and password opens the same kind of server-side session as the token
// form, behind the same one-time form value; a wrong email and a wrong password get the same answer; every attempt is
// in the audit log; what a member does through the pages is recorded under the member.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MembersService } from '../src/modules/members/members.service.js';
import { NO_WORKSPACE } from '../src/platform/audit.js';
import { createWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

const ORIGIN = 'http://dash.example.test:8080';
const PASSWORD = 'correct horse battery staple';

let t: TestApp;
let members: MembersService;
let owner: { id: string; workspaceId: string; email: string; credentialId: string };

before(async () => {
  t = await startTestApp({ PUBLIC_BASE_URL: ORIGIN });
  members = new MembersService(t.services.tokens, t.config.paymentsEnv);
  const ws = await createWorkspace(t, 'members-shop');
  const made = await members.create(t.db, ws.id, { email: 'Owner@Example.test', password: PASSWORD, role: 'owner' });
  assert.ok(made.ok, JSON.stringify(made));
  owner = {
    id: made.member.id,
    workspaceId: ws.id,
    email: made.member.email,
    credentialId: made.member.credential_id,
  };
});
after(async () => t.close());

async function drawForm(): Promise<{ csrf: string; cookie: string }> {
  const res = await fetch(`${t.baseUrl}/dashboard/sign-in`);
  assert.equal(res.status, 200);
  const page = await res.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('dashboard_signin='));
  assert.ok(csrf && setCookie);
  return { csrf, cookie: setCookie.split(';')[0] ?? '' };
}

function post(path: string, fields: Record<string, string>, cookie?: string): Promise<Response> {
  return fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': '203.0.113.9',
      ...(cookie ? { cookie } : {}),
    },
    body: new URLSearchParams(fields).toString(),
  });
}

/** Draws the form and posts email and password with its value; answers the response. */
async function signIn(email: string, password: string, next = '/dashboard/collections'): Promise<Response> {
  const form = await drawForm();
  return post('/dashboard/sign-in/password', { csrf: form.csrf, next, email, password }, form.cookie);
}

const sessionCookie = (res: Response): string | undefined =>
  res.headers
    .getSetCookie()
    .find((c) => c.startsWith('dashboard_session='))
    ?.split(';')[0];

interface AuditRow {
  workspace_id: string;
  actor_type: string;
  actor_id: string | null;
  action: string;
  object_type: string;
  object_id: string | null;
  status: number;
}

async function auditOf(res: Response): Promise<AuditRow[]> {
  const id = res.headers.get('x-request-id');
  assert.ok(id);
  return (
    await t.db.query<AuditRow>(
      `SELECT workspace_id, actor_type, actor_id::text, action, object_type, object_id, status
         FROM audit_events WHERE request_id = $1 ORDER BY occurred_at`,
      [id],
    )
  ).rows;
}

describe('members', () => {
  it('are stored with an argon2id hash of the password and a credential of their own in the workspace', async () => {
    const { rows } = await t.db.query<{ password_hash: string; role: string; audience: string; status: string }>(
      `SELECT m.password_hash, m.role, c.audience, c.status
         FROM members m JOIN credentials c ON c.workspace_id = m.workspace_id AND c.id = m.credential_id
        WHERE m.workspace_id = $1 AND m.id = $2`,
      [owner.workspaceId, owner.id],
    );
    const row = rows[0];
    assert.ok(row);
    assert.match(row.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.ok(!row.password_hash.includes(PASSWORD));
    assert.deepEqual([row.role, row.audience, row.status], ['owner', 'integrator', 'active']);
  });

  it('refuse a short password, a malformed email and an email already taken (in any case), making nothing', async () => {
    const count = async () => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM members')).rows[0]?.n;
    const credentialsBefore = (await t.db.query('SELECT 1 FROM credentials')).rowCount;
    const before = await count();
    const short = await members.create(t.db, owner.workspaceId, {
      email: 'a@b.test',
      password: 'short',
      role: 'viewer',
    });
    assert.deepEqual(short.ok ? 'made' : short.reason, 'invalid_password');
    const bad = await members.create(t.db, owner.workspaceId, { email: 'no-at', password: PASSWORD, role: 'viewer' });
    assert.deepEqual(bad.ok ? 'made' : bad.reason, 'invalid_email');
    const taken = await members.create(t.db, t.demoWorkspaceId, {
      email: 'OWNER@example.TEST',
      password: PASSWORD,
      role: 'viewer',
    });
    assert.deepEqual(taken.ok ? 'made' : taken.reason, 'email_taken');
    assert.equal(await count(), before);
    // The credential made in the same transaction was rolled back with the refused member.
    assert.equal((await t.db.query('SELECT 1 FROM credentials')).rowCount, credentialsBefore);
  });
});

describe('dashboard sign-in by email and password', () => {
  it('opens a server-side session for the member, under its credential, and goes where it was going', async () => {
    const res = await signIn('owner@EXAMPLE.test', PASSWORD);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/dashboard/collections');
    const cookie = sessionCookie(res);
    assert.ok(cookie, 'a session cookie');
    const set = res.headers.getSetCookie().find((c) => c.startsWith('dashboard_session=')) ?? '';
    assert.match(set, /HttpOnly/);
    assert.match(set, /SameSite=Lax/);
    const { rows } = await t.db.query<{ member_id: string; credential_id: string; workspace_id: string }>(
      'SELECT member_id::text, credential_id::text, workspace_id::text FROM dashboard_sessions WHERE member_id = $1',
      [owner.id],
    );
    assert.deepEqual(rows, [
      { member_id: owner.id, credential_id: owner.credentialId, workspace_id: owner.workspaceId },
    ]);
    const page = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie } });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /Owner@Example\.test \(owner\)/);
    assert.deepEqual(await auditOf(res), [
      {
        workspace_id: owner.workspaceId,
        actor_type: 'member',
        actor_id: owner.id,
        action: 'dashboard.sign_in',
        object_type: 'member',
        object_id: owner.id,
        status: 303,
      },
    ]);
  });

  it('answers a wrong password and an unknown email alike, opens nothing, and records both failures', async () => {
    const sessions = async () =>
      (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM dashboard_sessions')).rows[0]?.n;
    const before = await sessions();
    const wrong = await signIn(owner.email, 'not the password at all');
    const unknown = await signIn('nobody@example.test', PASSWORD);
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    const message = (page: string) => /<p class="error" role="alert" id="signin-error">([^<]*)<\/p>/.exec(page)?.[1];
    const [a, b] = [message(await wrong.text()), message(await unknown.text())];
    assert.ok(a);
    assert.equal(a, b, 'the same message for either');
    assert.doesNotMatch(a, /password is wrong|no member|unknown/i);
    assert.equal(sessionCookie(wrong), undefined);
    assert.equal(await sessions(), before);
    assert.deepEqual(await auditOf(wrong), [
      {
        workspace_id: owner.workspaceId,
        actor_type: 'anonymous',
        actor_id: null,
        action: 'dashboard.sign_in_failed',
        object_type: 'member',
        object_id: owner.id,
        status: 401,
      },
    ]);
    assert.deepEqual(await auditOf(unknown), [
      {
        workspace_id: NO_WORKSPACE,
        actor_type: 'anonymous',
        actor_id: null,
        action: 'dashboard.sign_in_failed',
        object_type: 'member',
        object_id: null,
        status: 401,
      },
    ]);
  });

  it('takes the same one-time form value as the token form: none, empty, made up or replayed is refused', async () => {
    const form = await drawForm();
    const fields = { email: owner.email, password: PASSWORD, next: '/dashboard' };
    const cases: [string, Record<string, string>, string | undefined][] = [
      ['no value, no cookie', fields, undefined],
      ['empty value, empty cookie', { ...fields, csrf: '' }, 'dashboard_signin='],
      ['a value made up for both', { ...fields, csrf: 'attacker' }, 'dashboard_signin=attacker'],
    ];
    for (const [what, body, cookie] of cases) {
      const res = await post('/dashboard/sign-in/password', body, cookie);
      assert.equal(res.status, 403, what);
      assert.match(await res.text(), /The sign-in form expired/, what);
      assert.equal(sessionCookie(res), undefined, what);
    }
    const first = await post('/dashboard/sign-in/password', { ...fields, csrf: form.csrf }, form.cookie);
    assert.equal(first.status, 303);
    const replay = await post('/dashboard/sign-in/password', { ...fields, csrf: form.csrf }, form.cookie);
    assert.equal(replay.status, 403, 'a value is accepted once');
  });

  it('keeps `next` under /dashboard', async () => {
    const res = await signIn(owner.email, PASSWORD, '/dashboard/../../x');
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/dashboard');
  });

  it('records what the member does through the pages under the member, with its credential’s access', async () => {
    // A developer: an owner would first be sent to set up a second factor (test/second-factor.test.ts).
    const made = await members.create(t.db, owner.workspaceId, {
      email: 'keys@example.test',
      password: PASSWORD,
      role: 'developer',
    });
    assert.ok(made.ok);
    const dev = { ...owner, id: made.member.id };
    const cookie = sessionCookie(await signIn('keys@example.test', PASSWORD));
    assert.ok(cookie);
    const page = await (await fetch(`${t.baseUrl}/dashboard/developers/keys`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
    assert.ok(csrf);
    const res = await post('/dashboard/developers/keys', { csrf, name: 'made by a member' }, cookie);
    assert.equal(res.status, 200);
    const { rows } = await t.db.query<AuditRow & { status: number }>(
      `SELECT workspace_id::text, actor_type, actor_id::text, action, status FROM audit_events
        WHERE request_id = $1 AND action = 'credential.create'`,
      [res.headers.get('x-request-id')],
    );
    assert.deepEqual(rows, [
      {
        workspace_id: dev.workspaceId,
        actor_type: 'member',
        actor_id: dev.id,
        action: 'credential.create',
        status: 201,
      },
    ]);
  });

  it('is refused once the member’s credential is revoked, and the member’s open sessions end', async () => {
    const made = await members.create(t.db, owner.workspaceId, {
      email: 'revoked@example.test',
      password: PASSWORD,
      role: 'developer',
    });
    assert.ok(made.ok);
    const cookie = sessionCookie(await signIn('revoked@example.test', PASSWORD));
    assert.ok(cookie);
    assert.equal((await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie }, redirect: 'manual' })).status, 200);
    await t.db.query(`UPDATE credentials SET status = 'revoked' WHERE workspace_id = $1 AND id = $2`, [
      owner.workspaceId,
      made.member.credential_id,
    ]);
    const after = await fetch(`${t.baseUrl}/dashboard`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(after.status, 303);
    const again = await signIn('revoked@example.test', PASSWORD);
    assert.equal(again.status, 401);
    assert.equal(sessionCookie(again), undefined);
  });
});
