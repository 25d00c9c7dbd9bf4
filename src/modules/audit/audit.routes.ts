// GET /v1/audit-events: a workspace's audit log, for its integrator token and for the operator's admin token (which
// names the workspace), as pages of JSON or (Accept: text/csv) CSV, the settlement report's way. No SQL here. What is
// recorded is declared on each audited route (`config.audit`, src/platform/audit.ts).
import { Type } from 'typebox';
import type { Audience } from '../../platform/tokens.js';
import { requireAuth } from '../../platform/auth.js';
import type { App } from '../../platform/http.js';
import { BEARER_PROBLEMS, LIST_QUERY_PROBLEMS, problemResponses } from '../../platform/schemas.js';
import { prefersCsv } from '../reports/reports.routes.js';
import { AUDIT_CSV_COLUMNS, AuditEventPage, ListAuditEventsQuery } from './audit.schemas.js';
import { CSV_PAGE_ROWS, type AuditService } from './audit.service.js';

/** The workspace's integrator token reads its own log; the operator's admin token reads any workspace's. */
const AUDIT_READERS: readonly Audience[] = ['integrator', 'admin'];

export function auditRoutes(app: App, service: AuditService): void {
  app.get(
    '/v1/audit-events',
    {
      config: { auth: AUDIT_READERS },
      schema: {
        operationId: 'listAuditEvents',
        tags: ['Audit log'],
        summary: 'List audit events',
        description:
          'Who did what, to which object, when, from where: one event per audited write and per dashboard sign-in ' +
          '(failed ones too; docs/guides/audit-log.md). Newest first, paged and filtered like every list (`from`/`to` on ' +
          '`occurred_at`). An integrator token reads its own workspace; the admin token names one (`workspace_id`). ' +
          `\`Accept: text/csv\`: the same events as CSV, up to ${CSV_PAGE_ROWS} per answer (\`limit\` aside), the rest ` +
          'from the `Next-Cursor` header as `cursor`.',
        querystring: ListAuditEventsQuery,
        response: {
          200: {
            description: 'A page of audit events.',
            headers: {
              'Next-Cursor': {
                type: 'string',
                description:
                  'CSV answers only: the `cursor` of the rest of the export, when it did not fit in this one.',
              },
            },
            content: {
              'application/json': { schema: AuditEventPage },
              'text/csv': {
                schema: Type.String({
                  description: `A header line (${AUDIT_CSV_COLUMNS.join(',')}), then one line per event.`,
                }),
              },
            },
          },
          ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      if (prefersCsv(request.headers.accept)) {
        const { csv, nextCursor } = await service.csv(auth, request.query);
        if (nextCursor !== null) reply.header('Next-Cursor', nextCursor);
        return reply
          .type('text/csv; charset=utf-8')
          .header('Content-Disposition', 'attachment; filename="audit-events.csv"')
          .send(csv);
      }
      return reply.type('application/json; charset=utf-8').send(await service.list(auth, request.query));
    },
  );
}
