// The roles' permission matrix, written once: what each dashboard member's role may do. The API's auth hook (through
// composition.ts) and the dashboard's pages both ask it, and docs/guides/dashboard.md shows it as a table that
// test/members.roles.test.ts checks against this one.
import { PERMISSIONS, type Permission } from '../../platform/access.js';
import { ROLES, type Role } from './members.repository.js';

export type { Permission } from '../../platform/access.js';

/** Everything but `ownership`: an admin runs the workspace but cannot make, demote or remove an owner. */
const ALL_BUT_OWNERSHIP = PERMISSIONS.filter((p) => p !== 'ownership');

export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  owner: PERMISSIONS,
  admin: ALL_BUT_OWNERSHIP,
  developer: ['read', 'keys', 'webhooks', 'events', 'sandbox'],
  finance: ['read', 'reports', 'exports', 'payouts'],
  support: ['read', 'collections', 'refunds'],
  viewer: ['read', 'reports'],
};

/** Whether a role may do what needs `permission`. */
export function permits(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].includes(permission);
}

/** What each permission lets a member do, for the guide's table and the Members page. */
export const PERMISSION_LABELS: Readonly<Record<Permission, string>> = {
  read: 'See payments, keys, webhooks, events and members',
  reports: 'See reports',
  exports: 'Download exports (CSV)',
  collections: 'Create collections and checkout links',
  refunds: 'Refund collections',
  payouts: 'Create payouts and beneficiaries',
  keys: 'Create, rotate and revoke API keys',
  webhooks: 'Add, change and test webhook endpoints',
  events: 'Resend events',
  sandbox: 'Use the sandbox simulator',
  members: 'Invite, change and remove members; end their sessions',
  ownership: 'Make, demote or remove an owner; issue password reset links',
  workspace: "Change the workspace's settings",
  operator: "Operator's actions: workspaces, risk, rates, routes",
};

/**
 * What the member a credential belongs to may do, from its stored role; undefined for a credential that is no
 * member's (an API key keeps its audience's whole access). A role this code does not know permits nothing.
 */
export function permissionsOfRole(role: string | null): readonly Permission[] | undefined {
  if (role === null) return undefined;
  return (ROLES as readonly string[]).includes(role) ? ROLE_PERMISSIONS[role as Role] : [];
}
