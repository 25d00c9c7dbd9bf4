// Routes for deposit addresses, deposits and autoconvert credits; the liquidity
// provider's pool and ingestion routes; the sandbox's deposit simulation (sandbox only). No SQL here.
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
} from '../../platform/schemas.js';
import {
  AddressIdParams,
  AddressPage,
  CreateAddressBody,
  CreditIdParams,
  CreditSchema,
  DepositAddressSchema,
  DepositIdParams,
  DepositPage,
  DepositSchema,
  ListAddressesQuery,
  ListDepositsQuery,
  PoolBody,
  PoolResultSchema,
  ReportDepositBody,
  SandboxDepositBody,
  SimulateDepositBody,
} from './deposits.schemas.js';
import type { DepositsService } from './deposits.service.js';
import { INTEGRATOR, LIQUIDITY } from '../../platform/access.js';

export function depositsRoutes(app: App, service: DepositsService, env: 'sandbox' | 'production'): void {
  app.post(
    '/v1/api/deposit-addresses',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'collections',
        audit: {
          action: 'deposit_address.create',
          objectType: 'deposit_address',
          objectId: 'answer.deposit_address_id',
        },
      },
      schema: {
        operationId: 'createDepositAddress',
        tags: ['Deposits'],
        summary: 'Get a deposit address',
        description:
          "An address for one asset on one network, from the liquidity provider's pool (the sandbox makes one). With `autoconvert_currency`, " +
          'confirmed deposits are converted to that currency and credited (an autoconvert credit, `GET /v1/api/autoconvert/credits/{creditId}`). An asset or network not taken: 400 `invalid_asset`; ' +
          'no free address: 409 `deposit_address_pool_empty` with Retry-After. An Idempotency-Key is honoured.',
        body: CreateAddressBody,
        headers: OptionalIdempotencyKey,
        response: {
          201: DepositAddressSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_currency', 'invalid_asset'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'deposit_address_pool_empty'],
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
        await service.createAddress(
          auth.workspaceId,
          request.body,
          key,
          fingerprint,
          WorkspaceRails.of(auth.enabledRails),
        ),
      );
    },
  );

  app.get(
    '/v1/api/deposit-addresses',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listDepositAddresses',
        tags: ['Deposits'],
        summary: 'List deposit addresses',
        description: "The workspace's deposit addresses, newest first, paged by cursor.",
        querystring: ListAddressesQuery,
        response: { 200: AddressPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.listAddresses(requireAuth(request).workspaceId, request.query),
  );

  app.get(
    '/v1/api/deposit-addresses/:addressId',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getDepositAddress',
        tags: ['Deposits'],
        summary: 'Get a deposit address',
        description: "One of the workspace's deposit addresses; another workspace's is 404.",
        params: AddressIdParams,
        response: { 200: DepositAddressSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.getAddress(requireAuth(request).workspaceId, request.params.addressId),
  );

  app.post(
    '/v1/api/deposit-addresses/pool',
    {
      config: {
        auth: LIQUIDITY,
        permission: 'operator',
        audit: { action: 'deposit_address.pool_add', objectType: 'deposit_address_pool' },
      },
      schema: {
        operationId: 'stockDepositAddressPool',
        tags: ['Deposits'],
        summary: 'Stock the deposit address pool',
        description:
          'Liquidity providers and the admin add addresses their custody controls (up to 500 a call). Addresses already known are left alone, ' +
          "so the call can be repeated. One not in the network's format: 400 `invalid_address` naming each.",
        body: PoolBody,
        response: {
          200: PoolResultSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, 400: [...BODY_PROBLEMS, 'invalid_asset', 'invalid_address'] }),
        },
      },
    },
    async (request) => service.addToPool(request.body),
  );

  app.get(
    '/v1/api/deposits',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listDeposits',
        tags: ['Deposits'],
        summary: 'List deposits',
        description:
          "Deposits on the workspace's addresses, newest first, filtered by status and creation time, paged by cursor.",
        querystring: ListDepositsQuery,
        response: { 200: DepositPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.listDeposits(requireAuth(request).workspaceId, request.query),
  );

  app.get(
    '/v1/api/deposits/:depositId',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getDeposit',
        tags: ['Deposits'],
        summary: 'Get a deposit',
        description: "One of the workspace's deposits; another workspace's is 404.",
        params: DepositIdParams,
        response: { 200: DepositSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.getDeposit(requireAuth(request).workspaceId, request.params.depositId),
  );

  app.post(
    '/v1/api/deposits',
    {
      config: {
        auth: LIQUIDITY,
        permission: 'operator',
        audit: { action: 'deposit.create', objectType: 'deposit', objectId: 'answer.deposit_id' },
      },
      schema: {
        operationId: 'reportDeposit',
        tags: ['Deposits'],
        summary: 'Report a transfer to a deposit address',
        description:
          "The liquidity provider's chain watcher (or the admin) reports what it sees: `pending`, then `confirmed` (or `failed`). Idempotent by " +
          'the transfer (network, tx_hash, address): 201 the first time, 200 after, each answering the deposit as it now is. A confirmed deposit ' +
          'is credited at once (converted when the address has `autoconvert_currency` and a current rate exists). An address no workspace holds: ' +
          '422 `deposit_address_unknown`; a different amount for the same transfer, or a move the deposit is past (failed after confirmed): 409 `deposit_conflict`.',
        body: ReportDepositBody,
        response: {
          200: DepositSchema,
          201: DepositSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_currency', 'invalid_asset', 'invalid_address'],
            409: ['deposit_conflict'],
            422: ['deposit_address_unknown'],
          }),
        },
      },
    },
    async (request, reply) => {
      const { status, deposit } = await service.report(request.body);
      return reply.code(status).send(deposit);
    },
  );

  app.get(
    '/v1/api/autoconvert/credits/:creditId',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getAutoconvertCredit',
        tags: ['Deposits'],
        summary: 'Get an autoconvert credit',
        description:
          'A confirmed deposit converted to fiat: the source and target amounts, the rate and its source, the fee. The converted amount ' +
          "and the fee are rounded down to whole minor units. Another workspace's credit is 404.",
        params: CreditIdParams,
        response: { 200: CreditSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.getCredit(requireAuth(request).workspaceId, request.params.creditId),
  );

  if (env !== 'sandbox') return;

  app.post(
    '/v1/sandbox/deposits',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'sandbox',
        audit: { action: 'deposit.simulate_create', objectType: 'deposit', objectId: 'answer.deposit_id' },
      },
      schema: {
        operationId: 'simulateIncomingDeposit',
        tags: ['Sandbox'],
        summary: 'Send a sandbox deposit',
        description:
          'Sandbox only (404 in production). A transfer arrives, `pending`, on one of your deposit addresses; drive it with the simulate ' +
          'endpoint. `tx_hash` defaults to a random one. An Idempotency-Key is honoured.',
        body: SandboxDepositBody,
        headers: OptionalIdempotencyKey,
        response: {
          201: DepositSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'deposit_conflict'],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(reply, await service.sandboxDeposit(auth.workspaceId, request.body, key, fingerprint));
    },
  );

  app.post(
    '/v1/sandbox/deposits/:depositId/simulate',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'sandbox',
        audit: { action: 'deposit.simulate', objectType: 'deposit', objectId: 'params.depositId' },
      },
      schema: {
        operationId: 'simulateDeposit',
        tags: ['Sandbox'],
        summary: 'Drive a sandbox deposit to an outcome',
        description:
          'Sandbox only (404 in production). `confirmed` confirms it and credits it (converted when the address autoconverts and a current rate ' +
          'exists; otherwise it waits, confirmed, for one); `failed` drops it. A move the deposit is past: 409 `deposit_conflict`.',
        params: DepositIdParams,
        body: SimulateDepositBody,
        headers: OptionalIdempotencyKey,
        response: {
          200: DepositSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'deposit_conflict'],
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
        await service.simulate(
          auth.workspaceId,
          request.params.depositId,
          request.body.outcome,
          request.body.reason,
          key,
          fingerprint,
        ),
      );
    },
  );
}
