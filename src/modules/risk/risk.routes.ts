// Routes for risk signals: the open ones, one, report one, and the admin's review. No SQL here.
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
  CreateSignalBody,
  ListOpenQuery,
  ReviewSignalBody,
  SignalIdParams,
  SignalPage,
  SignalSchema,
} from './risk.schemas.js';
import { LARGE_PAYOUT_RULE, RISK_RULES, type RiskService } from './risk.service.js';
import { ADMIN, ANY } from '../../platform/access.js';

const rules = Object.entries(RISK_RULES)
  .map(([name, r]) => `\`${name}\` (${r.threshold} within ${r.windowSeconds / 60} min, ${r.severity})`)
  .join('; ')
  .concat(
    `; \`large_payout\` (a payout of at least ${LARGE_PAYOUT_RULE.percentOfCurrencyMax}% of its currency's largest collection amount, ${LARGE_PAYOUT_RULE.severity})`,
  );

export function riskRoutes(app: App, service: RiskService): void {
  app.get(
    '/v1/api/risk/signals/open',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'listOpenRiskSignals',
        tags: ['Risk'],
        summary: 'List open risk signals',
        description:
          `Open signals of your workspace, newest first; an admin token lists every workspace's (the review queue). Built-in rules: ${rules}. ` +
          'A `liquidity_provider` token sees payer phone numbers masked (`+254*****5678`, see `RiskSignal`). There is no filter by ' +
          'subject: a search by a full phone number would tell a liquidity provider the number it is not shown.',
        querystring: ListOpenQuery,
        response: { 200: SignalPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.listOpen(requireAuth(request), request.query),
  );

  app.get(
    '/v1/api/risk/signals/:signalId',
    {
      config: { auth: ANY },
      schema: {
        operationId: 'getRiskSignal',
        tags: ['Risk'],
        summary: 'Get a risk signal',
        description:
          "A signal of your workspace (an admin token reads any); another workspace's is 404. A `liquidity_provider` " +
          'token sees payer phone numbers masked (`+254*****5678`, see `RiskSignal`).',
        params: SignalIdParams,
        response: { 200: SignalSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.get(requireAuth(request), request.params.signalId),
  );

  app.post(
    '/v1/api/risk/signals',
    {
      config: {
        auth: ANY,
        permission: 'collections',
        audit: { action: 'risk_signal.create', objectType: 'risk_signal', objectId: 'answer.signal_id' },
      },
      schema: {
        operationId: 'createRiskSignal',
        tags: ['Risk'],
        summary: 'Report a risk signal',
        description:
          '201 with the signal, `open`, in your workspace (an admin token may name another with `workspace_id`). An Idempotency-Key is honoured. ' +
          'A `liquidity_provider` token gets the signal back with phone numbers masked, as it reads every signal.',
        body: CreateSignalBody,
        headers: OptionalIdempotencyKey,
        response: {
          201: SignalSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            ...IDEMPOTENCY_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(reply, await service.create(auth, request.body, key, fingerprint));
    },
  );

  app.patch(
    '/v1/api/risk/signals/:signalId',
    {
      config: {
        auth: ADMIN,
        permission: 'operator',
        audit: { action: 'risk_signal.review', objectType: 'risk_signal' },
      },
      schema: {
        operationId: 'reviewRiskSignal',
        tags: ['Risk'],
        summary: 'Acknowledge or resolve a risk signal',
        description:
          'open → acknowledged → resolved, or open → resolved; anything else is 409 `transition_not_allowed`. `resolved` is final.',
        params: SignalIdParams,
        body: ReviewSignalBody,
        response: {
          200: SignalSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: ['transition_not_allowed'],
          }),
        },
      },
    },
    async (request) => service.review(request.params.signalId, request.body),
  );
}
