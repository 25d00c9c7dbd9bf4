// Operational routes: liveness, readiness, metrics, the OpenAPI document and the rendered reference.
import { Type } from 'typebox';
import type { Registry } from 'prom-client';
import type { Db } from '../../db/pool.js';
import { readiness } from '../../db/migrate.js';
import { DOCS_CSP, renderDocs } from '../../platform/docs-page.js';
import type { App } from '../../platform/http.js';
import { ApiError, DATABASE_RETRY_AFTER_SECONDS } from '../../platform/errors.js';
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
          200: Type.Object(
            { status: Type.Literal('ok', { description: 'Always ok when the process answers.' }) },
            { description: 'The process is up.' },
          ),
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
        summary: 'Readiness: a writable database reachable and migrations applied',
        response: {
          200: Type.Object(
            { status: Type.Literal('ready', { description: 'The service can take traffic.' }) },
            { description: 'The service is ready.' },
          ),
          ...problemResponses(503),
        },
      },
    },
    async () => {
      // Problems like every other: application/problem+json, through the error handler.
      if (deps.isDraining())
        throw new ApiError('service_unavailable', 'The service is shutting down.', { headers: { 'Retry-After': '1' } });
      let state: Awaited<ReturnType<typeof readiness>>;
      try {
        state = await readiness(deps.db, deps.migrationCount);
      } catch {
        throw new ApiError('database_unavailable', 'The database is not reachable.', {
          headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
        });
      }
      // Behind a proxy that has not switched yet after a failover, the server reached may be the old primary, now a
      // standby: it answers, but takes no writes.
      if (state.standby) {
        throw new ApiError('database_unavailable', 'The database reached is a standby and takes no writes.', {
          headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
        });
      }
      if (!state.applied) {
        throw new ApiError('service_unavailable', 'Database migrations are not all applied.', {
          headers: { 'Retry-After': '5' },
        });
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
