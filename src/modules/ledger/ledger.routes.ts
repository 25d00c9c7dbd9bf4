// GET /v1/balances: the workspace's available balance per currency, read from the ledger.
import { requireAuth } from '../../platform/auth.js';
import type { App } from '../../platform/http.js';
import { BEARER_PROBLEMS, problemResponses } from '../../platform/schemas.js';
import type { Db } from '../../db/pool.js';
import { INTEGRATOR } from '../../platform/access.js';
import { BalanceList, toBalanceApi } from './ledger.schemas.js';
import { availableBalances } from './ledger.service.js';

export function ledgerRoutes(app: App, db: Db): void {
  app.get(
    '/v1/balances',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listBalances',
        tags: ['Balances'],
        summary: 'Balances per currency',
        description: "The workspace's available balance in each currency, from the double-entry ledger.",
        response: { 200: BalanceList, ...problemResponses({ ...BEARER_PROBLEMS }) },
      },
    },
    async (request) => ({ data: (await availableBalances(db, requireAuth(request).workspaceId)).map(toBalanceApi) }),
  );
}
