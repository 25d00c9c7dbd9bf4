// SQL for credentials. The workspace id is always the first argument.
import type { Queryable } from '../../db/pool.js';
import type { PaymentsEnv } from '../../config.js';
import type { EnabledRail } from '../../platform/enabled-rails.js';
import type { Audience } from '../../platform/tokens.js';

export interface CredentialRow {
  id: string;
  workspace_id: string;
  audience: Audience;
  environment: PaymentsEnv;
  name: string;
  status: 'active' | 'revoked';
  token_id: string;
  created_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
  /** The role of the dashboard member whose access this credential is; null for an API key. */
  member_role: string | null;
}

const COLUMNS = `id, workspace_id, audience, environment, name, status, token_id, created_at, rotated_at, revoked_at,
  (SELECT m.role FROM members m WHERE m.workspace_id = credentials.workspace_id AND m.credential_id = credentials.id)
    AS member_role`;

export async function insertCredential(
  db: Queryable,
  workspaceId: string,
  c: { id: string; audience: Audience; environment: PaymentsEnv; name: string; tokenId: string; createdAt: Date },
): Promise<CredentialRow> {
  const { rows } = await db.query<CredentialRow>(
    `INSERT INTO credentials (id, workspace_id, audience, environment, name, status, token_id, created_at)
     VALUES ($1, $2, $3, $4, $5, 'active', $6, $7) RETURNING ${COLUMNS}`,
    [c.id, workspaceId, c.audience, c.environment, c.name, c.tokenId, c.createdAt],
  );
  return rows[0] as CredentialRow;
}

export async function findCredential(
  db: Queryable,
  workspaceId: string,
  id: string,
): Promise<CredentialRow | undefined> {
  const { rows } = await db.query<CredentialRow>(
    `SELECT ${COLUMNS} FROM credentials WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return rows[0];
}

/** What the token check reads: the credential's audience and environment, its member's role, the workspace's rails. */
export type LiveToken = Pick<CredentialRow, 'audience' | 'environment'> & {
  member_role: string | null;
  /** The workspace's active configuration (workspace_configurations.rails); null: the whole catalogue. */
  enabled_rails: EnabledRail[] | null;
};

/**
 * The one lookup every authenticated request makes: if this exact token is still the credential's live one, the
 * credential's audience and environment (which the caller compares with the token's claims), the role of the dashboard
 * member it belongs to (null for an API key) and the workspace's enabled rails: one query, so a member's role and the
 * workspace's configuration are read on every request at no extra round trip, and a change is seen by every node at
 * once.
 */
export async function findLiveToken(
  db: Queryable,
  workspaceId: string,
  credentialId: string,
  tokenId: string,
): Promise<LiveToken | undefined> {
  const { rows } = await db.query<LiveToken>(
    `SELECT audience, environment,
            (SELECT m.role FROM members m WHERE m.workspace_id = credentials.workspace_id
               AND m.credential_id = credentials.id) AS member_role,
            (SELECT c.rails FROM workspace_configurations c
              WHERE c.workspace_id = credentials.workspace_id) AS enabled_rails
     FROM credentials
     WHERE workspace_id = $1 AND id = $2 AND token_id = $3 AND status = 'active'`,
    [workspaceId, credentialId, tokenId],
  );
  return rows[0];
}

export async function listCredentials(db: Queryable, workspaceId: string): Promise<CredentialRow[]> {
  const { rows } = await db.query<CredentialRow>(
    `SELECT ${COLUMNS} FROM credentials WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC`,
    [workspaceId],
  );
  return rows;
}

export async function rotateCredential(
  db: Queryable,
  workspaceId: string,
  id: string,
  tokenId: string,
  now: Date,
): Promise<CredentialRow | undefined> {
  const { rows } = await db.query<CredentialRow>(
    `UPDATE credentials SET token_id = $3, rotated_at = $4
     WHERE workspace_id = $1 AND id = $2 AND status = 'active' RETURNING ${COLUMNS}`,
    [workspaceId, id, tokenId, now],
  );
  return rows[0];
}

export async function revokeCredential(
  db: Queryable,
  workspaceId: string,
  id: string,
  now: Date,
): Promise<CredentialRow | undefined> {
  const { rows } = await db.query<CredentialRow>(
    `UPDATE credentials SET status = 'revoked', revoked_at = COALESCE(revoked_at, $3)
     WHERE workspace_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [workspaceId, id, now],
  );
  return rows[0];
}
