// Schemas for credentials and the admin workspace API.
import { Type } from 'typebox';
import { AUDIENCES } from '../../platform/tokens.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import type { CredentialRow } from './credentials.repository.js';
import { LATE_PAYMENT_POLICIES, type WorkspaceRow } from '../workspaces/workspaces.repository.js';

export const AudienceSchema = component(
  'Audience',
  Type.Enum(AUDIENCES, { description: 'Who the token speaks for: `integrator`, `admin` or `liquidity_provider`.' }),
);

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
  member_role: Type.Union([Type.String(), Type.Null()], {
    description:
      "The role of the dashboard member whose access this is (rotating or revoking it needs `members`, or `ownership` for an owner's); null for an API key.",
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

const LatePayment = component(
  'LatePaymentPolicy',
  Type.Enum(LATE_PAYMENT_POLICIES, {
    description:
      'What a payment the provider confirms after its collection expired becomes (a `collection.late_payment` event tells you ' +
      'either way): `refund` (the default) sends it back to the payer at once, with a refund whose `reason` is `late_payment`; ' +
      '`accept` keeps it as a successful collection and credits it. A late payment of a checkout attempt the payer already ' +
      'retried, or of a session already paid, is always refunded.',
  }),
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
      late_payment: LatePayment,
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
      late_payment: Type.Optional(LatePayment),
    },
    { additionalProperties: false },
  ),
);

export const UpdateWorkspaceBody = component(
  'UpdateWorkspaceRequest',
  Type.Object({ late_payment: LatePayment }, { additionalProperties: false }),
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
    member_role: row.member_role,
  };
}

/** A credential with its new token (created or rotated): the only answers that show a token. */
export function issuedCredentialToApi(issued: { credential: CredentialRow; token: string }) {
  return { ...credentialToApi(issued.credential), token: issued.token };
}

export function workspaceToApi(row: WorkspaceRow) {
  return {
    id: row.id,
    name: row.name,
    display_name: row.display_name,
    environment: row.environment,
    late_payment: row.late_payment,
    created_at: row.created_at.toISOString(),
  };
}
