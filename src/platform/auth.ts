// Bearer-token authentication and the audience check, applied to every route in one hook.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DEFAULT_PERMISSION, describeAccess, type Permission, type RouteAuth } from './access.js';
import type { EnabledRail } from './enabled-rails.js';
import { ApiError } from './errors.js';
import { clientKey, TokenBuckets } from './rate-limit.js';
import type { Audience, TokenClaims, TokenService } from './tokens.js';

/**
 * The stored credential a signed token names, if it is still active (not rotated out, not revoked): its audience and
 * environment, and, when it is a dashboard member's, what the member's role permits (read at every request, so a
 * role change applies to a token already handed out). An API key has no `permissions`: it may do whatever its
 * audience may. The credentials and members modules answer it; composition.ts hands it in, so this file imports no
 * module.
 */
export type LiveCredentialLookup = (
  workspaceId: string,
  credentialId: string,
  tokenId: string,
) => Promise<
  | {
      audience: Audience;
      environment: TokenClaims['env'];
      permissions?: readonly Permission[] | undefined;
      enabledRails?: readonly EnabledRail[] | null | undefined;
    }
  | undefined
>;

export interface AuthContext {
  credentialId: string;
  workspaceId: string;
  audience: Audience;
  /** What the dashboard member whose credential this is may do; undefined for an API key (its audience's access). */
  permissions: readonly Permission[] | undefined;
  /**
   * The rails the workspace may use (its active configuration), read by the token check's own query so the create
   * paths narrow the catalogue at no extra statement; null: the whole catalogue.
   */
  enabledRails: readonly EnabledRail[] | null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route: declared on every route (`config: { auth: INTEGRATOR }`, see src/platform/access.ts). */
    auth?: RouteAuth;
    /** What a dashboard member's role must permit to call the route; `read` when not declared (only reads may omit it). */
    permission?: Permission;
  }
  interface FastifyInstance {
    /** `METHOD /path` → who may call it, for every route added (HEAD follows GET). */
    accessRules: Map<string, RouteAuth>;
    /** `METHOD /path` → the permission a member needs, for every route that takes a token. */
    routePermissions: Map<string, Permission>;
  }
  interface FastifyRequest {
    authContext: AuthContext | undefined;
  }
}

// The scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^Bearer +([A-Za-z0-9_.\-+/=]+)$/i;

/** The realm of every bearer challenge (RFC 9110 §11.5): one protection space, the API's tokens. */
const BEARER_REALM = 'payments';

/**
 * A 401 with its challenge (RFC 9110 §11.6.1 requires one; RFC 6750 §3 gives the Bearer form). A request with no
 * bearer token gets the bare challenge, with no error code (RFC 6750 §3.1); a token given and refused gets
 * `error="invalid_token"` with the detail as its description.
 */
function unauthorized(detail: string, tokenGiven: boolean): ApiError {
  const challenge = tokenGiven
    ? `Bearer realm="${BEARER_REALM}", error="invalid_token", error_description="${detail.replace(/["\\]/g, '')}"`
    : `Bearer realm="${BEARER_REALM}"`;
  return new ApiError('unauthorized', detail, { headers: { 'WWW-Authenticate': challenge } });
}

const invalidToken = () => unauthorized('The bearer token is invalid, rotated or revoked.', true);

export function requireAuth(request: FastifyRequest): AuthContext {
  if (!request.authContext) throw unauthorized('This route needs a bearer token.', false);
  return request.authContext;
}

/**
 * Registers the authentication hook. `failuresPerMinute`: refused tokens one client address may present per minute
 * (and at once); past that, its refused tokens are answered 429 instead of 401 until its bucket refills. Only refused
 * tokens are counted and only they are limited: a valid token is served as usual from an address over its limit (one
 * integrator's forgotten process with a rotated-out key, or a neighbour behind the same NAT, must not stop its good
 * traffic). That tells an attacker nothing: a signed token cannot be guessed, so a flood can only ever be refused.
 */
export function registerAuth(
  app: FastifyInstance,
  findLiveCredential: LiveCredentialLookup,
  tokens: TokenService,
  failuresPerMinute: number,
): void {
  app.decorateRequest('authContext', undefined);
  const failures = new TokenBuckets({ perSecond: failuresPerMinute / 60, burst: failuresPerMinute });
  const dead = new DeadTokens();

  // A route that declares no audiences is a mistake caught at boot, not an open door.
  app.decorate('accessRules', new Map<string, RouteAuth>());
  app.decorate('routePermissions', new Map<string, Permission>());
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const auth = route.config?.auth;
    if (auth === undefined)
      throw new Error(
        `route ${methods.join(',')} ${route.url} declares no audiences (config.auth; see src/platform/access.ts)`,
      );
    // A write open to every role by omission would be the one a reviewer misses: each says what it needs.
    const writes = methods.some((m) => m !== 'GET' && m !== 'HEAD');
    if (auth !== 'public' && writes && route.config?.permission === undefined)
      throw new Error(
        `route ${methods.join(',')} ${route.url} declares no permission (config.permission; see src/platform/access.ts)`,
      );
    for (const method of methods) {
      if (method === 'HEAD') continue;
      app.accessRules.set(`${method} ${route.url}`, auth);
      if (auth !== 'public')
        app.routePermissions.set(`${method} ${route.url}`, route.config?.permission ?? DEFAULT_PERMISSION);
    }
    const description = [route.schema?.description, describeAccess(auth)].filter(Boolean).join('\n\n');
    route.schema = { ...route.schema, description, ...(auth === 'public' ? {} : { security: [{ bearerAuth: [] }] }) };
  });

  app.addHook('onRequest', async (request) => {
    const rule = request.routeOptions.config.auth;
    if (rule === undefined || rule === 'public') return;
    const header = request.headers.authorization;
    if (header === undefined) throw unauthorized('Send your API token as "Authorization: Bearer <token>".', false);
    // The signature first: a forged token (a flood's usual load) is refused here, with no database query; a signed
    // token that was once refused by the store (rotated or revoked: for good) is refused again without asking it.
    // Another scheme (Basic …) is charged like a bad token, but is answered as a request with no bearer token.
    const bearer = /^Bearer(?: |$)/i.test(header);
    const refuse = (): ApiError =>
      refusal(failures, clientKey(request.ip), () =>
        bearer ? invalidToken() : unauthorized('Send your API token as "Authorization: Bearer <token>".', false),
      );
    const match = BEARER.exec(header);
    const claims = match?.[1] ? await tokens.verify(match[1]) : undefined;
    if (!claims || dead.has(claims)) throw refuse();
    const stored = await findLiveCredential(claims.workspaceId, claims.credentialId, claims.tokenId);
    if (!stored) {
      dead.add(claims);
      throw refuse();
    }
    // A token is worth what its stored credential is, not what it says: a signed token whose audience or
    // environment differs from its credential's (a minting bug, or someone holding the signing key and one weaker
    // token) must not widen itself. It is refused like a forged one; which claim differed goes only to the log.
    if (stored.audience !== claims.audience || stored.environment !== claims.env) {
      request.log.warn(
        {
          credential_id: claims.credentialId,
          token_aud: claims.audience,
          credential_audience: stored.audience,
          token_env: claims.env,
          credential_environment: stored.environment,
        },
        'bearer token refused: its claims differ from its stored credential',
      );
      throw refuse();
    }
    if (!rule.includes(claims.audience)) {
      throw new ApiError(
        'forbidden',
        `A ${claims.audience} token cannot call this route; it needs one of: ${rule.join(', ')}.`,
      );
    }
    const permission = request.routeOptions.config.permission ?? DEFAULT_PERMISSION;
    if (stored.permissions && !stored.permissions.includes(permission)) {
      throw new ApiError(
        'forbidden',
        `This dashboard member's role does not permit \`${permission}\`; an owner can change the role.`,
      );
    }
    request.authContext = {
      credentialId: claims.credentialId,
      workspaceId: claims.workspaceId,
      audience: claims.audience,
      permissions: stored.permissions,
      enabledRails: stored.enabledRails ?? null,
    };
  });
}

/**
 * Charges a refused token to its client address: 401 while the address has refusals left, then 429 with Retry-After
 * until its bucket refills. Never called for a valid token, so a valid token neither spends nor waits for the bucket.
 */
function refusal(failures: TokenBuckets, client: string, refused: () => ApiError): ApiError {
  const allowance = failures.take(client);
  if (allowance.allowed) return refused();
  return new ApiError(
    'rate_limited',
    `Too many refused tokens from this address; retry after ${allowance.retryAfterSeconds} s.`,
    { headers: { 'Retry-After': String(allowance.retryAfterSeconds) } },
  );
}

const DEAD_TOKENS_LIMIT = 10_000;

/**
 * Signed tokens the store refused because they are not their credential's live token. Rotation gives a credential a
 * new token id and revocation is final, so such a token never becomes live again: remembering it (the oldest forgotten
 * past DEAD_TOKENS_LIMIT) spares the database a query for each repeat of, say, a forgotten process's rotated-out key.
 */
class DeadTokens {
  private readonly ids = new Set<string>();

  has(claims: TokenClaims): boolean {
    return this.ids.has(DeadTokens.key(claims));
  }

  add(claims: TokenClaims): void {
    if (this.ids.size >= DEAD_TOKENS_LIMIT) {
      const oldest = this.ids.values().next().value;
      if (oldest !== undefined) this.ids.delete(oldest);
    }
    this.ids.add(DeadTokens.key(claims));
  }

  private static key(claims: TokenClaims): string {
    return `${claims.workspaceId}/${claims.credentialId}/${claims.tokenId}`;
  }
}
