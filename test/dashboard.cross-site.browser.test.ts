// The dashboard against a page on another site, in a real Chromium. The dashboard is served on
// 127.0.0.1 and the attacker's page on 127.0.0.2: another host, so another site (not only another origin), and the
// browser applies SameSite as it would between two domains. The page (a) auto-submits a sign-in form with the
// attacker's token, which must not sign the visitor into the attacker's workspace, whatever one-time value it carries;
// (b) links to the dashboard, and following the link must not sign a signed-in user out; (c) auto-submits a
// sign-out, which must not either.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserMissing, launchBrowser } from './helpers/browser.js';
import { openContext, signIn } from './helpers/dashboard.js';
import { createWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

const skip = browserMissing();

let t: TestApp;
let browser: Browser;
let attacker: AttackerSite;
/** The attacker's own workspace: a victim signed into it would file their work there. */
let mallory: { id: string; token: string };

interface AttackerSite {
  origin: string;
  close(): Promise<void>;
}

const escapeAttr = (s: string): string =>
  s.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** A page that posts a form to `action` as soon as it has loaded, as a hostile site would. */
function autoSubmit(action: string, fields: Record<string, string>): string {
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeAttr(name)}" value="${escapeAttr(value)}">`)
    .join('');
  return `<!doctype html><title>Win a prize</title><form id="f" method="post" action="${escapeAttr(action)}">${inputs}</form>
    <script>addEventListener('load', () => setTimeout(() => document.getElementById('f').submit(), 0));</script>`;
}

/** The attacker's site on 127.0.0.2 (another site than the dashboard's 127.0.0.1). */
async function startAttackerSite(dashboard: string, token: string): Promise<AttackerSite> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://attacker');
      let body: string;
      if (url.pathname === '/sign-in-as-me') {
        // The one-time value the page carries: none, empty, or a real one the attacker drew for himself.
        const mode = url.searchParams.get('csrf');
        const fields: Record<string, string> = { token, next: '/dashboard' };
        if (mode === 'empty') fields.csrf = '';
        if (mode === 'drawn') {
          const form = await (await fetch(`${dashboard}/dashboard/sign-in`)).text();
          fields.csrf = /name="csrf" value="([^"]+)"/.exec(form)?.[1] ?? 'not-found';
        }
        body = autoSubmit(`${dashboard}/dashboard/sign-in`, fields);
      } else if (url.pathname === '/link') {
        body = `<!doctype html><title>Newsletter</title><p><a href="${dashboard}/dashboard/collections">Open the dashboard</a></p>`;
      } else if (url.pathname === '/sign-out') {
        body = autoSubmit(`${dashboard}/dashboard/sign-out`, { csrf: '' });
      } else {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    })().catch((error: unknown) => res.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    origin: `http://127.0.0.2:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Sessions open in a workspace (the database's word, whatever the browser shows). */
async function sessionsOf(workspaceId: string): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM dashboard_sessions WHERE workspace_id = $1',
    [workspaceId],
  );
  return rows[0]?.n ?? -1;
}

/** Waits until the page shows a dashboard page (after a navigation started elsewhere). */
async function landedOnDashboard(page: Page): Promise<void> {
  await page.waitForURL((url) => url.origin === t.baseUrl && url.pathname.startsWith('/dashboard'));
  await page.waitForLoadState('load');
}

before(async () => {
  if (skip) return;
  t = await startTestApp();
  browser = await launchBrowser();
  mallory = await createWorkspace(t, 'Mallory Trading');
  attacker = await startAttackerSite(t.baseUrl, mallory.token);
});
after(async () => {
  if (skip) return;
  await attacker.close();
  await browser.close();
  await t.close();
});

describe('dashboard: a page on another site', { skip }, () => {
  it('auto-submitting a sign-in form does not sign the visitor in, whatever one-time value it carries', async () => {
    assert.notEqual(new URL(attacker.origin).hostname, new URL(t.baseUrl).hostname, 'two sites');
    for (const csrf of ['empty', 'none', 'drawn']) {
      const { context, page } = await openContext(browser, t);
      // The victim has seen the sign-in page before: their own form value is in a cookie of theirs.
      await page.goto(`${t.baseUrl}/dashboard/sign-in`);
      await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();

      await page.goto(`${attacker.origin}/sign-in-as-me?csrf=${csrf}`);
      await landedOnDashboard(page);
      assert.equal(await sessionsOf(mallory.id), 0, `${csrf}: no session opened in the attacker's workspace`);
      await page.getByRole('alert').filter({ hasText: 'The sign-in form expired' }).waitFor();

      await page.goto(`${t.baseUrl}/dashboard`);
      await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
      assert.equal(await page.getByText('Mallory Trading').count(), 0, csrf);
      const cookies = (await context.cookies(`${t.baseUrl}/dashboard`)).map((c) => c.name);
      assert.ok(cookies.includes('dashboard_signin') && !cookies.includes('dashboard_session'), `${csrf}: ${cookies}`);
      await context.close();
    }
  });

  it('following its link to the dashboard keeps the user signed in, and the session works afterwards', async () => {
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard`);
    await signIn(page, t.demoToken);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    const sessions = await sessionsOf(t.demoWorkspaceId);

    await page.goto(`${attacker.origin}/link`);
    await page.getByRole('link', { name: 'Open the dashboard' }).click();
    await landedOnDashboard(page);
    // The session cookie is Lax: the link opens the page, signed in.
    await page.getByRole('heading', { name: 'Collections', level: 1 }).waitFor();

    await page.goto(`${t.baseUrl}/dashboard`);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    const cookie = (await context.cookies(`${t.baseUrl}/dashboard`)).find((c) => c.name === 'dashboard_session');
    assert.equal(cookie?.sameSite, 'Lax');
    assert.equal(await sessionsOf(t.demoWorkspaceId), sessions, 'no session ended');
    await context.close();
  });

  it('auto-submitting a sign-out signs nobody out', async () => {
    const { context, page } = await openContext(browser, t);
    await page.goto(`${t.baseUrl}/dashboard`);
    await signIn(page, t.demoToken);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    const sessions = await sessionsOf(t.demoWorkspaceId);

    await page.goto(`${attacker.origin}/sign-out`);
    await landedOnDashboard(page);
    assert.equal(await page.getByText('Signed out.').count(), 0);

    await page.goto(`${t.baseUrl}/dashboard`);
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    assert.equal(await sessionsOf(t.demoWorkspaceId), sessions, 'no session ended');
    await context.close();
  });
});
