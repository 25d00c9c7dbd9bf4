// GET /v1/balances: the workspace's available balance per currency, read from the ledger.
import { Type } from 'typebox';
import { requireAuth } from '../../platform/auth.js';
import type { App } from '../../platform/http.js';
import { BEARER_PROBLEMS, DateTime, problemResponses } from '../../platform/schemas.js';
import type { Db } from '../../db/pool.js';
import { accountBalances, WORKSPACE_AVAILABLE } from './ledger.repository.js';
import { INTEGRATOR } from '../../platform/access.js';

const BalanceList = Type.Object(
  {
    data: Type.Array(
      Type.Object(
        {
          currency: Type.String({ description: 'ISO 4217 currency code.' }),
          available: Type.Integer({
            description:
              'Minor units: successful collections, less successful refunds and reversals. Collections still in flight are not counted.',
          }),
          updated_at: DateTime('When this balance last moved.'),
        },
        { additionalProperties: false },
      ),
      { description: 'One entry per currency the workspace has ever been credited in.' },
    ),
  },
  { additionalProperties: false, description: "The workspace's balances, one per currency." },
);

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
    async (request) => {
      const rows = await accountBalances(db, requireAuth(request).workspaceId, WORKSPACE_AVAILABLE);
      // The workspace account is credit-normal: its ledger balance is negative when we owe the workspace money.
      return {
        data: rows.map((r) => ({
          currency: r.currency,
          available: -r.balance,
          updated_at: r.updated_at.toISOString(),
        })),
      };
    },
  );
}
