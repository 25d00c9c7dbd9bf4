// First start on an empty database: the admin credential and a 'demo' sandbox workspace, written to credentials.json.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './config.js';
import { withTransaction, type Db } from './db/pool.js';
import type { CredentialsService } from './modules/credentials/credentials.service.js';
import { countWorkspaces } from './modules/workspaces/workspaces.repository.js';
import { createWorkspace } from './modules/workspaces/workspaces.service.js';

const BOOTSTRAP_LOCK = 7_201_002;

export interface BootstrapResult {
  file: string;
  adminToken: string;
  demoWorkspaceId: string;
  demoToken: string;
}

/** Returns what it created, or undefined when the database already had workspaces. */
export async function bootstrap(
  db: Db,
  config: Config,
  credentials: CredentialsService,
): Promise<BootstrapResult | undefined> {
  const file = path.join(config.dataDir, 'credentials.json');
  // The file is written before the transaction commits: if it cannot be written, nothing is created and
  // the next start tries again, rather than leaving credentials whose tokens nobody ever saw.
  const created = await withTransaction(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK]);
    if ((await countWorkspaces(tx)) > 0) return undefined;
    const operator = await createWorkspace(tx, credentials, {
      name: 'operator',
      displayName: 'Operator',
      environment: config.paymentsEnv,
      kind: 'operator',
      firstAudience: 'admin',
    });
    const demo = await createWorkspace(tx, credentials, {
      name: 'demo',
      displayName: 'Demo Shop',
      environment: config.paymentsEnv,
      kind: 'integrator',
      firstAudience: 'integrator',
    });
    const content = {
      note: 'Bootstrap credentials, written once on first start. Keep this file secret; rotate these tokens before real use.',
      base_url: config.publicBaseUrl,
      environment: config.paymentsEnv,
      // The dashboard's members sign in with an email and a password; the tokens below are the break-glass path.
      first_member:
        'Create the first dashboard member, then sign in at /dashboard with its email and password: ' +
        `npm run admin -- create-member --email you@example.com --workspace ${demo.workspace.id} ` +
        '(or --operator for the operator workspace); it prints a password made for the member once.',
      admin: { credential_id: operator.issued.credential.id, audience: 'admin', token: operator.issued.token },
      workspaces: [
        {
          id: demo.workspace.id,
          name: 'demo',
          integrator: { credential_id: demo.issued.credential.id, audience: 'integrator', token: demo.issued.token },
        },
      ],
    };
    await mkdir(config.dataDir, { recursive: true });
    await writeFile(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
    await chmod(file, 0o600);
    return { operator, demo };
  });
  if (!created) return undefined;
  return {
    file,
    adminToken: created.operator.issued.token,
    demoWorkspaceId: created.demo.workspace.id,
    demoToken: created.demo.issued.token,
  };
}
