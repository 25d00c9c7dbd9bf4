// Routes for market data: the rates and the active sources, and the writes behind them. No SQL here.
import { requireAuth } from '../../platform/auth.js';
import { sendStored, type App } from '../../platform/http.js';
import { idempotencyOf } from '../../platform/idempotency.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  IDEMPOTENCY_PROBLEMS,
  LIST_QUERY_PROBLEMS,
  OptionalIdempotencyKey,
  problemResponses,
} from '../../platform/schemas.js';
import {
  CreateRateBody,
  CreateSourceBody,
  ListRatesQuery,
  ListSourcesQuery,
  RatePage,
  RateSchema,
  SourceIdParams,
  SourcePage,
  SourceSchema,
  UpdateSourceBody,
} from './market-data.schemas.js';
import type { MarketDataService } from './market-data.service.js';
import { ADMIN, ANY, LIQUIDITY } from '../../platform/access.js';

export function marketDataRoutes(app: App, service: MarketDataService): void {
  app.get(
    '/v1/api/markets/sources',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'listRateSources',
        tags: ['Market data'],
        summary: 'List active rate sources',
        description: 'The rate sources currently in use, newest first.',
        querystring: ListSourcesQuery,
        response: { 200: SourcePage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.listSources(request.query),
  );

  app.post(
    '/v1/api/markets/sources',
    {
      config: {
        auth: ADMIN,
        permission: 'operator',
        audit: { action: 'rate_source.create', objectType: 'rate_source', objectId: 'answer.source_id' },
      },
      schema: {
        operationId: 'createRateSource',
        tags: ['Market data'],
        summary: 'Add a rate source',
        description: 'A new source, active at once. A name already used: 409 `source_name_taken`.',
        body: CreateSourceBody,
        headers: OptionalIdempotencyKey,
        response: {
          201: SourceSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'source_name_taken'],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(reply, await service.createSource(auth.workspaceId, request.body, key, fingerprint));
    },
  );

  app.patch(
    '/v1/api/markets/sources/:sourceId',
    {
      config: {
        auth: ADMIN,
        permission: 'operator',
        audit: { action: 'rate_source.update', objectType: 'rate_source' },
      },
      schema: {
        operationId: 'updateRateSource',
        tags: ['Market data'],
        summary: 'Activate or deactivate a rate source',
        description:
          'Deactivating a source takes it out of the active sources (`GET /v1/api/markets/sources`) and its rates out of every conversion at once.',
        params: SourceIdParams,
        body: UpdateSourceBody,
        response: {
          200: SourceSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, 400: [...BODY_PROBLEMS], 404: ['not_found'] }),
        },
      },
    },
    async (request) => service.updateSource(request.params.sourceId, request.body),
  );

  app.get(
    '/v1/api/markets/rates',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'listRates',
        tags: ['Market data'],
        summary: 'List market rate records',
        description: 'Rate records, newest first; `pair=USDT/KES` keeps one pair.',
        querystring: ListRatesQuery,
        response: { 200: RatePage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.listRates(request.query),
  );

  app.post(
    '/v1/api/markets/rates',
    {
      config: {
        auth: LIQUIDITY,
        permission: 'operator',
        audit: { action: 'rate.create', objectType: 'rate', objectId: 'answer.rate_id' },
      },
      schema: {
        operationId: 'postRate',
        tags: ['Market data'],
        summary: 'Post a rate record',
        description:
          'A price observed at an active source. The rate is a decimal string (no float rounding). An unknown or inactive source: 422 ' +
          '`rate_source_unavailable`. Conversions use the newest rate of a pair observed within `RATE_MAX_AGE_SECONDS` (default 300).',
        body: CreateRateBody,
        headers: OptionalIdempotencyKey,
        response: {
          201: RateSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            409: IDEMPOTENCY_PROBLEMS[409],
            422: [...IDEMPOTENCY_PROBLEMS[422], 'rate_source_unavailable'],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(
        reply,
        await service.postRate(auth.workspaceId, auth.credentialId, request.body, key, fingerprint),
      );
    },
  );
}
