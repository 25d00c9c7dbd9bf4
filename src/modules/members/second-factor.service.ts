// Members' second factor (docs/guides/dashboard.md, "Second factor"): a TOTP secret (RFC 6238, through otpauth: SHA-1,
// 6 digits, 30-second steps, what every authenticator app reads) sealed at rest under the secrets key, and ten
// one-time recovery codes kept as hashes. A code is accepted one step either side of now (clocks drift), and never
// twice: the step of the last code accepted is stored and a code of that step or an earlier one is refused. Owners and
// admins must have one; a workspace may require it of everyone.
import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Db, Queryable } from '../../db/pool.js';
import { withTransaction } from '../../db/pool.js';
import type { SecretBox } from '../../platform/secret-box.js';
import * as members from './members.repository.js';
import { checkPassword } from './passwords.js';
import * as repo from './second-factor.repository.js';

/** The roles that may not use the dashboard without a second factor, whatever the workspace says. */
export const ROLES_NEEDING_SECOND_FACTOR: readonly members.Role[] = ['owner', 'admin'];
export const RECOVERY_CODE_COUNT = 10;
/** Steps either side of now a code is accepted in: 30 seconds of clock drift each way. */
const WINDOW = 1;
/** Recovery codes are written in this alphabet (no 0/o, 1/l/i), two groups of five: 50 random bits. */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

export interface Enrolment {
  /** The secret in base32, for typing into an app by hand. */
  secret: string;
  /** The otpauth:// URI an app reads from the QR code. */
  uri: string;
}

export type Verified = { ok: true; via: 'code' | 'recovery_code' } | { ok: false };

const TOTP_CODE = /^\d{6}$/;

/** A code as typed: spaces and dashes dropped, lower case. */
const normalised = (code: string): string => code.replace(/[\s-]/g, '').toLowerCase();
const recoveryHash = (code: string): Buffer =>
  createHash('sha256')
    .update(`recovery:${normalised(code)}`)
    .digest();

function newRecoveryCode(): string {
  // Rejection sampling keeps every character equally likely (256 is not a multiple of the alphabet's size).
  let out = '';
  while (out.length < 10) {
    for (const byte of randomBytes(16)) {
      if (byte < 256 - (256 % RECOVERY_ALPHABET.length) && out.length < 10)
        out += RECOVERY_ALPHABET[byte % RECOVERY_ALPHABET.length];
    }
  }
  return `${out.slice(0, 5)}-${out.slice(5)}`;
}

export class SecondFactorService {
  constructor(
    private readonly box: SecretBox,
    /** The name an authenticator app shows beside the account (the service's host). */
    private readonly issuer: string,
  ) {}

  private totp(secret: string, email: string): TOTP {
    return new TOTP({
      issuer: this.issuer,
      label: email,
      secret: Secret.fromBase32(secret),
      algorithm: 'SHA1',
      digits: 6,
      period: 30,
    });
  }

  /** Whether the member has a confirmed second factor, and how many recovery codes are left. */
  async status(
    db: Queryable,
    workspaceId: string,
    memberId: string,
  ): Promise<{ enrolled: boolean; codesLeft: number }> {
    const row = await repo.findSecondFactor(db, workspaceId, memberId);
    if (!row?.confirmed_at) return { enrolled: false, codesLeft: 0 };
    return { enrolled: true, codesLeft: await repo.countRecoveryCodes(db, workspaceId, memberId) };
  }

  /** Whether the member must have a second factor: an owner or an admin, or anyone in a workspace requiring it. */
  async required(db: Queryable, workspaceId: string, role: members.Role): Promise<boolean> {
    return ROLES_NEEDING_SECOND_FACTOR.includes(role) || repo.workspaceRequiresSecondFactor(db, workspaceId);
  }

  workspaceRequires(db: Queryable, workspaceId: string): Promise<boolean> {
    return repo.workspaceRequiresSecondFactor(db, workspaceId);
  }

  setWorkspaceRequires(db: Queryable, workspaceId: string, required: boolean): Promise<void> {
    return repo.setWorkspaceRequiresSecondFactor(db, workspaceId, required);
  }

  enrolledMembers(db: Queryable, workspaceId: string): Promise<Set<string>> {
    return repo.membersWithSecondFactor(db, workspaceId);
  }

  /**
   * The enrolment under way: a new secret (stored sealed, unconfirmed), or the one already begun when `restart` is
   * false. Undefined when the member already has a confirmed factor (it must be disabled first).
   */
  async enrolment(
    db: Queryable,
    workspaceId: string,
    member: { id: string; email: string },
    restart: boolean,
  ): Promise<Enrolment | undefined> {
    const row = await repo.findSecondFactor(db, workspaceId, member.id);
    if (row?.confirmed_at) return undefined;
    let secret = row && !restart ? this.box.open(row.sealed_secret) : undefined;
    if (secret === undefined) {
      secret = new Secret({ size: 20 }).base32;
      if (!(await repo.beginSecondFactor(db, workspaceId, member.id, this.box.seal(secret)))) return undefined;
    }
    return { secret, uri: this.totp(secret, member.email).toString() };
  }

  /**
   * Ends an enrolment with a current code from the app: the factor is confirmed and ten recovery codes are made, in
   * one transaction. The codes are answered once; only their hashes are kept.
   */
  async confirm(
    db: Db,
    workspaceId: string,
    member: { id: string; email: string },
    code: string,
  ): Promise<{ ok: true; recoveryCodes: string[] } | { ok: false }> {
    const row = await repo.findSecondFactor(db, workspaceId, member.id);
    if (!row || row.confirmed_at) return { ok: false };
    return this.newCodes(
      db,
      workspaceId,
      member,
      this.stepOf(this.box.open(row.sealed_secret), member.email, code),
      true,
    );
  }

  /** A code from the app (once per time step) or a recovery code (once ever) of a member with a confirmed factor. */
  async verify(
    db: Queryable,
    workspaceId: string,
    member: { id: string; email: string },
    code: string,
  ): Promise<Verified> {
    const typed = normalised(code);
    if (typed.length === 0 || typed.length > 64) return { ok: false };
    if (!TOTP_CODE.test(typed)) {
      const used = await repo.takeRecoveryCode(db, workspaceId, member.id, recoveryHash(typed));
      return used ? { ok: true, via: 'recovery_code' } : { ok: false };
    }
    const row = await repo.findSecondFactor(db, workspaceId, member.id);
    if (!row?.confirmed_at) return { ok: false };
    const step = this.stepOf(this.box.open(row.sealed_secret), member.email, typed);
    if (step === undefined) return { ok: false };
    return (await repo.useStep(db, workspaceId, member.id, step, false)) ? { ok: true, via: 'code' } : { ok: false };
  }

  /**
   * New recovery codes for a member whose factor is on, given a current code from the app (not a recovery code: a
   * code found on paper must not be able to mint ten more). The old codes stop working in the same transaction as the
   * step is spent; the new ones are answered once.
   */
  async regenerateRecoveryCodes(
    db: Db,
    workspaceId: string,
    member: { id: string; email: string },
    code: string,
  ): Promise<{ ok: true; recoveryCodes: string[] } | { ok: false }> {
    const row = await repo.findSecondFactor(db, workspaceId, member.id);
    if (!row?.confirmed_at) return { ok: false };
    return this.newCodes(
      db,
      workspaceId,
      member,
      this.stepOf(this.box.open(row.sealed_secret), member.email, code),
      false,
    );
  }

  /**
   * Spends the app's time step `step` (confirming the factor when `confirm`) and replaces the member's recovery codes
   * with ten new ones, in one transaction; answers the new codes, or not ok when the step was no good or already used.
   */
  private async newCodes(
    db: Db,
    workspaceId: string,
    member: { id: string },
    step: number | undefined,
    confirm: boolean,
  ): Promise<{ ok: true; recoveryCodes: string[] } | { ok: false }> {
    if (step === undefined) return { ok: false };
    const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    const done = await withTransaction(db, async (tx) => {
      if (!(await repo.useStep(tx, workspaceId, member.id, step, confirm))) return false;
      await repo.replaceRecoveryCodes(tx, workspaceId, member.id, recoveryCodes.map(recoveryHash));
      return true;
    });
    return done ? { ok: true, recoveryCodes } : { ok: false };
  }

  /** Turns the member's own factor off, given a current code (or a recovery code) or the member's password. */
  async disable(
    db: Queryable,
    workspaceId: string,
    member: { id: string; email: string },
    proof: { code: string; password: string },
  ): Promise<boolean> {
    let proven = false;
    if (proof.code.trim() !== '') proven = (await this.verify(db, workspaceId, member, proof.code)).ok;
    else if (proof.password !== '') {
      const found = await members.findMemberSecret(db, workspaceId, member.id);
      proven = await checkPassword(found?.password_hash, proof.password);
    }
    return proven && repo.deleteSecondFactor(db, workspaceId, member.id);
  }

  /** An owner removes a member's factor (a lost device): the member enrols again at the next sign-in if required. */
  async reset(db: Queryable, workspaceId: string, memberId: string): Promise<boolean> {
    return repo.deleteSecondFactor(db, workspaceId, memberId);
  }

  /** The RFC 6238 time step a code belongs to, within the window around now; undefined when it fits none. */
  private stepOf(secret: string, email: string, code: string): number | undefined {
    const typed = normalised(code);
    if (!TOTP_CODE.test(typed)) return undefined;
    const totp = this.totp(secret, email);
    const timestamp = Date.now();
    const delta = totp.validate({ token: typed, timestamp, window: WINDOW });
    return delta === null ? undefined : totp.counter({ timestamp }) + delta;
  }
}

/** `rotate-key`: every member's TOTP secret re-sealed by `reseal`, in the caller's transaction. Returns how many. */
export async function resealSecondFactorSecrets(tx: Queryable, reseal: (value: string) => string): Promise<number> {
  const rows = await repo.lockAllSecondFactorSecrets(tx);
  for (const row of rows)
    await repo.updateSecondFactorSecret(tx, row.workspace_id, row.member_id, reseal(row.sealed_secret));
  return rows.length;
}
