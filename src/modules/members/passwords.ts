// Members' passwords: argon2id through @node-rs/argon2 (prebuilt binaries, no install script; docs/guides/dashboard.md,
// "Passwords"). The parameters are the library's defaults, which are OWASP's minimum for argon2id (19 MiB, 2 passes,
// 1 lane); they are written into each hash, so raising them later leaves older hashes verifiable.
import { hash, verify, type Algorithm } from '@node-rs/argon2';

/** argon2id (the library's const enum, which isolated modules cannot read). */
const ARGON2ID = 2 as Algorithm;

/** The length a password must have: long enough to resist guessing, short enough to hash quickly. */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;

export function hashPassword(password: string): Promise<string> {
  return hash(password, { algorithm: ARGON2ID });
}

/**
 * A hash of no member's password, verified when an email names nobody, so an unknown email costs the same time as a
 * wrong password and the answer's timing does not tell them apart.
 */
let decoy: Promise<string> | undefined;

/** Whether `password` is the one `stored` was made from; with no stored hash, false after the same work. */
export async function checkPassword(stored: string | undefined, password: string): Promise<boolean> {
  if (stored === undefined) {
    decoy ??= hashPassword('no member has this password');
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

/** Why a new password is refused, or undefined when it is acceptable. */
export function passwordProblem(password: string): string | undefined {
  if ([...password].length < PASSWORD_MIN) return `The password must be at least ${PASSWORD_MIN} characters long.`;
  if ([...password].length > PASSWORD_MAX) return `The password must be at most ${PASSWORD_MAX} characters long.`;
  return undefined;
}
