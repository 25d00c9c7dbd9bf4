// The team's pages: the members and their roles, inviting one by a one-time link, an owner's password reset link, and
// the signed-in member's own password. With no mail server configured, a link is shown to whoever issued it, once, to
// send on themselves. These pages write through MembersService (members are not in the public API); every write is in
// the audit log. Who may invite: an owner or an admin, or a session opened with a token (the break-glass path); who may
// issue a reset link: an owner, or a token session. The rest of the roles' permissions are not enforced yet.
import type { Db } from '../../../db/pool.js';
import type { Mailer } from '../../../platform/mail.js';
import { invitationMail } from '../../members/invitation-mail.js';
import { ROLES, type MembersService, type Role } from '../../members/members.service.js';
import { dataTable, field, selectField, shownOnce } from '../components.js';
import { choice, pathId } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PageContext, PageResult, Pages } from '../page-context.js';
import type { Session } from '../sessions.js';

export interface MemberPagesDeps {
  db: Db;
  members: MembersService;
  /** The service's public origin, for the links. */
  publicBaseUrl: string;
  /** Sends invitations by email when SMTP_URL is set; without it, the inviter is shown the link. */
  mailer?: Mailer | undefined;
}

const ROLE_LABELS = Object.fromEntries(ROLES.map((r) => [r, r])) as Record<Role, string>;

const mayInvite = (s: Session): boolean =>
  s.member_id === null || s.member_role === 'owner' || s.member_role === 'admin';
const mayReset = (s: Session): boolean => s.member_id === null || s.member_role === 'owner';

const notAllowed = (what: string): PageResult => ({
  title: 'Not allowed',
  status: 403,
  content: html`<p class="error" role="alert">${what}</p>
    <p><a href="/dashboard/members">Back to members</a></p>`,
});

const alert = (message: string): Html => html`<p class="error" role="alert">${message}</p>`;

/** Where the second factor and the workspace's security are (pages/second-factor.ts). */
const secondFactorLink = html`<section aria-labelledby="second-factor-link-title">
  <h2 id="second-factor-link-title">Second factor and workspace security</h2>
  <p><a href="/dashboard/account/second-factor">Set up or change your second factor</a></p>
</section>`;

export function memberPages(pages: Pages, deps: MemberPagesDeps): void {
  const linkOf = (workspaceId: string, token: string): string =>
    `${deps.publicBaseUrl.replace(/\/$/, '')}/dashboard/links/${workspaceId}/${token}`;

  const membersPage = async (ctx: PageContext, problem?: Html, status = 200): Promise<PageResult> => {
    const list = await deps.members.list(deps.db, ctx.session.workspace_id);
    const reset = mayReset(ctx.session);
    const content = html`${problem ?? ''}
      ${ctx.session.member_id ? html`<p><a href="/dashboard/account">Change your password</a></p>` : ''}
      <section aria-labelledby="members-title">
        <h2 id="members-title">Members</h2>
        ${
          list.length === 0
            ? html`<p class="card">No member yet: invite one below.</p>`
            : dataTable(
                'Members',
                ['Email', 'Role', 'Since', ...(reset ? ['Password'] : [])],
                list.map(
                  (m) =>
                    html`<tr>
                      <td>${m.email}</td>
                      <td>${m.role}</td>
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
        mayInvite(ctx.session)
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
                ${selectField('role', 'Role', Object.entries(ROLE_LABELS), ctx.fields.role ?? 'viewer')}
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
      if (!mayInvite(ctx.session)) return notAllowed('Only an owner or an admin may invite members.');
      const role = choice(ROLE_LABELS, ctx.fields.role);
      if (!role) return membersPage(ctx, alert('Choose one of the roles.'), 400);
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
    { action: 'member.invite', objectType: 'invitation' },
  );

  pages.post(
    '/members/:id/password-reset',
    async (ctx) => {
      if (!mayReset(ctx.session)) return notAllowed('Only an owner may issue a password reset link.');
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
    { action: 'member.password_reset_link', objectType: 'member' },
  );

  const accountPage = (ctx: PageContext, problem?: Html, status = 200): PageResult => {
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
        ${secondFactorLink}`,
    };
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
    { action: 'member.password_change', objectType: 'member' },
  );
}
