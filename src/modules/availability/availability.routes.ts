// Routes of rail availability: GET /v1/availability for every token, and the admin's planned maintenance. No SQL here.
import { Type } from 'typebox';
import type { App } from '../../platform/http.js';
import { ADMIN, ANY } from '../../platform/access.js';
import { BEARER_PROBLEMS, BODY_PROBLEMS, problemResponses } from '../../platform/schemas.js';
import {
  AvailabilityListSchema,
  MaintenanceParams,
  MaintenanceSchema,
  SetMaintenanceBody,
} from './availability.schemas.js';
import type { AvailabilityService } from './availability.service.js';

export function availabilityRoutes(app: App, service: AvailabilityService): void {
  app.get(
    '/v1/availability',
    {
      config: { auth: ANY, permission: 'read' },
      schema: {
        operationId: 'getAvailability',
        tags: ['Markets'],
        summary: 'Rail availability',
        description: 'See docs/guides/availability.md.',
        response: { 200: AvailabilityListSchema, ...problemResponses({ ...BEARER_PROBLEMS }) },
      },
    },
    async () => service.list(),
  );

  app.put(
    '/v1/admin/maintenance/:market/:rail',
    {
      config: {
        auth: ADMIN,
        permission: 'operator',
        audit: { action: 'rail_maintenance.set', objectType: 'rail_maintenance', objectId: 'params.rail' },
      },
      schema: {
        operationId: 'setRailMaintenance',
        tags: ['Markets'],
        summary: 'Set rail maintenance',
        description: 'Every direction is down meanwhile.',
        params: MaintenanceParams,
        body: SetMaintenanceBody,
        response: {
          200: MaintenanceSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, 400: [...BODY_PROBLEMS], 404: ['not_found'] }),
        },
      },
    },
    async (request) => service.setMaintenance(request.params.market, request.params.rail, request.body),
  );

  app.delete(
    '/v1/admin/maintenance/:market/:rail',
    {
      config: {
        auth: ADMIN,
        permission: 'operator',
        audit: { action: 'rail_maintenance.clear', objectType: 'rail_maintenance', objectId: 'params.rail' },
      },
      schema: {
        operationId: 'clearRailMaintenance',
        tags: ['Markets'],
        summary: 'Clear rail maintenance',
        description: 'Judged at once.',
        params: MaintenanceParams,
        response: {
          204: Type.Null({ description: 'Cleared.' }),
          ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request, reply) => {
      await service.clearMaintenance(request.params.market, request.params.rail);
      return reply.code(204).send(null);
    },
  );
}
