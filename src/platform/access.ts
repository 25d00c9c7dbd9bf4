// Who may call what: every route and the audiences whose tokens it admits, in one table. The auth hook
// enforces it (a valid token of another audience is 403) and the reference docs show it. A route missing
// from the table stops the boot: no route is open by accident.
import type { Audience } from './tokens.js';

export type RouteAuth = 'public' | readonly Audience[];

const ANY: readonly Audience[] = ['integrator', 'liquidity_provider', 'admin'];
const INTEGRATOR: readonly Audience[] = ['integrator'];
const ADMIN: readonly Audience[] = ['admin'];
const LIQUIDITY: readonly Audience[] = ['liquidity_provider', 'admin'];

/** `METHOD /path` (fastify syntax) → who may call it. HEAD follows GET. */
export const ROUTE_ACCESS: Readonly<Record<string, RouteAuth>> = {
  // Operations and the reference: no token.
  'GET /healthz': 'public',
  'GET /readyz': 'public',
  'GET /metrics': 'public',
  'GET /v1/openapi.json': 'public',
  'GET /docs': 'public',
  // Rail providers authenticate by the signature over the body, not by a token.
  'POST /v1/providers/:provider/callbacks': 'public',
  // Operators (Daraja, MoMo, Airtel) sign nothing: the connector's callback token in the path is the capability.
  'POST /v1/providers/:provider/callbacks/:token': 'public',
  'POST /v1/providers/:provider/callbacks/:token/:kind': 'public',
  'PUT /v1/providers/:provider/callbacks/:token/:kind': 'public',
  'POST /v1/providers/:provider/callbacks/:token/:kind/:ref': 'public',

  // Every credential holder manages its own workspace's credentials (an admin, any audience's).
  'GET /v1/workspace': ANY,
  'GET /v1/credentials': ANY,
  'POST /v1/credentials': ANY,
  'POST /v1/credentials/:id/rotate': ANY,
  'DELETE /v1/credentials/:id': ANY,
  'GET /v1/admin/workspaces': ADMIN,
  'POST /v1/admin/workspaces': ADMIN,
  'POST /v1/admin/workspaces/:id/credentials': ADMIN,

  // Collections, refunds and balances belong to the integrator's workspace.
  'POST /v1/collections/:market/rails/:rail': INTEGRATOR,
  'GET /v1/collections': INTEGRATOR,
  'GET /v1/collections/:id': INTEGRATOR,
  'POST /v1/collections/:id/refund': INTEGRATOR,
  'GET /v1/collections/:id/refunds': INTEGRATOR,
  'GET /v1/refunds/:id': INTEGRATOR,
  'GET /v1/balances': INTEGRATOR,
  'POST /v1/sandbox/collections/:id/simulate': INTEGRATOR,
  'POST /v1/sandbox/refunds/:id/simulate': INTEGRATOR,

  // Hosted checkout: the integrator's sessions; the payer's page and its by-token endpoints need no token
  // (the link's random token is the capability; they are rate-limited per link and client).
  'POST /v1/checkout/sessions': INTEGRATOR,
  'GET /v1/checkout/sessions': INTEGRATOR,
  'GET /v1/checkout/sessions/:id': INTEGRATOR,
  'GET /v1/checkout/by-token/:token': 'public',
  'POST /v1/checkout/by-token/:token/pay': 'public',
  'GET /checkout/:token': 'public',

  // Webhook endpoints and the events they carry belong to the integrator's workspace.
  'POST /v1/webhooks/endpoints': INTEGRATOR,
  'GET /v1/webhooks/endpoints': INTEGRATOR,
  'GET /v1/webhooks/endpoints/:id': INTEGRATOR,
  'PATCH /v1/webhooks/endpoints/:id': INTEGRATOR,
  'DELETE /v1/webhooks/endpoints/:id': INTEGRATOR,
  'POST /v1/webhooks/endpoints/:id/rotate-secret': INTEGRATOR,
  'GET /v1/events': INTEGRATOR,
  'GET /v1/events/:id': INTEGRATOR,
  'GET /v1/events/:id/deliveries': INTEGRATOR,
  'POST /v1/events/:id/resend': INTEGRATOR,

  // Payout destinations belong to the integrator's workspace.
  'POST /v1/api/beneficiaries': INTEGRATOR,
  'GET /v1/api/beneficiaries': INTEGRATOR,
  'GET /v1/api/beneficiaries/:beneficiaryId': INTEGRATOR,
  'DELETE /v1/api/beneficiaries/:beneficiaryId': INTEGRATOR,

  // Risk signals: every token holder reports and reads its workspace's; the admin reviews them (and reads all).
  'GET /v1/api/risk/signals/open': ANY,
  'GET /v1/api/risk/signals/:signalId': ANY,
  'POST /v1/api/risk/signals': ANY,
  'PATCH /v1/api/risk/signals/:signalId': ADMIN,

  // Market data: everyone reads it; the admin keeps the sources; liquidity providers (and the admin) post rates.
  'GET /v1/api/markets/sources': ANY,
  'POST /v1/api/markets/sources': ADMIN,
  'PATCH /v1/api/markets/sources/:sourceId': ADMIN,
  'GET /v1/api/markets/rates': ANY,
  'POST /v1/api/markets/rates': LIQUIDITY,

  // Deposits: the integrator's addresses, deposits and credits; liquidity providers (and the admin) stock the
  // address pool and report transfers from the chain.
  'POST /v1/api/deposit-addresses': INTEGRATOR,
  'GET /v1/api/deposit-addresses': INTEGRATOR,
  'GET /v1/api/deposit-addresses/:addressId': INTEGRATOR,
  'POST /v1/api/deposit-addresses/pool': LIQUIDITY,
  'GET /v1/api/deposits': INTEGRATOR,
  'GET /v1/api/deposits/:depositId': INTEGRATOR,
  'POST /v1/api/deposits': LIQUIDITY,
  'GET /v1/api/autoconvert/credits/:creditId': INTEGRATOR,
  'POST /v1/sandbox/deposits': INTEGRATOR,
  'POST /v1/sandbox/deposits/:depositId/simulate': INTEGRATOR,

  // Payouts: everyone reads the routes, liquidity providers (and the admin) keep them; the integrator commits
  // and reads its payouts.
  'GET /v1/api/routes': ANY,
  'GET /v1/api/routes/:routeId': ANY,
  'POST /v1/api/routes': LIQUIDITY,
  'PATCH /v1/api/routes/:routeId': LIQUIDITY,
  'POST /api/transactions/commit': INTEGRATOR,
  'GET /v1/api/transactions': INTEGRATOR,
  'GET /v1/api/transactions/:transactionId': INTEGRATOR,
  'POST /v1/sandbox/payouts/:transactionId/simulate': INTEGRATOR,
};

export function routeAccess(method: string, url: string): RouteAuth | undefined {
  const key = `${method === 'HEAD' ? 'GET' : method} ${url}`;
  return Object.hasOwn(ROUTE_ACCESS, key) ? ROUTE_ACCESS[key] : undefined;
}

/** The sentence the reference docs show for a route. */
export function describeAccess(auth: RouteAuth): string {
  return auth === 'public' ? 'No token needed.' : `Tokens of audience ${auth.map((a) => `\`${a}\``).join(', ')} may call this; any other audience gets 403 \`forbidden\`.`;
}
