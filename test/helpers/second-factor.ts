// Second factors for tests: a member given a confirmed TOTP factor through the service (as the enrolment pages do),
// the code an authenticator app would show for a secret, and the sign-in's second step posted over HTTP.
import assert from 'node:assert/strict';
import { Secret, TOTP } from 'otpauth';
import { SecondFactorService } from '../../src/modules/members/second-factor.service.js';
import type { TestApp } from './harness.js';

/** The code an app shows for `secret` (base32, spaces allowed), `steps` 30-second steps from now. */
export function codeFor(secret: string, steps = 0): string {
  const totp = new TOTP({ secret: Secret.fromBase32(secret.replace(/\s/g, '')), digits: 6, period: 30 });
  return totp.generate({ timestamp: Date.now() + steps * 30_000 });
}

/** Gives the member a confirmed second factor; answers its secret and its recovery codes. */
export async function giveSecondFactor(
  t: TestApp,
  workspaceId: string,
  member: { id: string; email: string },
): Promise<{ secret: string; recoveryCodes: string[] }> {
  const service = new SecondFactorService(t.box, 'test');
  const enrolment = await service.enrolment(t.db, workspaceId, member, true);
  assert.ok(enrolment);
  const done = await service.confirm(t.db, workspaceId, member, codeFor(enrolment.secret));
  assert.ok(done.ok);
  return { secret: enrolment.secret, recoveryCodes: done.recoveryCodes };
}

/**
 * Lets the member's next code be one of the current time step again: a test signing in twice within 30 seconds
 * stands for sign-ins minutes apart (a code is otherwise refused as a replay).
 */
export async function forgetLastStep(t: TestApp, memberId: string): Promise<void> {
  await t.db.query('UPDATE member_second_factors SET last_step = NULL WHERE member_id = $1', [memberId]);
}
