// Roles enforced, route by route: the permission matrix (src/modules/members/permissions.ts) is what the API's auth
// hook applies to a member's token (even copied out of its session) and what the dashboard applies to its pages and
// forms; an API key keeps its whole access. Owners and admins manage members (role changes and removals end every
// session of the member at once; the last owner stays), and every such write is in the audit log.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { MembersService, ROLES, type Role } from '../src/modules/members/members.service.js';
import { permits, ROLE_PERMISSIONS } from '../src/modules/members/permissions.js';
import { PERMISSIONS } from '../src/platform/access.js';
import { assertProblem, createWorkspace, request, startTestApp, type TestApp } from './helpers/harness.js';
import { codeFor, forgetLastStep, giveSecondFactor } from './helpers/second-factor.js';

const PASSWORD = 'correct horse battery staple';
const ID = '01890a5d-ac96-774b-bcce-b302099a8057';
const concrete = (url: string): string =>
  url.replace(/:[A-Za-z]+/g, (p) =>
    p === ':market' ? 'KE' : p === ':rail' ? 'mpesa' : p === ':provider' ? 'sandbox' : ID,
  );

let t: TestApp;
let members: MembersService;
let workspace: { id: string; token: string };
/** One member of each role in `workspace`, with the API token its sessions call with. */
const team = {} as Record<Role, { id: string; email: string; token: string }>;

before(async () => {
  t = await startTestApp();
  members = new MembersService(t.services.tokens, t.config.paymentsEnv);
  workspace = await createWorkspace(t, 'roles-shop');
  for (const role of ROLES) {
    const email = `${role}@roles.test`;
    const made = await members.create(t.db, workspace.id, { email, password: PASSWORD, role });
    assert.ok(made.ok, JSON.stringify(made));
    const signedIn = await members.authenticate(t.db, email, PASSWORD);
    assert.ok(signedIn.ok);
    team[role] = { id: made.member.id, email, token: signedIn.session.token };
  }
});
after(async () => t.close());

async function drawForm(): Promise<{ csrf: string; cookie: string }> {
  const res = await fetch(`${t.baseUrl}/dashboard/sign-in`);
  const page = await res.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('dashboard_signin='));
  assert.ok(csrf && setCookie);
  return { csrf, cookie: setCookie.split(';')[0] ?? '' };
}

function post(path: string, fields: Record<string, string>, cookie?: string, agent = 'roles-test'): Promise<Response> {
  return fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': agent,
      ...(cookie ? { cookie } : {}),
    },
    body: new URLSearchParams(fields).toString(),
  });
}

/** A member's dashboard session: its cookie and the CSRF token its forms carry. */
interface Browser {
  cookie: string;
  csrf: string;
}

/** An owner's or admin's TOTP secret, by member id: owners and admins sign in with a second factor. */
const secrets = new Map<string, string>();

/** The secret of the member's second factor, given first if its role needs one; undefined for other roles. */
async function secondFactorOf(email: string): Promise<string | undefined> {
  const { rows } = await t.db.query<{ id: string; workspace_id: string; role: string }>(
    'SELECT id, workspace_id, role FROM members WHERE email = $1',
    [email],
  );
  const m = rows[0];
  if (!m || (m.role !== 'owner' && m.role !== 'admin')) return undefined;
  let secret = secrets.get(m.id);
  if (secret === undefined) {
    secret = (await giveSecondFactor(t, m.workspace_id, { id: m.id, email })).secret;
    secrets.set(m.id, secret);
  }
  // Each sign-in here stands for one minutes apart (a code of a step already used is refused as a replay).
  await forgetLastStep(t, m.id);
  return secret;
}

/** The cookies a browser holds after `res`, on top of `cookie`. */
function cookiesAfter(cookie: string, res: Response): string {
  const jar = new Map(cookie.split('; ').map((c) => c.split('=') as [string, string]));
  for (const c of res.headers.getSetCookie()) {
    const [name = '', value = ''] = (c.split(';')[0] ?? '').split('=');
    jar.set(name, value);
  }
  return [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
}

async function signIn(email: string, agent = 'roles-test'): Promise<Browser> {
  const secret = await secondFactorOf(email);
  const form = await drawForm();
  let res = await post(
    '/dashboard/sign-in/password',
    { csrf: form.csrf, next: '/dashboard', email, password: PASSWORD },
    form.cookie,
    agent,
  );
  if (secret !== undefined) {
    assert.equal(res.status, 200, `${email} is asked for a code`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await res.text())?.[1] ?? '';
    res = await post(
      '/dashboard/sign-in/second-factor',
      { csrf, code: codeFor(secret), next: '/dashboard' },
      cookiesAfter(form.cookie, res),
      agent,
    );
  }
  assert.equal(res.status, 303, `${email} signs in`);
  const cookie = res.headers
    .getSetCookie()
    .find((c) => c.startsWith('dashboard_session='))
    ?.split(';')[0];
  assert.ok(cookie);
  const page = await get('/dashboard/account', cookie);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1];
  assert.ok(csrf);
  return { cookie, csrf };
}

const get = (path: string, cookie: string): Promise<Response> =>
  fetch(`${t.baseUrl}${path}`, { redirect: 'manual', headers: { cookie } });

/** The ids of the workspace's owners. */
const owners = async (): Promise<string[]> =>
  (
    await t.db.query<{ id: string }>(`SELECT id::text FROM members WHERE workspace_id = $1 AND role = 'owner'`, [
      workspace.id,
    ])
  ).rows.map((r) => r.id);

/** A form's answer as the test compares it: its status, and for a redirect where it leads (without the query). */
const outcome = (res: Response): string =>
  res.status === 303 ? `303 ${(res.headers.get('location') ?? '').split('?')[0]}` : String(res.status);

const act = (b: Browser, path: string, fields: Record<string, string> = {}): Promise<Response> =>
  post(path, { csrf: b.csrf, ...fields }, b.cookie);

const sessionsOf = async (memberId: string): Promise<number> =>
  (
    await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM dashboard_sessions WHERE member_id = $1', [
      memberId,
    ])
  ).rows[0]?.n ?? -1;

async function auditOf(
  res: Response,
): Promise<{ actor_id: string; action: string; object_id: string; status: number }[]> {
  const id = res.headers.get('x-request-id');
  assert.ok(id);
  return (
    await t.db.query<{ actor_id: string; action: string; object_id: string; status: number }>(
      `SELECT actor_id::text, action, object_id, status FROM audit_events WHERE request_id = $1`,
      [id],
    )
  ).rows;
}

/** Makes a member of `role` for one test, with a token for it. */
async function newMember(role: Role, email: string): Promise<{ id: string; email: string; token: string }> {
  const made = await members.create(t.db, workspace.id, { email, password: PASSWORD, role });
  assert.ok(made.ok, JSON.stringify(made));
  const signedIn = await members.authenticate(t.db, email, PASSWORD);
  assert.ok(signedIn.ok);
  return { id: made.member.id, email, token: signedIn.session.token };
}

describe('the permission matrix', () => {
  it('gives each role what the issue asks: owner all, admin all but ownership, the others their areas, read for all', () => {
    assert.deepEqual([...ROLE_PERMISSIONS.owner].sort(), [...PERMISSIONS].sort());
    assert.deepEqual([...ROLE_PERMISSIONS.admin].sort(), PERMISSIONS.filter((p) => p !== 'ownership').sort());
    assert.deepEqual([...ROLE_PERMISSIONS.developer].sort(), ['events', 'keys', 'read', 'sandbox', 'webhooks']);
    assert.deepEqual([...ROLE_PERMISSIONS.finance].sort(), ['exports', 'payouts', 'read', 'reports']);
    assert.deepEqual([...ROLE_PERMISSIONS.support].sort(), ['collections', 'read', 'refunds']);
    assert.deepEqual([...ROLE_PERMISSIONS.viewer].sort(), ['read', 'reports']);
  });

  it('is the table docs/guides/dashboard.md shows, cell for cell', async () => {
    const guide = await readFile('docs/guides/dashboard.md', 'utf8');
    const header = guide.split('\n').find((l) => l.startsWith('| Permission |'));
    assert.ok(header, 'the guide has the matrix');
    const columns = header
      .split('|')
      .map((c) => c.trim())
      .filter(Boolean)
      .slice(2);
    assert.deepEqual(columns, [...ROLES]);
    for (const permission of PERMISSIONS) {
      const line = guide.split('\n').find((l) => l.startsWith(`| \`${permission}\` |`));
      assert.ok(line, `the guide has a row for ${permission}`);
      const cells = line
        .split('|')
        .map((c) => c.trim())
        .slice(3, 3 + ROLES.length);
      assert.deepEqual(
        cells,
        ROLES.map((r) => (permits(r, permission) ? 'yes' : '')),
        `the guide's row for ${permission}`,
      );
    }
  });
});

describe("the API refuses what a member's role does not permit", () => {
  it('on every route a workspace token can call: 403 forbidden without the permission, not 403 with it', async () => {
    let refused = 0;
    let allowed = 0;
    for (const [key, permission] of t.app.routePermissions) {
      const rule = t.app.accessRules.get(key);
      if (rule === 'public' || !rule?.includes('integrator')) continue;
      const [method, url] = key.split(' ') as [string, string];
      for (const role of ROLES) {
        const res = await request(t, method, concrete(url), {
          token: team[role].token,
          ...(method === 'POST' || method === 'PATCH' ? { body: {} } : {}),
        });
        if (permits(role, permission)) {
          assert.ok(
            !(res.status === 403 && res.body?.code === 'forbidden'),
            `${role} may ${key} (${permission}) but got ${res.status}`,
          );
          allowed += 1;
        } else {
          assertProblem(res, 403, 'forbidden');
          assert.match(res.body.detail, new RegExp(`\`${permission}\``), key);
          refused += 1;
        }
      }
    }
    assert.ok(refused >= 60 && allowed >= 200, `refused ${refused}, allowed ${allowed}`);
  });

  it('refuses each role the writes of the others, by name (the matrix read independently of the code)', async () => {
    const refund = `/v1/collections/${ID}/refund`;
    const cases: [Role, string, string, boolean][] = [
      ['viewer', 'POST', refund, false],
      ['developer', 'POST', refund, false],
      ['support', 'POST', refund, true],
      ['finance', 'POST', '/v1/credentials', false],
      ['support', 'POST', '/v1/credentials', false],
      ['developer', 'POST', '/v1/credentials', true],
      ['developer', 'GET', '/v1/reports/settlement?date=2026-01-01&currency=KES', false],
      ['viewer', 'GET', '/v1/reports/settlement?date=2026-01-01&currency=KES', true],
      ['support', 'POST', '/api/transactions/commit', false],
      ['finance', 'POST', '/api/transactions/commit', true],
      ['support', 'POST', '/v1/payouts/bulk', false],
      ['finance', 'POST', '/v1/payouts/bulk', true],
      ['viewer', 'POST', '/v1/webhooks/endpoints', false],
      ['admin', 'PATCH', '/v1/workspace', true],
      ['developer', 'PATCH', '/v1/workspace', false],
    ];
    for (const [role, method, url, may] of cases) {
      const res = await request(t, method, url, {
        token: team[role].token,
        ...(method === 'GET' ? {} : { body: {} }),
      });
      assert.equal(res.status === 403, !may, `${role} ${method} ${url}: ${res.status} ${res.text}`);
    }
    // Reads are every role's.
    for (const role of ROLES) {
      const res = await request(t, 'GET', '/v1/collections', { token: team[role].token });
      assert.equal(res.status, 200, role);
    }
  });

  it("applies to the operator's members on the admin routes: only an owner or an admin may act as the operator", async () => {
    const operator = (
      await t.db.query<{ id: string }>(`SELECT id::text FROM workspaces WHERE kind = 'operator' LIMIT 1`)
    ).rows[0]?.id;
    assert.ok(operator);
    const tokenOf = async (role: Role, email: string): Promise<string> => {
      const made = await members.create(t.db, operator, { email, password: PASSWORD, role });
      assert.ok(made.ok);
      const signedIn = await members.authenticate(t.db, email, PASSWORD);
      assert.ok(signedIn.ok);
      return signedIn.session.token;
    };
    const developer = await tokenOf('developer', 'ops-dev@roles.test');
    const admin = await tokenOf('admin', 'ops-admin@roles.test');
    const refused = await request(t, 'POST', '/v1/admin/workspaces', { token: developer, body: { name: 'nope' } });
    assertProblem(refused, 403, 'forbidden');
    assert.equal((await request(t, 'GET', '/v1/admin/workspaces', { token: developer })).status, 200);
    const made = await request(t, 'POST', '/v1/admin/workspaces', { token: admin, body: { name: 'ops-made' } });
    assert.equal(made.status, 201, made.text);
  });

  it("a developer cannot rotate or revoke a member's credential through the keys API; an API key and an admin can", async () => {
    const target = await newMember('viewer', 'keyed@roles.test');
    const credentialId = (
      await t.db.query<{ credential_id: string }>('SELECT credential_id::text FROM members WHERE id = $1', [target.id])
    ).rows[0]?.credential_id;
    assert.ok(credentialId);
    const ownerCredential = (
      await t.db.query<{ credential_id: string }>('SELECT credential_id::text FROM members WHERE id = $1', [
        team.owner.id,
      ])
    ).rows[0]?.credential_id;
    assert.ok(ownerCredential);
    // The list says which credentials are members' (and their role), so a client can tell before it tries.
    const listed = await request(t, 'GET', '/v1/credentials', { token: workspace.token });
    const roleOf = (id: string) => listed.body.data.find((c: { id: string }) => c.id === id)?.member_role;
    assert.equal(roleOf(credentialId), 'viewer');
    assert.equal(roleOf(ownerCredential), 'owner');
    assert.ok(
      listed.body.data.some((c: { member_role: string | null }) => c.member_role === null),
      'an API key',
    );
    const revoke = (token: string, id: string) => request(t, 'DELETE', `/v1/credentials/${id}`, { token });
    const rotate = (token: string, id: string) => request(t, 'POST', `/v1/credentials/${id}/rotate`, { token });
    assertProblem(await revoke(team.developer.token, credentialId), 403, 'forbidden');
    assertProblem(await rotate(team.developer.token, ownerCredential), 403, 'forbidden');
    assertProblem(await revoke(team.admin.token, ownerCredential), 403, 'forbidden');
    const status = await t.db.query<{ status: string }>('SELECT status FROM credentials WHERE id = ANY($1::uuid[])', [
      [credentialId, ownerCredential],
    ]);
    assert.deepEqual(
      status.rows.map((r) => r.status),
      ['active', 'active'],
    );
    // A developer still manages API keys, an admin a non-owner member's credential, an API key anything (as before).
    const key = await request(t, 'POST', '/v1/credentials', { token: team.developer.token, body: { name: 'dev key' } });
    assert.equal(key.status, 201, key.text);
    assert.equal((await revoke(team.developer.token, key.body.id)).status, 200);
    assert.equal((await rotate(team.admin.token, credentialId)).status, 200);
    assert.equal((await revoke(workspace.token, credentialId)).status, 200);
  });

  it("leaves an API key, which is no member's, its whole access", async () => {
    const res = await request(t, 'POST', '/v1/credentials', { token: workspace.token, body: { name: 'ci server' } });
    assert.equal(res.status, 201, res.text);
    const report = await request(t, 'GET', '/v1/reports/settlement?date=2026-01-01&currency=KES', {
      token: workspace.token,
    });
    assert.notEqual(report.status, 403);
  });
});

describe('the dashboard refuses and hides what a role does not permit', () => {
  it('answers 403 forbidden on every page and form the role may not use, and serves the others', async () => {
    let refused = 0;
    for (const role of ROLES) {
      const b = await signIn(team[role].email);
      for (const [key, permission] of t.app.dashboardPermissions) {
        const [method, path] = key.split(' ') as [string, string];
        // Signing out ends the session; the operator's pages are for the operator's audience.
        if (path === '/dashboard/sign-out' || path.startsWith('/dashboard/admin')) continue;
        const url = concrete(path);
        const res = method === 'GET' ? await get(url, b.cookie) : await act(b, url);
        const body = await res.text();
        if (permits(role, permission)) {
          assert.notEqual(res.status, 403, `${role} may ${key} (${permission}): ${body.slice(0, 300)}`);
        } else {
          assert.equal(res.status, 403, `${role} may not ${key} (${permission})`);
          assert.match(body, /\(forbidden; request /, key);
          refused += 1;
        }
      }
    }
    assert.ok(refused >= 60, `only ${refused} refusals`);
  });

  it('draws no navigation link or button the role may not use', async () => {
    for (const role of ROLES) {
      const b = await signIn(team[role].email);
      const home = await (await get('/dashboard', b.cookie)).text();
      assert.equal(home.includes('href="/dashboard/sandbox"'), permits(role, 'sandbox'), `${role}: Sandbox link`);
      assert.equal(home.includes('href="/dashboard/reports"'), permits(role, 'reports'), `${role}: Reports link`);
      const keys = await (await get('/dashboard/developers/keys', b.cookie)).text();
      assert.equal(keys.includes('Create key'), permits(role, 'keys'), `${role}: Create key`);
      assert.equal(keys.includes('/rotate"'), permits(role, 'keys'), `${role}: Rotate`);
      const payouts = await (await get('/dashboard/payouts', b.cookie)).text();
      assert.equal(payouts.includes('New payout'), permits(role, 'payouts'), `${role}: New payout`);
      assert.equal(payouts.includes('Bulk payouts (CSV)'), permits(role, 'payouts'), `${role}: Bulk payouts`);
      const collections = await (await get('/dashboard/collections', b.cookie)).text();
      assert.equal(collections.includes('Export CSV'), permits(role, 'exports'), `${role}: Export CSV`);
      const hooks = await (await get('/dashboard/developers/webhooks', b.cookie)).text();
      assert.equal(hooks.includes('Add an endpoint'), permits(role, 'webhooks'), `${role}: Add an endpoint`);
      const team_ = await (await get('/dashboard/members', b.cookie)).text();
      assert.equal(team_.includes('Create invitation link'), permits(role, 'members'), `${role}: invite`);
      assert.equal(team_.includes('>Manage</a>'), permits(role, 'members'), `${role}: Manage`);
      assert.equal(team_.includes('Reset link'), permits(role, 'ownership'), `${role}: Reset link`);
    }
  });
});

describe('managing members', () => {
  it('a role change ends every session of the member at once, and its copied token follows the new role', async () => {
    const m = await newMember('viewer', 'promoted@roles.test');
    const theirs = await signIn(m.email);
    assert.equal((await request(t, 'POST', '/v1/credentials', { token: m.token, body: { name: 'x' } })).status, 403);
    const owner = await signIn(team.owner.email);
    const res = await act(owner, `/dashboard/members/${m.id}/role`, { role: 'developer' });
    assert.equal(res.status, 303);
    assert.equal(await sessionsOf(m.id), 0, 'the rows are gone');
    const after_ = await get('/dashboard/account', theirs.cookie);
    assert.equal(after_.status, 303);
    assert.match(after_.headers.get('location') ?? '', /^\/dashboard\/sign-in/);
    const role = await t.db.query<{ role: string }>('SELECT role FROM members WHERE id = $1', [m.id]);
    assert.equal(role.rows[0]?.role, 'developer');
    // The same token, never re-issued: the auth hook reads the role at each request.
    const made = await request(t, 'POST', '/v1/credentials', { token: m.token, body: { name: 'now allowed' } });
    assert.equal(made.status, 201, made.text);
    assert.deepEqual(
      (await auditOf(res)).map((r) => [r.action, r.actor_id, r.object_id, r.status]),
      [['member.role_change', team.owner.id, m.id, 303]],
    );
  });

  it('removing a member ends its sessions, revokes its credential (a copied token gets 401) and deletes it', async () => {
    const m = await newMember('support', 'leaver@roles.test');
    const theirs = await signIn(m.email);
    assert.equal((await request(t, 'GET', '/v1/collections', { token: m.token })).status, 200);
    const admin = await signIn(team.admin.email);
    const res = await act(admin, `/dashboard/members/${m.id}/remove`);
    assert.equal(res.status, 303);
    assert.equal(await sessionsOf(m.id), 0);
    assert.equal((await get('/dashboard', theirs.cookie)).status, 303);
    assert.equal((await request(t, 'GET', '/v1/collections', { token: m.token })).status, 401);
    assert.equal((await t.db.query('SELECT 1 FROM members WHERE id = $1', [m.id])).rowCount, 0);
    assert.deepEqual(
      (await auditOf(res)).map((r) => [r.action, r.actor_id, r.object_id, r.status]),
      [['member.remove', team.admin.id, m.id, 303]],
    );
  });

  it('the last owner can be neither demoted nor removed, with a clear error', async () => {
    const owner = await signIn(team.owner.email);
    const demote = await act(owner, `/dashboard/members/${team.owner.id}/role`, { role: 'admin' });
    assert.equal(demote.status, 409);
    assert.match(await demote.text(), /last owner/);
    const remove = await act(owner, `/dashboard/members/${team.owner.id}/remove`);
    assert.equal(remove.status, 409);
    const row = await t.db.query<{ role: string }>('SELECT role FROM members WHERE id = $1', [team.owner.id]);
    assert.equal(row.rows[0]?.role, 'owner');
    assert.ok((await sessionsOf(team.owner.id)) > 0, 'a refused change ends no session');
    assert.deepEqual(
      (await auditOf(demote)).map((r) => [r.action, r.status]),
      [['member.role_change', 409]],
    );
  });

  it('with two owners, one may be demoted, and then the other is the last', async () => {
    const second = await newMember('owner', 'second-owner@roles.test');
    const owner = await signIn(team.owner.email);
    assert.equal((await act(owner, `/dashboard/members/${second.id}/role`, { role: 'viewer' })).status, 303);
    assert.equal((await act(owner, `/dashboard/members/${team.owner.id}/role`, { role: 'viewer' })).status, 409);
  });

  it('an admin cannot make, demote or remove an owner, and sees no way to', async () => {
    const second = await newMember('owner', 'protected-owner@roles.test');
    const admin = await signIn(team.admin.email);
    const demote = await act(admin, `/dashboard/members/${second.id}/role`, { role: 'viewer' });
    assert.equal(demote.status, 403);
    assert.match(await demote.text(), /forbidden/);
    assert.equal((await act(admin, `/dashboard/members/${second.id}/remove`)).status, 403);
    assert.equal((await get(`/dashboard/members/${second.id}`, admin.cookie)).status, 403);
    const promote = await act(admin, `/dashboard/members/${team.viewer.id}/role`, { role: 'owner' });
    assert.equal(promote.status, 403);
    const invite = await act(admin, '/dashboard/members/invitations', { email: 'new-owner@roles.test', role: 'owner' });
    assert.equal(invite.status, 403);
    const rows = await t.db.query<{ id: string; role: string }>(
      'SELECT id::text, role FROM members WHERE id = ANY($1::uuid[])',
      [[second.id, team.viewer.id]],
    );
    assert.deepEqual(
      new Map(rows.rows.map((r) => [r.id, r.role])),
      new Map([
        [second.id, 'owner'],
        [team.viewer.id, 'viewer'],
      ]),
    );
    const page = await (await get(`/dashboard/members/${team.developer.id}`, admin.cookie)).text();
    assert.ok(!page.includes('<option value="owner"'), 'owner is not offered to an admin');
    // An admin manages the others.
    assert.equal((await act(admin, `/dashboard/members/${team.finance.id}/role`, { role: 'finance' })).status, 303);
  });

  it('two owners demoting each other at once: one succeeds, the other is refused, and an owner remains', async () => {
    const a = await newMember('owner', 'race-a@roles.test');
    const b = await newMember('owner', 'race-b@roles.test');
    // The workspace's first owner steps down first, so a and b are the only owners.
    const first = await signIn(team.owner.email);
    const [sa, sb] = [await signIn(a.email), await signIn(b.email)];
    const stepDown = await act(first, `/dashboard/members/${team.owner.id}/role`, { role: 'admin' });
    assert.deepEqual(outcome(stepDown), '303 /dashboard/sign-in', 'the first owner stepped down (and was signed out)');
    // Owners made by earlier tests step down too (by the database: the race is the subject here, not their demotion).
    await t.db.query(
      `UPDATE members SET role = 'admin' WHERE workspace_id = $1 AND role = 'owner' AND NOT id = ANY($2)`,
      [workspace.id, [a.id, b.id]],
    );
    assert.deepEqual((await owners()).sort(), [a.id, b.id].sort(), 'a and b are the only owners');
    const [ra, rb] = await Promise.all([
      act(sa, `/dashboard/members/${b.id}/role`, { role: 'viewer' }),
      act(sb, `/dashboard/members/${a.id}/role`, { role: 'viewer' }),
    ]);
    // The winner is sent to the member it demoted. The loser's session may already be gone (the winner's change ended
    // it): 303 to sign-in; or 409 if it was still live when its own change was checked.
    const outcomes = [
      [outcome(ra), outcome(rb)],
      [outcome(rb), outcome(ra)],
    ];
    const won = (demoted: string) => `303 /dashboard/members/${demoted}`;
    assert.ok(
      outcomes.some(
        ([winner, loser], i) =>
          winner === won(i === 0 ? b.id : a.id) && (loser === '409' || loser === '303 /dashboard/sign-in'),
      ),
      `outcomes ${outcome(ra)} (a demoting b), ${outcome(rb)} (b demoting a)`,
    );
    const remaining = await owners();
    assert.equal(remaining.length, 1, 'exactly one owner remains');
    // The one whose demotion was refused or never checked: the winner, who demoted the other.
    assert.deepEqual(remaining, [outcome(ra) === `303 /dashboard/members/${b.id}` ? a.id : b.id]);
    // Put the first owner back for the tests that follow.
    await t.db.query(`UPDATE members SET role = 'owner' WHERE id = $1`, [team.owner.id]);
  });

  it('a refused write is in the audit log too, answered 403', async () => {
    const viewer = await signIn(team.viewer.email);
    const res = await act(viewer, `/dashboard/members/${team.support.id}/remove`);
    assert.equal(res.status, 403);
    assert.deepEqual(
      (await auditOf(res)).map((r) => [r.action, r.actor_id, r.object_id, r.status]),
      [['member.remove', team.viewer.id, team.support.id, 403]],
    );
  });

  it("another workspace's member is not found (404), and nothing changes", async () => {
    const other = await createWorkspace(t, 'roles-other');
    const made = await members.create(t.db, other.id, {
      email: 'stranger@roles.test',
      password: PASSWORD,
      role: 'viewer',
    });
    assert.ok(made.ok);
    const owner = await signIn(team.owner.email);
    assert.equal((await act(owner, `/dashboard/members/${made.member.id}/remove`)).status, 404);
    assert.equal((await act(owner, `/dashboard/members/${made.member.id}/role`, { role: 'admin' })).status, 404);
    assert.equal((await t.db.query('SELECT 1 FROM members WHERE id = $1', [made.member.id])).rowCount, 1);
  });
});

describe('sessions listed and revoked', () => {
  it('a member sees their live sessions on Your account, this one marked, and ending one signs that browser out', async () => {
    const m = await newMember('viewer', 'two-browsers@roles.test');
    const laptop = await signIn(m.email, 'Laptop browser/1.0');
    const phone = await signIn(m.email, 'Phone browser/2.0');
    const page = await (await get('/dashboard/account', laptop.cookie)).text();
    assert.match(page, /Your sessions/);
    assert.match(page, /Laptop browser\/1\.0/);
    assert.match(page, /Phone browser\/2\.0/);
    assert.equal(page.match(/\(this session\)<\/strong>/g)?.length, 1);
    const { rows } = await t.db.query<{ id: string; user_agent: string }>(
      'SELECT id::text, user_agent FROM dashboard_sessions WHERE member_id = $1',
      [m.id],
    );
    const phoneId = rows.find((r) => r.user_agent === 'Phone browser/2.0')?.id;
    assert.ok(phoneId);
    const res = await act(laptop, `/dashboard/account/sessions/${phoneId}/revoke`);
    assert.equal(res.status, 303);
    assert.equal((await t.db.query('SELECT 1 FROM dashboard_sessions WHERE id = $1', [phoneId])).rowCount, 0);
    const phoneNow = await get('/dashboard/account', phone.cookie);
    assert.equal(phoneNow.status, 303);
    assert.match(phoneNow.headers.get('location') ?? '', /^\/dashboard\/sign-in/);
    assert.equal((await get('/dashboard/account', laptop.cookie)).status, 200, 'the other session goes on');
    assert.deepEqual(
      (await auditOf(res)).map((r) => [r.action, r.actor_id, r.object_id]),
      [['member.session_revoke', m.id, phoneId]],
    );
  });

  it("a member cannot end another member's session from their own account", async () => {
    const victim = await signIn(team.finance.email);
    const { rows } = await t.db.query<{ id: string }>(
      'SELECT id::text FROM dashboard_sessions WHERE member_id = $1 ORDER BY created_at DESC LIMIT 1',
      [team.finance.id],
    );
    const viewer = await signIn(team.viewer.email);
    const res = await act(viewer, `/dashboard/account/sessions/${rows[0]?.id}/revoke`);
    assert.equal(res.status, 404);
    assert.equal((await get('/dashboard/account', victim.cookie)).status, 200);
  });

  it("an owner sees a member's sessions on the Members page and ends one", async () => {
    const theirs = await signIn(team.developer.email, 'Dev laptop/3.0');
    const owner = await signIn(team.owner.email);
    const page = await (await get(`/dashboard/members/${team.developer.id}`, owner.cookie)).text();
    assert.match(page, /Dev laptop\/3\.0/);
    const { rows } = await t.db.query<{ id: string }>(
      `SELECT id::text FROM dashboard_sessions WHERE member_id = $1 AND user_agent = 'Dev laptop/3.0'`,
      [team.developer.id],
    );
    const id = rows[0]?.id;
    assert.ok(id);
    const res = await act(owner, `/dashboard/members/${team.developer.id}/sessions/${id}/revoke`);
    assert.equal(res.status, 303);
    assert.equal((await t.db.query('SELECT 1 FROM dashboard_sessions WHERE id = $1', [id])).rowCount, 0);
    assert.equal((await get('/dashboard', theirs.cookie)).status, 303);
    assert.deepEqual(
      (await auditOf(res)).map((r) => [r.action, r.actor_id, r.object_id]),
      [['member.session_revoke', team.owner.id, id]],
    );
    // A developer may not.
    const dev = await signIn(team.developer.email);
    assert.equal((await act(dev, `/dashboard/members/${team.viewer.id}/sessions/${ID}/revoke`)).status, 403);
  });
});
