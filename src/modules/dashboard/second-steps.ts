// The sign-in's second step (docs/guides/dashboard.md, "Second factor"): after a right password, a member with a
// second factor gets no session yet but a record server-side, named by a random value in a SameSite=Strict cookie
// (this browser only), that lives five minutes. The form asking for the code also carries the sign-in form's one-time
// value (sign-in-nonces.ts), so no other site can post it. Each post takes the record: a right code turns it into a
// session; a wrong one gets a new record with the same expiry, so the five minutes never grow and a record is never
// used twice.
import { createHash } from 'node:crypto';
import type { Db } from '../../db/pool.js';
import { insertSecondStep, takeSecondStep } from './second-steps.repository.js';
import { newSecret } from './sessions.js';

export const SECOND_STEP_COOKIE = 'dashboard_second_step';
/** How long a member has to enter the code after the password. */
export const SECOND_STEP_TTL_SECONDS = 5 * 60;
const PURGE_PER_ISSUE = 10;

const hashOf = (value: string): Buffer => createHash('sha256').update(value).digest();

export interface SecondStep {
  workspaceId: string;
  memberId: string;
  expiresAt: Date;
}

export class SecondSteps {
  constructor(private readonly db: Db) {}

  /** A new record for the member (its cookie's value); `expiresAt` carries over a record just used. */
  async issue(workspaceId: string, memberId: string, expiresAt: Date | null = null): Promise<string> {
    const value = newSecret();
    await insertSecondStep(this.db, workspaceId, {
      idHash: hashOf(value),
      memberId,
      ttlSeconds: SECOND_STEP_TTL_SECONDS,
      expiresAt,
      purgeLimit: PURGE_PER_ISSUE,
    });
    return value;
  }

  /** The record the cookie names, taken: undefined when unknown, expired or already used. */
  async take(cookieValue: string | undefined): Promise<SecondStep | undefined> {
    if (!cookieValue) return undefined;
    const row = await takeSecondStep(this.db, hashOf(cookieValue));
    return row && { workspaceId: row.workspace_id, memberId: row.member_id, expiresAt: row.expires_at };
  }
}
