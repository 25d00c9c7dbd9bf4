// Operational routes: liveness, readiness, metrics, the OpenAPI document and the rendered reference.
import { Type } from 'typebox';
import type { Registry } from 'prom-client';
import type { Db } from '../../db/pool.js';
import { migrationsApplied } from '../../db/migrate.js';
import { DOCS_CSP, renderDocs } from '../../platform/docs-page.js';
import type { App } from '../../platform/http.js';
import { htmlResponse, problemResponses } from '../../platform/schemas.js';

export function systemRoutes(
  app: App,
  deps: { db: Db; registry: Registry; migrationCount: number; isDraining: () => boolean },
): void {
  app.get(
    '/healthz',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'healthz',
        tags: ['Operations'],
        summary: 'Liveness: the process is up',
        response: {
          200: Type.Object({ status: Type.Literal('ok', { description: 'Always ok when the process answers.' }) }),
        },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'readyz',
        tags: ['Operations'],
        summary: 'Readiness: database reachable and migrations applied',
        response: {
          200: Type.Object({ status: Type.Literal('ready', { description: 'The service can take traffic.' }) }),
          ...problemResponses(503),
        },
      },
    },
    async (_request, reply) => {
      if (deps.isDraining()) return reply.code(503).send(unavailable('The service is shutting down.', _request.id));
      try {
        if (!(await migrationsApplied(deps.db, deps.migrationCount))) {
          return reply.code(503).send(unavailable('Database migrations are not all applied.', _request.id));
        }
      } catch {
        return reply.code(503).send(unavailable('The database is not reachable.', _request.id));
      }
      return { status: 'ready' as const };
    },
  );

  app.get(
    '/metrics',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'metrics',
        tags: ['Operations'],
        summary: 'Prometheus metrics (text exposition format)',
        produces: ['text/plain'],
        response: { 200: Type.String({ description: 'Prometheus text format.' }) },
      },
    },
    async (_request, reply) => {
      reply.header('content-type', deps.registry.contentType);
      return deps.registry.metrics();
    },
  );

  app.get(
    '/v1/openapi.json',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'openapi',
        tags: ['Operations'],
        summary: 'This API as an OpenAPI 3.1 document',
        response: { 200: Type.Object({}, { additionalProperties: true, description: 'The OpenAPI 3.1 document.' }) },
      },
    },
    async (_request, reply) => {
      reply.header('content-type', 'application/json; charset=utf-8');
      return JSON.stringify(app.swagger());
    },
  );

  let docsHtml: string | undefined;
  app.get(
    '/docs',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'docs',
        tags: ['Operations'],
        summary: 'The API reference, rendered as HTML',
        response: { 200: htmlResponse('An HTML page.') },
      },
    },
    async (_request, reply) => {
      docsHtml ??= renderDocs(app.swagger() as unknown as Record<string, unknown>);
      reply.header('content-type', 'text/html; charset=utf-8').header('content-security-policy', DOCS_CSP);
      return docsHtml;
    },
  );
}

function unavailable(detail: string, requestId: string) {
  return {
    type: 'https://payments.example/errors/service_unavailable',
    title: 'Service unavailable',
    status: 503,
    detail,
    code: 'service_unavailable',
    request_id: requestId,
  };
}
