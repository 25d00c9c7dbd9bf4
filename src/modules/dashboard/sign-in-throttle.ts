// Failed dashboard sign-ins slow the next ones down (docs/guides/dashboard.md, "Failed sign-ins"). Failures are
// counted per account (the email typed, whether or not it names a member, so the limit says nothing of which emails
// exist) and per client address (rate-limit.ts's clientKey: an IPv6 /64 counts as one). Past a free allowance, each
// further failure blocks its key for twice as long as the one before: 1 s, 2 s, 4 s … up to 15 minutes. While either
// key is blocked, a sign-in is refused before its password is even checked (no hashing work for a flood) with the
// seconds left; the refusal says nothing of which key is blocked. A member's successful sign-in clears its account's
// count; an address's count only runs out (an hour without a failure), so signing in to one's own account does not
// buy another round of guesses at someone else's. The counts are rows in PostgreSQL, shared by every node.
import { createHash } from 'node:crypto';
import type { Db } from '../../db/pool.js';
import { clientKey } from '../../platform/rate-limit.js';
import { countFailure, forgetFailures, secondsBlocked } from './sign-in-throttle.repository.js';

/** Failures an account may have before each further one blocks it: a person mistyping a password a few times. */
export const ACCOUNT_FREE_FAILURES = 5;
/** Failures an address may have before blocking: more, since one office or carrier NAT can hold many people. */
export const ADDRESS_FREE_FAILURES = 20;
/** The longest block. */
export const MAX_BLOCK_SECONDS = 15 * 60;
/** A count starts over after this long without a failure. */
export const RESET_SECONDS = 60 * 60;
const PURGE_PER_FAILURE = 10;

const hashOf = (key: string): Buffer => createHash('sha256').update(key).digest();
const accountKey = (email: string): Buffer => hashOf(`account:${email.trim().toLowerCase()}`);
const addressKey = (ip: string): Buffer => hashOf(`address:${clientKey(ip)}`);

export class SignInThrottle {
  constructor(private readonly db: Db) {}

  /** Seconds until a sign-in from `ip` (for `email`, when the form has one) may be tried; 0 when it may be now. */
  async wait(ip: string, email?: string): Promise<number> {
    const keys = email === undefined ? [addressKey(ip)] : [accountKey(email), addressKey(ip)];
    return secondsBlocked(this.db, keys);
  }

  /** Counts a failed sign-in against the address, and against the account when the form names one. */
  async failed(ip: string, email?: string): Promise<void> {
    const rule = { maxSeconds: MAX_BLOCK_SECONDS, resetSeconds: RESET_SECONDS, purgeLimit: PURGE_PER_FAILURE };
    if (email !== undefined) await countFailure(this.db, accountKey(email), { ...rule, free: ACCOUNT_FREE_FAILURES });
    await countFailure(this.db, addressKey(ip), { ...rule, free: ADDRESS_FREE_FAILURES });
  }

  /** A member signed in: its account's count starts over. */
  async succeeded(email: string): Promise<void> {
    await forgetFailures(this.db, accountKey(email));
  }
}
