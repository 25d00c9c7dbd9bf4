// `npm run admin -- create-credential`: mints a credential from the machine that holds the database, for when no
// admin token is left (revoking the last admin credential would otherwise lock everyone out of the admin API for
// good). `npm run admin -- create-member`: makes a dashboard member (the first owner of a workspace, or of the
// operator workspace) through MembersService, exactly as the dashboard makes one. Both connect as `npm start` does
// (DATABASE_URL, or the embedded database in DATA_DIR) and sign with the service's key kept in that database.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig, type PaymentsEnv } from '../config.js';
import { openDatabase } from '../db/open.js';
import { withTransaction, type Db } from '../db/pool.js';
import { CredentialsService } from '../modules/credentials/credentials.service.js';
import { MembersService, ROLES, type Role } from '../modules/members/members.service.js';
import { findOperatorWorkspaceId, findWorkspace } from '../modules/workspaces/workspaces.repository.js';
import { isUuid } from '../platform/ids.js';
import type { SecretBox } from '../platform/secret-box.js';
import { loadSecretsKey } from '../platform/secrets-key.js';
import { loadServiceKeys } from '../platform/secrets.js';
import { TokenService } from '../platform/tokens.js';

const USAGE = `Usage:
  npm run admin -- create-credential --audience admin [--name NAME]
  npm run admin -- create-credential --audience integrator --workspace WORKSPACE_ID [--name NAME]
  npm run admin -- create-member --email EMAIL (--workspace WORKSPACE_ID | --operator) [--role ROLE] [--password-stdin]

create-credential creates a credential and prints its token once on stdout. An admin credential goes to the
operator workspace.
create-member creates a dashboard member (role owner unless --role says one of ${ROLES.join(', ')}) in the
workspace, or in the operator workspace with --operator. With --password-stdin the password is the first line of
stdin; otherwise a random one is made and printed once on stdout.
Uses DATABASE_URL, or the embedded database in DATA_DIR (default ./data), and PAYMENTS_ENV, as npm start does.
`;

interface MemberRequest {
  command: 'create-member';
  email: string;
  /** undefined: the operator workspace. */
  workspaceId: string | undefined;
  role: Role;
  passwordStdin: boolean;
}

type Request =
  | { audience: 'admin'; name: string }
  | { audience: 'integrator'; workspaceId: string; name: string }
  | MemberRequest
  | { help: true };

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
        email: { type: 'string' },
        role: { type: 'string' },
        operator: { type: 'boolean', default: false },
        'password-stdin': { type: 'boolean', default: false },
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
  if (command !== 'create-credential' && command !== 'create-member')
    return command ? `unknown command '${command}'` : 'a command is needed';
  if (extra.length > 0) return `unexpected argument '${extra.join(' ')}'`;
  if (command === 'create-member') return parseMemberRequest(values);
  for (const option of ['email', 'role', 'operator', 'password-stdin'] as const)
    if (values[option] !== undefined && values[option] !== false) return `--${option} is for create-member only`;
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

function parseMemberRequest(values: {
  email?: string;
  workspace?: string;
  role?: string;
  operator?: boolean;
  audience?: string;
  name?: string;
  'password-stdin'?: boolean;
}): MemberRequest | string {
  if (values.audience !== undefined || values.name !== undefined)
    return '--audience and --name are for create-credential';
  if (values.email === undefined) return 'create-member needs --email EMAIL';
  const role = values.role ?? 'owner';
  if (!(ROLES as readonly string[]).includes(role)) return `--role must be one of ${ROLES.join(', ')}, got '${role}'`;
  if (values.operator && values.workspace !== undefined) return 'give --workspace or --operator, not both';
  if (!values.operator && values.workspace === undefined)
    return 'create-member needs --workspace WORKSPACE_ID or --operator';
  if (values.workspace !== undefined && !isUuid(values.workspace))
    return `--workspace must be a workspace id (a UUID), got '${values.workspace}'`;
  return {
    command: 'create-member',
    email: values.email,
    workspaceId: values.workspace,
    role: role as Role,
    passwordStdin: values['password-stdin'] ?? false,
  };
}

/** The first line of stdin, without its line ending. */
async function firstLineOfStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += (chunk as Buffer).toString('utf8');
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/, 1)[0] ?? '';
}

/** Creates the member; prints the password when it made one; answers the exit code. */
async function createMember(db: Db, box: SecretBox, env: PaymentsEnv, request: MemberRequest): Promise<number> {
  const workspaceId =
    request.workspaceId === undefined
      ? await findOperatorWorkspaceId(db)
      : (await findWorkspace(db, request.workspaceId))?.id;
  if (workspaceId === undefined) {
    process.stderr.write(
      request.workspaceId === undefined
        ? 'admin: this database has no operator workspace yet: start the service once (npm start)\n'
        : `admin: there is no workspace ${request.workspaceId} in this database\n`,
    );
    return request.workspaceId === undefined ? 1 : 2;
  }
  const made = !request.passwordStdin;
  // 18 random bytes: 24 base64url characters, 144 bits.
  const password = made ? randomBytes(18).toString('base64url') : await firstLineOfStdin();
  const members = new MembersService(new TokenService(await loadServiceKeys(db, box), env), env);
  const result = await members.create(db, workspaceId, { email: request.email, password, role: request.role });
  if (!result.ok) {
    process.stderr.write(`admin: ${result.message}\n`);
    return 2;
  }
  if (made) process.stdout.write(`${password}\n`);
  process.stderr.write(
    `admin: created member ${result.member.id} <${result.member.email}> (${result.member.role}) in workspace ` +
      `${workspaceId} (${env}); sign in at /dashboard/sign-in` +
      (made ? '; the password above is shown only this once\n' : '\n'),
  );
  return 0;
}

/** Creates the credential and prints its token; answers the exit code. */
async function createCredential(
  db: Db,
  box: SecretBox,
  env: PaymentsEnv,
  request: Exclude<Request, { help: true } | MemberRequest>,
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
      process.exitCode =
        'command' in request
          ? await createMember(database.pool, box, config.paymentsEnv, request)
          : await createCredential(database.pool, box, config.paymentsEnv, request);
    } finally {
      await database.close();
    }
  } catch (err) {
    process.stderr.write(`admin: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
