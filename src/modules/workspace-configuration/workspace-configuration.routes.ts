// Routes of a workspace's active configuration: the admin sets (or clears) and reads any workspace's; a workspace reads
// its own. No SQL here.
import { ADMIN, ANY } from '../../platform/access.js';
import { requireAuth } from '../../platform/auth.js';
import { sendStored, type App } from '../../platform/http.js';
import { idempotencyOf } from '../../platform/idempotency.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  IDEMPOTENCY_PROBLEMS,
  OptionalIdempotencyKey,
  problemResponses,
} from '../../platform/schemas.js';
import { ConfigurationSchema, SetConfigurationBody, WorkspaceIdParams } from './workspace-configuration.schemas.js';
import type { WorkspaceConfigurationService } from './workspace-configuration.service.js';

const PATH = '/v1/admin/workspaces/:id/configuration';
const AUDIT = { objectType: 'workspace', objectId: 'params.id', workspaceId: 'params.id' } as const;

export function workspaceConfigurationRoutes(app: App, service: WorkspaceConfigurationService): void {
  app.get(
    '/v1/workspace/configuration',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'getWorkspaceConfiguration',
        tags: ['Workspace'],
        summary: 'What the workspace may use',
        description:
          'Its markets and rails with limits, exponents, capabilities and how the payer authorises: the catalogue, as an ' +
          'admin narrowed it. Any other rail is refused as invalid.',
        response: { 200: ConfigurationSchema, ...problemResponses(BEARER_PROBLEMS) },
      },
    },
    async (request) => service.get(requireAuth(request).workspaceId, false),
  );

  app.get(
    PATH,
    {
      config: { auth: ADMIN },
      schema: {
        operationId: 'adminGetWorkspaceConfiguration',
        tags: ['Admin'],
        summary: "A workspace's active configuration",
        params: WorkspaceIdParams,
        response: { 200: ConfigurationSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.get(request.params.id, true),
  );

  app.put(
    PATH,
    {
      config: {
        auth: ADMIN,
        permission: 'operator',
        audit: { action: 'workspace.configuration.set', ...AUDIT },
      },
      schema: {
        operationId: 'adminSetWorkspaceConfiguration',
        tags: ['Admin'],
        summary: "Set a workspace's markets, rails and limits",
        description:
          'Replaces the rails the workspace may use, with optional limits. It only narrows the catalogue: a rail it lacks ' +
          'is 400 `invalid_market`/`invalid_rail`, a limit beyond it 400 `catalogue_widened`. `rails: null`: the whole catalogue.',
        params: WorkspaceIdParams,
        headers: OptionalIdempotencyKey,
        body: SetConfigurationBody,
        response: {
          200: ConfigurationSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            ...IDEMPOTENCY_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_market', 'invalid_rail', 'catalogue_widened'],
            404: ['not_found'],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(reply, await service.set(auth.workspaceId, request.params.id, request.body, key, fingerprint));
    },
  );
}
