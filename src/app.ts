// buildApp: the HTTP side: the platform hooks every route shares, then each module's routes over the services that
// composition.ts builds.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, {
  LogController,
  type FastifyError,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { compose, liveCredentialLookup, type Services } from './composition.js';
import type { Config } from './config.js';
import { isDatabaseUnavailable } from './db/errors.js';
import type { Db } from './db/pool.js';
import { registerAudit } from './platform/audit.js';
import { registerAuth } from './platform/auth.js';
import { ApiError, databaseUnavailable, ERROR_CODES, problemBody, type ErrorCode } from './platform/errors.js';
import type { App } from './platform/http.js';
import { loggerOptions } from './platform/logging.js';
import { registerMetrics } from './platform/metrics.js';
import { idempotencyKeyInvalid, idempotencyKeyMissing } from './platform/idempotency.js';
import { registerRateLimit } from './platform/rate-limit.js';
import { postgresBucketStore } from './platform/rate-limit.repository.js';
import { redisBucketStore } from './platform/rate-limit.redis.js';
import { completeDocument } from './platform/openapi.js';
import { componentSchemas, SharedProblemSchema } from './platform/schemas.js';
import { API_VERSION } from './platform/version.js';
import type { SecretBox } from './platform/secret-box.js';
import type { ServiceKeys } from './platform/secrets.js';
import { TokenService } from './platform/tokens.js';
import {
  bodyAjv,
  fieldErrors,
  lowerCaseHeaderNames,
  queryAjv,
  shareSchemas,
  unsafeJson,
} from './platform/validation.js';
import type { MarketCatalogue } from './modules/catalogue/catalogue.js';
import { auditRoutes } from './modules/audit/audit.routes.js';
import { availabilityRoutes } from './modules/availability/availability.routes.js';
import { beneficiariesRoutes } from './modules/beneficiaries/beneficiaries.routes.js';
import { checkoutRoutes, isCheckoutPage, sendUnknownLinkPage } from './modules/checkout/checkout.routes.js';
import { collectionsRoutes } from './modules/collections/collections.routes.js';
import { credentialsRoutes } from './modules/credentials/credentials.routes.js';
import { dashboardRoutes } from './modules/dashboard/dashboard.routes.js';
import { ledgerRoutes } from './modules/ledger/ledger.routes.js';
import { depositsRoutes } from './modules/deposits/deposits.routes.js';
import { payoutsRoutes } from './modules/payouts/payouts.routes.js';
import { predictRoutes } from './modules/predict/predict.routes.js';
import { marketDataRoutes } from './modules/market-data/market-data.routes.js';
import type { ProviderPlan } from './modules/providers/providers.registry.js';
import { operatorFloatRoutes } from './modules/float/float.routes.js';
import { operatorCallbackRoutes, signedCallbackRoutes } from './modules/providers/callbacks.routes.js';
import { refundsRoutes } from './modules/refunds/refunds.routes.js';
import { reportsRoutes } from './modules/reports/reports.routes.js';
import { riskRoutes } from './modules/risk/risk.routes.js';
import { sandboxRoutes } from './modules/sandbox/sandbox.routes.js';
import { sandboxClockRoutes } from './modules/sandbox/clock.routes.js';
import { systemRoutes } from './modules/system/system.routes.js';
import { webhooksRoutes } from './modules/webhooks/webhooks.routes.js';
import { WEBHOOKS_DOCUMENT } from './modules/webhooks/webhooks.schemas.js';
import type { LookUpAddresses } from './modules/webhooks/url-guard.js';
import { workspaceConfigurationRoutes } from './modules/workspace-configuration/workspace-configuration.routes.js';

export { API_VERSION };
export const BODY_LIMIT = 1024 * 1024;

export interface AppDeps {
  config: Config;
  db: Db;
  /** The background work's connections (see `OpenDatabase.workerPool`): the submitter's and the providers'; `db` when unset. */
  workerDb?: Db;
  keys: ServiceKeys;
  /** The secrets key (platform/secret-box.ts). */
  box: SecretBox;
  catalogue: MarketCatalogue;
  /** Which provider runs each rail (checked against the configuration before the database was opened). */
  providerPlan: ProviderPlan;
  migrationCount: number;
  /** Override the logger (tests pass false). */
  logger?: FastifyServerOptions['logger'];
  /** Name resolution for the production webhook address guard (tests may pass their own). */
  lookUpAddresses?: LookUpAddresses;
}

export type { Services };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Body fields whose validation errors carry a more specific code, e.g. customer → invalid_customer. */
    fieldCodes?: Record<string, ErrorCode>;
  }
  interface FastifyRequest {
    /** The JSON body exactly as received (provider callbacks verify their signature over it). */
    rawBody: string | undefined;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp(deps: AppDeps): Promise<{ app: App; services: Services; drain: () => void }> {
  const { config, db } = deps;
  let draining = false;
  const app = Fastify({
    logger: deps.logger ?? loggerOptions(config.logLevel),
    bodyLimit: BODY_LIMIT,
    // A hop count trusts that many proxies nearest to us (fastify's typings take it as a function).
    trustProxy:
      typeof config.trustProxy === 'number'
        ? (
            (hops: number) => (_address: string, i: number) =>
              i < hops
          )(config.trustProxy)
        : config.trustProxy,
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'request_id' }),
    genReqId: (req) => {
      const inbound = req.headers['x-request-id'];
      return typeof inbound === 'string' && REQUEST_ID.test(inbound) ? inbound : randomUUID();
    },
    // Draining answers with our own 503 problem (below), not fastify's plain one.
    return503OnClosing: false,
    // A request must arrive in full (headers and body) within this; a client that stalls gets 408 and is closed, and
    // cannot hold a graceful stop up. Node checks the open connections every second; it times a stalled body by
    // headersTimeout (60 s unless set at creation), so both are set here.
    requestTimeout: config.requestTimeoutMs,
    http: {
      connectionsCheckingInterval: 1000,
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(config.requestTimeoutMs, 60_000),
    },
    // What Node's HTTP parser refuses before any route sees it is a problem document too.
    clientErrorHandler: answerClientError,
    // Framework-level rejections (bad percent-encoding, an over-long path segment) get problem documents too.
    frameworkErrors: (error, request, reply) => {
      // The hosted payment page answers a link it cannot even route (a token over its length) with its 404 page.
      if (isCheckoutPage(request.url)) {
        const page = reply as unknown as FastifyReply;
        page.header('X-Request-Id', request.id).header('API-Version', API_VERSION);
        return sendUnknownLinkPage(page);
      }
      const apiError =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new ApiError('not_found', 'No object has an identifier that long.')
          : new ApiError('validation_failed', 'The URL is not valid: check its percent-encoding.');
      const plain = reply as unknown as FastifyReply;
      plain.header('X-Request-Id', request.id).header('API-Version', API_VERSION);
      return sendProblem(plain, apiError, request.id);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are validated without coercion ("100" is not an amount); query strings and params are coerced.
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body'
      ? bodyAjv.compile(schema)
      : queryAjv.compile(httpPart === 'headers' ? lowerCaseHeaderNames(schema) : schema),
  );
  app.removeContentTypeParser(['text/plain']);
  // A body-less POST or DELETE that still says Content-Type: application/json (many clients always send it)
  // is a request without a body, not a JSON error.
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.decorateRequest('rawBody', undefined);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    request.rawBody = body as string;
    void jsonParser(request, body as string, done);
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
    reply.header('API-Version', API_VERSION);
    if (draining && request.routeOptions.url !== '/healthz') {
      reply.header('Connection', 'close');
      throw new ApiError('service_unavailable', 'The service is shutting down; retry on another connection.', {
        headers: { 'Retry-After': '1' },
      });
    }
  });

  // Before schema validation: what PostgreSQL could not store, or nesting deep enough to hurt, is a 400 here
  // rather than a 500 later.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined || request.body === null || typeof request.body !== 'object') return;
    const problem = unsafeJson(request.body);
    if (problem)
      throw new ApiError(
        'validation_failed',
        `The request body cannot be accepted: ${problem.field} ${problem.message}.`,
        { errors: [problem] },
      );
  });

  // A route whose schema declares no body (DELETE /v1/credentials/{id}, POST …/rotate-secret) refuses one: 415, the
  // status a body in another media type gets anyway, so any body sent there is answered alike. An empty body is none
  // (the parser above), whatever its Content-Type says.
  app.addHook('preValidation', async (request) => {
    if (request.body !== undefined && takesNoBody(request)) throw noRequestBody();
  });

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    let apiError = toApiError(error, request.routeOptions.config?.fieldCodes);
    if (apiError.code === 'unsupported_media_type' && takesNoBody(request)) apiError = noRequestBody();
    // Only the error's own words: a database error's detail and context can quote the row (phone numbers).
    if (apiError.code === 'database_unavailable') {
      request.log.warn({ err: { type: error.name, message: error.message, code: error.code } }, 'database unavailable');
    } else if (error instanceof ApiError && apiError.status >= 500 && apiError.code !== 'internal_error') {
      // A refusal the service chose (overloaded, shutting down, an operator away): no fault of ours, no stack to read.
      request.log.warn({ code: apiError.code, detail: apiError.message }, 'request refused');
    } else if (apiError.status >= 500) {
      request.log.error(
        { err: { type: error.name, message: error.message, code: error.code, stack: error.stack } },
        'request failed',
      );
    }
    return sendProblem(reply, apiError, request.id);
  });
  // Every route's path as a pattern, with its method: a known path asked with another method is 405 with Allow.
  const routes: { method: string; path: RegExp }[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of Array.isArray(route.method) ? route.method : [route.method])
      routes.push({ method, path: pathPattern(route.url) });
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = [...new Set(routes.filter((r) => r.path.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      return sendProblem(
        reply,
        new ApiError('method_not_allowed', `${request.method} is not allowed on ${path}: use ${allowed.join(', ')}.`),
        request.id,
      );
    }
    return sendProblem(reply, new ApiError('not_found', `No route ${request.method} ${path}.`), request.id);
  });

  // Every problem response refers to this one schema ({ $ref: 'Problem#' }, see problemResponses): the document has it once,
  // as #/components/schemas/Problem (components are named by $id), and responses are still serialized with it.
  app.addSchema(SharedProblemSchema);
  // Every response resource is a named component (Collection, Refund, …): once in the document, referred to by $ref.
  for (const schema of componentSchemas()) app.addSchema(schema);
  // The validators get them too, the problem among them: a component may refer to it (a bulk answer's refused item), and
  // a second app in the same process finds the components already added and compiles them.
  shareSchemas([SharedProblemSchema, ...componentSchemas()]);
  await app.register(swagger, {
    transformObject: (documents) =>
      'openapiObject' in documents
        ? completeDocument(documents.openapiObject as Record<string, unknown>)
        : documents.swaggerObject,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Payments service API',
        version: API_VERSION,
        description:
          'Collections over mobile-money and bank rails in African markets, refunds, hosted checkout, payouts and signed webhooks. ' +
          'Amounts are integers in minor units. Errors are RFC 9457 problem documents with a stable `code`.',
      },
      servers: [{ url: config.publicBaseUrl, description: config.paymentsEnv }],
      // Deliveries as OpenAPI 3.1 webhooks, with the headers and answer they share.
      webhooks: WEBHOOKS_DOCUMENT.webhooks,
      components: {
        parameters: WEBHOOKS_DOCUMENT.parameters,
        responses: WEBHOOKS_DOCUMENT.responses,
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'A workspace-scoped token (see /v1/credentials).',
          },
        },
      },
    },
  });

  const tokens = new TokenService(deps.keys, config.paymentsEnv);
  registerAuth(app, liveCredentialLookup(db), tokens, config.authFailuresPerMinute);
  // The per-credential buckets are shared by every node: through Redis when REDIS_URL is set, else PostgreSQL.
  registerRateLimit(
    app,
    { perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst },
    config.redisUrl ? redisBucketStore(config.redisUrl) : postgresBucketStore(db),
  );
  const registry = registerMetrics(app);

  const services = compose({
    config,
    db,
    workerDb: deps.workerDb ?? db,
    keys: deps.keys,
    box: deps.box,
    catalogue: deps.catalogue,
    providerPlan: deps.providerPlan,
    tokens,
    metrics: registry,
    log: app.log,
    lookUpAddresses: deps.lookUpAddresses,
  });

  // The audit log: every route that declares config.audit is recorded by one hook, right before it answers.
  registerAudit(app, (entry) => services.audit.record(entry));

  systemRoutes(app, { db, registry, migrationCount: deps.migrationCount, isDraining: () => draining });
  credentialsRoutes(app, {
    db,
    credentials: services.credentials,
    idempotency: services.idempotency,
    env: config.paymentsEnv,
  });
  collectionsRoutes(app, services.collections);
  checkoutRoutes(app, services.checkout, {
    perSecond: config.checkoutRateLimitPerSecond,
    burst: config.checkoutRateLimitBurst,
  });
  predictRoutes(app, services.predict);
  availabilityRoutes(app, services.availability);
  refundsRoutes(app, services.refunds);
  ledgerRoutes(app, db);
  reportsRoutes(app, services.reports);
  auditRoutes(app, services.audit);
  beneficiariesRoutes(app, services.beneficiaries);
  marketDataRoutes(app, services.marketData);
  riskRoutes(app, services.risk);
  depositsRoutes(app, services.deposits, config.paymentsEnv);
  payoutsRoutes(app, services.payouts);
  signedCallbackRoutes(app, services.notices);
  operatorCallbackRoutes(app, services.notices);
  operatorFloatRoutes(app, services.operatorFloat);
  webhooksRoutes(app, services.webhooks);
  workspaceConfigurationRoutes(app, services.workspaceConfiguration);
  // The simulate endpoints exist only in the sandbox: in production they are unknown routes (404).
  if (services.sandbox) sandboxRoutes(app, services.sandbox);
  if (services.sandboxClock) sandboxClockRoutes(app, services.sandboxClock);
  // The dashboard's pages call the routes above through the SDK, in-process.
  dashboardRoutes(app, { db, box: deps.box, tokens, catalogue: deps.catalogue, config });

  await app.ready();
  return {
    app,
    services,
    drain: () => {
      draining = true;
    },
  };
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A write to a documented route whose schema declares no request body (the dashboard's hidden form routes aside). */
function takesNoBody(request: FastifyRequest): boolean {
  const schema = request.routeOptions.schema;
  return WRITE_METHODS.has(request.method) && schema !== undefined && schema.hide !== true && schema.body === undefined;
}

const noRequestBody = (): ApiError =>
  new ApiError(
    'unsupported_media_type',
    'This endpoint takes no request body: send none (an empty body with Content-Type: application/json counts as none).',
  );

/** A route's URL as fastify declares it (`/v1/collections/:id/refund`) as a pattern of request paths. */
function pathPattern(url: string): RegExp {
  const segments = url
    .split('/')
    .map((s) => (s.startsWith(':') ? '[^/]+' : s === '*' ? '.*' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}$`);
}

/**
 * What Node's HTTP parser refuses before fastify sees a request (bad framing, headers over Node's 16 KiB, a request
 * not in full within REQUEST_TIMEOUT_MS): a problem document with its request id and API version, then the connection
 * closes, since the stream can no longer be read reliably.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const apiError =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError('request_timeout', 'The request did not arrive in full in time; the connection is closed.')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large', 'The request headers are larger than 16 KiB.')
        : new ApiError('validation_failed', 'The request is not valid HTTP/1.1; the connection is closed.');
  const requestId = randomUUID();
  const body = JSON.stringify(problemBody(apiError, requestId));
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status] ?? ''}\r\n` +
        `Content-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nAPI-Version: ${API_VERSION}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  // Whatever the client does next, the connection does not outlive the answer by long.
  setTimeout(() => socket.destroy(), 1000).unref();
}

function sendProblem(reply: FastifyReply, error: ApiError, requestId: string): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  reply.code(error.status).type('application/problem+json');
  return reply.send(problemBody(error, requestId));
}

/** What failed validation, as a problem's detail names it, with its verb: the body "has" a problem, the headers "have" one. */
const VALIDATION_PLACES: Record<string, readonly [string, 'has' | 'have']> = {
  body: ['request body', 'has'],
  querystring: ['query parameters', 'have'],
  params: ['path parameters', 'have'],
  headers: ['headers', 'have'],
};

/** Maps anything thrown in a request to the contract's error: framework errors get their stable codes. */
function toApiError(error: FastifyError | ApiError, fieldCodes: Record<string, ErrorCode> | undefined): ApiError {
  if (error instanceof ApiError) return error;
  // A restart, a failover, a network cut: nothing is wrong with the request, and a retry (with the same
  // Idempotency-Key) gets the stored outcome if the write committed, or makes it once if it did not.
  if (isDatabaseUnavailable(error)) return databaseUnavailable();
  if (error.validation) {
    const context = error.validationContext;
    const errors = fieldErrors(error.validation as Parameters<typeof fieldErrors>[0]);
    let code: ErrorCode = 'validation_failed';
    // Fastify validates header names lower-cased: an absent key is `missing`, one not of the declared form `invalid`.
    const keyErrors = context === 'headers' ? errors.filter((e) => e.field === 'idempotency-key') : [];
    if (keyErrors.length > 0)
      return keyErrors.some((e) => e.message === 'is required') ? idempotencyKeyMissing() : idempotencyKeyInvalid();
    if (context === 'body' && fieldCodes) {
      for (const [prefix, specific] of Object.entries(fieldCodes)) {
        if (errors.length > 0 && errors.every((e) => e.field === prefix || e.field.startsWith(`${prefix}.`)))
          code = specific;
      }
    }
    const [where, has] = VALIDATION_PLACES[context ?? ''] ?? ['request', 'has'];
    return new ApiError(
      code,
      `The ${where} ${has} ${errors.length === 1 ? 'a problem' : 'problems'}: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}.`,
      { errors },
    );
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is larger than 1 MiB.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'The body is empty but Content-Type says JSON.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // The parser also refuses __proto__ and constructor.prototype keys (prototype pollution), with the same error.
      return new ApiError(
        'invalid_json',
        'The body is not valid JSON, or it uses a reserved key (__proto__, constructor.prototype).',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('validation_failed', 'Content-Length does not match the body.');
    default:
      break;
  }
  const status = error.statusCode ?? 500;
  if (status === 400 && error instanceof SyntaxError)
    return new ApiError('invalid_json', 'The body is not valid JSON.');
  if (status === 413) return new ApiError('payload_too_large', 'The request body is larger than 1 MiB.');
  if (status === 415)
    return new ApiError('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".');
  if (status >= 400 && status < 500) {
    const known = (Object.keys(ERROR_CODES) as ErrorCode[]).find(
      (c) => ERROR_CODES[c].status === status && c !== 'validation_failed',
    );
    return new ApiError(status === 400 ? 'validation_failed' : (known ?? 'validation_failed'), error.message);
  }
  return new ApiError('internal_error', 'Something went wrong on our side; the request id helps us find it.');
}
