// "Your account → Second factor" and "Workspace security": a member sets up a TOTP app (secret as a QR code and as
// text), confirms it with a current code, and is shown ten recovery codes once; turns it off with a current code or the
// password. Owners (and a session opened with a token, the break-glass path) choose whether every member needs one
// and remove a member's factor when a device is lost. Owners and admins without a factor are sent here before any
// other page works (mustEnrolFirst, checked by dashboard.routes.ts). Every write is in the audit log.
import QRCode from 'qrcode';
import type { Db } from '../../../db/pool.js';
import type { MembersService, Role } from '../../members/members.service.js';
import {
  RECOVERY_CODE_COUNT,
  ROLES_NEEDING_SECOND_FACTOR,
  type Enrolment,
  type SecondFactorService,
} from '../../members/second-factor.service.js';
import { dataTable, field, selectField } from '../components.js';
import { pathId } from '../forms.js';
import { html, raw, type Html } from '../html.js';
import type { PageContext, PageResult, Pages } from '../page-context.js';
import type { Session } from '../sessions.js';
import type { SignInThrottle } from '../sign-in-throttle.js';

export interface SecondFactorPagesDeps {
  db: Db;
  members: MembersService;
  secondFactors: SecondFactorService;
  /** Wrong codes and passwords on the form that turns the factor off count like failed sign-ins. */
  throttle: SignInThrottle;
}

export const SECOND_FACTOR_PAGE = '/dashboard/account/second-factor';
/** What a member who must enrol first may still reach: the enrolment itself and signing out. */
const OPEN_BEFORE_ENROLMENT = new Set([
  SECOND_FACTOR_PAGE,
  `${SECOND_FACTOR_PAGE}/enrol`,
  `${SECOND_FACTOR_PAGE}/confirm`,
  '/dashboard/sign-out',
]);

/** Whether the session's member must set up a second factor before `routePath` (a route's path) works. */
export function mustEnrolFirst(session: Session, routePath: string | undefined): boolean {
  if (session.member_id === null || session.member_second_factor) return false;
  const required = session.require_second_factor || ROLES_NEEDING_SECOND_FACTOR.includes(session.member_role as Role);
  return required && !OPEN_BEFORE_ENROLMENT.has(routePath ?? '');
}

const mayManageWorkspace = (s: Session): boolean => s.member_id === null || s.member_role === 'owner';

const alert = (message: string): Html => html`<p class="error" role="alert">${message}</p>`;

const member = (s: Session): { id: string; email: string } | undefined =>
  s.member_id && s.member_email ? { id: s.member_id, email: s.member_email } : undefined;

/** The otpauth URI as a QR code: the library's SVG, inline (the CSP allows no image from elsewhere). */
async function qrCode(uri: string): Promise<Html> {
  const svg = await QRCode.toString(uri, { type: 'svg', margin: 1 });
  return raw(
    svg.replace('<svg ', '<svg role="img" aria-label="QR code for your authenticator app" focusable="false" '),
  );
}

/** The secret as text in groups of four, as apps accept it typed. */
const grouped = (secret: string): string => secret.replace(/(.{4})(?=.)/g, '$1 ');

export function secondFactorPages(pages: Pages, deps: SecondFactorPagesDeps): void {
  const { db, secondFactors } = deps;

  const enrolmentForm = async (ctx: PageContext, enrolment: Enrolment, problem?: Html): Promise<Html> =>
    html`<section aria-labelledby="enrol-title">
      <h2 id="enrol-title">Set up your authenticator app</h2>
      ${problem ?? ''}
      <ol>
        <li>Scan this code with an authenticator app (or enter the key below by hand).</li>
        <li>Enter the six-digit code the app shows.</li>
      </ol>
      <figure class="card qr">
        ${await qrCode(enrolment.uri)}
        <figcaption>
          <p><strong>Key for manual entry</strong> (time-based, 6 digits, every 30 seconds)</p>
          <p class="secret" id="totp-secret">${grouped(enrolment.secret)}</p>
        </figcaption>
      </figure>
      <form method="post" action="${SECOND_FACTOR_PAGE}/confirm" class="card">
        ${ctx.csrf}
        ${field('code', 'Code from your app', {
          required: true,
          attributes: 'inputmode="numeric" autocomplete="one-time-code" maxlength="10" pattern="[0-9 ]*"',
        })}
        <button type="submit">Turn on the second factor</button>
      </form>
    </section>`;

  const workspaceSection = async (ctx: PageContext): Promise<Html> => {
    if (!mayManageWorkspace(ctx.session)) return html``;
    const workspaceId = ctx.session.workspace_id;
    const [everyone, list, enrolled] = await Promise.all([
      secondFactors.workspaceRequires(db, workspaceId),
      deps.members.list(db, workspaceId),
      secondFactors.enrolledMembers(db, workspaceId),
    ]);
    return html`<section aria-labelledby="workspace-security-title">
      <h2 id="workspace-security-title">Workspace security</h2>
      <form method="post" action="/dashboard/account/workspace-security" class="card">
        ${ctx.csrf}
        ${selectField(
          'require_second_factor',
          'Second factor required of',
          [
            ['roles', 'Owners and admins'],
            ['everyone', 'Every member'],
          ],
          everyone ? 'everyone' : 'roles',
        )}
        <p class="muted">Members who need one and have none are asked to set it up before any other page works.</p>
        <button type="submit">Save</button>
      </form>
      ${
        list.length === 0
          ? ''
          : dataTable(
              'Members and their second factor',
              ['Email', 'Role', 'Second factor', 'Lost device'],
              list.map((m) => {
                const on = enrolled.has(m.id);
                return html`<tr>
                  <td>${m.email}</td>
                  <td>${m.role}</td>
                  <td>${on ? 'On' : 'Off'}</td>
                  <td>
                    ${
                      on && m.id !== ctx.session.member_id
                        ? html`<form method="post" action="${SECOND_FACTOR_PAGE}/reset/${m.id}" class="inline">
                            ${ctx.csrf}<button
                              type="submit"
                              class="secondary"
                              aria-label="Remove the second factor of ${m.email}"
                            >
                              Remove
                            </button>
                          </form>`
                        : ''
                    }
                  </td>
                </tr>`;
              }),
            )
      }
      <p class="muted">
        Remove a member's second factor when their device is lost: they set up a new one at their next sign-in.
      </p>
    </section>`;
  };

  /**
   * A member's own change that a code or the password proves, limited like the sign-in: a stolen session must not
   * become a way to guess either. Answers the page to show when it must wait (429) or `attempt` failed (400, counted);
   * undefined when `attempt` succeeded.
   */
  const limited = async (
    ctx: PageContext,
    me: { email: string },
    attempt: () => Promise<boolean>,
    refusal: string,
  ): Promise<PageResult | undefined> => {
    const wait = await deps.throttle.wait(ctx.request.ip, me.email);
    if (wait > 0)
      return page(ctx, {
        problem: alert(
          `Too many failed attempts. Wait ${wait < 120 ? `${wait} seconds` : `${Math.ceil(wait / 60)} minutes`}, then try again.`,
        ),
        status: 429,
      });
    if (await attempt()) return undefined;
    await deps.throttle.failed(ctx.request.ip, me.email);
    return page(ctx, { problem: alert(refusal), status: 400 });
  };

  /** Recovery codes, shown once (after enrolment, or made anew). */
  const codesPage = (title: string, lead: string, codes: string[]): PageResult => ({
    title,
    content: html`<p class="notice" role="status">
        ${lead} Keep these recovery codes somewhere safe: each signs you in once if you lose your phone. They are shown
        only now.
      </p>
      <div class="card">
        <p><strong>Recovery codes</strong></p>
        <ul class="secret" id="recovery-codes" aria-label="Recovery codes">
          ${codes.map((c) => html`<li>${c}</li>`)}
        </ul>
      </div>
      <p><a href="/dashboard">Continue to the dashboard</a></p>`,
  });

  const page = async (
    ctx: PageContext,
    { problem, enrolment, status = 200 }: { problem?: Html; enrolment?: Enrolment; status?: number } = {},
  ): Promise<PageResult> => {
    const me = member(ctx.session);
    let mine: Html;
    if (!me) {
      mine = html`<p class="card">
        This session was opened with an API token: it has no second factor. Members set theirs up here.
      </p>`;
    } else if (enrolment) {
      mine = await enrolmentForm(ctx, enrolment, problem);
    } else {
      const state = await secondFactors.status(db, ctx.session.workspace_id, me.id);
      const required = mustEnrolFirst(ctx.session, undefined);
      mine = state.enrolled
        ? html`<section aria-labelledby="second-factor-title">
            <h2 id="second-factor-title">Your second factor</h2>
            ${problem ?? ''}
            <p class="card">
              On: signing in asks for a code from your authenticator app. ${state.codesLeft} of ${RECOVERY_CODE_COUNT}
              recovery codes left.
            </p>
            <form method="post" action="${SECOND_FACTOR_PAGE}/disable" class="card">
              <p>To turn it off, enter a current code or your password.</p>
              ${ctx.csrf}
              ${field('code', 'Code from your app', {
                attributes: 'inputmode="numeric" autocomplete="one-time-code" maxlength="64"',
              })}
              ${field('password', 'Or your password', {
                type: 'password',
                attributes: 'autocomplete="current-password" maxlength="1000"',
              })}
              <button type="submit" class="secondary">Turn off the second factor</button>
            </form>
            <form method="post" action="${SECOND_FACTOR_PAGE}/recovery-codes" class="card">
              <p>Running low, or think your codes were seen? Make ten new ones: the old ones stop working.</p>
              ${ctx.csrf}
              ${field('app_code', 'Authenticator code for new recovery codes', {
                required: true,
                hint: 'A current code from your app (a recovery code cannot make new ones).',
                attributes: 'inputmode="numeric" autocomplete="one-time-code" maxlength="10" pattern="[0-9 ]*"',
              })}
              <button type="submit" class="secondary">Make new recovery codes</button>
            </form>
          </section>`
        : html`<section aria-labelledby="second-factor-title">
            <h2 id="second-factor-title">Your second factor</h2>
            ${problem ?? ''}
            ${
              required
                ? html`<p class="warning" role="status">
                    Your role needs a second factor: set one up to use the dashboard.
                  </p>`
                : ''
            }
            <p>
              Off. With a second factor, signing in also asks for a code from an authenticator app on your phone, so a
              stolen password is not enough.
            </p>
            <form method="post" action="${SECOND_FACTOR_PAGE}/enrol" class="card">
              ${ctx.csrf}<button type="submit">Set up a second factor</button>
            </form>
          </section>`;
    }
    return {
      title: 'Second factor',
      status,
      content: html`<p><a href="/dashboard/account">Your account</a></p>
        ${mine} ${await workspaceSection(ctx)}`,
    };
  };

  pages.get('/account/second-factor', (ctx) => page(ctx));

  pages.post(
    '/account/second-factor/enrol',
    async (ctx) => {
      const me = member(ctx.session);
      const enrolment = me && (await secondFactors.enrolment(db, ctx.session.workspace_id, me, true));
      if (!enrolment) return { redirect: SECOND_FACTOR_PAGE };
      return page(ctx, { enrolment });
    },
    // A member's own second factor: every role may keep one.
    'read',
  );

  pages.post(
    '/account/second-factor/confirm',
    async (ctx) => {
      const me = member(ctx.session);
      if (!me) return page(ctx, { problem: alert('A session opened with a token has no second factor.'), status: 400 });
      if (ctx.request.auditNote) ctx.request.auditNote.objectId = me.id;
      const done = await secondFactors.confirm(db, ctx.session.workspace_id, me, ctx.fields.code ?? '');
      if (!done.ok) {
        const enrolment = await secondFactors.enrolment(db, ctx.session.workspace_id, me, false);
        return page(ctx, {
          problem: alert('That code is not right. Enter the code your app shows now.'),
          ...(enrolment ? { enrolment } : {}),
          status: 400,
        });
      }
      return codesPage('Second factor on', 'Your second factor is on.', done.recoveryCodes);
    },
    'read',
    { action: 'member.second_factor_enrol', objectType: 'member' },
  );

  pages.post(
    '/account/second-factor/disable',
    async (ctx) => {
      const me = member(ctx.session);
      if (!me) return page(ctx, { problem: alert('A session opened with a token has no second factor.'), status: 400 });
      if (ctx.request.auditNote) ctx.request.auditNote.objectId = me.id;
      const refused = await limited(
        ctx,
        me,
        () =>
          secondFactors.disable(db, ctx.session.workspace_id, me, {
            code: ctx.fields.code ?? '',
            password: ctx.fields.password ?? '',
          }),
        'Enter a current code from your app, or your password: that was not right.',
      );
      if (refused) return refused;
      return { redirect: SECOND_FACTOR_PAGE, notice: 'Second factor turned off.' };
    },
    'read',
    { action: 'member.second_factor_disable', objectType: 'member' },
  );

  pages.post(
    '/account/second-factor/recovery-codes',
    async (ctx) => {
      const me = member(ctx.session);
      if (!me) return page(ctx, { problem: alert('A session opened with a token has no second factor.'), status: 400 });
      if (ctx.request.auditNote) ctx.request.auditNote.objectId = me.id;
      let codes: string[] = [];
      const refused = await limited(
        ctx,
        me,
        async () => {
          const made = await secondFactors.regenerateRecoveryCodes(
            db,
            ctx.session.workspace_id,
            me,
            ctx.fields.app_code ?? '',
          );
          if (made.ok) codes = made.recoveryCodes;
          return made.ok;
        },
        'That code is not right. Enter the code your app shows now (not a recovery code).',
      );
      if (refused) return refused;
      return codesPage('New recovery codes', 'Your old recovery codes no longer work.', codes);
    },
    'read',
    { action: 'member.recovery_codes_regenerate', objectType: 'member' },
  );

  pages.post(
    '/account/second-factor/reset/:id',
    async (ctx) => {
      if (!mayManageWorkspace(ctx.session))
        return page(ctx, { problem: alert('Only an owner may remove a member’s second factor.'), status: 403 });
      const target = await deps.members.find(db, ctx.session.workspace_id, pathId(ctx));
      // One's own is turned off with a code or the password (the disable form), never by this shortcut.
      if (target && target.id === ctx.session.member_id)
        return page(ctx, {
          problem: alert('Turn your own second factor off above, with a code or your password.'),
          status: 400,
        });
      if (!target || !(await secondFactors.reset(db, ctx.session.workspace_id, target.id)))
        return page(ctx, { problem: alert('That member has no second factor.'), status: 404 });
      return { redirect: SECOND_FACTOR_PAGE, notice: `The second factor of ${target.email} was removed.` };
    },
    'ownership',
    { action: 'member.second_factor_reset', objectType: 'member' },
  );

  pages.post(
    '/account/workspace-security',
    async (ctx) => {
      if (ctx.request.auditNote) ctx.request.auditNote.objectId = ctx.session.workspace_id;
      if (!mayManageWorkspace(ctx.session))
        return page(ctx, { problem: alert('Only an owner may change the workspace’s security.'), status: 403 });
      const value = ctx.fields.require_second_factor;
      if (value !== 'everyone' && value !== 'roles')
        return page(ctx, { problem: alert('Choose who needs a second factor.'), status: 400 });
      await secondFactors.setWorkspaceRequires(db, ctx.session.workspace_id, value === 'everyone');
      return {
        redirect: SECOND_FACTOR_PAGE,
        notice:
          value === 'everyone'
            ? 'Every member now needs a second factor.'
            : 'Owners and admins need a second factor; other members may choose.',
      };
    },
    'ownership',
    { action: 'workspace.second_factor_requirement', objectType: 'workspace' },
  );
}
