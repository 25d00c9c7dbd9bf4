// Invitations by email: with SMTP_URL set, an invitation is sent through that server (here a real SMTP server on
// loopback, the smtp-server package) with its one-time link, and the inviter is told it was sent instead of being
// shown the link; the link in the message works. A server that refuses the message leaves the inviter with the link
// to send on, and a bad SMTP_URL stops the boot.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { ConfigError, loadConfig } from '../src/config.js';
import { MembersService } from '../src/modules/members/members.service.js';
import { startTestApp, type TestApp } from './helpers/harness.js';
import { codeFor, giveSecondFactor } from './helpers/second-factor.js';

const ORIGIN = 'http://dash.example.test:8080';
const PASSWORD = 'the inviting owner passphrase';
const OWNER = 'owner@mail.test';
const REFUSED = 'bounce@mail.test';

interface Received {
  from: string;
  to: string[];
  raw: string;
}

let t: TestApp;
let smtp: SMTPServer;
const inbox: Received[] = [];
let ownerSecret = '';

before(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (address.address === REFUSED) callback(new Error('550 no such mailbox'));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        inbox.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const { port } = smtp.server.address() as AddressInfo;
  t = await startTestApp({
    PUBLIC_BASE_URL: ORIGIN,
    SMTP_URL: `smtp://127.0.0.1:${port}`,
    SMTP_FROM: 'Payments <team@mail.test>',
  });
  const made = await new MembersService(t.services.tokens, t.config.paymentsEnv).create(t.db, t.demoWorkspaceId, {
    email: OWNER,
    password: PASSWORD,
    role: 'owner',
  });
  assert.ok(made.ok);
  ownerSecret = (await giveSecondFactor(t, t.demoWorkspaceId, { id: made.member.id, email: OWNER })).secret;
});
after(async () => {
  await t.close();
  await new Promise<void>((resolve) => smtp.close(resolve));
});

function post(path: string, fields: Record<string, string>, cookie: string): Promise<Response> {
  return fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams(fields).toString(),
  });
}
const csrfIn = (page: string): string => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
const cookieOf = (res: Response, name: string): string =>
  res.headers
    .getSetCookie()
    .find((c) => c.startsWith(`${name}=`))
    ?.split(';')[0] ?? '';

/** The owner's session: password, then the code. */
async function ownerSession(): Promise<string> {
  const form = await fetch(`${t.baseUrl}/dashboard/sign-in`);
  const signin = cookieOf(form, 'dashboard_signin');
  const step = await post(
    '/dashboard/sign-in/password',
    { csrf: csrfIn(await form.text()), email: OWNER, password: PASSWORD },
    signin,
  );
  assert.equal(step.status, 200);
  const done = await post(
    '/dashboard/sign-in/second-factor',
    { csrf: csrfIn(await step.text()), code: codeFor(ownerSecret, 1) },
    `${cookieOf(step, 'dashboard_signin')}; ${cookieOf(step, 'dashboard_second_step')}`,
  );
  assert.equal(done.status, 303);
  return cookieOf(done, 'dashboard_session');
}

async function invite(cookie: string, email: string): Promise<Response> {
  const page = await (await fetch(`${t.baseUrl}/dashboard/members`, { headers: { cookie } })).text();
  assert.match(page, /The invitation is emailed/);
  assert.match(page, />\s*Send invitation\s*</);
  return post('/dashboard/members/invitations', { csrf: csrfIn(page), email, role: 'finance' }, cookie);
}

/** The message's text: quoted-printable undone (long lines, such as the link, are wrapped with soft breaks). */
const textOf = (raw: string): string =>
  raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));

let session = '';

describe('invitations with SMTP_URL set', () => {
  it('are emailed with their one-time link, which works, and the inviter is told so without the link', async () => {
    session = await ownerSession();
    const res = await invite(session, 'newcomer@mail.test');
    assert.equal(res.status, 200);
    const page = await res.text();
    assert.match(page, /Invitation sent/);
    assert.match(page, /The invitation was emailed to newcomer@mail\.test/);
    assert.doesNotMatch(page, /\/dashboard\/links\//, 'the link is not shown when it was mailed');

    assert.equal(inbox.length, 1);
    const mail = inbox[0];
    assert.ok(mail);
    assert.equal(mail.from, 'team@mail.test');
    assert.deepEqual(mail.to, ['newcomer@mail.test']);
    const text = textOf(mail.raw);
    assert.match(text, /^Subject: You are invited to Demo Shop on the payments dashboard/m);
    assert.match(text, /^From: Payments <team@mail\.test>/m);
    assert.match(text, /owner@mail\.test invited you to the dashboard of Demo Shop, with the role finance\./);
    const link = new RegExp(`${ORIGIN}/dashboard/links/${t.demoWorkspaceId}/[A-Za-z0-9_-]{43}`).exec(text)?.[0];
    assert.ok(link, 'the message carries the link');

    // The link in the message is the invitation: it opens the form and makes the member.
    const form = await fetch(`${t.baseUrl}${new URL(link).pathname}`);
    const formPage = await form.text();
    assert.match(formPage, /You are invited to the dashboard as newcomer@mail\.test, with the role finance/);
    const joined = await post(
      new URL(link).pathname,
      { csrf: csrfIn(formPage), password: 'the newcomer passphrase' },
      cookieOf(form, 'dashboard_signin'),
    );
    assert.equal(joined.status, 303);
    const { rows } = await t.db.query<{ role: string }>('SELECT role FROM members WHERE email = $1', [
      'newcomer@mail.test',
    ]);
    assert.deepEqual(rows, [{ role: 'finance' }]);
  });

  it('shows the link to send on when the mail server refuses the message', async () => {
    const before = inbox.length;
    const res = await invite(session, REFUSED);
    assert.equal(res.status, 200);
    const page = await res.text();
    assert.match(page, /The email could not be sent: send the link yourself\./);
    assert.match(page, new RegExp(`id="invitation-link">${ORIGIN}/dashboard/links/${t.demoWorkspaceId}/[\\w-]{43}<`));
    assert.equal(inbox.length, before, 'nothing was delivered');
  });
});

describe('SMTP_URL', () => {
  it('must be an smtp:// or smtps:// URL; SMTP_FROM an address', () => {
    for (const bad of ['mail.example:25', 'http://mail.example', 'smtp://'])
      assert.throws(() => loadConfig({ SMTP_URL: bad }), ConfigError, bad);
    assert.throws(() => loadConfig({ SMTP_URL: 'smtp://mail.example', SMTP_FROM: 'not an address' }), ConfigError);
    const config = loadConfig({ SMTP_URL: 'smtps://u:p@mail.example:465', PUBLIC_BASE_URL: 'https://pay.example' });
    assert.equal(config.smtpUrl, 'smtps://u:p@mail.example:465');
    assert.equal(config.smtpFrom, 'Payments dashboard <no-reply@pay.example>');
    assert.equal(loadConfig({}).smtpUrl, undefined);
  });
});
