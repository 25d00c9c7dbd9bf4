// `npm run admin -- create-credential`: mints a credential from the machine that holds the database, for when no
// admin token is left (revoking the last admin credential would otherwise lock everyone out of the admin API for
// good). It connects as `npm start` does (DATABASE_URL, or the embedded database in DATA_DIR) and creates the
// credential through CredentialsService, so the token is signed with the service's key kept in that database and
// the credential is made exactly as the API makes one.
import { parseArgs } from 'node:util';
import { loadConfig, type PaymentsEnv } from '../config.js';
import { openDatabase } from '../db/open.js';
import { withTransaction, type Db } from '../db/pool.js';
import { CredentialsService } from '../modules/credentials/credentials.service.js';
import { findOperatorWorkspaceId, findWorkspace } from '../modules/workspaces/workspaces.repository.js';
import { isUuid } from '../platform/ids.js';
import type { SecretBox } from '../platform/secret-box.js';
import { loadSecretsKey } from '../platform/secrets-key.js';
import { loadServiceKeys } from '../platform/secrets.js';
import { TokenService } from '../platform/tokens.js';

const USAGE = `Usage:
  npm run admin -- create-credential --audience admin [--name NAME]
  npm run admin -- create-credential --audience integrator --workspace WORKSPACE_ID [--name NAME]

Creates a credential and prints its token once on stdout. An admin credential goes to the operator workspace.
Uses DATABASE_URL, or the embedded database in DATA_DIR (default ./data), and PAYMENTS_ENV, as npm start does.
`;

type Request =
  { audience: 'admin'; name: string } | { audience: 'integrator'; workspaceId: string; name: string } | { help: true };

/** The request the arguments make, or a message saying what is wrong with them. */
function parseRequest(argv: string[]): Request | string {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        audience: { type: 'string' },
        workspace: { type: 'string' },
        name: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    return (err as Error).message;
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true };
  const [command, ...extra] = positionals;
  if (command !== 'create-credential') return command ? `unknown command '${command}'` : 'a command is needed';
  if (extra.length > 0) return `unexpected argument '${extra.join(' ')}'`;
  // The limits of the API's `name` (CreateCredentialRequest).
  if (values.name !== undefined && (values.name.length < 1 || values.name.length > 100))
    return '--name must be 1 to 100 characters';
  const { audience, workspace } = values;
  if (audience !== 'admin' && audience !== 'integrator')
    return audience === undefined
      ? '--audience is needed'
      : `--audience must be admin or integrator, got '${audience}'`;
  // By default named for where it came from, so the credential list tells it apart.
  const name = values.name ?? `${audience} (npm run admin)`;
  if (audience === 'admin') {
    if (workspace !== undefined)
      return 'an admin credential always goes to the operator workspace: leave out --workspace';
    return { audience, name };
  }
  if (workspace === undefined) return 'an integrator credential needs --workspace WORKSPACE_ID';
  if (!isUuid(workspace)) return `--workspace must be a workspace id (a UUID), got '${workspace}'`;
  return { audience, workspaceId: workspace, name };
}

/** Creates the credential and prints its token; answers the exit code. */
async function createCredential(
  db: Db,
  box: SecretBox,
  env: PaymentsEnv,
  request: Exclude<Request, { help: true }>,
): Promise<number> {
  let workspaceId: string | undefined;
  if (request.audience === 'admin') {
    workspaceId = await findOperatorWorkspaceId(db);
    if (workspaceId === undefined) {
      process.stderr.write('admin: this database has no operator workspace yet: start the service once (npm start)\n');
      return 1;
    }
  } else {
    workspaceId = (await findWorkspace(db, request.workspaceId))?.id;
    if (workspaceId === undefined) {
      process.stderr.write(`admin: there is no workspace ${request.workspaceId} in this database\n`);
      return 2;
    }
  }
  const credentials = new CredentialsService(new TokenService(await loadServiceKeys(db, box), env), env);
  const target = workspaceId;
  // In a transaction, so a failure before the token is printed leaves no credential behind.
  const issued = await withTransaction(db, (tx) => credentials.create(tx, target, request.audience, request.name));
  process.stdout.write(`${issued.token}\n`);
  process.stderr.write(
    `admin: created ${request.audience} credential ${issued.credential.id} ('${request.name}') in workspace ` +
      `${target} (${env}); the token above is shown only this once\n`,
  );
  return 0;
}

const request = parseRequest(process.argv.slice(2));
if (typeof request === 'string') {
  process.stderr.write(`admin: ${request}\n\n${USAGE}`);
  process.exitCode = 2;
} else if ('help' in request) {
  process.stdout.write(USAGE);
} else {
  try {
    const config = loadConfig();
    // The signing key is sealed under the secrets key: the same SECRETS_KEY, or DATA_DIR/secrets.key, as the service's.
    const box = loadSecretsKey(config).box;
    const database = await openDatabase(config, () => undefined);
    try {
      process.exitCode = await createCredential(database.pool, box, config.paymentsEnv, request);
    } finally {
      await database.close();
    }
  } catch (err) {
    process.stderr.write(`admin: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
