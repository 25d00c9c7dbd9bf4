// The sign-in's second step (second-steps.ts): the form asking a member with a second factor for a code after the
// right password, and its post. Kept apart from dashboard.routes.ts's password sign-in, which hands over here when
// the member has a factor. A wrong code counts in the sign-in throttle against the account and the address, like a
// wrong password, and is in the audit log as dashboard.second_factor_failed; a right one opens the session.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Db } from '../../db/pool.js';
import type { MembersService } from '../members/members.service.js';
import type { SecondFactorService } from '../members/second-factor.service.js';
import { html } from './html.js';
import { plainLayout } from './layout.js';
import { clientOf, MEMBER_SIGN_IN_REFUSED, SESSION_COOKIE, type DashboardSessions } from './sessions.js';
import { SECOND_STEP_COOKIE, type SecondSteps } from './second-steps.js';
import { SIGNIN_COOKIE, SIGNIN_NONCE_TTL_SECONDS, type SignInNonces } from './sign-in-nonces.js';
import type { SignInThrottle } from './sign-in-throttle.js';

interface CookieOptions {
  path: string;
  httpOnly: boolean;
  sameSite: 'strict' | 'lax';
  secure: boolean;
}

export interface SecondStepDeps {
  db: Db;
  config: { paymentsEnv: 'sandbox' | 'production' };
  members: MembersService;
  sessions: DashboardSessions;
  secondFactors: SecondFactorService;
  secondSteps: SecondSteps;
  nonces: SignInNonces;
  throttle: SignInThrottle;
  /** A form's fields, first values only. */
  firstValues: (input: unknown) => Record<string, string>;
  /** Where to go after signing in: a page of this dashboard only. */
  next: (value: unknown) => string;
  send: (reply: FastifyReply, status: number, page: string) => FastifyReply;
  /** The first step's form, drawn again when the second step cannot go on. */
  signInForm: (reply: FastifyReply, back: string, o: { problem: string; status: number }) => Promise<FastifyReply>;
  cookieOptions: CookieOptions;
  sessionCookieOptions: CookieOptions;
}

/** The one answer to a code that is not accepted: wrong, too old, already used, or a recovery code used before. */
export const SECOND_FACTOR_REFUSED =
  'That code is not right or was already used. Enter the code your app shows now, or a recovery code.';
const STEP_GONE = 'The sign-in took too long or was already completed. Sign in again.';

export type SecondStepForm = (
  reply: FastifyReply,
  back: string,
  o?: { problem?: string; status?: number },
) => Promise<FastifyReply>;

/** Adds POST /sign-in/second-factor to `scope` (under /dashboard) and answers the function drawing its form. */
export function secondStepRoutes(scope: FastifyInstance, deps: SecondStepDeps): SecondStepForm {
  const form: SecondStepForm = async (reply, back, { problem, status = 200 } = {}) => {
    const nonce = await deps.nonces.issue();
    reply.setCookie(SIGNIN_COOKIE, nonce, { ...deps.cookieOptions, maxAge: SIGNIN_NONCE_TTL_SECONDS });
    return deps.send(
      reply,
      status,
      plainLayout(
        deps.config.paymentsEnv,
        'Enter your code',
        html`${problem ? html`<p class="error" role="alert" id="second-step-error">${problem}</p>` : ''}
          <form method="post" action="/dashboard/sign-in/second-factor" class="card">
            <input type="hidden" name="csrf" value="${nonce}" /><input type="hidden" name="next" value="${back}" />
            <div class="field">
              <label for="code">Code from your authenticator app</label>
              <input
                id="code"
                name="code"
                type="text"
                required
                maxlength="64"
                autocomplete="one-time-code"
                spellcheck="false"
                aria-describedby="code-hint${problem ? ' second-step-error' : ''}"
              />
              <p class="muted" id="code-hint">Six digits. Lost your phone? Enter one of your recovery codes instead.</p>
            </div>
            <button type="submit">Continue</button>
          </form>
          <p><a href="/dashboard/sign-in">Start again</a></p>`,
      ),
    );
  };

  const route = {
    config: { auth: 'public' as const, audit: { action: 'dashboard.sign_in', objectType: 'member' } },
    schema: { hide: true },
  };
  scope.post('/sign-in/second-factor', route, async (request, reply) => {
    const fields = deps.firstValues(request.body);
    const back = deps.next(fields.next);
    if (!(await deps.nonces.redeem(fields.csrf, request.cookies[SIGNIN_COOKIE])))
      return deps.signInForm(reply, back, { problem: 'The sign-in form expired. Sign in again.', status: 403 });
    const step = await deps.secondSteps.take(request.cookies[SECOND_STEP_COOKIE]);
    const member = step && (await deps.members.find(deps.db, step.workspaceId, step.memberId));
    if (!step || !member) {
      reply.clearCookie(SECOND_STEP_COOKIE, deps.cookieOptions);
      return deps.signInForm(reply, back, { problem: STEP_GONE, status: 401 });
    }
    /** The step again, for another try: a new record with the same expiry (the five minutes never grow). */
    const again = async (): Promise<void> => {
      const value = await deps.secondSteps.issue(step.workspaceId, step.memberId, step.expiresAt);
      const maxAge = Math.max(1, Math.ceil((step.expiresAt.getTime() - Date.now()) / 1000));
      reply.setCookie(SECOND_STEP_COOKIE, value, { ...deps.cookieOptions, maxAge });
    };
    const wait = await deps.throttle.wait(request.ip, member.email);
    if (wait > 0) {
      await again();
      reply.header('retry-after', String(wait));
      const words = wait < 120 ? `${wait} seconds` : `${Math.ceil(wait / 60)} minutes`;
      return form(reply, back, { problem: `Too many failed sign-ins. Wait ${words}, then try again.`, status: 429 });
    }
    const verified = await deps.secondFactors.verify(deps.db, step.workspaceId, member, fields.code ?? '');
    if (!verified.ok) {
      await deps.throttle.failed(request.ip, member.email);
      request.auditNote = {
        workspaceId: member.workspace_id,
        actorType: 'anonymous',
        actorId: null,
        objectId: member.id,
        action: 'dashboard.second_factor_failed',
      };
      await again();
      return form(reply, back, { problem: SECOND_FACTOR_REFUSED, status: 401 });
    }
    await deps.throttle.succeeded(member.email);
    const opened = await deps.sessions.signInMemberAfterSecondStep(step.workspaceId, step.memberId, clientOf(request));
    request.auditNote = {
      workspaceId: member.workspace_id,
      actorType: 'member',
      actorId: member.id,
      objectId: member.id,
      ...(verified.via === 'recovery_code' ? { action: 'member.recovery_code_use' } : {}),
      ...(opened ? {} : { action: 'dashboard.sign_in_failed' }),
    };
    reply.clearCookie(SECOND_STEP_COOKIE, deps.cookieOptions);
    if (!opened) return deps.signInForm(reply, back, { problem: MEMBER_SIGN_IN_REFUSED, status: 401 });
    reply.clearCookie(SIGNIN_COOKIE, deps.cookieOptions);
    reply.setCookie(SESSION_COOKIE, opened.sessionId, deps.sessionCookieOptions);
    return reply.redirect(back, 303);
  });

  return form;
}
