// Routes for collections: create (POST /v1/collections/{market}/rails/{rail}), list (GET /v1/collections) and read one.
// No SQL here.
import { requireAuth } from '../../platform/auth.js';
import { idempotencyOf } from '../../platform/idempotency.js';
import { sendStored, type App } from '../../platform/http.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  IDEMPOTENCY_PROBLEMS,
  LIST_QUERY_PROBLEMS,
  problemResponses,
  REQUIRED_IDEMPOTENCY_PROBLEMS,
  RequiredIdempotencyKey,
} from '../../platform/schemas.js';
import {
  CollectionIdParams,
  CollectionPage,
  CollectionPathParams,
  CollectionSchema,
  CreateCollectionBody,
  ListCollectionsQuery,
} from './collections.schemas.js';
import { WorkspaceRails } from '../workspace-configuration/workspace-rails.js';
import type { CollectionsService } from './collections.service.js';
import { INTEGRATOR } from '../../platform/access.js';

export function collectionsRoutes(app: App, service: CollectionsService): void {
  app.post(
    '/v1/collections/:market/rails/:rail',
    {
      config: { auth: INTEGRATOR, permission: 'collections', fieldCodes: { customer: 'invalid_customer' } },

      schema: {
        operationId: 'createCollection',
        tags: ['Collections'],
        summary: 'Create a collection (initiate an inbound payment)',
        description:
          'Starts a collection on one rail of one market. Requires an Idempotency-Key: a retry with the same key and body returns the ' +
          'stored response with `Idempotent-Replayed: true`; the same key with another body is 422 `idempotency_key_reused`. ' +
          'A retry sent while the first is still running waits for it to commit (the create is one statement) and gets that same ' +
          'replay or 422; if the first failed, the retry makes the collection. 409 `idempotency_key_in_use` (`Retry-After: 1`) only ' +
          'when the key keeps changing hands: an answer past its retention replaced by other requests three times in a row. ' +
          'While new collections are refused (503 `overloaded` or `rail_unavailable`), a retry of one already created still gets its replay.',
        params: CollectionPathParams,
        headers: RequiredIdempotencyKey,
        body: CreateCollectionBody,
        response: {
          201: CollectionSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_market', 'invalid_rail', 'invalid_currency', 'invalid_customer'],
            409: IDEMPOTENCY_PROBLEMS[409],
            422: [...REQUIRED_IDEMPOTENCY_PROBLEMS[422], 'amount_out_of_range', 'amount_not_supported'],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, true);
      const result = await service.create(
        auth.workspaceId,
        request.params.market,
        request.params.rail,
        request.body,
        key,
        fingerprint,
        WorkspaceRails.of(auth.enabledRails),
      );
      return sendStored(reply, result);
    },
  );

  app.get(
    '/v1/collections',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listCollections',
        tags: ['Collections'],
        summary: 'List collections',
        description:
          "The workspace's collections, newest first, paged by cursor. Filters combine: status, creation time, market, rail, " +
          'and an exact reference or payer phone number (E.164).',
        querystring: ListCollectionsQuery,
        response: { 200: CollectionPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.list(requireAuth(request).workspaceId, request.query),
  );

  app.get(
    '/v1/collections/:id',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getCollection',
        tags: ['Collections'],
        summary: 'Get a collection',
        params: CollectionIdParams,
        response: { 200: CollectionSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.get(requireAuth(request).workspaceId, request.params.id),
  );
}
