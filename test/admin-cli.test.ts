// `npm run admin -- create-credential`: operator recovery after the last admin credential is revoked. The command runs
// as a child process against the running test app's database; the app verifies its tokens with the signing key kept
// in that database, which is the key the command signs with.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { assertProblem, cookieSet, request, signInForm, startTestApp, type TestApp } from './helpers/harness.js';
import { PROJECT_ROOT } from './helpers/start-command.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run admin -- ...args` against the test app's database, as a process of its own, with `input` on stdin. */
function admin(args: string[], input = ''): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: t.config.databaseUrl,
      DATA_DIR: t.config.dataDir,
      PAYMENTS_ENV: t.config.paymentsEnv,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const get = (url: string, token: string) => request(t, 'GET', url, { token });

/** The one token a successful run prints, alone on stdout. */
function printedToken(run: Run): string {
  assert.equal(run.code, 0, run.stderr);
  const lines = run.stdout.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `stdout is the token alone: ${run.stdout}`);
  assert.match(lines[0] as string, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.equal(run.stderr.trim().split('\n').length, 1, `stderr is one line: ${run.stderr}`);
  return lines[0] as string;
}

describe('npm run admin -- create-credential', () => {
  it('after every admin credential is revoked (admin API 401), --audience admin mints a token that works again', async () => {
    // Revoke every admin credential of the operator workspace, the caller's own last.
    const extra = await request(t, 'POST', '/v1/credentials', { token: t.adminToken, body: { name: 'second admin' } });
    assert.equal(extra.status, 201, extra.text);
    const own = decodeJwt(t.adminToken).sub;
    const listed = await get('/v1/credentials', t.adminToken);
    const admins = (listed.body.data as { id: string; audience: string; status: string }[]).filter(
      (c) => c.audience === 'admin' && c.status === 'active',
    );
    assert.equal(admins.length, 2);
    for (const c of [...admins.filter((c) => c.id !== own), ...admins.filter((c) => c.id === own)]) {
      const del = await request(t, 'DELETE', `/v1/credentials/${c.id}`, { token: t.adminToken });
      assert.equal(del.status, 200, del.text);
    }
    assertProblem(await get('/v1/admin/workspaces', t.adminToken), 401, 'unauthorized');
    assertProblem(await get('/v1/admin/workspaces', extra.body.token), 401, 'unauthorized');

    const run = await admin(['create-credential', '--audience', 'admin', '--name', 'recovery']);
    const token = printedToken(run);
    assert.match(run.stderr, /created admin credential/);

    const workspaces = await get('/v1/admin/workspaces', token);
    assert.equal(workspaces.status, 200, workspaces.text);
    assert.ok(workspaces.body.data.some((w: { id: string }) => w.id === t.demoWorkspaceId));
    // It is an ordinary admin credential of the operator workspace, listed under the name given.
    const mine = (await get('/v1/credentials', token)).body.data.find(
      (c: { id: string }) => c.id === decodeJwt(token).sub,
    );
    assert.equal(mine.name, 'recovery');
    assert.equal(mine.audience, 'admin');
    assert.equal(mine.status, 'active');
    assert.equal(mine.workspace_id, decodeJwt(t.adminToken).wsp);
  });

  it('--audience integrator --workspace ID mints an integrator token of that workspace', async () => {
    const token = printedToken(
      await admin(['create-credential', '--audience', 'integrator', '--workspace', t.demoWorkspaceId]),
    );
    const workspace = await get('/v1/workspace', token);
    assert.equal(workspace.status, 200, workspace.text);
    assert.equal(workspace.body.id, t.demoWorkspaceId);
    assert.equal((await get('/v1/collections', token)).status, 200);
    assertProblem(await get('/v1/admin/workspaces', token), 403, 'forbidden');
  });

  it('bad arguments: a message on stderr, nothing on stdout, exit code 2', async () => {
    const cases: [string[], RegExp][] = [
      [['create-credential', '--audience', 'root'], /--audience must be admin or integrator, got 'root'/],
      [['create-credential', '--audience', 'liquidity_provider'], /--audience must be admin or integrator/],
      [['create-credential'], /--audience is needed/],
      [['make-credential', '--audience', 'admin'], /unknown command 'make-credential'/],
      [['create-credential', '--audience', 'admin', '--bogus'], /Unknown option '--bogus'/],
      [['create-credential', '--audience', 'integrator'], /needs --workspace/],
      [['create-credential', '--audience', 'integrator', '--workspace', 'demo'], /must be a workspace id/],
      [['create-credential', '--audience', 'integrator', '--workspace', randomUUID()], /there is no workspace/],
      [['create-credential', '--audience', 'admin', '--workspace', t.demoWorkspaceId], /leave out --workspace/],
    ];
    for (const [args, message] of cases) {
      const run = await admin(args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message);
      assert.equal(run.stdout, '');
    }
  });
});

/** Signs in at the dashboard's member form; answers the session cookie, or undefined when refused. */
async function memberSignIn(email: string, password: string): Promise<string | undefined> {
  const form = await signInForm(t.baseUrl);
  const res = await fetch(`${t.baseUrl}/dashboard/sign-in/password`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: form.cookie },
    body: new URLSearchParams({ csrf: form.csrf, email, password, next: '/dashboard' }).toString(),
  });
  return cookieSet(res, 'dashboard_session');
}

describe('npm run admin -- create-member', () => {
  it('--password-stdin makes an owner of the workspace with that password, who can sign in; stdout stays empty', async () => {
    const run = await admin(
      ['create-member', '--email', 'first.owner@demo.test', '--workspace', t.demoWorkspaceId, '--password-stdin'],
      'a long enough passphrase\nignored second line\n',
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /created member [0-9a-f-]{36} <first\.owner@demo\.test> \(owner\) in workspace/);
    const { rows } = await t.db.query<{ role: string; workspace_id: string }>(
      `SELECT role, workspace_id::text FROM members WHERE email = 'first.owner@demo.test'`,
    );
    assert.deepEqual(rows, [{ role: 'owner', workspace_id: t.demoWorkspaceId }]);
    assert.ok(await memberSignIn('first.owner@demo.test', 'a long enough passphrase'));
    assert.equal(await memberSignIn('first.owner@demo.test', 'ignored second line'), undefined);
  });

  it('--operator without --password-stdin makes a member of the operator workspace and prints its password once', async () => {
    const run = await admin(['create-member', '--email', 'ops@operator.test', '--operator', '--role', 'admin']);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n').filter((l) => l !== '');
    assert.equal(lines.length, 1, run.stdout);
    const password = lines[0] as string;
    assert.match(password, /^[\w-]{24}$/);
    const { rows } = await t.db.query<{ role: string; workspace_id: string; audience: string }>(
      `SELECT m.role, m.workspace_id::text, c.audience FROM members m
         JOIN credentials c ON c.workspace_id = m.workspace_id AND c.id = m.credential_id
        WHERE m.email = 'ops@operator.test'`,
    );
    assert.deepEqual(rows, [{ role: 'admin', workspace_id: decodeJwt(t.adminToken).wsp, audience: 'admin' }]);
    const cookie = await memberSignIn('ops@operator.test', password);
    assert.ok(cookie);
    // An operator member's pages are the operator's.
    const page = await fetch(`${t.baseUrl}/dashboard/admin/workspaces`, { headers: { cookie } });
    assert.equal(page.status, 200);
  });

  it('bad arguments or a refused member: a message on stderr, nothing on stdout, exit code 2', async () => {
    const cases: [string[], string, RegExp][] = [
      [['create-member', '--workspace', t.demoWorkspaceId], '', /needs --email/],
      [['create-member', '--email', 'x@y.test'], '', /needs --workspace WORKSPACE_ID or --operator/],
      [['create-member', '--email', 'x@y.test', '--operator', '--workspace', t.demoWorkspaceId], '', /not both/],
      [['create-member', '--email', 'x@y.test', '--operator', '--role', 'root'], '', /--role must be one of owner/],
      [['create-member', '--email', 'x@y.test', '--workspace', randomUUID()], '', /there is no workspace/],
      [['create-member', '--email', 'x@y.test', '--operator', '--password-stdin'], 'short\n', /at least 12/],
      [['create-member', '--email', 'first.owner@DEMO.test', '--operator'], '', /already belongs to a member/],
      [['create-member', '--email', 'not-an-email', '--operator'], '', /Enter an email address/],
      [['create-credential', '--audience', 'admin', '--email', 'x@y.test'], '', /--email is for create-member only/],
    ];
    for (const [args, input, message] of cases) {
      const run = await admin(args, input);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message);
      assert.equal(run.stdout, '');
    }
    assert.equal((await t.db.query(`SELECT 1 FROM members WHERE email = 'x@y.test'`)).rowCount, 0);
  });
});
