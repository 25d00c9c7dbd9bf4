// GET /v1/reports/settlement: the day's settlement report, as JSON or (Accept: text/csv) CSV. No SQL here.
import { Type } from 'typebox';
import { INTEGRATOR } from '../../platform/access.js';
import { requireAuth } from '../../platform/auth.js';
import type { App } from '../../platform/http.js';
import { BEARER_PROBLEMS, problemResponses } from '../../platform/schemas.js';
import { SettlementQuery, SettlementReportSchema } from './reports.schemas.js';
import { settlementCsv, type ReportsService } from './reports.service.js';

export function reportsRoutes(app: App, service: ReportsService): void {
  app.get(
    '/v1/reports/settlement',
    {
      config: { auth: INTEGRATOR, permission: 'reports' },
      schema: {
        operationId: 'getSettlementReport',
        tags: ['Reports'],
        summary: "A day's settlement report",
        description:
          'For one UTC day and one currency: per rail, the counts and sums of collections, refunds and payouts by the final status ' +
          'they reached that day; the fees earned; the available balance at the start and end of the day with its movements by ' +
          'posting kind; and the `reconciliation.mismatch` events of the day. `Accept: text/csv` answers the same figures as CSV ' +
          '(`section,market,rail,item,count,amount`).',
        querystring: SettlementQuery,
        response: {
          200: {
            description: 'The report.',
            content: {
              'application/json': { schema: SettlementReportSchema },
              'text/csv': {
                schema: Type.String({
                  description: 'The same figures, one row each: section,market,rail,item,count,amount.',
                }),
              },
            },
          },
          ...problemResponses({ ...BEARER_PROBLEMS, 400: ['validation_failed', 'invalid_currency'] }),
        },
      },
    },
    async (request, reply) => {
      const report = await service.settlement(requireAuth(request).workspaceId, request.query);
      if (prefersCsv(request.headers.accept)) {
        return reply
          .type('text/csv; charset=utf-8')
          .header('Content-Disposition', `attachment; filename="settlement-${report.date}-${report.currency}.csv"`)
          .send(settlementCsv(report));
      }
      return reply.type('application/json; charset=utf-8').send(report);
    },
  );
}

/** Whether the Accept header ranks text/csv above application/json (by q, then by order); JSON when it names neither. */
export function prefersCsv(accept: string | undefined): boolean {
  let best: { type: string; q: number } | undefined;
  for (const part of (accept ?? '').split(',')) {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    if (type !== 'text/csv' && type !== 'application/json') continue;
    const q = Number(/^\s*q=([0-9.]+)\s*$/.exec(params.find((p) => p.trim().startsWith('q=')) ?? '')?.[1] ?? 1);
    if (q > 0 && (best === undefined || q > best.q)) best = { type, q };
  }
  return best?.type === 'text/csv';
}
