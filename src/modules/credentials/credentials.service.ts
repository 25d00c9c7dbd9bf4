// Credential rules: who may mint which audience, rotation that kills the old token at once, revocation.
import type { PaymentsEnv } from '../../config.js';
import type { Queryable } from '../../db/pool.js';
import type { Permission } from '../../platform/access.js';
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

  /**
   * Only an admin may act on another audience; anyone else creates, rotates and revokes credentials of its
   * own audience. Rotation hands out a token, so without this a weaker token could rotate its way to a stronger one.
   */
  assertMayManage(callerAudience: Audience, target: Audience, action: 'create' | 'rotate' | 'revoke'): void {
    if (callerAudience !== 'admin' && callerAudience !== target) {
      throw new ApiError('forbidden', `A ${callerAudience} credential cannot ${action} a ${target} credential.`);
    }
  }

  /** Every credential of the workspace, newest first. */
  async list(db: Queryable, workspaceId: string): Promise<repo.CredentialRow[]> {
    return repo.listCredentials(db, workspaceId);
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

  /** The workspace's credential `id`, once the caller is known to be allowed `action` on it. */
  private async manageable(
    db: Queryable,
    workspaceId: string,
    callerAudience: Audience,
    id: string,
    action: 'rotate' | 'revoke',
  ): Promise<repo.CredentialRow> {
    const existing = await repo.findCredential(db, workspaceId, id);
    if (!existing) throw notFound('credential');
    this.assertMayManage(callerAudience, existing.audience, action);
    return existing;
  }

  /** Checked before the idempotency engine too, so a replay never hands a token to a caller who may not rotate. */
  async assertMayRotate(db: Queryable, workspaceId: string, callerAudience: Audience, id: string): Promise<void> {
    await this.manageable(db, workspaceId, callerAudience, id, 'rotate');
  }

  async rotate(db: Queryable, workspaceId: string, callerAudience: Audience, id: string): Promise<IssuedCredential> {
    const existing = await this.manageable(db, workspaceId, callerAudience, id, 'rotate');
    if (existing.status !== 'active')
      throw new ApiError('not_found', 'That credential is revoked and cannot be rotated.');
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

  /**
   * A dashboard member's credential is the member's access: a member may rotate or revoke it through the keys API only
   * with `members` (and `ownership` for an owner's), or a developer could lock an owner out. An API key (no
   * `permissions`) may, as before.
   */
  async assertMayTouchMemberCredential(
    db: Queryable,
    workspaceId: string,
    callerPermissions: readonly Permission[] | undefined,
    id: string,
  ): Promise<void> {
    if (callerPermissions === undefined) return;
    const role = (await repo.findCredential(db, workspaceId, id))?.member_role;
    if (role === undefined || role === null) return;
    const needed: Permission = role === 'owner' ? 'ownership' : 'members';
    if (!callerPermissions.includes(needed))
      throw new ApiError(
        'forbidden',
        `This credential is a dashboard member's; changing it needs \`${needed}\` (manage the member on the Members page).`,
      );
  }

  async revoke(db: Queryable, workspaceId: string, callerAudience: Audience, id: string): Promise<repo.CredentialRow> {
    await this.manageable(db, workspaceId, callerAudience, id, 'revoke');
    const credential = await repo.revokeCredential(db, workspaceId, id, new Date());
    if (!credential) throw notFound('credential');
    return credential;
  }
}
