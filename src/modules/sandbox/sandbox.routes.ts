// The sandbox's simulate endpoints; registered only when PAYMENTS_ENV=sandbox (404 in production).
import { Type } from 'typebox';
import { requireAuth } from '../../platform/auth.js';
import { sendStored, type App } from '../../platform/http.js';
import { idempotencyOf } from '../../platform/idempotency.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  component,
  IDEMPOTENCY_PROBLEMS,
  OptionalIdempotencyKey,
  problemResponses,
} from '../../platform/schemas.js';
import { CollectionIdParams, CollectionSchema, FAILURE_REASONS } from '../collections/collections.schemas.js';
import { PAYOUT_FAILURE_REASONS, PayoutSchema, TransactionIdParams } from '../payouts/payouts.schemas.js';
import { REFUND_FAILURE_REASONS, RefundIdParams, RefundSchema } from '../refunds/refunds.schemas.js';
import type { SandboxService } from './sandbox.service.js';
import { INTEGRATOR } from '../../platform/access.js';

const SimulateCollectionBody = component(
  'SimulateCollectionRequest',
  Type.Object(
    {
      outcome: Type.Enum(['successful', 'failed', 'expired', 'reversed'], {
        description:
          'Where to drive the collection. Statuses between are passed through, each with its event (pending → processing → successful); ' +
          'one the lifecycle cannot reach from the current status is 409 `transition_not_allowed`.',
      }),
      reason: Type.Optional(
        Type.Enum(FAILURE_REASONS, { description: 'For `failed`: why (default `provider_error`).' }),
      ),
    },
    { additionalProperties: false },
  ),
);

const SimulateRefundBody = component(
  'SimulateRefundRequest',
  Type.Object(
    {
      outcome: Type.Enum(['successful', 'failed'], { description: 'Where to drive the refund.' }),
      reason: Type.Optional(
        Type.Enum(REFUND_FAILURE_REASONS, { description: 'For `failed`: why (default `provider_error`).' }),
      ),
    },
    { additionalProperties: false },
  ),
);

const SimulatePayoutBody = component(
  'SimulatePayoutRequest',
  Type.Object(
    {
      outcome: Type.Enum(['successful', 'failed'], {
        description:
          'Where to drive the payout (a created one passes through pending). `failed` gives the reservation back.',
      }),
      reason: Type.Optional(
        Type.Enum(PAYOUT_FAILURE_REASONS, { description: 'For `failed`: why (default `provider_error`).' }),
      ),
    },
    { additionalProperties: false },
  ),
);

export function sandboxRoutes(app: App, service: SandboxService): void {
  app.post(
    '/v1/sandbox/collections/:id/simulate',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'sandbox',
        audit: { action: 'collection.simulate', objectType: 'collection', objectId: 'params.id' },
      },
      schema: {
        operationId: 'simulateCollection',
        tags: ['Sandbox'],
        summary: 'Drive a sandbox collection to an outcome',
        description:
          "Sandbox only (404 in production). Stops the simulator's own script for this collection and applies the outcome, " +
          'with the same events and ledger postings a provider notice would cause. Answers the collection after the change.',
        params: CollectionIdParams,
        body: SimulateCollectionBody,
        headers: OptionalIdempotencyKey,
        response: {
          200: CollectionSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'transition_not_allowed'],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(
        reply,
        await service.simulateCollection(auth.workspaceId, request.params.id, request.body, key, fingerprint),
      );
    },
  );

  app.post(
    '/v1/sandbox/refunds/:id/simulate',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'sandbox',
        audit: { action: 'refund.simulate', objectType: 'refund', objectId: 'params.id' },
      },
      schema: {
        operationId: 'simulateRefund',
        tags: ['Sandbox'],
        summary: 'Drive a sandbox refund to an outcome',
        description:
          'Sandbox only (404 in production). Refunds in the sandbox succeed by themselves unless driven otherwise.',
        params: RefundIdParams,
        body: SimulateRefundBody,
        headers: OptionalIdempotencyKey,
        response: {
          200: RefundSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'transition_not_allowed'],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(
        reply,
        await service.simulateRefund(auth.workspaceId, request.params.id, request.body, key, fingerprint),
      );
    },
  );

  app.post(
    '/v1/sandbox/payouts/:transactionId/simulate',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'sandbox',
        audit: { action: 'payout.simulate', objectType: 'payout', objectId: 'params.transactionId' },
      },
      schema: {
        operationId: 'simulatePayout',
        tags: ['Sandbox'],
        summary: 'Drive a sandbox payout to an outcome',
        description:
          "Sandbox only (404 in production). Payouts in the sandbox are paid by themselves unless the beneficiary's number or account picks " +
          'another outcome; this drives one by hand, with the same events and postings a provider notice would cause.',
        params: TransactionIdParams,
        body: SimulatePayoutBody,
        headers: OptionalIdempotencyKey,
        response: {
          200: PayoutSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'transition_not_allowed'],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(
        reply,
        await service.simulatePayout(auth.workspaceId, request.params.transactionId, request.body, key, fingerprint),
      );
    },
  );
}
