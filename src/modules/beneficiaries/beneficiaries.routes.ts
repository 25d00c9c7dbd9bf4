// Routes for beneficiaries: create, list, read, and deactivate (DELETE /v1/api/beneficiaries/{beneficiaryId}). No SQL
// here.
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
  BeneficiaryIdParams,
  BeneficiaryPage,
  BeneficiarySchema,
  CreateBeneficiaryBody,
  ListBeneficiariesQuery,
} from './beneficiaries.schemas.js';
import type { BeneficiariesService } from './beneficiaries.service.js';
import { INTEGRATOR } from '../../platform/access.js';

export function beneficiariesRoutes(app: App, service: BeneficiariesService): void {
  app.post(
    '/v1/api/beneficiaries',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'payouts',
        audit: { action: 'beneficiary.create', objectType: 'beneficiary', objectId: 'answer.beneficiary_id' },
      },
      schema: {
        operationId: 'createBeneficiary',
        tags: ['Beneficiaries'],
        summary: 'Create a beneficiary',
        description:
          'A payout destination on one rail of one market: a mobile-money wallet (`phone_number`, E.164 in the market) or a bank account ' +
          '(`bank_code` and `account_number`). Details that do not fit the rail: 400 `invalid_customer` with field errors. ' +
          'An Idempotency-Key is honoured.',
        body: CreateBeneficiaryBody,
        headers: OptionalIdempotencyKey,
        response: {
          201: BeneficiarySchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            ...IDEMPOTENCY_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_market', 'invalid_rail', 'invalid_customer'],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(reply, await service.create(auth.workspaceId, request.body, key, fingerprint));
    },
  );

  app.get(
    '/v1/api/beneficiaries',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listBeneficiaries',
        tags: ['Beneficiaries'],
        summary: 'List beneficiaries',
        description:
          "The workspace's beneficiaries, newest first, filtered by status and creation time, paged by cursor.",
        querystring: ListBeneficiariesQuery,
        response: { 200: BeneficiaryPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.list(requireAuth(request).workspaceId, request.query),
  );

  app.get(
    '/v1/api/beneficiaries/:beneficiaryId',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getBeneficiary',
        tags: ['Beneficiaries'],
        summary: 'Get a beneficiary',
        params: BeneficiaryIdParams,
        response: { 200: BeneficiarySchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.get(requireAuth(request).workspaceId, request.params.beneficiaryId),
  );

  app.delete(
    '/v1/api/beneficiaries/:beneficiaryId',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'payouts',
        audit: { action: 'beneficiary.delete', objectType: 'beneficiary' },
      },
      schema: {
        operationId: 'deactivateBeneficiary',
        tags: ['Beneficiaries'],
        summary: 'Deactivate a beneficiary',
        description:
          '200 with the beneficiary, `status: inactive` and `deactivated_at` set. Deactivation is final: an inactive beneficiary ' +
          'receives no payout. Deactivating again answers 200 with the same record (`deactivated_at` unchanged), so a retried DELETE is safe.',
        params: BeneficiaryIdParams,
        response: { 200: BeneficiarySchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.deactivate(requireAuth(request).workspaceId, request.params.beneficiaryId),
  );
}
