// GET /v1/admin/operator-float: the operator's view of the balances operators hold for payouts (admin tokens).
import { ADMIN } from '../../platform/access.js';
import type { App } from '../../platform/http.js';
import { BEARER_PROBLEMS, problemResponses } from '../../platform/schemas.js';
import { OperatorFloatListSchema } from './float.schemas.js';
import type { OperatorFloatService } from './float.service.js';

export function operatorFloatRoutes(app: App, float: OperatorFloatService): void {
  app.get(
    '/v1/admin/operator-float',
    {
      config: { auth: ADMIN, permission: 'read' },
      schema: {
        operationId: 'adminListOperatorFloat',
        tags: ['Admin'],
        summary: 'List operator float balances',
        description:
          "Each operator account payouts are paid from, as its operator's API last gave it (read every OPERATOR_FLOAT_INTERVAL_MS): " +
          'balance, when read, the threshold of OPERATOR_FLOAT_THRESHOLDS and a status. A read that failed (the operator down or timing out, a ' +
          'refused credential) shows `unknown` with its error. Crossing below the threshold raises `operator.float_low`, and back above ' +
          '`operator.float_restored`, in the operator workspace. See docs/guides/operator-float.md.',
        response: { 200: OperatorFloatListSchema, ...problemResponses({ ...BEARER_PROBLEMS }) },
      },
    },
    async () => ({ data: await float.list() }),
  );
}
