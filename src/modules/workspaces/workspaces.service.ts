// Creating workspaces with their first credential, atomically.
import type { PaymentsEnv } from '../../config.js';
import type { Queryable } from '../../db/pool.js';
import { uuidv7, uuidv7Time } from '../../platform/ids.js';
import type { Audience } from '../../platform/tokens.js';
import { insertWorkspace, type LatePaymentPolicy, type WorkspaceRow } from './workspaces.repository.js';

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
  const workspace = await insertWorkspace(tx, {
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
