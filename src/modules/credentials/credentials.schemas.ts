// Schemas for credentials and the admin workspace API.
import { Type } from 'typebox';
import { AUDIENCES } from '../../platform/tokens.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import type { CredentialRow } from './credentials.repository.js';
import type { WorkspaceRow } from '../workspaces/workspaces.repository.js';

export const AudienceSchema = Type.Enum(AUDIENCES, {
  description: 'Who the token speaks for: `integrator`, `admin` or `liquidity_provider`.',
});

const credentialFields = {
  id: Uuid("Identifier of the credential (the token's `sub`)."),
  workspace_id: Uuid("Workspace the credential belongs to (the token's `wsp`)."),
  audience: AudienceSchema,
  environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')], {
    description: 'Environment the token works in (its `env`).',
  }),
  name: Type.String({ description: 'A label for people, e.g. "checkout server".' }),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked')], {
    description: 'active, or revoked (no token of it works).',
  }),
  created_at: DateTime('When the credential was created.'),
  rotated_at: Type.Union([DateTime('When its token was last replaced.'), Type.Null()], {
    description: 'When its token was last replaced; null if never.',
  }),
  revoked_at: Type.Union([DateTime('When it was revoked.'), Type.Null()], {
    description: 'When it was revoked; null while active.',
  }),
};

export const CredentialSchema = component(
  'Credential',
  Type.Object(credentialFields, {
    additionalProperties: false,
    description: 'An API credential. Its token is shown only when created or rotated.',
  }),
);

export const IssuedCredentialSchema = component(
  'IssuedCredential',
  Type.Object(
    {
      ...credentialFields,
      token: Type.String({
        description: 'The bearer token. Shown once: store it in a secrets manager, never in source control.',
      }),
    },
    { additionalProperties: false, description: 'A credential with its new token.' },
  ),
);

export const CreateCredentialBody = component(
  'CreateCredentialRequest',
  Type.Object(
    {
      audience: Type.Optional(AudienceSchema),
      name: Type.Optional(
        Type.String({ minLength: 1, maxLength: 100, description: 'A label for people (default: the audience).' }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const AdminCreateCredentialBody = component(
  'AdminCreateCredentialRequest',
  Type.Object(
    {
      audience: AudienceSchema,
      name: Type.Optional(
        Type.String({ minLength: 1, maxLength: 100, description: 'A label for people (default: the audience).' }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const WorkspaceSchema = component(
  'Workspace',
  Type.Object(
    {
      id: Uuid('Identifier of the workspace; collections show it as `integrator_id`.'),
      name: Type.String({ description: 'Short name.' }),
      display_name: Type.String({ description: 'Name shown to payers (hosted checkout).' }),
      environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')], {
        description: 'The deployment environment it lives in.',
      }),
      created_at: DateTime('When the workspace was created.'),
    },
    { additionalProperties: false, description: "A workspace: one integrator's isolated space." },
  ),
);

export const CreateWorkspaceBody = component(
  'CreateWorkspaceRequest',
  Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 100, description: 'Short name of the workspace.' }),
      display_name: Type.Optional(
        Type.String({ minLength: 1, maxLength: 100, description: 'Name shown to payers (default: name).' }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const CreatedWorkspaceSchema = component(
  'CreatedWorkspace',
  Type.Object(
    {
      workspace: WorkspaceSchema,
      credential: IssuedCredentialSchema,
    },
    { additionalProperties: false, description: 'The new workspace and its first integrator credential.' },
  ),
);

export const IdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Identifier.' }) });

export function credentialToApi(row: CredentialRow) {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    audience: row.audience,
    environment: row.environment,
    name: row.name,
    status: row.status,
    created_at: row.created_at.toISOString(),
    rotated_at: row.rotated_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

export function workspaceToApi(row: WorkspaceRow) {
  return {
    id: row.id,
    name: row.name,
    display_name: row.display_name,
    environment: row.environment,
    created_at: row.created_at.toISOString(),
  };
}
