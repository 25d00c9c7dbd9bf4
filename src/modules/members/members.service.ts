// Dashboard members: people of a workspace's team with an email, a password and a role (docs/guides/dashboard.md,
// "Members"). A member is made with a credential of its own in the same workspace (an integrator credential, or an
// admin one in the operator workspace): the dashboard's pages call the public API with a token for it, so a member
// reaches the API through the same routes, validation and checks as an API key, and the audit log names the member.
import type { PaymentsEnv } from '../../config.js';
import type { Db, Queryable } from '../../db/pool.js';
import { withTransaction } from '../../db/pool.js';
import { uuidv7 } from '../../platform/ids.js';
import type { TokenService } from '../../platform/tokens.js';
import { CredentialsService } from '../credentials/credentials.service.js';
import { findCredential } from '../credentials/credentials.repository.js';
import { findWorkspace } from '../workspaces/workspaces.repository.js';
import * as repo from './members.repository.js';
import { checkPassword, hashPassword, passwordProblem } from './passwords.js';

export { ROLES, type MemberRow, type Role } from './members.repository.js';

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
    return withTransaction(db, async (tx): Promise<CreateMember> => {
      const workspace = await findWorkspace(tx, workspaceId);
      if (!workspace) return { ok: false, reason: 'no_workspace', message: `There is no workspace ${workspaceId}.` };
      const audience = workspace.kind === 'operator' ? 'admin' : 'integrator';
      const issued = await this.credentials.create(
        tx,
        workspaceId,
        audience,
        `Dashboard member ${email}`.slice(0, 100),
      );
      const member = await repo.insertMember(tx, workspaceId, {
        id: uuidv7(),
        email,
        passwordHash,
        role: input.role,
        credentialId: issued.credential.id,
        now: new Date(),
      });
      // Thrown, so the transaction rolls back and takes the credential with it.
      if (!member) throw new EmailTaken();
      return { ok: true, member };
    }).catch((error: unknown) => {
      if (error instanceof EmailTaken)
        return { ok: false, reason: 'email_taken', message: 'That email already belongs to a member.' } as const;
      throw error;
    });
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
    const credential = await findCredential(db, member.workspace_id, member.credential_id);
    if (!credential || credential.status !== 'active') return { ok: false, member };
    const token = await this.tokens.issue({
      credentialId: credential.id,
      tokenId: credential.token_id,
      audience: credential.audience,
      workspaceId: member.workspace_id,
      env: credential.environment,
    });
    return { ok: true, session: { member, token, tokenId: credential.token_id } };
  }

  list(db: Queryable, workspaceId: string): Promise<repo.MemberRow[]> {
    return repo.listMembers(db, workspaceId);
  }
}

/** The email was taken between the check and the insert: the transaction is rolled back. */
class EmailTaken extends Error {}
