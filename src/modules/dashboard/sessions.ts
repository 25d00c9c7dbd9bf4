// Dashboard sessions: a member's email and password, or an API token pasted once (the break-glass path), are exchanged
// for a cookie holding a random session id. A member's session holds a token for the member's own credential
// (members.service.ts). The token is kept sealed server-side, so the pages call the public API with exactly that token's access. A session ends on
// sign-out, after 12 hours without a request, and at once when its credential is rotated or revoked.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../db/pool.js';
import { isUuid } from '../../platform/ids.js';
import type { SecretBox } from '../../platform/secret-box.js';
import type { Audience, TokenService } from '../../platform/tokens.js';
import { findLiveToken } from '../credentials/credentials.repository.js';
import { hasOwnerMember } from '../members/members.repository.js';
import type { MemberRow, MembersService } from '../members/members.service.js';
import { permissionsOfRole, type Permission } from '../members/permissions.js';
import {
  deleteMemberSession,
  deleteSession,
  findLiveSession,
  insertSession,
  listMemberSessions,
  touchSession,
  type SessionClient,
  type SessionListing,
  type SessionRow,
} from './dashboard.repository.js';

export type { SessionClient, SessionListing } from './dashboard.repository.js';

/** Where a sign-in came from, kept with the session so its member can recognise it in the list of sessions. */
export function clientOf(request: { ip: string; headers: { 'user-agent'?: string | undefined } }): SessionClient {
  return { address: request.ip, userAgent: request.headers['user-agent'] ?? null };
}

export const SESSION_COOKIE = 'dashboard_session';
/** A session unused this long is over. */
export const IDLE_LIMIT_MS = 12 * 60 * 60 * 1000;
/** last_seen_at is written at most this often per session (one write a minute, not one per page). */
const TOUCH_EVERY_MS = 60 * 1000;

/** Who may sign in: the dashboard is for a workspace's team and for the operator. */
const DASHBOARD_AUDIENCES: readonly Audience[] = ['integrator', 'admin'];

export interface Session extends SessionRow {
  /** The API token the pages call with. */
  token: string;
  idHash: Buffer;
  /** What the member's role permits; undefined for a session opened with a token (it may do what the token may). */
  permissions: readonly Permission[] | undefined;
}

/** The credential a sign-in named, for the audit log: on a refusal, only when the token was one this service signed. */
export interface SignInCredential {
  workspaceId: string;
  credentialId: string;
}

export type SignIn =
  | { ok: true; sessionId: string; credential: SignInCredential }
  | { ok: false; reason: string; credential: SignInCredential | undefined };

/** The one answer to a wrong email or a wrong password: it never tells which. */
export const MEMBER_SIGN_IN_REFUSED = 'That email and password do not match a member. Check both and try again.';

export type MemberSignIn =
  | { ok: true; secondStep?: false; sessionId: string; member: MemberRow }
  /** The password was right and the member has a second factor: no session yet (second-steps.ts). */
  | { ok: true; secondStep: true; member: MemberRow }
  /** `member`: whom the email named, for the audit log; never shown. */
  | { ok: false; reason: string; member: MemberRow | undefined };

const hashOf = (sessionId: string): Buffer => createHash('sha256').update(sessionId).digest();

/** Equal strings, compared in constant time (CSRF tokens). */
export function sameSecret(a: string | undefined, b: string): boolean {
  if (a === undefined) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export const newSecret = (): string => randomBytes(32).toString('base64url');

export class DashboardSessions {
  constructor(
    private readonly db: Db,
    private readonly tokens: TokenService,
    private readonly box: SecretBox,
    private readonly members: MembersService,
  ) {}

  /**
   * Checks a member's email and password and opens a session calling the API with the member's credential; when
   * `secondStep` says the member has a second factor, opens none and answers `secondStep` (second-steps.ts).
   */
  async signInMember(
    email: string,
    password: string,
    client: SessionClient,
    now = new Date(),
    secondStep?: (member: MemberRow) => Promise<boolean>,
  ): Promise<MemberSignIn> {
    const found = await this.members.authenticate(this.db, email, password);
    if (!found.ok) return { ok: false, reason: MEMBER_SIGN_IN_REFUSED, member: found.member };
    if (secondStep && (await secondStep(found.session.member)))
      return { ok: true, secondStep: true, member: found.session.member };
    return this.openMemberSession(found.session, client, now);
  }

  /** A session for a member whose second factor was just checked; undefined when its credential was revoked since. */
  async signInMemberAfterSecondStep(
    workspaceId: string,
    memberId: string,
    client: SessionClient,
    now = new Date(),
  ): Promise<{ ok: true; sessionId: string; member: MemberRow } | undefined> {
    const member = await this.members.find(this.db, workspaceId, memberId);
    const session = member && (await this.members.sessionFor(this.db, member));
    return session && this.openMemberSession(session, client, now);
  }

  private async openMemberSession(
    { member, token, tokenId }: { member: MemberRow; token: string; tokenId: string },
    client: SessionClient,
    now: Date,
  ): Promise<{ ok: true; secondStep?: false; sessionId: string; member: MemberRow }> {
    const sessionId = newSecret();
    await insertSession(this.db, {
      idHash: hashOf(sessionId),
      workspaceId: member.workspace_id,
      credentialId: member.credential_id,
      tokenId,
      sealedToken: this.box.seal(token),
      csrfToken: newSecret(),
      memberId: member.id,
      now,
      client,
    });
    return { ok: true, sessionId, member };
  }

  /** Checks a pasted token the way the API does (signature, live credential, claims) and opens a session for it. */
  async signIn(token: string, client: SessionClient, now = new Date()): Promise<SignIn> {
    const claims = await this.tokens.verify(token.trim());
    const stored = claims && (await findLiveToken(this.db, claims.workspaceId, claims.credentialId, claims.tokenId));
    const credential = claims && { workspaceId: claims.workspaceId, credentialId: claims.credentialId };
    if (!claims || !stored || stored.audience !== claims.audience || stored.environment !== claims.env)
      return { ok: false, reason: 'This token is not valid here: it may be mistyped, rotated or revoked.', credential };
    if (!DASHBOARD_AUDIENCES.includes(claims.audience))
      return {
        ok: false,
        reason: `A ${claims.audience} token cannot sign in: use an integrator token, or the operator's admin token.`,
        credential,
      };
    // The break-glass path is for the first owner: once an owner has joined, members sign in as themselves, and an
    // owner locked out is let back in from the server (`npm run admin -- create-member`), never by a token.
    if (await hasOwnerMember(this.db, claims.workspaceId))
      return {
        ok: false,
        reason:
          'This workspace has an owner, so a token no longer signs in: sign in with your email and password. ' +
          'Locked out? Ask an owner, or the operator (npm run admin -- create-member).',
        credential,
      };
    const sessionId = newSecret();
    await insertSession(this.db, {
      idHash: hashOf(sessionId),
      workspaceId: claims.workspaceId,
      credentialId: claims.credentialId,
      tokenId: claims.tokenId,
      sealedToken: this.box.seal(token.trim()),
      csrfToken: newSecret(),
      memberId: null,
      now,
      client,
    });
    return { ok: true, sessionId, credential: { workspaceId: claims.workspaceId, credentialId: claims.credentialId } };
  }

  /** The live session of a cookie, or undefined (unknown, idle too long, or its credential rotated or revoked). */
  async find(sessionId: string | undefined, now = new Date()): Promise<Session | undefined> {
    if (!sessionId) return undefined;
    const idHash = hashOf(sessionId);
    const row = await findLiveSession(this.db, idHash);
    if (!row) return undefined;
    const idle = now.getTime() - row.last_seen_at.getTime();
    if (idle > IDLE_LIMIT_MS) {
      await deleteSession(this.db, idHash);
      return undefined;
    }
    if (idle > TOUCH_EVERY_MS) await touchSession(this.db, idHash, now);
    return {
      ...row,
      token: this.box.open(row.sealed_token),
      idHash,
      permissions: permissionsOfRole(row.member_role),
    };
  }

  async end(session: Pick<Session, 'idHash'>): Promise<void> {
    await deleteSession(this.db, session.idHash);
  }

  /** A member's usable sessions, to be shown to the member or to whoever manages members. */
  listOf(workspaceId: string, memberId: string): Promise<SessionListing[]> {
    return listMemberSessions(this.db, workspaceId, memberId, IDLE_LIMIT_MS / 1000);
  }

  /** Ends one session of a member by its shown id; false when the member has no such session. */
  revoke(workspaceId: string, memberId: string, sessionId: string): Promise<boolean> {
    if (!isUuid(sessionId)) return Promise.resolve(false);
    return deleteMemberSession(this.db, workspaceId, memberId, sessionId);
  }
}
