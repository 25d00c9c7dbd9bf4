// The team's pages: the members and their roles, inviting one by a one-time link, managing one (its role, its
// sessions, removing it), an owner's password reset link, and the signed-in member's own account (password and
// sessions). With no mail server configured, a link is shown to whoever issued it, once, to send on themselves. These
// pages write through MembersService and DashboardSessions (members are not in the public API); every write is in the
// audit log. What each role may do is the matrix in src/modules/members/permissions.ts: managing members needs
// `members`, and anything touching an owner (or a reset link, which can take over any account) needs `ownership`.
import type { Db } from '../../../db/pool.js';
import type { Mailer } from '../../../platform/mail.js';
import { invitationMail } from '../../members/invitation-mail.js';
import { ROLES, type MemberRow, type MembersService, type Role } from '../../members/members.service.js';
import { dataTable, facts, field, selectField, shownOnce } from '../components.js';
import { choice, pathId } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PageContext, PageResult, Pages } from '../page-context.js';
import type { DashboardSessions, SessionListing } from '../sessions.js';

export interface MemberPagesDeps {
  db: Db;
  members: MembersService;
  sessions: DashboardSessions;
  /** The service's public origin, for the links. */
  publicBaseUrl: string;
  /** Sends invitations by email when SMTP_URL is set; without it, the inviter is shown the link. */
  mailer?: Mailer | undefined;
}

const ROLE_LABELS = Object.fromEntries(ROLES.map((r) => [r, r])) as Record<Role, string>;

/** The roles the signed-in member may hand out: `owner` only by an owner (or a token session). */
const grantable = (ctx: PageContext): [string, string][] =>
  Object.entries(ROLE_LABELS).filter(([r]) => r !== 'owner' || ctx.may('ownership'));

/** Whether the signed-in member may manage `m`: `members`, and `ownership` too when `m` is an owner. */
const mayManage = (ctx: PageContext, m: Pick<MemberRow, 'role'>): boolean =>
  ctx.may('members') && (m.role !== 'owner' || ctx.may('ownership'));

/** The 403 of a page whose object the role may not touch (the page's own permission was checked before). */
const notAllowed = (what: string): PageResult => ({
  title: 'Not allowed',
  status: 403,
  content: html`<p class="error" role="alert" data-code="forbidden">${what} <span class="muted">(forbidden)</span></p>
    <p><a href="/dashboard/members">Back to members</a></p>`,
});

const noMember: PageResult = {
  title: 'Not found',
  status: 404,
  content: html`<p class="card">There is no such member.</p>
    <p><a href="/dashboard/members">Back to members</a></p>`,
};

const alert = (message: string): Html => html`<p class="error" role="alert">${message}</p>`;

/** Where the second factor and the workspace's security are (pages/second-factor.ts). */
const secondFactorLink = html`<section aria-labelledby="second-factor-link-title">
  <h2 id="second-factor-link-title">Second factor and workspace security</h2>
  <p><a href="/dashboard/account/second-factor">Set up or change your second factor</a></p>
</section>`;

/** A user agent as a person can recognise it: kept whole in the database, shortened on the page. */
const shortAgent = (ua: string | null): string =>
  ua === null ? 'unknown' : ua.length > 80 ? `${ua.slice(0, 79)}…` : ua;

/**
 * A member's sessions as a table, each with a button that ends it (posting to `revokePath(session)`), in the first
 * column so that a phone shows it without scrolling the table. `current`: the session viewing the page, marked "this
 * session".
 */
function sessionsTable(
  ctx: PageContext,
  list: SessionListing[],
  revokePath: (s: SessionListing) => string,
  current?: string,
): Html {
  if (list.length === 0) return html`<p class="card">No session is open.</p>`;
  return dataTable(
    'Session list',
    ['Signed in', 'Last seen', 'Address', 'Browser'],
    list.map(
      (s) =>
        html`<tr>
          <td>
            ${ctx.time(s.created_at.toISOString())} ${s.id === current ? html`<strong>(this session)</strong>` : ''}
            <form method="post" action="${revokePath(s)}" class="inline">
              ${ctx.csrf}<button
                type="submit"
                class="secondary"
                aria-label="End the session signed in ${s.created_at.toISOString()}${s.id === current ? ' (this session)' : ''}"
              >
                End
              </button>
            </form>
          </td>
          <td>${ctx.time(s.last_seen_at.toISOString())}</td>
          <td>${s.client_address ?? 'unknown'}</td>
          <td>${shortAgent(s.user_agent)}</td>
        </tr>`,
    ),
  );
}

export function memberPages(pages: Pages, deps: MemberPagesDeps): void {
  const linkOf = (workspaceId: string, token: string): string =>
    `${deps.publicBaseUrl.replace(/\/$/, '')}/dashboard/links/${workspaceId}/${token}`;

  const membersPage = async (ctx: PageContext, problem?: Html, status = 200): Promise<PageResult> => {
    const list = await deps.members.list(deps.db, ctx.session.workspace_id);
    const reset = ctx.may('ownership');
    const manage = ctx.may('members');
    const content = html`${problem ?? ''}
      ${ctx.session.member_id ? html`<p><a href="/dashboard/account">Your account: password and sessions</a></p>` : ''}
      <section aria-labelledby="members-title">
        <h2 id="members-title">Members</h2>
        ${
          list.length === 0
            ? html`<p class="card">No member yet: invite one below.</p>`
            : dataTable(
                'Members',
                // Manage right after the role, not at the end: on a phone it stays in view.
                ['Email', 'Role', ...(manage ? ['Manage'] : []), 'Since', ...(reset ? ['Password'] : [])],
                list.map(
                  (m) =>
                    html`<tr>
                      <td>${m.email}</td>
                      <td>${m.role}</td>
                      ${
                        manage
                          ? html`<td>
                              ${
                                mayManage(ctx, m)
                                  ? html`<a href="/dashboard/members/${m.id}" aria-label="Manage ${m.email}">Manage</a>`
                                  : ''
                              }
                            </td>`
                          : ''
                      }
                      <td>${ctx.time(m.created_at.toISOString())}</td>
                      ${
                        reset
                          ? html`<td>
                              <form method="post" action="/dashboard/members/${m.id}/password-reset" class="inline">
                                ${ctx.csrf}<button
                                  type="submit"
                                  class="secondary"
                                  aria-label="Reset link for ${m.email}"
                                >
                                  Reset link
                                </button>
                              </form>
                            </td>`
                          : ''
                      }
                    </tr>`,
                ),
              )
        }
      </section>
      ${
        manage
          ? html`<section aria-labelledby="invite-title">
              <h2 id="invite-title">Invite a member</h2>
              <form method="post" action="/dashboard/members/invitations" class="card">
                ${ctx.csrf}
                ${field('email', 'Email', {
                  type: 'email',
                  value: ctx.fields.email ?? '',
                  required: true,
                  attributes: 'maxlength="254" autocomplete="off"',
                })}
                ${selectField('role', 'Role', grantable(ctx), ctx.fields.role ?? 'viewer')}
                ${
                  deps.mailer
                    ? html`<p class="muted">The invitation is emailed: a link that works once, for 72 hours.</p>
                        <button type="submit">Send invitation</button>`
                    : html`<p class="muted">
                          The invitation is a link that works once, for 72 hours. No mail server is configured, so it is
                          shown to you to send on.
                        </p>
                        <button type="submit">Create invitation link</button>`
                }
              </form>
            </section>`
          : ''
      }`;
    return { title: 'Members', content, status };
  };

  pages.get('/members', (ctx) => membersPage(ctx));

  pages.post(
    '/members/invitations',
    async (ctx) => {
      const role = choice(ROLE_LABELS, ctx.fields.role);
      if (!role) return membersPage(ctx, alert('Choose one of the roles.'), 400);
      if (role === 'owner' && !ctx.may('ownership')) return notAllowed('Only an owner may invite an owner.');
      const issued = await deps.members.invite(deps.db, ctx.session.workspace_id, ctx.fields.email ?? '', role);
      if (!issued.ok) return membersPage(ctx, alert(issued.message), issued.reason === 'email_taken' ? 409 : 400);
      const link = linkOf(ctx.session.workspace_id, issued.token);
      let unsent: Html = html``;
      if (deps.mailer) {
        const mail = invitationMail({
          to: issued.email,
          link,
          role,
          workspaceName: ctx.session.workspace_name,
          invitedBy: ctx.session.member_email,
          expiresAt: issued.expiresAt,
        });
        const failure = await deps.mailer.send(mail).then(
          () => undefined,
          (error: unknown) => (error instanceof Error ? error.message : String(error)),
        );
        if (failure === undefined)
          return {
            title: 'Invitation sent',
            content: html`<p class="notice" role="status">
                The invitation was emailed to ${issued.email}. Its link works once, until
                ${ctx.time(issued.expiresAt.toISOString())}, and makes them a member with the role ${role}.
              </p>
              <p><a href="/dashboard/members">Back to members</a></p>`,
          };
        ctx.request.log.warn({ mailError: failure }, 'invitation email not sent');
        unsent = html`<p class="warning" role="alert">The email could not be sent: send the link yourself.</p>`;
      }
      return {
        title: 'Invitation created',
        content: html`${unsent}
          <p class="notice" role="status">
            Send this link to ${issued.email}. It works once, until ${ctx.time(issued.expiresAt.toISOString())}, and
            makes them a member with the role ${role}.
          </p>
          ${shownOnce('invitation-link', 'Invitation link', link)}
          <p><a href="/dashboard/members">Back to members</a></p>`,
      };
    },
    'members',
    { action: 'member.invite', objectType: 'invitation' },
  );

  pages.post(
    '/members/:id/password-reset',
    async (ctx) => {
      const issued = await deps.members.issueReset(deps.db, ctx.session.workspace_id, pathId(ctx));
      if (!issued.ok) return { title: 'Not found', status: 404, content: html`<p class="card">${issued.message}</p>` };
      return {
        title: 'Password reset link',
        content: html`<p class="notice" role="status">
            Send this link to ${issued.email}. It works once, until ${ctx.time(issued.expiresAt.toISOString())}; setting
            a new password with it ends every session of that member.
          </p>
          ${shownOnce('reset-link', 'Password reset link', linkOf(ctx.session.workspace_id, issued.token))}
          <p><a href="/dashboard/members">Back to members</a></p>`,
      };
    },
    // A reset link lets whoever holds it take over the account: an owner's power.
    'ownership',
    { action: 'member.password_reset_link', objectType: 'member' },
  );

  /** One member, for whoever manages members: its role, its sessions, and removing it. */
  const memberPage = async (ctx: PageContext, member: MemberRow, problem?: Html, status = 200): Promise<PageResult> => {
    const sessions = await deps.sessions.listOf(ctx.session.workspace_id, member.id);
    const self = member.id === ctx.session.member_id;
    return {
      title: `Member ${member.email}`,
      status,
      content: html`${problem ?? ''}
        <div class="card">
          ${facts([
            ['Email', member.email],
            ['Role', member.role],
            ['Since', ctx.time(member.created_at.toISOString())],
          ])}
        </div>
        <section aria-labelledby="role-title">
          <h2 id="role-title">Role</h2>
          <form method="post" action="/dashboard/members/${member.id}/role" class="card">
            ${ctx.csrf} ${selectField('role', 'New role', grantable(ctx), member.role)}
            <p class="muted">
              Every session of ${self ? 'yours, this one included,' : 'this member'} ends when the role changes.
            </p>
            <button type="submit">Change role</button>
          </form>
        </section>
        <section aria-labelledby="sessions-title">
          <h2 id="sessions-title">Sessions</h2>
          ${sessionsTable(
            ctx,
            sessions,
            (s) => `/dashboard/members/${member.id}/sessions/${s.id}/revoke`,
            self ? ctx.session.id : undefined,
          )}
        </section>
        <section aria-labelledby="remove-title">
          <h2 id="remove-title">Remove</h2>
          <form method="post" action="/dashboard/members/${member.id}/remove" class="card">
            ${ctx.csrf}
            <p>
              Removing ${member.email} ends every session of theirs at once and revokes their credential: a token copied
              from a session stops working too.
            </p>
            <button type="submit" class="danger">Remove ${member.email}</button>
          </form>
        </section>
        <p><a href="/dashboard/members">Back to members</a></p>`,
    };
  };

  /** The member the path names, if the signed-in member may manage it; else the answer to give instead. */
  const managed = async (ctx: PageContext): Promise<MemberRow | PageResult> => {
    const member = await deps.members.find(deps.db, ctx.session.workspace_id, pathId(ctx));
    if (!member) return noMember;
    if (!mayManage(ctx, member)) return notAllowed('Only an owner may manage an owner.');
    return member;
  };
  const isMember = (found: MemberRow | PageResult): found is MemberRow => 'credential_id' in found;

  pages.get(
    '/members/:id',
    async (ctx) => {
      const found = await managed(ctx);
      return isMember(found) ? memberPage(ctx, found) : found;
    },
    'members',
  );

  pages.post(
    '/members/:id/role',
    async (ctx) => {
      const found = await managed(ctx);
      if (!isMember(found)) return found;
      const role = choice(ROLE_LABELS, ctx.fields.role);
      if (!role) return memberPage(ctx, found, alert('Choose one of the roles.'), 400);
      const changed = await deps.members.changeRole(deps.db, ctx.session.workspace_id, ctx.session, found.id, role);
      if (!changed.ok) {
        if (changed.reason === 'forbidden') return notAllowed(changed.message);
        if (changed.reason === 'no_member') return noMember;
        return memberPage(ctx, found, alert(changed.message), 409);
      }
      const ended = changed.sessionsEnded;
      if (found.id === ctx.session.member_id)
        return { redirect: '/dashboard/sign-in', notice: `Your role is now ${role}. Sign in again.`, signedOut: true };
      return {
        redirect: `/dashboard/members/${found.id}`,
        notice: `${found.email} is now ${role}; ${ended} session${ended === 1 ? '' : 's'} ended.`,
      };
    },
    'members',
    { action: 'member.role_change', objectType: 'member' },
  );

  pages.post(
    '/members/:id/remove',
    async (ctx) => {
      const found = await managed(ctx);
      if (!isMember(found)) return found;
      const removed = await deps.members.remove(deps.db, ctx.session.workspace_id, ctx.session, found.id);
      if (!removed.ok) {
        if (removed.reason === 'forbidden') return notAllowed(removed.message);
        if (removed.reason === 'no_member') return noMember;
        return memberPage(ctx, found, alert(removed.message), 409);
      }
      if (found.id === ctx.session.member_id)
        return { redirect: '/dashboard/sign-in', notice: 'You have left the workspace.', signedOut: true };
      return { redirect: '/dashboard/members', notice: `${found.email} was removed; their sessions have ended.` };
    },
    'members',
    { action: 'member.remove', objectType: 'member' },
  );

  pages.post(
    '/members/:id/sessions/:session/revoke',
    async (ctx) => {
      const found = await managed(ctx);
      if (!isMember(found)) return found;
      const sessionId = (ctx.request.params as { session?: string }).session ?? '';
      if (ctx.request.auditNote) ctx.request.auditNote.objectId = sessionId;
      if (!(await deps.sessions.revoke(ctx.session.workspace_id, found.id, sessionId)))
        return memberPage(ctx, found, alert('That session has already ended.'), 404);
      if (sessionId === ctx.session.id)
        return { redirect: '/dashboard/sign-in', notice: 'This session has ended.', signedOut: true };
      return { redirect: `/dashboard/members/${found.id}`, notice: `A session of ${found.email} has ended.` };
    },
    'members',
    { action: 'member.session_revoke', objectType: 'dashboard_session' },
  );

  const accountPage = async (ctx: PageContext, problem?: Html, status = 200): Promise<PageResult> => {
    if (!ctx.session.member_id)
      return {
        title: 'Your account',
        content: html`<p class="card">
            This session was opened with an API token: it has no password. Members change theirs here.
          </p>
          ${secondFactorLink}`,
      };
    return {
      title: 'Your account',
      status,
      content: html`${problem ?? ''}
        <p>Signed in as ${ctx.session.member_email} (${ctx.session.member_role}).</p>
        <section aria-labelledby="password-title">
          <h2 id="password-title">Change your password</h2>
          <form method="post" action="/dashboard/account/password" class="card">
            ${ctx.csrf}
            ${field('current_password', 'Current password', {
              type: 'password',
              required: true,
              attributes: 'autocomplete="current-password" maxlength="1000"',
            })}
            ${field('new_password', 'New password', {
              type: 'password',
              required: true,
              hint: 'At least 12 characters. Your other sessions end when it changes.',
              attributes: 'autocomplete="new-password" minlength="12" maxlength="200"',
            })}
            <button type="submit">Change password</button>
          </form>
        </section>
        ${secondFactorLink} ${await yourSessionsSection(ctx, ctx.session.member_id)}`,
    };
  };

  /** "Your sessions" on the account page: every session of the signed-in member, this one marked, each revocable. */
  const yourSessionsSection = async (ctx: PageContext, memberId: string): Promise<Html> => {
    const list = await deps.sessions.listOf(ctx.session.workspace_id, memberId);
    return html`<section aria-labelledby="your-sessions-title">
      <h2 id="your-sessions-title">Your sessions</h2>
      <p class="muted">Where you are signed in. End any you do not recognise, then change your password.</p>
      ${sessionsTable(ctx, list, (s) => `/dashboard/account/sessions/${s.id}/revoke`, ctx.session.id)}
    </section>`;
  };

  pages.get('/account', async (ctx) => accountPage(ctx));

  pages.post(
    '/account/password',
    async (ctx) => {
      const memberId = ctx.session.member_id;
      if (!memberId) return accountPage(ctx, alert('A session opened with a token has no password.'), 400);
      if (ctx.request.auditNote) ctx.request.auditNote.objectId = memberId;
      const changed = await deps.members.changePassword(deps.db, ctx.session.workspace_id, memberId, {
        current: ctx.fields.current_password ?? '',
        next: ctx.fields.new_password ?? '',
        keepSession: ctx.session.idHash,
      });
      if (!changed.ok) return accountPage(ctx, alert(changed.message), 400);
      return { redirect: '/dashboard/account', notice: 'Password changed. Your other sessions have ended.' };
    },
    // Any member may change their own password.
    'read',
    { action: 'member.password_change', objectType: 'member' },
  );

  pages.post(
    '/account/sessions/:session/revoke',
    async (ctx) => {
      const memberId = ctx.session.member_id;
      if (!memberId) return accountPage(ctx, alert('A session opened with a token is not a member’s.'), 400);
      const sessionId = (ctx.request.params as { session?: string }).session ?? '';
      if (ctx.request.auditNote) ctx.request.auditNote.objectId = sessionId;
      if (!(await deps.sessions.revoke(ctx.session.workspace_id, memberId, sessionId)))
        return accountPage(ctx, alert('That session has already ended.'), 404);
      if (sessionId === ctx.session.id)
        return { redirect: '/dashboard/sign-in', notice: 'This session has ended.', signedOut: true };
      return { redirect: '/dashboard/account', notice: 'The session has ended.' };
    },
    // A member ends their own sessions, whatever their role.
    'read',
    { action: 'member.session_revoke', objectType: 'dashboard_session' },
  );
}
