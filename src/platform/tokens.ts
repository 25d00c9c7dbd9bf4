// Issuing and verifying the service's bearer tokens (JWT, ES256 fixed server-side).
import { createHash } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import type { PaymentsEnv } from './environment.js';
import { TOKEN_ALG, type ServiceKeys } from './secrets.js';

export const AUDIENCES = ['integrator', 'admin', 'liquidity_provider'] as const;
export type Audience = (typeof AUDIENCES)[number];

export interface TokenClaims {
  credentialId: string;
  tokenId: string;
  audience: Audience;
  workspaceId: string;
  env: PaymentsEnv;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CACHE_LIMIT = 10_000;

export class TokenService {
  // Signature checks cost ~0.3 ms each; a verified token's claims are cached by its hash.
  // Only the signature is cached: whether the credential is still active is asked every time.
  private readonly verified = new Map<string, TokenClaims>();

  constructor(
    private readonly keys: ServiceKeys,
    private readonly env: PaymentsEnv,
  ) {}

  async issue(claims: TokenClaims): Promise<string> {
    return new SignJWT({ wsp: claims.workspaceId, env: claims.env })
      .setProtectedHeader({ alg: TOKEN_ALG, kid: this.keys.kid, typ: 'JWT' })
      .setSubject(claims.credentialId)
      .setAudience(claims.audience)
      .setJti(claims.tokenId)
      .setIssuedAt()
      .sign(this.keys.privateKey);
  }

  /** The claims of a well-formed token signed by this service for this environment, else undefined. */
  async verify(token: string): Promise<TokenClaims | undefined> {
    const hash = createHash('sha256').update(token).digest('base64');
    const cached = this.verified.get(hash);
    if (cached) return cached;
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.keys.publicKey, { algorithms: [TOKEN_ALG] }));
    } catch {
      return undefined;
    }
    const { sub, aud, wsp, env, jti } = payload;
    if (typeof sub !== 'string' || !UUID_RE.test(sub)) return undefined;
    if (typeof jti !== 'string' || !UUID_RE.test(jti)) return undefined;
    if (typeof wsp !== 'string' || !UUID_RE.test(wsp)) return undefined;
    if (typeof aud !== 'string' || !(AUDIENCES as readonly string[]).includes(aud)) return undefined;
    if (env !== this.env) return undefined;
    const claims: TokenClaims = {
      credentialId: sub,
      tokenId: jti,
      audience: aud as Audience,
      workspaceId: wsp,
      env: this.env,
    };
    if (this.verified.size >= CACHE_LIMIT) {
      const oldest = this.verified.keys().next().value;
      if (oldest !== undefined) this.verified.delete(oldest);
    }
    this.verified.set(hash, claims);
    return claims;
  }
}
