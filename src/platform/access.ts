// Who may call what: the audiences a route admits, declared on the route itself (`config: { auth: INTEGRATOR }`).
// The auth hook enforces it (a valid token of another audience is 403) and the reference docs show it. A route
// that declares none stops the boot: no route is open by accident.
import type { Audience } from './tokens.js';

export type RouteAuth = 'public' | readonly Audience[];

export const ANY: readonly Audience[] = ['integrator', 'liquidity_provider', 'admin'];
export const INTEGRATOR: readonly Audience[] = ['integrator'];
export const ADMIN: readonly Audience[] = ['admin'];
export const LIQUIDITY: readonly Audience[] = ['liquidity_provider', 'admin'];

/** The sentence the reference docs show for a route. */
export function describeAccess(auth: RouteAuth): string {
  return auth === 'public'
    ? 'No token needed.'
    : `Tokens of audience ${auth.map((a) => `\`${a}\``).join(', ')} may call this; any other audience gets 403 \`forbidden\`.`;
}
