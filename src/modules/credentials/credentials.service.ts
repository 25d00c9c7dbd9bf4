// Credential rules: who may mint which audience, rotation that kills the old token at once, revocation.
import type { PaymentsEnv } from '../../config.js';
import type { Queryable } from '../../db/pool.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { uuidv7 } from '../../platform/ids.js';
import type { Audience, TokenService } from '../../platform/tokens.js';
import * as repo from './credentials.repository.js';

export interface IssuedCredential {
  credential: repo.CredentialRow;
  token: string;
}

export class CredentialsService {
  constructor(
    private readonly tokens: TokenService,
    private readonly env: PaymentsEnv,
  ) {}

  /** Only an admin may mint another audience; anyone else mints credentials of its own audience. */
  assertMayMint(callerAudience: Audience, requested: Audience): void {
    if (callerAudience !== 'admin' && callerAudience !== requested) {
      throw new ApiError('forbidden', `A ${callerAudience} credential cannot create a ${requested} credential.`);
    }
  }

  async create(db: Queryable, workspaceId: string, audience: Audience, name: string): Promise<IssuedCredential> {
    const id = uuidv7();
    const tokenId = uuidv7();
    const credential = await repo.insertCredential(db, workspaceId, {
      id,
      audience,
      environment: this.env,
      name,
      tokenId,
      createdAt: new Date(),
    });
    const token = await this.tokens.issue({ credentialId: id, tokenId, audience, workspaceId, env: this.env });
    return { credential, token };
  }

  async rotate(db: Queryable, workspaceId: string, id: string): Promise<IssuedCredential> {
    const existing = await repo.findCredential(db, workspaceId, id);
    if (!existing) throw notFound('credential');
    if (existing.status !== 'active') throw new ApiError('not_found', 'That credential is revoked and cannot be rotated.');
    const tokenId = uuidv7();
    const credential = await repo.rotateCredential(db, workspaceId, id, tokenId, new Date());
    if (!credential) throw notFound('credential');
    const token = await this.tokens.issue({
      credentialId: id,
      tokenId,
      audience: credential.audience,
      workspaceId,
      env: credential.environment,
    });
    return { credential, token };
  }

  async revoke(db: Queryable, workspaceId: string, id: string): Promise<repo.CredentialRow> {
    const credential = await repo.revokeCredential(db, workspaceId, id, new Date());
    if (!credential) throw notFound('credential');
    return credential;
  }
}
