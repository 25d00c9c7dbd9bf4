// Members' second factor over HTTP, against a real database: enrolment stores the TOTP secret sealed and the
// recovery codes as hashes only; sign-in with a factor takes a second step (a one-time, browser-bound record behind
// the sign-in form's one-time value) that a current code or a recovery code completes, once each; wrong codes count in
// the sign-in throttle; owners and admins without a factor (or everyone, when the workspace requires it) reach no
// page but the enrolment; turning it off needs a code or the password; an owner removes a lost one. Every step is in
// the audit log.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MembersService, type Role } from '../src/modules/members/members.service.js';
import { createWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { codeFor, forgetLastStep, giveSecondFactor } from './helpers/second-factor.js';

const ORIGIN = 'http://dash.example.test:8080';
const PASSWORD = 'a passphrase for two factors';

let t: TestApp;
let members: MembersService;
let workspaceId: string;
const ids: Record<string, string> = {};

before(async () => {
  t = await startTestApp({ PUBLIC_BASE_URL: ORIGIN });
  members = new MembersService(t.services.tokens, t.config.paymentsEnv);
  workspaceId = (await createWorkspace(t, 'two-factor-shop')).id;
  for (const [email, role] of [
    ['owner@2fa.test', 'owner'],
    ['admin@2fa.test', 'admin'],
    ['dev@2fa.test', 'developer'],
    ['finance@2fa.test', 'finance'],
    ['guessed@2fa.test', 'support'],
    ['lost@2fa.test', 'viewer'],
  ] as [string, Role][]) {
    const made = await members.create(t.db, workspaceId, { email, password: PASSWORD, role });
    assert.ok(made.ok);
    ids[email] = made.member.id;
  }
});
after(async () => t.close());

let address = 0;
/** Each call its own client address, so one test's failures do not block another's (the account counts apart). */
const nextAddress = (): string => `198.51.100.${++address}`;

function post(path: string, fields: Record<string, string>, cookie?: string, ip = '203.0.113.7'): Promise<Response> {
  return fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': ip,
      ...(cookie ? { cookie } : {}),
    },
    body: new URLSearchParams(fields).toString(),
  });
}

const cookiesOf = (res: Response, name: string): string | undefined =>
  res.headers
    .getSetCookie()
    .find((c) => c.startsWith(`${name}=`))
    ?.split(';')[0];
const csrfIn = (page: string): string => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';

/** A browser's cookie jar, for the sign-in's steps. */
class Browser {
  private jar = new Map<string, string>();
  constructor(readonly ip = nextAddress()) {}
  keep(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = c.split(';');
      const [name = '', value = ''] = pair.split('=');
      if (value === '' || attrs.some((a) => /max-age=0|expires=thu, 01 jan 1970/i.test(a))) this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }
  get cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  get(name: string): string | undefined {
    return this.jar.get(name);
  }
  set(name: string, value: string | undefined): void {
    if (value === undefined) this.jar.delete(name);
    else this.jar.set(name, value);
  }
  async fetch(path: string): Promise<Response> {
    const res = await fetch(`${t.baseUrl}${path}`, { headers: { cookie: this.cookie }, redirect: 'manual' });
    this.keep(res);
    return res;
  }
  async post(path: string, fields: Record<string, string>): Promise<Response> {
    const res = await post(path, fields, this.cookie, this.ip);
    this.keep(res);
    return res;
  }
  /** Draws the sign-in form and posts the password; the answer's page is in `page`. */
  async password(email: string, password = PASSWORD): Promise<{ res: Response; page: string }> {
    const form = await this.fetch('/dashboard/sign-in');
    const csrf = csrfIn(await form.text());
    const res = await this.post('/dashboard/sign-in/password', { csrf, email, password, next: '/dashboard/reports' });
    return { res, page: res.status === 303 ? '' : await res.text() };
  }
  /** Posts a code on the second step's form in `page`. */
  async code(page: string, code: string): Promise<{ res: Response; page: string }> {
    const res = await this.post('/dashboard/sign-in/second-factor', {
      csrf: csrfIn(page),
      code,
      next: '/dashboard/reports',
    });
    return { res, page: res.status === 303 ? '' : await res.text() };
  }
  /** A session's form posted with its CSRF token, read from `from`. */
  async act(from: string, path: string, fields: Record<string, string>): Promise<Response> {
    const csrf = csrfIn(await (await this.fetch(from)).text());
    assert.ok(csrf, `a form on ${from}`);
    return this.post(path, { csrf, ...fields });
  }
}

interface AuditRow {
  actor_type: string;
  actor_id: string | null;
  action: string;
  object_type: string;
  object_id: string | null;
  status: number;
}
async function auditOf(res: Response): Promise<AuditRow[]> {
  return (
    await t.db.query<AuditRow>(
      `SELECT actor_type, actor_id::text, action, object_type, object_id, status
         FROM audit_events WHERE request_id = $1 ORDER BY occurred_at`,
      [res.headers.get('x-request-id')],
    )
  ).rows;
}

const secretOnPage = (page: string): string => {
  const secret = /id="totp-secret">([A-Z2-7 ]+)</.exec(page)?.[1];
  assert.ok(secret, 'the secret is shown as text');
  return secret.replace(/\s/g, '');
};

describe('enrolment on Your account', () => {
  it('shows the secret as a QR code and as text, seals it at rest, and turns on only with a current code', async () => {
    const b = new Browser();
    const signedIn = await b.password('dev@2fa.test');
    assert.equal(signedIn.res.status, 303, 'a developer without a factor signs in with the password alone');
    const account = await (await b.fetch('/dashboard/account/second-factor')).text();
    assert.match(account, /Set up a second factor/);
    const begun = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/enrol', {});
    assert.equal(begun.status, 200);
    const page = await begun.text();
    assert.match(page, /<svg role="img" aria-label="QR code for your authenticator app"/);
    const secret = secretOnPage(page);
    assert.equal(secret.length, 32, '160 bits, base32');

    const { rows } = await t.db.query<{ sealed_secret: string; confirmed_at: Date | null }>(
      'SELECT sealed_secret, confirmed_at FROM member_second_factors WHERE workspace_id = $1 AND member_id = $2',
      [workspaceId, ids['dev@2fa.test']],
    );
    assert.equal(rows.length, 1);
    assert.match(rows[0]?.sealed_secret ?? '', /^sealed:v1:/);
    assert.ok(!rows[0]?.sealed_secret.includes(secret));
    assert.equal(t.box.open(rows[0]?.sealed_secret ?? ''), secret);
    assert.equal(rows[0]?.confirmed_at, null, 'not on until confirmed');

    const wrong = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/confirm', {
      code: codeFor(secret, 5),
    });
    assert.equal(wrong.status, 400);
    const again = await wrong.text();
    assert.match(again, /That code is not right/);
    assert.equal(secretOnPage(again), secret, 'the same secret is shown again');

    const right = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/confirm', {
      code: codeFor(secret),
    });
    assert.equal(right.status, 200);
    const shown = await right.text();
    const codes = [...shown.matchAll(/<li>([a-z2-9]{5}-[a-z2-9]{5})<\/li>/g)].map((m) => m[1] ?? '');
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    const stored = await t.db.query<{ code_hash: Buffer }>(
      'SELECT code_hash FROM member_recovery_codes WHERE workspace_id = $1 AND member_id = $2',
      [workspaceId, ids['dev@2fa.test']],
    );
    assert.equal(stored.rowCount, 10);
    const hashes = new Set(stored.rows.map((r) => r.code_hash.toString('hex')));
    for (const code of codes) {
      assert.ok(!hashes.has(Buffer.from(code).toString('hex')), 'never the code itself');
      assert.ok(
        hashes.has(
          createHash('sha256')
            .update(`recovery:${code.replace('-', '')}`)
            .digest('hex'),
        ),
      );
    }
    assert.deepEqual(
      (await auditOf(right)).map((r) => [r.action, r.actor_type, r.actor_id, r.object_id, r.status]),
      [['member.second_factor_enrol', 'member', ids['dev@2fa.test'], ids['dev@2fa.test'], 200]],
    );
    assert.deepEqual(
      (await auditOf(wrong)).map((r) => [r.action, r.status]),
      [['member.second_factor_enrol', 400]],
    );
    // The codes are not shown again.
    assert.doesNotMatch(await (await b.fetch('/dashboard/account/second-factor')).text(), new RegExp(codes[0] ?? ''));
  });
});

describe('sign-in with a second factor', () => {
  let secret = '';
  let recoveryCodes: string[] = [];
  before(async () => {
    ({ secret, recoveryCodes } = await giveSecondFactor(t, workspaceId, {
      id: ids['finance@2fa.test'] ?? '',
      email: 'finance@2fa.test',
    }));
  });

  it('asks for a code after the password, opening no session until a current code is given', async () => {
    await forgetLastStep(t, ids['finance@2fa.test'] ?? '');
    const b = new Browser();
    const first = await b.password('finance@2fa.test');
    assert.equal(first.res.status, 200);
    assert.match(first.page, /Enter your code/);
    assert.equal(cookiesOf(first.res, 'dashboard_session'), undefined, 'no session after the password alone');
    const step = cookiesOf(first.res, 'dashboard_second_step');
    assert.ok(step);
    const set = first.res.headers.getSetCookie().find((c) => c.startsWith('dashboard_second_step=')) ?? '';
    assert.match(set, /HttpOnly/);
    assert.match(set, /SameSite=Strict/);
    assert.match(set, /Max-Age=300/);
    assert.deepEqual(
      (await auditOf(first.res)).map((r) => [r.action, r.object_id, r.status]),
      [['dashboard.sign_in_password', ids['finance@2fa.test'], 200]],
    );

    const done = await b.code(first.page, codeFor(secret));
    assert.equal(done.res.status, 303);
    assert.equal(done.res.headers.get('location'), '/dashboard/reports');
    assert.ok(cookiesOf(done.res, 'dashboard_session'));
    assert.equal((await b.fetch('/dashboard/reports')).status, 200);
    assert.deepEqual(
      (await auditOf(done.res)).map((r) => [r.action, r.actor_type, r.actor_id, r.status]),
      [['dashboard.sign_in', 'member', ids['finance@2fa.test'], 303]],
    );
  });

  it('refuses the same code again within its time step (a replay), with the answer any wrong code gets', async () => {
    await forgetLastStep(t, ids['finance@2fa.test'] ?? '');
    const code = codeFor(secret, 1);
    const one = new Browser();
    const ok = await one.code((await one.password('finance@2fa.test')).page, code);
    assert.equal(ok.res.status, 303, 'a code of the next step is accepted (30 s of clock drift)');
    const two = new Browser();
    const replay = await two.code((await two.password('finance@2fa.test')).page, code);
    assert.equal(replay.res.status, 401);
    assert.match(replay.page, /That code is not right or was already used/);
    assert.equal(cookiesOf(replay.res, 'dashboard_session'), undefined);
    // An older step than the last one accepted is refused too.
    const older = await two.code(replay.page, codeFor(secret));
    assert.equal(older.res.status, 401);
    assert.deepEqual(
      (await auditOf(replay.res)).map((r) => [r.action, r.actor_type, r.actor_id, r.object_id, r.status]),
      [['dashboard.second_factor_failed', 'anonymous', null, ids['finance@2fa.test'], 401]],
    );
  });

  it('accepts each recovery code once, recording its use', async () => {
    const code = recoveryCodes[0] ?? '';
    const one = new Browser();
    const used = await one.code((await one.password('finance@2fa.test')).page, code.toUpperCase());
    assert.equal(used.res.status, 303, 'typed in capitals, still accepted');
    assert.deepEqual(
      (await auditOf(used.res)).map((r) => [r.action, r.actor_type, r.actor_id, r.status]),
      [['member.recovery_code_use', 'member', ids['finance@2fa.test'], 303]],
    );
    const left = await t.db.query('SELECT 1 FROM member_recovery_codes WHERE member_id = $1', [
      ids['finance@2fa.test'],
    ]);
    assert.equal(left.rowCount, 9);
    const two = new Browser();
    const again = await two.code((await two.password('finance@2fa.test')).page, code);
    assert.equal(again.res.status, 401, 'a recovery code works once');
    assert.match(again.page, /That code is not right or was already used/);
    // Another member's code is not this member's.
    const three = new Browser();
    const wrongMember = await three.code((await three.password('dev@2fa.test')).page, recoveryCodes[1] ?? '');
    assert.equal(wrongMember.res.status, 401);
  });

  it('uses the pending step once, only in the browser that holds it, and only with the form’s one-time value', async () => {
    await forgetLastStep(t, ids['finance@2fa.test'] ?? '');
    const b = new Browser();
    const first = await b.password('finance@2fa.test');
    const step = b.get('dashboard_second_step');
    // Another browser with the form but not the step's cookie.
    const other = new Browser();
    await other.fetch('/dashboard/sign-in');
    const stolenForm = await other.code(first.page, codeFor(secret));
    assert.equal(stolenForm.res.status, 403, 'the form’s value is bound to the first browser’s cookie');
    // The first browser's form without its step cookie: the form value is spent, the step is not there.
    b.set('dashboard_second_step', undefined);
    const noStep = await b.code(first.page, codeFor(secret));
    assert.equal(noStep.res.status, 401);
    assert.match(noStep.page, /The sign-in took too long or was already completed/);

    // The step completes one sign-in; the same cookie again (with a fresh form value) is refused.
    const fresh = await b.password('finance@2fa.test');
    const used = b.get('dashboard_second_step');
    assert.notEqual(used, step);
    assert.equal((await b.code(fresh.page, codeFor(secret))).res.status, 303);
    b.set('dashboard_session', undefined);
    const drawn = await b.fetch('/dashboard/sign-in');
    const csrf = csrfIn(await drawn.text());
    b.set('dashboard_second_step', used);
    const replay = await b.post('/dashboard/sign-in/second-factor', { csrf, code: codeFor(secret) });
    assert.equal(replay.status, 401);
    assert.equal(cookiesOf(replay, 'dashboard_session'), undefined);

    // An expired step is refused.
    const late = await b.password('finance@2fa.test');
    await t.db.query(
      `UPDATE dashboard_second_steps SET expires_at = now() - interval '1 second' WHERE member_id = $1`,
      [ids['finance@2fa.test']],
    );
    assert.equal((await b.code(late.page, codeFor(secret))).res.status, 401);
  });

  it('counts wrong codes in the sign-in throttle: past five, the account waits', async () => {
    const { secret: guessed } = await giveSecondFactor(t, workspaceId, {
      id: ids['guessed@2fa.test'] ?? '',
      email: 'guessed@2fa.test',
    });
    const b = new Browser();
    let { page } = await b.password('guessed@2fa.test');
    for (let i = 0; i < 6; i++) {
      const res = await b.code(page, '000000');
      assert.equal(res.res.status, 401, `wrong code ${i + 1}`);
      page = res.page;
    }
    const blocked = await b.code(page, codeFor(guessed, 1));
    assert.equal(blocked.res.status, 429, 'even a right code waits while the account is blocked');
    assert.ok(Number(blocked.res.headers.get('retry-after')) >= 1);
    const { rows } = await t.db.query<{ failures: number }>(
      'SELECT failures FROM dashboard_sign_in_failures WHERE key_hash = $1',
      [createHash('sha256').update('account:guessed@2fa.test').digest()],
    );
    assert.equal(rows[0]?.failures, 6);
    // From another browser and address, the password is accepted but the account's block still holds the code.
    await t.db.query(`UPDATE dashboard_sign_in_failures SET blocked_until = now() - interval '1 second'`);
    const c = new Browser();
    const passwordOnly = await c.password('guessed@2fa.test');
    const counted = await t.db.query<{ failures: number }>(
      'SELECT failures FROM dashboard_sign_in_failures WHERE key_hash = $1',
      [createHash('sha256').update('account:guessed@2fa.test').digest()],
    );
    assert.equal(counted.rows[0]?.failures, 6, 'a right password alone does not start the count over');
    const ok = await c.code(passwordOnly.page, codeFor(guessed, 1));
    assert.equal(ok.res.status, 303, 'once the block is over, a right code signs in and clears the count');
    const cleared = await t.db.query('SELECT 1 FROM dashboard_sign_in_failures WHERE key_hash = $1', [
      createHash('sha256').update('account:guessed@2fa.test').digest(),
    ]);
    assert.equal(cleared.rowCount, 0);
  });
});

describe('required for owners and admins, and for everyone when the workspace says so', () => {
  it('sends an owner and an admin without one to enrol before any other page works', async () => {
    for (const email of ['owner@2fa.test', 'admin@2fa.test']) {
      const b = new Browser();
      const res = await b.password(email);
      assert.equal(res.res.status, 303, email);
      for (const path of ['/dashboard/collections', '/dashboard', '/dashboard/members', '/dashboard/account']) {
        const page = await b.fetch(path);
        assert.equal(page.status, 303, `${email} ${path}`);
        assert.equal(page.headers.get('location'), '/dashboard/account/second-factor');
      }
      const enrolPage = await b.fetch('/dashboard/account/second-factor');
      assert.equal(enrolPage.status, 200);
      const html = await enrolPage.text();
      assert.match(html, /Your role needs a second factor/);
      // A write elsewhere is refused the same way, before it is done.
      const keys = await b.post('/dashboard/developers/keys', { csrf: csrfIn(html), name: 'sneaky' });
      assert.equal(keys.status, 303);
      assert.equal(keys.headers.get('location'), '/dashboard/account/second-factor');
      const made = await t.db.query(`SELECT 1 FROM credentials WHERE workspace_id = $1 AND name = 'sneaky'`, [
        workspaceId,
      ]);
      assert.equal(made.rowCount, 0);
    }
  });

  it('lets the owner in once enrolled, and the owner can require it of everyone', async () => {
    const b = new Browser();
    await b.password('owner@2fa.test');
    const begun = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/enrol', {});
    const secret = secretOnPage(await begun.text());
    await forgetLastStep(t, ids['owner@2fa.test'] ?? '');
    const on = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/confirm', {
      code: codeFor(secret),
    });
    assert.equal(on.status, 200);
    assert.equal((await b.fetch('/dashboard/collections')).status, 200, 'the same session goes on');

    // A viewer (no factor needed yet) signs in and works.
    const dev = new Browser();
    assert.equal((await dev.password('lost@2fa.test')).res.status, 303);
    assert.equal((await dev.fetch('/dashboard/collections')).status, 200);

    const required = await b.act('/dashboard/account/second-factor', '/dashboard/account/workspace-security', {
      require_second_factor: 'everyone',
    });
    assert.equal(required.status, 303);
    assert.deepEqual(
      (await auditOf(required)).map((r) => [r.action, r.object_type, r.object_id, r.actor_id]),
      [['workspace.second_factor_requirement', 'workspace', workspaceId, ids['owner@2fa.test']]],
    );
    const { rows } = await t.db.query<{ require_second_factor: boolean }>(
      'SELECT require_second_factor FROM workspaces WHERE id = $1',
      [workspaceId],
    );
    assert.equal(rows[0]?.require_second_factor, true);
    const gated = await dev.fetch('/dashboard/collections');
    assert.equal(gated.status, 303, 'the viewer’s open session is sent to enrol');
    assert.equal(gated.headers.get('location'), '/dashboard/account/second-factor');

    // A bad value is refused; the setting stays.
    const bad = await b.act('/dashboard/account/second-factor', '/dashboard/account/workspace-security', {
      require_second_factor: 'nobody',
    });
    assert.equal(bad.status, 400);

    const back = await b.act('/dashboard/account/second-factor', '/dashboard/account/workspace-security', {
      require_second_factor: 'roles',
    });
    assert.equal(back.status, 303);
    assert.equal((await dev.fetch('/dashboard/collections')).status, 200);
  });

  it('refuses the requirement and a reset to anyone but an owner', async () => {
    const { secret } = await giveSecondFactor(t, workspaceId, {
      id: ids['admin@2fa.test'] ?? '',
      email: 'admin@2fa.test',
    });
    await forgetLastStep(t, ids['admin@2fa.test'] ?? '');
    const b = new Browser();
    const signed = await b.code((await b.password('admin@2fa.test')).page, codeFor(secret));
    assert.equal(signed.res.status, 303);
    const page = await (await b.fetch('/dashboard/account/second-factor')).text();
    assert.doesNotMatch(page, /Workspace security/);
    const refused = await b.act('/dashboard/account/second-factor', '/dashboard/account/workspace-security', {
      require_second_factor: 'everyone',
    });
    assert.equal(refused.status, 403);
    const reset = await b.act(
      '/dashboard/account/second-factor',
      `/dashboard/account/second-factor/reset/${ids['finance@2fa.test']}`,
      {},
    );
    assert.equal(reset.status, 403);
    const { rows } = await t.db.query<{ require_second_factor: boolean }>(
      'SELECT require_second_factor FROM workspaces WHERE id = $1',
      [workspaceId],
    );
    assert.equal(rows[0]?.require_second_factor, false);
    assert.equal(
      (await t.db.query('SELECT 1 FROM member_second_factors WHERE member_id = $1', [ids['finance@2fa.test']]))
        .rowCount,
      1,
    );
  });
});

describe('turning it off', () => {
  it('needs a current code or the password; an owner removes a lost one', async () => {
    const member = { id: ids['lost@2fa.test'] ?? '', email: 'lost@2fa.test' };
    const { secret } = await giveSecondFactor(t, workspaceId, member);
    await forgetLastStep(t, member.id);
    const b = new Browser();
    assert.equal((await b.code((await b.password(member.email)).page, codeFor(secret))).res.status, 303);
    const wrong = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/disable', {
      code: '',
      password: 'not my password at all',
    });
    assert.equal(wrong.status, 400);
    assert.equal(
      (await t.db.query('SELECT 1 FROM member_second_factors WHERE member_id = $1', [member.id])).rowCount,
      1,
    );
    const counted = await t.db.query<{ failures: number }>(
      'SELECT failures FROM dashboard_sign_in_failures WHERE key_hash = $1',
      [createHash('sha256').update('account:lost@2fa.test').digest()],
    );
    assert.equal(counted.rows[0]?.failures, 1, 'a wrong password here counts like a failed sign-in');
    const off = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/disable', {
      code: '',
      password: PASSWORD,
    });
    assert.equal(off.status, 303);
    assert.equal(
      (await t.db.query('SELECT 1 FROM member_second_factors WHERE member_id = $1', [member.id])).rowCount,
      0,
    );
    assert.equal(
      (await t.db.query('SELECT 1 FROM member_recovery_codes WHERE member_id = $1', [member.id])).rowCount,
      0,
    );
    assert.deepEqual(
      (await auditOf(off)).map((r) => [r.action, r.actor_id, r.object_id, r.status]),
      [['member.second_factor_disable', member.id, member.id, 303]],
    );
    assert.deepEqual(
      (await auditOf(wrong)).map((r) => [r.action, r.status]),
      [['member.second_factor_disable', 400]],
    );

    // Set up again, then the phone is lost: an owner removes it, and the password alone signs in.
    await giveSecondFactor(t, workspaceId, member);
    const owner = new Browser();
    await forgetLastStep(t, ids['owner@2fa.test'] ?? '');
    const ownerSecret = t.box.open(
      (
        await t.db.query<{ sealed_secret: string }>(
          'SELECT sealed_secret FROM member_second_factors WHERE member_id = $1',
          [ids['owner@2fa.test']],
        )
      ).rows[0]?.sealed_secret ?? '',
    );
    assert.equal(
      (await owner.code((await owner.password('owner@2fa.test')).page, codeFor(ownerSecret))).res.status,
      303,
    );
    const listed = await (await owner.fetch('/dashboard/account/second-factor')).text();
    assert.doesNotMatch(listed, /aria-label="Remove the second factor of owner@2fa.test"/, 'not one’s own');
    const self = await owner.act(
      '/dashboard/account/second-factor',
      `/dashboard/account/second-factor/reset/${ids['owner@2fa.test']}`,
      {},
    );
    assert.equal(self.status, 400, 'one’s own needs a code or the password');
    assert.match(listed, /aria-label="Remove the second factor of lost@2fa.test"/);
    const removed = await owner.act(
      '/dashboard/account/second-factor',
      `/dashboard/account/second-factor/reset/${member.id}`,
      {},
    );
    assert.equal(removed.status, 303);
    assert.deepEqual(
      (await auditOf(removed)).map((r) => [r.action, r.actor_id, r.object_type, r.object_id, r.status]),
      [['member.second_factor_reset', ids['owner@2fa.test'], 'member', member.id, 303]],
    );
    const again = new Browser();
    assert.equal((await again.password(member.email)).res.status, 303, 'the password alone, as the factor is gone');
  });

  it('is turned off with a current code too, which is then spent', async () => {
    const member = { id: ids['dev@2fa.test'] ?? '', email: 'dev@2fa.test' };
    const secret = t.box.open(
      (
        await t.db.query<{ sealed_secret: string }>(
          'SELECT sealed_secret FROM member_second_factors WHERE member_id = $1',
          [member.id],
        )
      ).rows[0]?.sealed_secret ?? '',
    );
    await forgetLastStep(t, member.id);
    const b = new Browser();
    assert.equal((await b.code((await b.password(member.email)).page, codeFor(secret, -1))).res.status, 303);
    const wrong = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/disable', {
      code: codeFor(secret, -1),
      password: '',
    });
    assert.equal(wrong.status, 400, 'the code just used to sign in is spent');
    const off = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/disable', {
      code: codeFor(secret),
      password: '',
    });
    assert.equal(off.status, 303);
  });
});

describe('new recovery codes', () => {
  it('are made with a current code from the app, never a recovery code; the old ones stop working', async () => {
    const made = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, workspaceId, {
      email: 'codes@2fa.test',
      password: PASSWORD,
      role: 'viewer',
    });
    assert.ok(made.ok);
    const member = { id: made.member.id, email: 'codes@2fa.test' };
    const { secret, recoveryCodes: old } = await giveSecondFactor(t, workspaceId, member);
    await forgetLastStep(t, member.id);
    const b = new Browser();
    assert.equal((await b.code((await b.password(member.email)).page, codeFor(secret, -1))).res.status, 303);
    const page = await (await b.fetch('/dashboard/account/second-factor')).text();
    assert.match(page, /Make new recovery codes/);

    // A recovery code cannot mint more, and a wrong try counts like a failed sign-in.
    const refused = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/recovery-codes', {
      app_code: old[0] ?? '',
    });
    assert.equal(refused.status, 400);
    const hashesBefore = await t.db.query('SELECT code_hash FROM member_recovery_codes WHERE member_id = $1', [
      member.id,
    ]);
    assert.equal(hashesBefore.rowCount, 10, 'the refused try neither spent a code nor replaced them');

    const fresh = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/recovery-codes', {
      app_code: codeFor(secret),
    });
    assert.equal(fresh.status, 200);
    const html = await fresh.text();
    const codes = [...html.matchAll(/<li>([a-z2-9]{5}-[a-z2-9]{5})<\/li>/g)].map((m) => m[1] ?? '');
    assert.equal(codes.length, 10, html);
    assert.equal(codes.filter((c) => old.includes(c)).length, 0, 'all ten are new');
    assert.deepEqual(
      (await auditOf(fresh)).map((r) => [r.action, r.actor_id, r.object_id, r.status]),
      [['member.recovery_codes_regenerate', member.id, member.id, 200]],
    );
    assert.deepEqual(
      (await auditOf(refused)).map((r) => [r.action, r.status]),
      [['member.recovery_codes_regenerate', 400]],
    );

    // The app's code is spent; an old recovery code no longer signs in; a new one does.
    const replay = await b.act('/dashboard/account/second-factor', '/dashboard/account/second-factor/recovery-codes', {
      app_code: codeFor(secret),
    });
    assert.equal(replay.status, 400, 'the same time step twice');
    const withOld = new Browser();
    assert.equal((await withOld.code((await withOld.password(member.email)).page, old[1] ?? '')).res.status, 401);
    const withNew = new Browser();
    assert.equal((await withNew.code((await withNew.password(member.email)).page, codes[0] ?? '')).res.status, 303);
  });
});
