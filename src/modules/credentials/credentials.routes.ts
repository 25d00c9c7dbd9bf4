// Routes for a workspace's own credentials (any credential holder lists, creates, rotates and revokes its own
// workspace's) and the admin workspace API (the admin creates workspaces and their credentials).
import { Type } from 'typebox';
import type { PaymentsEnv } from '../../config.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db, Tx } from '../../db/pool.js';
import { requireAuth } from '../../platform/auth.js';
import { notFound } from '../../platform/errors.js';
import { sendStored, type App } from '../../platform/http.js';
import { idempotencyOf, type IdempotencyEngine, type StoredResponse } from '../../platform/idempotency.js';
import { isUuid } from '../../platform/ids.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  IDEMPOTENCY_PROBLEMS,
  OptionalIdempotencyKey,
  problemResponses,
} from '../../platform/schemas.js';
import {
  createWorkspace,
  getWorkspace,
  listIntegratorWorkspaces,
  setLatePayment,
} from '../workspaces/workspaces.service.js';
import {
  AdminCreateCredentialBody,
  CreateCredentialBody,
  CreatedWorkspaceSchema,
  CreateWorkspaceBody,
  CredentialSchema,
  IdParams,
  IssuedCredentialSchema,
  UpdateWorkspaceBody,
  WorkspaceSchema,
  credentialToApi,
  issuedCredentialToApi,
  workspaceToApi,
} from './credentials.schemas.js';
import type { CredentialsService, IssuedCredential } from './credentials.service.js';
import { ADMIN, ANY, INTEGRATOR } from '../../platform/access.js';

/** A credential with its token, as answered (and, under an Idempotency-Key, stored) once. */
function issuedResponse(status: number, issued: IssuedCredential): StoredResponse {
  return { status, headers: {}, body: JSON.stringify(issuedCredentialToApi(issued)) };
}

/** These answers hold a new token: the copy kept for replays is stored sealed. */
const SECRET_ANSWER = { secret: true };

export function credentialsRoutes(
  app: App,
  deps: { db: Db; credentials: CredentialsService; idempotency: IdempotencyEngine; env: PaymentsEnv },
): void {
  const { db, credentials, idempotency, env } = deps;

  /**
   * Answers `issue` once per Idempotency-Key. Its answer holds a new token: only the credential that asked can
   * replay it, and the copy kept for replays is sealed.
   */
  async function issueOnce(
    request: FastifyRequest,
    reply: FastifyReply,
    issue: (tx: Tx) => Promise<StoredResponse>,
  ): Promise<FastifyReply> {
    const auth = requireAuth(request);
    const { key, fingerprint } = idempotencyOf(request, false, auth.credentialId);
    return sendStored(reply, await idempotency.maybe(auth.workspaceId, key, fingerprint, issue, SECRET_ANSWER));
  }

  app.get(
    '/v1/workspace',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'getWorkspace',
        tags: ['Workspace'],
        summary: "The caller's workspace",
        response: { 200: WorkspaceSchema, ...problemResponses(BEARER_PROBLEMS) },
      },
    },
    async (request) => workspaceToApi(await getWorkspace(db, requireAuth(request).workspaceId)),
  );

  app.patch(
    '/v1/workspace',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'workspace',
        audit: { action: 'workspace.update', objectType: 'workspace' },
      },
      schema: {
        operationId: 'updateWorkspace',
        tags: ['Workspace'],
        summary: "Change the caller's workspace settings",
        description:
          'Sets `late_payment`: what a payment confirmed after its collection expired becomes from now on. ' +
          'Another value: 400 `validation_failed`.',
        body: UpdateWorkspaceBody,
        response: { 200: WorkspaceSchema, ...problemResponses({ ...BEARER_PROBLEMS, 400: [...BODY_PROBLEMS] }) },
      },
    },
    async (request) =>
      workspaceToApi(await setLatePayment(db, requireAuth(request).workspaceId, request.body.late_payment)),
  );

  app.get(
    '/v1/credentials',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'listCredentials',
        tags: ['Credentials'],
        summary: "List the workspace's credentials",
        description: "Every credential of the caller's workspace, newest first. Tokens are never shown here.",
        response: {
          200: Type.Object(
            { data: Type.Array(CredentialSchema, { description: 'Credentials, newest first.' }) },
            { additionalProperties: false, description: "The workspace's credentials." },
          ),
          ...problemResponses(BEARER_PROBLEMS),
        },
      },
    },
    async (request) => ({ data: (await credentials.list(db, requireAuth(request).workspaceId)).map(credentialToApi) }),
  );

  app.post(
    '/v1/credentials',
    {
      config: { auth: ANY, permission: 'keys', audit: { action: 'credential.create', objectType: 'credential' } },
      schema: {
        operationId: 'createCredential',
        tags: ['Credentials'],
        summary: 'Create a credential in the workspace',
        description:
          "Mints a new token for the caller's workspace. Only an admin may mint another audience than its own.",
        headers: OptionalIdempotencyKey,
        body: CreateCredentialBody,
        response: {
          201: IssuedCredentialSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, ...IDEMPOTENCY_PROBLEMS, 400: [...BODY_PROBLEMS] }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const audience = request.body.audience ?? auth.audience;
      credentials.assertMayManage(auth.audience, audience, 'create');
      return issueOnce(request, reply, async (tx) => {
        const issued = await credentials.create(tx, auth.workspaceId, audience, request.body.name ?? audience);
        return issuedResponse(201, issued);
      });
    },
  );

  app.post(
    '/v1/credentials/:id/rotate',
    {
      config: {
        auth: ANY,
        permission: 'keys',
        audit: { action: 'credential.rotate', objectType: 'credential', objectId: 'params.id' },
      },
      schema: {
        operationId: 'rotateCredential',
        tags: ['Credentials'],
        summary: 'Rotate a credential',
        description:
          'Returns a new token for the credential. The previous token stops working before this call returns. Only an admin may rotate a credential of another audience (403).',
        params: IdParams,
        headers: OptionalIdempotencyKey,
        response: {
          200: IssuedCredentialSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, ...IDEMPOTENCY_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const id = request.params.id;
      if (!isUuid(id)) throw notFound('credential');
      await credentials.assertMayRotate(db, auth.workspaceId, auth.audience, id);
      await credentials.assertMayTouchMemberCredential(db, auth.workspaceId, auth.permissions, id);
      return issueOnce(request, reply, async (tx) => {
        const issued = await credentials.rotate(tx, auth.workspaceId, auth.audience, id);
        return issuedResponse(200, issued);
      });
    },
  );

  app.delete(
    '/v1/credentials/:id',
    {
      config: {
        auth: ANY,
        permission: 'keys',
        audit: { action: 'credential.revoke', objectType: 'credential', objectId: 'params.id' },
      },
      schema: {
        operationId: 'revokeCredential',
        tags: ['Credentials'],
        summary: 'Revoke a credential',
        description:
          'Its token stops working before this call returns. Revoking a revoked credential answers the same record. Only an admin may revoke a credential of another audience (403).',
        params: IdParams,
        response: { 200: CredentialSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      if (!isUuid(request.params.id)) throw notFound('credential');
      await credentials.assertMayTouchMemberCredential(db, auth.workspaceId, auth.permissions, request.params.id);
      return credentialToApi(await credentials.revoke(db, auth.workspaceId, auth.audience, request.params.id));
    },
  );

  app.get(
    '/v1/admin/workspaces',
    {
      config: { auth: ADMIN },
      schema: {
        operationId: 'adminListWorkspaces',
        tags: ['Admin'],
        summary: 'List integrator workspaces',
        response: {
          200: Type.Object(
            { data: Type.Array(WorkspaceSchema, { description: 'Workspaces, newest first (at most 1000).' }) },
            { additionalProperties: false, description: 'The integrator workspaces.' },
          ),
          ...problemResponses({ ...BEARER_PROBLEMS }),
        },
      },
    },
    async () => ({ data: (await listIntegratorWorkspaces(db)).map(workspaceToApi) }),
  );

  app.post(
    '/v1/admin/workspaces',
    {
      config: {
        auth: ADMIN,
        permission: 'operator',
        audit: {
          action: 'workspace.create',
          objectType: 'workspace',
          objectId: 'answer.workspace.id',
          workspaceId: 'answer.workspace.id',
        },
      },
      schema: {
        operationId: 'adminCreateWorkspace',
        tags: ['Admin'],
        summary: 'Create a workspace',
        description: 'Creates an integrator workspace in this environment with a first integrator credential.',
        headers: OptionalIdempotencyKey,
        body: CreateWorkspaceBody,
        response: {
          201: CreatedWorkspaceSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, ...IDEMPOTENCY_PROBLEMS, 400: [...BODY_PROBLEMS] }),
        },
      },
    },
    async (request, reply) =>
      issueOnce(request, reply, async (tx) => {
        const { workspace, issued } = await createWorkspace(tx, credentials, {
          name: request.body.name,
          displayName: request.body.display_name ?? request.body.name,
          environment: env,
          kind: 'integrator',
          firstAudience: 'integrator',
          latePayment: request.body.late_payment,
        });
        const body = { workspace: workspaceToApi(workspace), credential: issuedCredentialToApi(issued) };
        return { status: 201, headers: {}, body: JSON.stringify(body) };
      }),
  );

  app.post(
    '/v1/admin/workspaces/:id/credentials',
    {
      config: {
        auth: ADMIN,
        permission: 'operator',
        audit: { action: 'credential.create', objectType: 'credential', workspaceId: 'params.id' },
      },
      schema: {
        operationId: 'adminCreateCredential',
        tags: ['Admin'],
        summary: 'Create a credential in any workspace',
        params: IdParams,
        headers: OptionalIdempotencyKey,
        body: AdminCreateCredentialBody,
        response: {
          201: IssuedCredentialSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            ...IDEMPOTENCY_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
          }),
        },
      },
    },
    async (request, reply) => {
      if (!isUuid(request.params.id)) throw notFound('workspace');
      const target = await getWorkspace(db, request.params.id);
      return issueOnce(request, reply, async (tx) => {
        const issued = await credentials.create(
          tx,
          target.id,
          request.body.audience,
          request.body.name ?? request.body.audience,
        );
        return issuedResponse(201, issued);
      });
    },
  );
}
