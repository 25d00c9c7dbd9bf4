// Workspaces: creating one with its first credential, atomically; reading them; changing their settings.
import type { PaymentsEnv } from '../../config.js';
import type { Queryable } from '../../db/pool.js';
import { notFound } from '../../platform/errors.js';
import { uuidv7, uuidv7Time } from '../../platform/ids.js';
import type { Audience } from '../../platform/tokens.js';
import * as repo from './workspaces.repository.js';
import type { LatePaymentPolicy, WorkspaceRow } from './workspaces.repository.js';

/**
 * What issues a new workspace's first credential, in the same transaction: the credentials module's CredentialsService
 * (its caller hands it in, so workspaces/ imports nothing from credentials/, which depends on workspaces/).
 */
export interface FirstCredentialIssuer<Issued> {
  create(tx: Queryable, workspaceId: string, audience: Audience, name: string): Promise<Issued>;
}

export async function createWorkspace<Issued>(
  tx: Queryable,
  credentials: FirstCredentialIssuer<Issued>,
  w: {
    name: string;
    displayName: string;
    environment: PaymentsEnv;
    kind: WorkspaceRow['kind'];
    firstAudience: Audience;
    latePayment?: LatePaymentPolicy | undefined;
  },
): Promise<{ workspace: WorkspaceRow; issued: Issued }> {
  const id = uuidv7();
  const workspace = await repo.insertWorkspace(tx, {
    id,
    name: w.name,
    display_name: w.displayName,
    environment: w.environment,
    kind: w.kind,
    late_payment: w.latePayment ?? 'refund',
    created_at: uuidv7Time(id),
  });
  const issued = await credentials.create(tx, id, w.firstAudience, `${w.firstAudience} (first)`);
  return { workspace, issued };
}

/** The workspace `workspaceId`; 404 `not_found` when there is none. */
export async function getWorkspace(db: Queryable, workspaceId: string): Promise<WorkspaceRow> {
  const workspace = await repo.findWorkspace(db, workspaceId);
  if (!workspace) throw notFound('workspace');
  return workspace;
}

/** Sets what a payment confirmed after its collection expired becomes from now on; 404 when there is no workspace. */
export async function setLatePayment(
  db: Queryable,
  workspaceId: string,
  policy: LatePaymentPolicy,
): Promise<WorkspaceRow> {
  const workspace = await repo.updateLatePayment(db, workspaceId, policy);
  if (!workspace) throw notFound('workspace');
  return workspace;
}

/** Admin only: every integrator workspace, newest first (at most 1000). */
export async function listIntegratorWorkspaces(db: Queryable): Promise<WorkspaceRow[]> {
  return repo.listAllWorkspaces(db);
}
