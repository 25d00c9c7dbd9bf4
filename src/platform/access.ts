// Who may call what: the audiences a route admits, declared on the route itself (`config: { auth: INTEGRATOR }`),
// and, for a dashboard member's token, the permission the route needs (`config: { permission: 'refunds' }`; a read
// needs `read`, the default). The auth hook enforces both (a valid token of another audience, or a member whose role
// lacks the permission, is 403) and the reference docs show the audiences. A route that declares no audiences, or a
// write that declares no permission, stops the boot: no route is open by accident.
import type { Audience } from './tokens.js';

export type RouteAuth = 'public' | readonly Audience[];

export const ANY: readonly Audience[] = ['integrator', 'liquidity_provider', 'admin'];
export const INTEGRATOR: readonly Audience[] = ['integrator'];
export const ADMIN: readonly Audience[] = ['admin'];
export const LIQUIDITY: readonly Audience[] = ['liquidity_provider', 'admin'];

/**
 * What a dashboard member may be allowed to do, one name per area of the product. Which role holds which is the
 * members module's matrix (src/modules/members/permissions.ts); an API key not tied to a member holds them all.
 */
export const PERMISSIONS = [
  'read',
  'reports',
  'exports',
  'collections',
  'refunds',
  'payouts',
  'keys',
  'webhooks',
  'events',
  'sandbox',
  'members',
  'ownership',
  'workspace',
  'operator',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** The permission a route needs when it declares none: only reads may leave it out. */
export const DEFAULT_PERMISSION: Permission = 'read';

/** The sentence the reference docs show for a route. */
export function describeAccess(auth: RouteAuth): string {
  return auth === 'public'
    ? 'No token needed.'
    : `Tokens of audience ${auth.map((a) => `\`${a}\``).join(', ')} may call this; any other audience gets 403 \`forbidden\`.`;
}
