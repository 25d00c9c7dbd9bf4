// The sign-in form's one-time value, against login CSRF (another site signing a victim into the attacker's
// workspace). Drawing the form stores a random value server-side (a row, so any node behind the load balancer can
// check it) and gives it to the browser twice: in the form and in a SameSite=Strict cookie. A post is accepted only
// when the cookie and the form carry the same non-empty value and that value is taken from the database unexpired,
// once. Another site cannot read or set the cookie, so its forged form fails whatever value it carries; a value it
// made up has no row; a value it drew for itself is not in the victim's cookie; a value already used is gone.
import { createHash } from 'node:crypto';
import type { Db } from '../../db/pool.js';
import { insertSignInNonce, takeSignInNonce } from './sign-in-nonces.repository.js';
import { newSecret, sameSecret } from './sessions.js';

export const SIGNIN_COOKIE = 'dashboard_signin';
/** How long a drawn sign-in form may wait to be posted. */
export const SIGNIN_NONCE_TTL_SECONDS = 60 * 60;
/** Expired values deleted per form drawn (more than the one it adds). */
const PURGE_PER_ISSUE = 10;

const hashOf = (nonce: string): Buffer => createHash('sha256').update(nonce).digest();

export class SignInNonces {
  constructor(private readonly db: Db) {}

  /** A new value for a sign-in form (and its cookie), stored until it is used or expires. */
  async issue(): Promise<string> {
    const nonce = newSecret();
    await insertSignInNonce(this.db, hashOf(nonce), SIGNIN_NONCE_TTL_SECONDS, PURGE_PER_ISSUE);
    return nonce;
  }

  /**
   * True once for a value this service issued, unexpired, carried by both the form and the cookie. The cookie's value
   * is used up by any post that carries it, accepted or not (the form is drawn again with a new one).
   */
  async redeem(formValue: string | undefined, cookieValue: string | undefined): Promise<boolean> {
    if (!cookieValue) return false;
    const live = await takeSignInNonce(this.db, hashOf(cookieValue));
    return live && !!formValue && sameSecret(formValue, cookieValue);
  }
}
