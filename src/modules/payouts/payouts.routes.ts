// Routes for offramp routes (the list and the writes behind it) and payouts (list, read, commit). No SQL here.
import { WorkspaceRails } from '../workspace-configuration/workspace-rails.js';
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
  REQUIRED_IDEMPOTENCY_PROBLEMS,
  RequiredIdempotencyKey,
} from '../../platform/schemas.js';
import {
  BULK_PAYOUT_MAX_ITEMS,
  BulkPayoutRequest,
  BulkPayoutResult,
  CommitBody,
  CreateRouteBody,
  ListPayoutsQuery,
  ListRoutesQuery,
  PayoutPage,
  PayoutSchema,
  RouteIdParams,
  RoutePage,
  RouteSchema,
  TransactionIdParams,
  UpdateRouteBody,
} from './payouts.schemas.js';
import { COMMIT_PATH, type PayoutsService } from './payouts.service.js';
import { ANY, INTEGRATOR, LIQUIDITY } from '../../platform/access.js';

export function payoutsRoutes(app: App, service: PayoutsService): void {
  app.get(
    '/v1/api/routes',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'listRoutes',
        tags: ['Payouts'],
        summary: 'List offramp routes',
        description:
          'The active routes, newest first: what each pays from, into which market, currency and rail, its limits and its fee.',
        querystring: ListRoutesQuery,
        response: { 200: RoutePage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.listRoutes(request.query),
  );

  app.get(
    '/v1/api/routes/:routeId',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'getRoute',
        tags: ['Payouts'],
        summary: 'Get an offramp route',
        description: 'One route, active or not.',
        params: RouteIdParams,
        response: { 200: RouteSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.getRoute(request.params.routeId),
  );

  app.post(
    '/v1/api/routes',
    {
      config: {
        auth: LIQUIDITY,
        permission: 'operator',
        audit: { action: 'offramp_route.create', objectType: 'offramp_route', objectId: 'answer.route_id' },
      },
      schema: {
        operationId: 'createRoute',
        tags: ['Payouts'],
        summary: 'Add an offramp route',
        description:
          'Liquidity providers and the admin keep the routes. `source` is an asset (converted at the current rate when a payout is committed) ' +
          "or the market's currency (paid from that balance). A rail that offers no payouts (Orange Money): 422 `operation_not_supported`. " +
          'An Idempotency-Key is honoured.',
        body: CreateRouteBody,
        headers: OptionalIdempotencyKey,
        response: {
          201: RouteSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            ...IDEMPOTENCY_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_market', 'invalid_rail', 'invalid_currency'],
            422: [...IDEMPOTENCY_PROBLEMS[422], 'operation_not_supported'],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(reply, await service.createRoute(auth, request.body, key, fingerprint));
    },
  );

  app.patch(
    '/v1/api/routes/:routeId',
    {
      config: {
        auth: LIQUIDITY,
        permission: 'operator',
        audit: { action: 'offramp_route.update', objectType: 'offramp_route' },
      },
      schema: {
        operationId: 'updateRoute',
        tags: ['Payouts'],
        summary: 'Change an offramp route',
        description:
          'Deactivate or reactivate it, or change its limits or fee; payouts already committed keep what they were committed with. A liquidity ' +
          "provider changes only the routes its workspace added (another's: 403 `forbidden`); the admin changes any.",
        params: RouteIdParams,
        body: UpdateRouteBody,
        response: {
          200: RouteSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, 400: [...BODY_PROBLEMS], 404: ['not_found'] }),
        },
      },
    },
    async (request) => service.updateRoute(requireAuth(request), request.params.routeId, request.body),
  );

  app.post(
    COMMIT_PATH,
    {
      config: {
        auth: INTEGRATOR,
        permission: 'payouts',
        audit: { action: 'payout.commit', objectType: 'payout', objectId: 'answer.transaction_id' },
      },
      schema: {
        operationId: 'commitTransaction',
        tags: ['Payouts'],
        summary: 'Commit a payout transaction',
        description:
          'Requires an Idempotency-Key (422 `idempotency_key_missing` without): a retry returns the stored response. Pays `amount` ' +
          "minor units of the route's source to an active beneficiary on an active route: converted at the current rate when the source is " +
          "an asset (rounded down), less the route's fee; the recipient gets `amount` of the answer. The source amount is reserved from your " +
          'available balance at once; more than is available: 422 `insufficient_balance`. An inactive beneficiary: 422 `beneficiary_inactive`; ' +
          "an unknown or inactive route: 422 `route_unavailable`; a route of another market or rail than the beneficiary's: 422 `route_mismatch`; " +
          "outside the route's limits: 422 `amount_out_of_range`; a route over a rail that no longer offers payouts: 422 `operation_not_supported`; no current rate: 422 `rate_unavailable`. In the sandbox the payout is simulated " +
          "(the beneficiary's number or account ending 0001: declined, 0002: invalid account, 0005: stays pending); no real money moves.",
        headers: RequiredIdempotencyKey,
        body: CommitBody,
        response: {
          201: PayoutSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_market', 'invalid_rail', 'invalid_currency'],
            404: ['not_found'],
            409: IDEMPOTENCY_PROBLEMS[409],
            422: [
              ...REQUIRED_IDEMPOTENCY_PROBLEMS[422],
              'insufficient_balance',
              'operation_not_supported',
              'beneficiary_inactive',
              'route_unavailable',
              'route_mismatch',
              'amount_out_of_range',
              'amount_not_supported',
              'rate_unavailable',
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
        await service.commit(auth.workspaceId, request.body, key, fingerprint, WorkspaceRails.of(auth.enabledRails)),
      );
    },
  );

  app.post(
    '/v1/payouts/bulk',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'payouts',
        audit: {
          action: 'payout.bulk_commit',
          objectType: 'payout',
          each: { action: 'payout.commit', list: 'answer.data', objectId: 'payout.transaction_id' },
        },
      },
      schema: {
        operationId: 'commitPayoutsInBulk',
        tags: ['Payouts'],
        summary: 'Commit payouts in bulk',
        description:
          `Up to ${BULK_PAYOUT_MAX_ITEMS} commits, each in its own transaction, answered in request order: committed (an ordinary ` +
          'payout) or refused (the problem the single commit would answer; nothing reserved), so an item that would overdraw is ' +
          "refused while the others commit. No Idempotency-Key header: each item's `idempotency_key` shares the single commit's " +
          'key space, so a retry commits nothing twice. Two items with one key: 400, nothing committed. See docs/guides/payouts.md.',
        body: BulkPayoutRequest,
        response: {
          200: BulkPayoutResult,
          ...problemResponses({ ...BEARER_PROBLEMS, 400: [...BODY_PROBLEMS] }),
        },
      },
    },
    async (request) => service.commitBulk(requireAuth(request).workspaceId, request.body, request.id),
  );

  app.get(
    '/v1/api/transactions',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listTransactions',
        tags: ['Payouts'],
        summary: 'List payout transactions',
        description: "The workspace's payouts, newest first, filtered by status and creation time, paged by cursor.",
        querystring: ListPayoutsQuery,
        response: { 200: PayoutPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.listPayouts(requireAuth(request).workspaceId, request.query),
  );

  app.get(
    '/v1/api/transactions/:transactionId',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getTransaction',
        tags: ['Payouts'],
        summary: 'Get a payout transaction',
        description: "One of the workspace's payouts; another workspace's is 404.",
        params: TransactionIdParams,
        response: { 200: PayoutSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.getPayout(requireAuth(request).workspaceId, request.params.transactionId),
  );
}
