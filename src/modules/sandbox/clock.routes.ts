// The sandbox test clock's routes (GET /v1/sandbox/clock, POST /v1/sandbox/clock/advance); registered only when
// PAYMENTS_ENV=sandbox (404 in production). No SQL here.
import { requireAuth } from '../../platform/auth.js';
import { INTEGRATOR } from '../../platform/access.js';
import { sendStored, type App } from '../../platform/http.js';
import { idempotencyOf } from '../../platform/idempotency.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  IDEMPOTENCY_PROBLEMS,
  OptionalIdempotencyKey,
  problemResponses,
} from '../../platform/schemas.js';
import { AdvanceClockBody, SandboxClockSchema } from './clock.schemas.js';
import type { SandboxClockService } from './clock.service.js';

export function sandboxClockRoutes(app: App, service: SandboxClockService): void {
  app.get(
    '/v1/sandbox/clock',
    {
      config: { auth: INTEGRATOR, permission: 'read' },
      schema: {
        operationId: 'getSandboxClock',
        tags: ['Sandbox'],
        summary: "The sandbox workspace's clock",
        description:
          "Sandbox only (404 in production). How far the workspace's clock has been moved forward, and the workspace's " +
          'current time by it.',
        response: {
          200: SandboxClockSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request) => service.read(requireAuth(request).workspaceId),
  );

  app.post(
    '/v1/sandbox/clock/advance',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'sandbox',
        audit: { action: 'sandbox_clock.advance', objectType: 'workspace', objectId: 'answer.workspace_id' },
      },
      schema: {
        operationId: 'advanceSandboxClock',
        tags: ['Sandbox'],
        summary: "Move the sandbox workspace's clock forward",
        description:
          "Sandbox only (404 in production). Moves this workspace's clock forward by `seconds`: in one transaction its " +
          'open collections and checkout sessions, pending webhook deliveries, simulator steps and stored idempotency ' +
          'outcomes have their deadlines pulled that much earlier, and outcomes it takes past their retention are ' +
          'deleted. The expiry sweeps and the webhook relay then act on them within moments, with the usual events and ' +
          'webhooks. Operations in flight that the move leaves quiet for RECONCILE_AFTER_SECONDS are asked about at ' +
          "their provider before the answer. No other workspace's deadlines move. Answers the clock and what moved.",
        body: AdvanceClockBody,
        headers: OptionalIdempotencyKey,
        response: {
          200: SandboxClockSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409]],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(reply, await service.advance(auth.workspaceId, request.body, key, fingerprint));
    },
  );
}
