// The dashboard at /dashboard: server-rendered pages over the public API (through the SDK, in-process), for a
// workspace's team and for the operator. Sign-in exchanges a member's email and password, or a pasted API token (the
// break-glass path), for a session cookie (the form itself carries a one-time value, sign-in-nonces.ts); every other form carries the session's CSRF token; pages work without
// their script. Not part of the API document.
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import type { Db } from '../../db/pool.js';
import { NO_WORKSPACE } from '../../platform/audit.js';
import { isUuid } from '../../platform/ids.js';
import { smtpMailer } from '../../platform/mail.js';
import type { SecretBox } from '../../platform/secret-box.js';
import type { TokenService } from '../../platform/tokens.js';
import { PaymentsError } from '../../../packages/sdk/src/index.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import { MembersService, type MemberLinkRow } from '../members/members.service.js';
import { SecondFactorService } from '../members/second-factor.service.js';
import { apiClient } from './api-client.js';
import { exponentOf } from './forms.js';
import { formatMoney, html, raw, time } from './html.js';
import { DASHBOARD_HEADERS, layout, plainLayout } from './layout.js';
import { adminPages } from './pages/admin.js';
import { operatorFloatPages } from './pages/operator-float.js';
import { checkoutLinkPages } from './pages/checkout-links.js';
import { collectionPages } from './pages/collections.js';
import { depositPages } from './pages/deposits.js';
import { developerOverviewPage } from './pages/developers.js';
import { auditLogPages } from './pages/audit-log.js';
import { eventPages } from './pages/developers-events.js';
import { keyPages } from './pages/developers-keys.js';
import { memberPages } from './pages/members.js';
import { mustEnrolFirst, SECOND_FACTOR_PAGE, secondFactorPages } from './pages/second-factor.js';
import { webhookPages } from './pages/developers-webhooks.js';
import { homePage } from './pages/home.js';
import { payoutPages } from './pages/payouts.js';
import { refundPages } from './pages/refunds.js';
import { reportPages } from './pages/reports.js';
import { sandboxPages } from './pages/sandbox.js';
import { PERMISSION_LABELS, type Permission } from '../members/permissions.js';
import { secondStepRoutes } from './second-step.routes.js';
import { clientOf, DashboardSessions, sameSecret, SESSION_COOKIE, type Session } from './sessions.js';
import { SIGNIN_COOKIE, SIGNIN_NONCE_TTL_SECONDS, SignInNonces } from './sign-in-nonces.js';
import { SignInThrottle } from './sign-in-throttle.js';
import { SECOND_STEP_COOKIE, SECOND_STEP_TTL_SECONDS, SecondSteps } from './second-steps.js';
import type { PageContext, PageHandler, PageResult, Pages } from './page-context.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** `METHOD /dashboard/path` → the permission a member's role needs for that page or form. */
    dashboardPermissions: Map<string, Permission>;
  }
}

export interface DashboardDeps {
  db: Db;
  box: SecretBox;
  tokens: TokenService;
  catalogue: MarketCatalogue;
  config: Config;
}

const NOTICE_COOKIE = 'dashboard_notice';
const TZ_COOKIE = 'dashboard_tz';

/** What the parser would quietly rewrite or drop (a backslash becomes a slash, a tab vanishes): refused anywhere. */
const UNSAFE_CHARACTERS = /[\\\s\p{Cc}]/u;
/**
 * An encoded dot, slash, backslash or percent sign in the path: what a decoding further on (a proxy's, a router's)
 * could turn into a way out of /dashboard. No dashboard path has one.
 */
const ENCODED_PATH_TRICKS = /%(2e|2f|5c|25)/i;

/**
 * Where to go after signing in: a page of this dashboard only. The value is resolved by the WHATWG URL parser
 * against the service's own origin (so `..`, `%2e%2e` and the like are applied, as a browser would) and kept only
 * when it stays on that origin and its normalised path is /dashboard or under /dashboard/; the answer is that path
 * and query, never an absolute URL. Anything else is /dashboard.
 */
function safeNext(next: unknown, origin: string): string {
  if (typeof next !== 'string' || next === '' || UNSAFE_CHARACTERS.test(next)) return '/dashboard';
  if (ENCODED_PATH_TRICKS.test(next.split(/[?#]/, 1)[0] ?? '')) return '/dashboard';
  let url: URL;
  try {
    url = new URL(next, origin);
  } catch {
    return '/dashboard';
  }
  if (url.origin !== origin) return '/dashboard';
  if (url.pathname !== '/dashboard' && !url.pathname.startsWith('/dashboard/')) return '/dashboard';
  return url.pathname + url.search;
}

function validTimeZone(zone: string | undefined): string {
  if (!zone) return 'UTC';
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return zone;
  } catch {
    return 'UTC';
  }
}

function firstValues(input: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (input && typeof input === 'object') {
    for (const [k, v] of Object.entries(input as Record<string, unknown>)) {
      const value = Array.isArray(v) ? (v[0] as unknown) : v;
      if (typeof value === 'string') out[k] = value;
    }
  }
  return out;
}

export function dashboardRoutes(app: FastifyInstance, deps: DashboardDeps): void {
  const members = new MembersService(deps.tokens, deps.config.paymentsEnv);
  const sessions = new DashboardSessions(deps.db, deps.tokens, deps.box, members);
  const nonces = new SignInNonces(deps.db);
  const throttle = new SignInThrottle(deps.db);
  const origin = new URL(deps.config.publicBaseUrl).origin;
  const secondFactors = new SecondFactorService(deps.box, new URL(origin).host);
  const secondSteps = new SecondSteps(deps.db);
  const mailer = deps.config.smtpUrl ? smtpMailer(deps.config.smtpUrl, deps.config.smtpFrom) : undefined;
  const next = (value: unknown): string => safeNext(value, origin);
  const secure = deps.config.paymentsEnv === 'production' || deps.config.publicBaseUrl.startsWith('https:');
  /** The sign-in form's value and the one-time notice: only ever needed by this site's own requests. */
  const cookieOptions = { path: '/dashboard', httpOnly: true, sameSite: 'strict' as const, secure };
  /**
   * The session: SameSite=Lax, so a link from another site (an e-mail, a chat) opens the page signed in instead of
   * looking signed out. A cross-site POST still carries no session cookie, every POST must also carry the session's
   * CSRF token, and no GET page acts on anything (docs/guides/dashboard.md, "Why the session cookie is Lax").
   */
  const sessionCookieOptions = { ...cookieOptions, sameSite: 'lax' as const };
  const route = { config: { auth: 'public' as const }, schema: { hide: true } };

  const money = (amount: number, currency: string): string => formatMoney(amount, currency, exponentOf(deps, currency));

  void app.register(
    async (scope) => {
      await scope.register(cookie);
      await scope.register(formbody, { bodyLimit: 64 * 1024 });
      scope.addHook('onRequest', async (_request, reply) => {
        reply.headers(DASHBOARD_HEADERS);
      });

      const send = (reply: FastifyReply, status: number, page: string): FastifyReply =>
        reply.code(status).type('text/html; charset=utf-8').send(page);

      const errorPage = (reply: FastifyReply, status: number, title: string, detail: string): FastifyReply =>
        send(
          reply,
          status,
          plainLayout(
            deps.config.paymentsEnv,
            title,
            html`<p class="error" role="alert">${detail}</p>
              <p><a href="/dashboard">Dashboard home</a></p>`,
          ),
        );

      /** The notice a redirect left for this page (shown once). */
      const takeNotice = (request: FastifyRequest, reply: FastifyReply): string | undefined => {
        const value = request.cookies[NOTICE_COOKIE];
        if (value === undefined) return undefined;
        reply.clearCookie(NOTICE_COOKIE, cookieOptions);
        try {
          return decodeURIComponent(value);
        } catch {
          return undefined;
        }
      };

      const toSignIn = (reply: FastifyReply, page: string): FastifyReply =>
        reply.redirect(`/dashboard/sign-in?next=${encodeURIComponent(next(page))}`, 303);

      /** The page a POST came from, to return to after signing in again. */
      const pageOf = (request: FastifyRequest): string => {
        if (request.method === 'GET') return request.url;
        try {
          const referer = new URL(request.headers.referer ?? '');
          return referer.pathname + referer.search;
        } catch {
          return '/dashboard';
        }
      };

      const handle =
        (handler: PageHandler, post: boolean, permission: Permission) =>
        async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
          const cookie = request.cookies[SESSION_COOKIE];
          const session = await sessions.find(cookie);
          if (!session) {
            // Only a cookie naming no live session is cleared. A request without one (a first visit, or a cross-site
            // one the browser sent without it) is sent to sign-in and ends nothing.
            if (cookie !== undefined) reply.clearCookie(SESSION_COOKIE, sessionCookieOptions);
            return toSignIn(reply, pageOf(request));
          }
          // An owner or admin (or anyone, when the workspace says so) without a second factor sets one up first.
          if (mustEnrolFirst(session, request.routeOptions.url)) return reply.redirect(SECOND_FACTOR_PAGE, 303);
          const fields = firstValues(post ? request.body : request.query);
          if (post && !sameSecret(fields.csrf, session.csrf_token))
            return errorPage(
              reply,
              403,
              'Form expired',
              'This form was not sent from this session. Go back, reload the page and try again.',
            );
          const may = (p: Permission): boolean => session.permissions === undefined || session.permissions.includes(p);
          if (request.routeOptions.config.audit) {
            const params = Object.values((request.params ?? {}) as Record<string, string>);
            request.auditNote = {
              workspaceId: session.workspace_id,
              actorType: session.member_id ? 'member' : 'dashboard',
              actorId: session.member_id ?? session.credential_id,
              objectId: params.length === 1 ? (params[0] ?? null) : null,
            };
          }
          // After the audit note: a write the role may not make is recorded too, answered 403.
          if (!may(permission)) return forbidden(request, reply, session, permission);
          const timeZone = validTimeZone(request.cookies[TZ_COOKIE]);
          const ctx: PageContext = {
            request,
            session,
            api: apiClient(app, session.token, request.id, request.ip, session.member_id ?? undefined),
            csrf: html`<input type="hidden" name="csrf" value="${session.csrf_token}" />`,
            fields,
            money,
            time: (iso) => time(iso, timeZone),
            catalogue: deps.catalogue,
            may,
          };
          let result: PageResult;
          try {
            result = await handler(ctx);
          } catch (error) {
            if (!(error instanceof PaymentsError)) throw error;
            if (error.status === 401) {
              await sessions.end(session);
              reply.clearCookie(SESSION_COOKIE, sessionCookieOptions);
              return toSignIn(reply, pageOf(request));
            }
            const title = error.status === 404 ? 'Not found' : error.status === 403 ? 'Not allowed' : 'Not done';
            return send(
              reply,
              error.status,
              layout(
                { title, session, pathname: request.url.split('?')[0] ?? '', csrf: ctx.csrf },
                html`<p class="error" role="alert">
                    ${error.problem.detail}
                    <span class="muted">(${error.code}; request ${error.requestId ?? request.id})</span>
                  </p>
                  <p>
                    <a href="${pageOf(request) === request.url && post ? '/dashboard' : pageOf(request)}">Back</a>
                  </p>`,
              ),
            );
          }
          if ('redirect' in result) {
            if (result.signedOut) reply.clearCookie(SESSION_COOKIE, sessionCookieOptions);
            if (result.notice)
              reply.setCookie(NOTICE_COOKIE, encodeURIComponent(result.notice), { ...cookieOptions, maxAge: 60 });
            return reply.redirect(result.redirect, 303);
          }
          if ('download' in result) {
            const { filename, contentType, body } = result.download;
            return reply
              .header('content-disposition', `attachment; filename="${filename.replace(/[^\w.-]/g, '_')}"`)
              .type(contentType)
              .send(body);
          }
          const notice = takeNotice(request, reply);
          return send(
            reply,
            result.status ?? 200,
            layout(
              { title: result.title, session, pathname: request.url.split('?')[0] ?? '', csrf: ctx.csrf, notice },
              result.content,
            ),
          );
        };

      /**
       * A page or form the member's role does not permit: 403 with the stable code `forbidden`, whatever the page
       * would have shown (its links and buttons are not drawn for the role either). Its form never reaches the API,
       * which would refuse it too (src/platform/auth.ts).
       */
      const forbidden = (
        request: FastifyRequest,
        reply: FastifyReply,
        session: Session,
        permission: Permission,
      ): FastifyReply =>
        send(
          reply,
          403,
          layout(
            {
              title: 'Not allowed',
              session,
              pathname: request.url.split('?')[0] ?? '',
              csrf: html`<input type="hidden" name="csrf" value="${session.csrf_token}" />`,
            },
            html`<p class="error" role="alert" data-code="forbidden">
                Your role (${session.member_role ?? 'none'}) does not permit this: it needs
                “${PERMISSION_LABELS[permission]}”. An owner can change your role.
                <span class="muted">(forbidden; request ${request.id})</span>
              </p>
              <p><a href="/dashboard">Dashboard home</a></p>`,
          ),
        );

      /** Every page and the permission it needs, for the tests and the guide (`METHOD /dashboard/path`). */
      const declared = new Map<string, Permission>();
      app.decorate('dashboardPermissions', declared);
      const pages: Pages = {
        get: (path, handler, permission = 'read') => {
          declared.set(`GET /dashboard${path === '/' ? '' : path}`, permission);
          scope.get(path, route, handle(handler, false, permission));
        },
        post: (path, handler, permission, audit) => {
          declared.set(`POST /dashboard${path}`, permission);
          scope.post(
            path,
            audit ? { ...route, config: { ...route.config, audit } } : route,
            handle(handler, true, permission),
          );
        },
      };

      // Sign-in: the form carries a one-time value, stored server-side and set in a cookie with it, so a login form
      // cannot be posted from another site into this one (sign-in-nonces.ts).
      scope.get('/sign-in', route, async (request, reply) => {
        const back = next(firstValues(request.query).next);
        if (await sessions.find(request.cookies[SESSION_COOKIE])) return reply.redirect(back, 303);
        return signInForm(reply, back, { notice: takeNotice(request, reply) });
      });

      const signInForm = async (
        reply: FastifyReply,
        back: string,
        {
          problem,
          notice,
          status = 200,
          failed,
          email = '',
        }: { problem?: string; notice?: string; status?: number; failed?: 'member' | 'token'; email?: string } = {},
      ): Promise<FastifyReply> => {
        const nonce = await nonces.issue();
        reply.setCookie(SIGNIN_COOKIE, nonce, { ...cookieOptions, maxAge: SIGNIN_NONCE_TTL_SECONDS });
        // The error is tied to the fields of the form that was sent (the other form's fields are left alone).
        const memberError = problem && failed !== 'token' ? ' signin-error' : '';
        const tokenError = problem && failed === 'token' ? ' signin-error' : '';
        return send(
          reply,
          status,
          plainLayout(
            deps.config.paymentsEnv,
            'Sign in to the dashboard',
            html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
              ${problem ? html`<p class="error" role="alert" id="signin-error">${problem}</p>` : ''}
              <form method="post" action="/dashboard/sign-in/password" class="card">
                <input type="hidden" name="csrf" value="${nonce}" /><input type="hidden" name="next" value="${back}" />
                <div class="field">
                  <label for="email">Email</label>
                  <input
                    id="email"
                    name="email"
                    type="email"
                    required
                    maxlength="254"
                    autocomplete="username"
                    value="${email}"
                    ${memberError ? raw(' aria-describedby="signin-error"') : ''}
                  />
                </div>
                <div class="field">
                  <label for="password">Password</label>
                  <input
                    id="password"
                    name="password"
                    type="password"
                    required
                    maxlength="1000"
                    autocomplete="current-password"
                    ${memberError ? raw(' aria-describedby="signin-error"') : ''}
                  />
                </div>
                <button type="submit">Sign in</button>
              </form>
              <section class="card" aria-labelledby="break-glass">
                <h2 id="break-glass">Break-glass: sign in with a token</h2>
                <p class="muted">
                  For the first owner, before the workspace has an owner who is a member: sign in, then invite one under
                  Members (or run <code>npm run admin -- create-member</code>). Once an owner has joined, a token no
                  longer signs in.
                </p>
                <form method="post" action="/dashboard/sign-in">
                  <input type="hidden" name="csrf" value="${nonce}" /><input
                    type="hidden"
                    name="next"
                    value="${back}"
                  />
                  <div class="field">
                    <label for="token">API token</label>
                    <textarea
                      id="token"
                      name="token"
                      required
                      autocomplete="off"
                      spellcheck="false"
                      aria-describedby="token-hint${tokenError}"
                    ></textarea>
                    <p class="muted" id="token-hint">
                      Paste a workspace's API token (or the operator's admin token). It stays on the server; your
                      browser keeps only a session cookie, which ends after 12 hours without use, when you sign out, or
                      when the key is rotated or revoked.
                    </p>
                  </div>
                  <button type="submit" class="secondary">Sign in with the token</button>
                </form>
              </section>`,
          ),
        );
      };

      /**
       * A sign-in refused before it is tried, after too many failures from this address or for this account
       * (sign-in-throttle.ts): 429 with Retry-After; it does not say which. Not in the audit log (nothing was tried).
       */
      const tooManyFailures = (
        reply: FastifyReply,
        back: string,
        seconds: number,
        form: { failed?: 'token'; email?: string },
      ): Promise<FastifyReply> => {
        reply.header('retry-after', String(seconds));
        const wait = seconds < 120 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
        return signInForm(reply, back, {
          problem: `Too many failed sign-ins. Wait ${wait}, then try again.`,
          status: 429,
          ...form,
        });
      };

      // Every token tried is recorded in the audit log (docs/guides/audit-log.md): a success or a failure under the
      // workspace and credential the token names when this service signed it, else under no workspace with no actor.
      // The answer is the same either way: the log tells the person signing in nothing.
      const signInRoute = {
        config: { auth: 'public' as const, audit: { action: 'dashboard.sign_in', objectType: 'credential' } },
        schema: { hide: true },
      };
      scope.post('/sign-in', signInRoute, async (request, reply) => {
        const fields = firstValues(request.body);
        const back = next(fields.next);
        if (!(await nonces.redeem(fields.csrf, request.cookies[SIGNIN_COOKIE])))
          return signInForm(reply, back, {
            problem: 'The sign-in form expired. Paste the token again.',
            status: 403,
            failed: 'token',
          });
        const wait = await throttle.wait(request.ip);
        if (wait > 0) return tooManyFailures(reply, back, wait, { failed: 'token' });
        const result = await sessions.signIn(fields.token ?? '', clientOf(request));
        if (!result.ok) await throttle.failed(request.ip);
        request.auditNote = {
          workspaceId: result.credential?.workspaceId ?? NO_WORKSPACE,
          actorType: result.credential ? 'dashboard' : 'anonymous',
          actorId: result.credential?.credentialId ?? null,
          objectId: result.credential?.credentialId ?? null,
          ...(result.ok ? {} : { action: 'dashboard.sign_in_failed' }),
        };
        if (!result.ok) return signInForm(reply, back, { problem: result.reason, status: 401, failed: 'token' });
        reply.clearCookie(SIGNIN_COOKIE, cookieOptions);
        // No Max-Age: the cookie lasts while the browser does; the server ends the session after IDLE_LIMIT_MS unused.
        reply.setCookie(SESSION_COOKIE, result.sessionId, sessionCookieOptions);
        return reply.redirect(back, 303);
      });

      // A member's email and password: the same one-time form value as the token form, and the same kind of session.
      // Every attempt is recorded in the audit log: a success under the member; a failure under the workspace of the
      // member the email named (with that member as the object, so its owners see the attempts), else under no
      // workspace. The answer to a wrong email and to a wrong password is the same.
      const memberSignInRoute = {
        config: { auth: 'public' as const, audit: { action: 'dashboard.sign_in', objectType: 'member' } },
        schema: { hide: true },
      };
      scope.post('/sign-in/password', memberSignInRoute, async (request, reply) => {
        const fields = firstValues(request.body);
        const back = next(fields.next);
        const email = (fields.email ?? '').trim().slice(0, 254);
        if (!(await nonces.redeem(fields.csrf, request.cookies[SIGNIN_COOKIE])))
          return signInForm(reply, back, {
            problem: 'The sign-in form expired. Enter your password again.',
            status: 403,
            email,
          });
        const wait = await throttle.wait(request.ip, email);
        if (wait > 0) return tooManyFailures(reply, back, wait, { email });
        const result = await sessions.signInMember(
          email,
          fields.password ?? '',
          clientOf(request),
          undefined,
          async (m) => (await secondFactors.status(deps.db, m.workspace_id, m.id)).enrolled,
        );
        // The account's count starts over only once the second factor is right too (secondStepRoutes).
        if (result.ok && !result.secondStep) await throttle.succeeded(email);
        else if (!result.ok) await throttle.failed(request.ip, email);
        request.auditNote = result.ok
          ? {
              workspaceId: result.member.workspace_id,
              actorType: 'member',
              actorId: result.member.id,
              objectId: result.member.id,
              ...(result.secondStep ? { action: 'dashboard.sign_in_password' } : {}),
            }
          : {
              workspaceId: result.member?.workspace_id ?? NO_WORKSPACE,
              actorType: 'anonymous',
              actorId: null,
              objectId: result.member?.id ?? null,
              action: 'dashboard.sign_in_failed',
            };
        if (!result.ok) return signInForm(reply, back, { problem: result.reason, status: 401, email });
        if (result.secondStep) {
          const step = await secondSteps.issue(result.member.workspace_id, result.member.id);
          reply.setCookie(SECOND_STEP_COOKIE, step, { ...cookieOptions, maxAge: SECOND_STEP_TTL_SECONDS });
          return secondStepForm(reply, back);
        }
        reply.clearCookie(SIGNIN_COOKIE, cookieOptions);
        reply.setCookie(SESSION_COOKIE, result.sessionId, sessionCookieOptions);
        return reply.redirect(back, 303);
      });

      const secondStepForm = secondStepRoutes(scope, {
        ...deps,
        members,
        sessions,
        secondFactors,
        secondSteps,
        nonces,
        throttle,
        next,
        send,
        signInForm,
        firstValues,
        cookieOptions,
        sessionCookieOptions,
      });

      // A member's one-time link (pages/members.ts issues them): an invitation, whose invitee chooses a password and
      // becomes a member, or an owner's password reset. The link's own random value is the secret; the form also
      // carries the sign-in form's one-time value, so no other site can post it. The link is taken by the post that
      // uses it, in the same transaction as the member is made or its password replaced.
      const LINK_TOKEN = /^[A-Za-z0-9_-]{43}$/;
      const linkOf = (request: FastifyRequest): { workspaceId: string; token: string } | undefined => {
        const { workspace, token } = request.params as { workspace: string; token: string };
        return isUuid(workspace) && LINK_TOKEN.test(token) ? { workspaceId: workspace, token } : undefined;
      };
      const linkGone = (reply: FastifyReply): FastifyReply =>
        errorPage(
          reply,
          404,
          'Link not valid',
          'This link has expired or has already been used. Ask an owner for a new one.',
        );
      const linkForm = async (
        reply: FastifyReply,
        link: MemberLinkRow,
        action: string,
        { problem, status = 200 }: { problem?: string; status?: number } = {},
      ): Promise<FastifyReply> => {
        const nonce = await nonces.issue();
        reply.setCookie(SIGNIN_COOKIE, nonce, { ...cookieOptions, maxAge: SIGNIN_NONCE_TTL_SECONDS });
        const invitation = link.purpose === 'invitation';
        return send(
          reply,
          status,
          plainLayout(
            deps.config.paymentsEnv,
            invitation ? 'Accept the invitation' : 'Set a new password',
            html`${problem ? html`<p class="error" role="alert" id="link-error">${problem}</p>` : ''}
              <p>
                ${
                  invitation
                    ? html`You are invited to the dashboard as ${link.email}, with the role ${link.role}. Choose a
                      password to join.`
                    : html`Choose a new password for ${link.email}. Every session of this member ends when it is set.`
                }
              </p>
              <form method="post" action="${action}" class="card">
                <input type="hidden" name="csrf" value="${nonce}" />
                <div class="field">
                  <label for="new-password">New password</label>
                  <input
                    id="new-password"
                    name="password"
                    type="password"
                    required
                    minlength="12"
                    maxlength="200"
                    autocomplete="new-password"
                    aria-describedby="new-password-hint${problem ? ' link-error' : ''}"
                  />
                  <p class="muted" id="new-password-hint">At least 12 characters.</p>
                </div>
                <button type="submit">${invitation ? 'Join' : 'Set password'}</button>
              </form>`,
          ),
        );
      };
      scope.get('/links/:workspace/:token', route, async (request, reply) => {
        const ref = linkOf(request);
        const link = ref && (await members.findLink(deps.db, ref.workspaceId, ref.token));
        if (!ref || !link) return linkGone(reply);
        return linkForm(reply, link, request.url.split('?')[0] ?? '');
      });
      const linkRoute = {
        config: { auth: 'public' as const, audit: { action: 'member.invitation_accept', objectType: 'member' } },
        schema: { hide: true },
      };
      scope.post('/links/:workspace/:token', linkRoute, async (request, reply) => {
        const ref = linkOf(request);
        const link = ref && (await members.findLink(deps.db, ref.workspaceId, ref.token));
        if (!ref || !link) return linkGone(reply);
        const action = request.url.split('?')[0] ?? '';
        const fields = firstValues(request.body);
        if (!(await nonces.redeem(fields.csrf, request.cookies[SIGNIN_COOKIE])))
          return linkForm(reply, link, action, { problem: 'The form expired. Enter the password again.', status: 403 });
        const password = fields.password ?? '';
        const used =
          link.purpose === 'invitation'
            ? await members.acceptInvitation(deps.db, ref.workspaceId, ref.token, password)
            : await members.resetPassword(deps.db, ref.workspaceId, ref.token, password);
        if (!used.ok) {
          if (used.reason === 'expired') return linkGone(reply);
          return linkForm(reply, link, action, {
            problem: used.message,
            status: used.reason === 'email_taken' ? 409 : 400,
          });
        }
        request.auditNote = {
          workspaceId: ref.workspaceId,
          actorType: 'member',
          actorId: used.member.id,
          objectId: used.member.id,
          ...(link.purpose === 'invitation' ? {} : { action: 'member.password_reset' }),
        };
        reply.clearCookie(SIGNIN_COOKIE, cookieOptions);
        const notice =
          link.purpose === 'invitation'
            ? 'You have joined. Sign in with your email and new password.'
            : 'Password set. Sign in with it.';
        reply.setCookie(NOTICE_COOKIE, encodeURIComponent(notice), { ...cookieOptions, maxAge: 60 });
        return reply.redirect('/dashboard/sign-in', 303);
      });

      // A form with the session's CSRF token (a POST from another site carries neither it nor the Lax cookie).
      pages.post(
        '/sign-out',
        async (ctx) => {
          await sessions.end(ctx.session);
          return { redirect: '/dashboard/sign-in', notice: 'Signed out.', signedOut: true };
        },
        'read',
      );

      homePage(pages);
      collectionPages(pages);
      refundPages(pages);
      payoutPages(pages);
      depositPages(pages);
      checkoutLinkPages(pages, deps.config);
      developerOverviewPage(pages);
      keyPages(pages);
      webhookPages(pages);
      eventPages(pages);
      reportPages(pages);
      sandboxPages(pages);
      adminPages(pages);
      operatorFloatPages(pages);
      memberPages(pages, { db: deps.db, members, sessions, publicBaseUrl: deps.config.publicBaseUrl, mailer });
      secondFactorPages(pages, { db: deps.db, members, secondFactors, throttle });
      auditLogPages(pages);

      scope.setNotFoundHandler((request, reply) =>
        errorPage(reply, 404, 'Page not found', `There is no dashboard page at ${request.url.split('?')[0] ?? ''}.`),
      );
      scope.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
        const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
        if (status === 500) request.log.error({ err: error }, 'dashboard page failed');
        return errorPage(
          reply,
          status,
          status === 500 ? 'Something went wrong' : 'Request not accepted',
          status === 500
            ? `Something went wrong on our side (request ${request.id}).`
            : 'The request could not be read. Go back and try again.',
        );
      });
    },
    { prefix: '/dashboard' },
  );
}
