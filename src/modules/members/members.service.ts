// Dashboard members: people of a workspace's team with an email, a password and a role (docs/guides/dashboard.md,
// "Members"). A member is made with a credential of its own in the same workspace (an integrator credential, or an
// admin one in the operator workspace): the dashboard's pages call the public API with a token for it, so a member
// reaches the API through the same routes, validation and checks as an API key, and the audit log names the member.
import { createHash, randomBytes } from 'node:crypto';
import type { PaymentsEnv } from '../../config.js';
import type { Db, Queryable, Tx } from '../../db/pool.js';
import { withTransaction } from '../../db/pool.js';
import { isUuid, uuidv7 } from '../../platform/ids.js';
import type { TokenService } from '../../platform/tokens.js';
import { CredentialsService } from '../credentials/credentials.service.js';
import { findCredential, revokeCredential } from '../credentials/credentials.repository.js';
import { findWorkspace } from '../workspaces/workspaces.repository.js';
import * as repo from './members.repository.js';
import { checkPassword, hashPassword, passwordProblem } from './passwords.js';
import type { Permission } from './permissions.js';

export { ROLES, type MemberLinkRow, type MemberRow, type Role } from './members.repository.js';

/** Emails as the sign-in form and the CLI accept them: one @, something either side, no spaces, at most 254. */
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Why an email is refused, or undefined. */
export function emailProblem(email: string): string | undefined {
  if (email.length < 3 || email.length > 254 || !EMAIL.test(email))
    return 'Enter an email address like name@example.com.';
  return undefined;
}

export type CreateMember =
  | { ok: true; member: repo.MemberRow }
  | { ok: false; reason: 'invalid_email' | 'invalid_password' | 'email_taken' | 'no_workspace'; message: string };

/** A member whose password was right, with the token its session calls the API with. */
export interface Authenticated {
  member: repo.MemberRow;
  token: string;
  tokenId: string;
}

export type Authentication =
  | { ok: true; session: Authenticated }
  /** `member`: the member the email named, when it named one (for the audit log only, never for the answer). */
  | { ok: false; member: repo.MemberRow | undefined };

export class MembersService {
  private readonly credentials: CredentialsService;

  constructor(
    private readonly tokens: TokenService,
    env: PaymentsEnv,
  ) {
    this.credentials = new CredentialsService(tokens, env);
  }

  /** Makes a member and its credential together (one transaction): both or neither. */
  async create(
    db: Db,
    workspaceId: string,
    input: { email: string; password: string; role: repo.Role },
  ): Promise<CreateMember> {
    const email = input.email.trim();
    const badEmail = emailProblem(email);
    if (badEmail) return { ok: false, reason: 'invalid_email', message: badEmail };
    const badPassword = passwordProblem(input.password);
    if (badPassword) return { ok: false, reason: 'invalid_password', message: badPassword };
    const passwordHash = await hashPassword(input.password);
    return withTransaction(db, (tx) => this.insert(tx, workspaceId, { email, passwordHash, role: input.role })).catch(
      emailTakenAnswer,
    );
  }

  /** Inserts a member and its credential in `tx`; throws EmailTaken (rolling `tx` back) when the email is taken. */
  private async insert(
    tx: Tx,
    workspaceId: string,
    input: { email: string; passwordHash: string; role: repo.Role },
  ): Promise<CreateMember> {
    const workspace = await findWorkspace(tx, workspaceId);
    if (!workspace) return { ok: false, reason: 'no_workspace', message: `There is no workspace ${workspaceId}.` };
    const audience = workspace.kind === 'operator' ? 'admin' : 'integrator';
    const name = `Dashboard member ${input.email}`.slice(0, 100);
    const issued = await this.credentials.create(tx, workspaceId, audience, name);
    const member = await repo.insertMember(tx, workspaceId, {
      id: uuidv7(),
      email: input.email,
      passwordHash: input.passwordHash,
      role: input.role,
      credentialId: issued.credential.id,
      now: new Date(),
    });
    // Thrown, so the transaction rolls back and takes the credential with it.
    if (!member) throw new EmailTaken();
    return { ok: true, member };
  }

  /**
   * A one-time link inviting `email` to the workspace with `role`, valid INVITATION_TTL_SECONDS. The answer's token
   * goes in the link; only its hash is kept.
   */
  async invite(db: Queryable, workspaceId: string, email: string, role: repo.Role): Promise<IssuedLink> {
    const address = email.trim();
    const bad = emailProblem(address);
    if (bad) return { ok: false, reason: 'invalid_email', message: bad };
    if (await repo.findMemberByEmail(db, address))
      return { ok: false, reason: 'email_taken', message: 'That email already belongs to a member.' };
    return this.issueLink(db, workspaceId, { purpose: 'invitation', email: address, role, memberId: null });
  }

  /** A one-time link that lets member `memberId` set a new password, valid RESET_TTL_SECONDS. */
  async issueReset(db: Queryable, workspaceId: string, memberId: string): Promise<IssuedLink> {
    const member = isUuid(memberId) ? await repo.findMember(db, workspaceId, memberId) : undefined;
    if (!member) return { ok: false, reason: 'no_member', message: 'There is no such member.' };
    return this.issueLink(db, workspaceId, {
      purpose: 'password_reset',
      email: member.email,
      role: null,
      memberId: member.id,
    });
  }

  private async issueLink(
    db: Queryable,
    workspaceId: string,
    link: { purpose: repo.LinkPurpose; email: string; role: repo.Role | null; memberId: string | null },
  ): Promise<IssuedLink> {
    const token = randomBytes(32).toString('base64url');
    const ttlSeconds = link.purpose === 'invitation' ? INVITATION_TTL_SECONDS : RESET_TTL_SECONDS;
    const expiresAt = await repo.insertMemberLink(db, workspaceId, { ...link, tokenHash: linkHash(token), ttlSeconds });
    return { ok: true, token, expiresAt, email: link.email };
  }

  /** The unexpired link a token names in the workspace, to draw its form. */
  findLink(db: Queryable, workspaceId: string, token: string): Promise<repo.MemberLinkRow | undefined> {
    return repo.findMemberLink(db, workspaceId, linkHash(token));
  }

  /**
   * Uses an invitation: the invitee becomes a member with the invitation's email and role and the password given. The
   * link is taken in the same transaction as the member is made, so it works once, and a refused password leaves it.
   */
  async acceptInvitation(db: Db, workspaceId: string, token: string, password: string): Promise<UseLink> {
    const bad = passwordProblem(password);
    if (bad) return { ok: false, reason: 'invalid_password', message: bad };
    const passwordHash = await hashPassword(password);
    return withTransaction(db, async (tx): Promise<UseLink> => {
      const link = await repo.takeMemberLink(tx, workspaceId, linkHash(token), 'invitation');
      if (!link || link.role === null) return { ok: false, reason: 'expired', message: LINK_GONE };
      return this.insert(tx, workspaceId, { email: link.email, passwordHash, role: link.role });
    }).catch(emailTakenAnswer);
  }

  /** Uses a reset link: the member's password is replaced and every session of the member ends. */
  async resetPassword(db: Db, workspaceId: string, token: string, password: string): Promise<UseLink> {
    const bad = passwordProblem(password);
    if (bad) return { ok: false, reason: 'invalid_password', message: bad };
    const passwordHash = await hashPassword(password);
    return withTransaction(db, async (tx): Promise<UseLink> => {
      const link = await repo.takeMemberLink(tx, workspaceId, linkHash(token), 'password_reset');
      const member = link?.member_id ? await repo.findMember(tx, workspaceId, link.member_id) : undefined;
      if (!member) return { ok: false, reason: 'expired', message: LINK_GONE };
      await repo.updatePassword(tx, workspaceId, member.id, passwordHash);
      await repo.endMemberSessions(tx, workspaceId, member.id);
      return { ok: true, member };
    });
  }

  /**
   * A member changes its own password, giving the current one: every other session of the member ends (the one
   * making the change, `keepSession`, stays).
   */
  async changePassword(
    db: Db,
    workspaceId: string,
    memberId: string,
    input: { current: string; next: string; keepSession: Buffer },
  ): Promise<{ ok: true } | { ok: false; reason: 'wrong_password' | 'invalid_password'; message: string }> {
    const found = await repo.findMemberSecret(db, workspaceId, memberId);
    if (!(await checkPassword(found?.password_hash, input.current)))
      return { ok: false, reason: 'wrong_password', message: 'The current password is not right.' };
    const bad = passwordProblem(input.next);
    if (bad) return { ok: false, reason: 'invalid_password', message: bad };
    const passwordHash = await hashPassword(input.next);
    await withTransaction(db, async (tx) => {
      await repo.updatePassword(tx, workspaceId, memberId, passwordHash);
      await repo.endMemberSessions(tx, workspaceId, memberId, input.keepSession);
    });
    return { ok: true };
  }

  /**
   * The member an email and password name, with a token for its credential. The answer never says which of the two
   * was wrong, and an unknown email costs the same hashing work as a wrong password. A member whose credential was
   * revoked cannot sign in (its pages could not call the API).
   */
  async authenticate(db: Queryable, email: string, password: string): Promise<Authentication> {
    const found = email.length <= 254 ? await repo.findMemberByEmail(db, email.trim()) : undefined;
    const right = await checkPassword(found?.password_hash, password);
    if (!found) return { ok: false, member: undefined };
    const member: repo.MemberRow = {
      workspace_id: found.workspace_id,
      id: found.id,
      email: found.email,
      role: found.role,
      credential_id: found.credential_id,
      created_at: found.created_at,
      password_changed_at: found.password_changed_at,
    };
    if (!right) return { ok: false, member };
    const session = await this.sessionFor(db, member);
    return session ? { ok: true, session } : { ok: false, member };
  }

  /** A token for the member's credential (a session's), or undefined when the credential was revoked. */
  async sessionFor(db: Queryable, member: repo.MemberRow): Promise<Authenticated | undefined> {
    const credential = await findCredential(db, member.workspace_id, member.credential_id);
    if (!credential || credential.status !== 'active') return undefined;
    const token = await this.tokens.issue({
      credentialId: credential.id,
      tokenId: credential.token_id,
      audience: credential.audience,
      workspaceId: member.workspace_id,
      env: credential.environment,
    });
    return { member, token, tokenId: credential.token_id };
  }

  list(db: Queryable, workspaceId: string): Promise<repo.MemberRow[]> {
    return repo.listMembers(db, workspaceId);
  }

  /** The member `id` names in the workspace, or undefined (not a UUID, or another workspace's). */
  find(db: Queryable, workspaceId: string, id: string): Promise<repo.MemberRow | undefined> {
    return isUuid(id) ? repo.findMember(db, workspaceId, id) : Promise.resolve(undefined);
  }

  /**
   * Gives member `memberId` a new role. Every session of the member ends in the same transaction: a page open under
   * the old role must not keep acting (its API token already follows the new role: the auth hook reads it).
   */
  async changeRole(
    db: Db,
    workspaceId: string,
    actor: Actor,
    memberId: string,
    role: repo.Role,
  ): Promise<ManageMember> {
    return withTransaction(db, async (tx): Promise<ManageMember> => {
      const checked = await this.checkManage(tx, workspaceId, actor, memberId, role);
      if (!checked.ok) return checked;
      const member = await repo.updateRole(tx, workspaceId, memberId, role);
      const sessionsEnded = await repo.endMemberSessions(tx, workspaceId, memberId);
      return { ok: true, member, sessionsEnded };
    });
  }

  /**
   * Removes member `memberId`: its credential is revoked (a token copied out of a session stops working) and the
   * member deleted with its sessions and links, in one transaction.
   */
  async remove(db: Db, workspaceId: string, actor: Actor, memberId: string): Promise<ManageMember> {
    return withTransaction(db, async (tx): Promise<ManageMember> => {
      const checked = await this.checkManage(tx, workspaceId, actor, memberId, undefined);
      if (!checked.ok) return checked;
      const sessionsEnded = await repo.endMemberSessions(tx, workspaceId, memberId);
      await revokeCredential(tx, workspaceId, checked.member.credential_id, new Date());
      await repo.deleteMember(tx, workspaceId, memberId);
      return { ok: true, member: checked.member, sessionsEnded };
    });
  }

  /**
   * The rules of member management, checked inside the change's transaction: managing members needs `members`;
   * touching an owner, or making one, needs `ownership`; the last owner can be neither demoted nor removed (`role`
   * undefined: a removal). The owners are locked before the member, always in that order, so two changes at once
   * cannot deadlock or both pass the last-owner check.
   */
  private async checkManage(
    tx: Tx,
    workspaceId: string,
    actor: Actor,
    memberId: string,
    role: repo.Role | undefined,
  ): Promise<{ ok: true; member: repo.MemberRow } | ManageRefused> {
    const may = (p: Permission): boolean => actor.permissions === undefined || actor.permissions.includes(p);
    if (!may('members')) return { ok: false, reason: 'forbidden', message: 'Your role may not manage members.' };
    const owners = await repo.lockOwners(tx, workspaceId);
    const member = isUuid(memberId) ? await repo.findMemberForUpdate(tx, workspaceId, memberId) : undefined;
    if (!member) return { ok: false, reason: 'no_member', message: 'There is no such member.' };
    if ((member.role === 'owner' || role === 'owner') && !may('ownership'))
      return { ok: false, reason: 'forbidden', message: 'Only an owner may make, demote or remove an owner.' };
    const losesOwner = member.role === 'owner' && role !== 'owner';
    if (losesOwner && owners.length <= 1)
      return {
        ok: false,
        reason: 'last_owner',
        message: `${member.email} is the workspace's last owner: make another member owner first.`,
      };
    return { ok: true, member };
  }
}

/** Who is managing members: what their role permits (undefined: a session opened with a token, which may do all). */
export interface Actor {
  permissions: readonly Permission[] | undefined;
}

type ManageRefused = { ok: false; reason: 'forbidden' | 'no_member' | 'last_owner'; message: string };

export type ManageMember = { ok: true; member: repo.MemberRow; sessionsEnded: number } | ManageRefused;

/** The email was taken between the check and the insert: the transaction is rolled back. */
class EmailTaken extends Error {}

function emailTakenAnswer(error: unknown): { ok: false; reason: 'email_taken'; message: string } {
  if (error instanceof EmailTaken)
    return { ok: false, reason: 'email_taken', message: 'That email already belongs to a member.' };
  throw error;
}

/** How long an invitation link works. */
export const INVITATION_TTL_SECONDS = 72 * 60 * 60;
/** How long a password reset link works. */
export const RESET_TTL_SECONDS = 60 * 60;

const LINK_GONE = 'This link has expired or has already been used. Ask an owner for a new one.';

const linkHash = (token: string): Buffer => createHash('sha256').update(token).digest();

export type IssuedLink =
  | { ok: true; token: string; expiresAt: Date; email: string }
  | { ok: false; reason: 'invalid_email' | 'email_taken' | 'no_member'; message: string };

export type UseLink =
  CreateMember | { ok: false; reason: 'invalid_password' | 'expired' | 'email_taken'; message: string };
