// Routes for refunds: refund a collection (POST /v1/collections/{id}/refund), read one, list the workspace's or a
// collection's. No SQL here.
import { requireAuth } from '../../platform/auth.js';
import { sendStored, type App } from '../../platform/http.js';
import { idempotencyOf } from '../../platform/idempotency.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  IDEMPOTENCY_PROBLEMS,
  LIST_QUERY_PROBLEMS,
  problemResponses,
  REQUIRED_IDEMPOTENCY_PROBLEMS,
  RequiredIdempotencyKey,
} from '../../platform/schemas.js';
import { CollectionIdParams } from '../collections/collections.schemas.js';
import { CreateRefundBody, ListRefundsQuery, RefundIdParams, RefundPage, RefundSchema } from './refunds.schemas.js';
import type { RefundsService } from './refunds.service.js';
import { INTEGRATOR } from '../../platform/access.js';

export function refundsRoutes(app: App, service: RefundsService): void {
  app.post(
    '/v1/collections/:id/refund',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'refunds',
        audit: { action: 'refund.create', objectType: 'refund', objectId: 'answer.refund_id' },
      },
      schema: {
        operationId: 'refundCollection',
        tags: ['Refunds'],
        summary: 'Refund a collection (full refunds only)',
        description:
          'Refunds a `successful` collection in full. Requires an Idempotency-Key. 201 with the refund, status `requested` and ' +
          '`resolved_at` `{}`; it then moves to `pending` and to `successful` (the collection becomes `refunded`) or `failed` ' +
          '(a new refund may then be requested). A collection in any other status: 409 `collection_not_refundable`; a refund ' +
          "of it still requested or pending: 409 `refund_in_progress`; an amount other than the collection's: 422 `refund_amount_mismatch`; a collection on a rail that offers no refunds (Orange Money): 422 `operation_not_supported`.",
        params: CollectionIdParams,
        headers: RequiredIdempotencyKey,
        body: CreateRefundBody,
        response: {
          201: RefundSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'collection_not_refundable', 'refund_in_progress'],
            422: [
              ...REQUIRED_IDEMPOTENCY_PROBLEMS[422],
              'refund_amount_mismatch',
              'insufficient_balance',
              'operation_not_supported',
            ],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, true);
      return sendStored(
        reply,
        await service.create(auth.workspaceId, request.params.id, request.body, key, fingerprint),
      );
    },
  );

  app.get(
    '/v1/refunds',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listRefunds',
        tags: ['Refunds'],
        summary: 'List refunds',
        description:
          "The workspace's refunds of every collection, newest first (by `requested_at`), filtered by status and request time, paged by cursor.",
        querystring: ListRefundsQuery,
        response: { 200: RefundPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.list(requireAuth(request).workspaceId, request.query),
  );

  app.get(
    '/v1/refunds/:id',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getRefund',
        tags: ['Refunds'],
        summary: 'Get a refund',
        params: RefundIdParams,
        response: { 200: RefundSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.get(requireAuth(request).workspaceId, request.params.id),
  );

  app.get(
    '/v1/collections/:id/refunds',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listCollectionRefunds',
        tags: ['Refunds'],
        summary: "List a collection's refunds",
        description:
          'Newest first, paged by cursor like every list; at most one is successful and at most one is in progress.',
        params: CollectionIdParams,
        querystring: ListRefundsQuery,
        response: {
          200: RefundPage,
          ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request) => service.listForCollection(requireAuth(request).workspaceId, request.params.id, request.query),
  );
}
