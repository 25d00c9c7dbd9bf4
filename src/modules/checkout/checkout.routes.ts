// Routes for hosted checkout: sessions (create, read, list), the by-token endpoints the payer's page
// calls without an API key (/v1/checkout/by-token/{token}), and the page itself at /checkout/{token}. No SQL here.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireAuth } from '../../platform/auth.js';
import { WorkspaceRails } from '../workspace-configuration/workspace-rails.js';
import { ApiError } from '../../platform/errors.js';
import { sendStored, type App } from '../../platform/http.js';
import { idempotencyOf } from '../../platform/idempotency.js';
import { clientKey, TokenBuckets, type RateLimitOptions } from '../../platform/rate-limit.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  htmlResponse,
  IDEMPOTENCY_PROBLEMS,
  LIST_QUERY_PROBLEMS,
  OptionalIdempotencyKey,
  problemResponses,
  REQUIRED_IDEMPOTENCY_PROBLEMS,
  RequiredIdempotencyKey,
} from '../../platform/schemas.js';
import {
  CHECKOUT_CSP,
  CHECKOUT_HEADERS,
  renderCheckoutPage,
  renderNotFoundPage,
  renderRateLimitedPage,
} from './checkout.page.js';
import {
  CreateSessionBody,
  ListSessionsQuery,
  PayBody,
  PayerViewSchema,
  SessionIdParams,
  SessionPage,
  SessionSchema,
  TokenParams,
} from './checkout.schemas.js';
import type { CheckoutService } from './checkout.service.js';
import { PREDICTION_PROBLEMS } from '../predict/predict.problems.js';
import { CheckoutPredictBody, PredictionSchema } from '../predict/predict.schemas.js';
import { INTEGRATOR } from '../../platform/access.js';

/** How many times more requests one client may make across all links than on one link (many payers share a carrier's NAT). */
const CLIENT_FACTOR = 20;
/** How many times more requests one link may take from all clients together than from one. */
const LINK_FACTOR = 4;

/**
 * The payer's endpoints carry no credential: they are limited per link and client, per link across clients, and
 * per client across links (which also slows anyone guessing tokens, though 256 random bits are not guessable).
 */
class PayerLimits {
  private readonly perLinkClient: TokenBuckets;
  private readonly perLink: TokenBuckets;
  private readonly perClient: TokenBuckets;

  constructor(private readonly options: RateLimitOptions) {
    this.perLinkClient = new TokenBuckets(options);
    this.perLink = new TokenBuckets({ perSecond: options.perSecond * LINK_FACTOR, burst: options.burst * LINK_FACTOR });
    this.perClient = new TokenBuckets({
      perSecond: options.perSecond * CLIENT_FACTOR,
      burst: options.burst * CLIENT_FACTOR,
    });
  }

  /** Seconds to wait when the request is over a limit, else undefined; sets the RateLimit-* headers of the link and client bucket. */
  check(token: string, ip: string, reply: FastifyReply): number | undefined {
    const client = clientKey(ip);
    const results = [
      this.perLinkClient.take(`${token}|${client}`),
      this.perLink.take(token),
      this.perClient.take(client),
    ];
    const own = results[0] as ReturnType<TokenBuckets['take']>;
    reply.header('RateLimit-Limit', String(this.options.burst));
    reply.header('RateLimit-Remaining', String(own.remaining));
    reply.header('RateLimit-Reset', String(own.resetSeconds));
    const refused = results.filter((r) => !r.allowed);
    return refused.length === 0 ? undefined : Math.max(...refused.map((r) => r.retryAfterSeconds));
  }
}

/** The page's own headers: HTML, its content security policy and the payer headers. */
function pageHeaders(reply: FastifyReply): FastifyReply {
  reply.header('content-type', 'text/html; charset=utf-8').header('content-security-policy', CHECKOUT_CSP);
  for (const [name, value] of Object.entries(CHECKOUT_HEADERS)) reply.header(name, value);
  return reply;
}

/** Whether a request is for the hosted payment page (`/checkout/{token}`), whose every answer is a page. */
export const isCheckoutPage = (url: string): boolean => /^\/checkout\/[^/?]*(?:\?|$)/.test(url);

/**
 * The 404 page for a link that leads nowhere: an unknown token, and one the router or the schema refuses before the
 * route sees it (over its length, bad percent-encoding): the payer gets the page the document declares, not JSON.
 */
export function sendUnknownLinkPage(reply: FastifyReply): FastifyReply {
  return pageHeaders(reply).code(404).send(renderNotFoundPage());
}

export function checkoutRoutes(app: App, service: CheckoutService, limits: RateLimitOptions): void {
  const payer = new PayerLimits(limits);
  const limitApi = async (
    request: FastifyRequest<{ Params: { token: string } }>,
    reply: FastifyReply,
  ): Promise<void> => {
    for (const [name, value] of Object.entries(CHECKOUT_HEADERS)) reply.header(name, value);
    const wait = payer.check(request.params.token, request.ip, reply);
    if (wait !== undefined) {
      throw new ApiError('rate_limited', `Too many requests for this payment link; retry after ${wait} s.`, {
        headers: { 'Retry-After': String(wait) },
      });
    }
  };

  app.post(
    '/v1/checkout/sessions',
    {
      config: { auth: INTEGRATOR, permission: 'collections', fieldCodes: { customer: 'invalid_customer' } },

      schema: {
        operationId: 'createCheckoutSession',
        tags: ['Checkout'],
        summary: 'Create a hosted checkout session',
        description:
          'Send the payer to the returned `session_url`. The page offers the rails of the market, takes the payment as a collection ' +
          "(each attempt is a collection carrying the session's reference and metadata), and on success sends the payer to `redirect_url` " +
          'with `session_id` and `status`. Confirm the outcome with GET /v1/checkout/sessions/{id} or the `checkout.session.completed` ' +
          'webhook; `checkout.session.expired` says it was never paid. An `Idempotency-Key` is honoured.',
        headers: OptionalIdempotencyKey,
        body: CreateSessionBody,
        response: {
          201: SessionSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_market', 'invalid_currency', 'invalid_customer', 'invalid_redirect_url'],
            409: IDEMPOTENCY_PROBLEMS[409],
            422: [...IDEMPOTENCY_PROBLEMS[422], 'amount_out_of_range'],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false);
      return sendStored(
        reply,
        await service.create(auth.workspaceId, request.body, key, fingerprint, WorkspaceRails.of(auth.enabledRails)),
      );
    },
  );

  app.get(
    '/v1/checkout/sessions',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listCheckoutSessions',
        tags: ['Checkout'],
        summary: 'List checkout sessions',
        description:
          "The workspace's checkout sessions, newest first, filtered by status and creation time, paged by cursor.",
        querystring: ListSessionsQuery,
        response: { 200: SessionPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.list(requireAuth(request).workspaceId, request.query),
  );

  app.get(
    '/v1/checkout/sessions/:id',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getCheckoutSession',
        tags: ['Checkout'],
        summary: 'Read a checkout session (poll its final status)',
        description: "`complete` and `expired` are final. `collection_id` names the latest attempt's collection.",
        params: SessionIdParams,
        response: { 200: SessionSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.get(requireAuth(request).workspaceId, request.params.id),
  );

  app.get(
    '/v1/checkout/by-token/:token',
    {
      config: { auth: 'public' },
      onRequest: limitApi,
      schema: {
        operationId: 'getCheckoutByToken',
        tags: ['Checkout (payer)'],
        summary: "The payer's view of a checkout session",
        description:
          'Called by the hosted page; needs no API key, only the token from `session_url`. Shows what the payer needs: merchant, amount, ' +
          "rails, status and the latest attempt's instruction. Never metadata, never ids of other objects. Limited per link and client.",
        params: TokenParams,
        response: { 200: PayerViewSchema, ...problemResponses({ 404: ['not_found'], 429: ['rate_limited'] }) },
      },
    },
    async (request) => service.view(request.params.token),
  );

  app.post(
    '/v1/checkout/by-token/:token/pay',
    {
      config: { auth: 'public', fieldCodes: { customer: 'invalid_customer' } },
      onRequest: limitApi,
      schema: {
        operationId: 'payCheckoutByToken',
        tags: ['Checkout (payer)'],
        summary: 'Start a payment attempt on a checkout session',
        description:
          'Called by the hosted page with one `Idempotency-Key` per attempt (a retry of the same attempt is answered from the first). ' +
          'Starts a collection on the chosen rail; the session is `processing` until it ends. Wrong details for the rail: 400 ' +
          '`invalid_customer` with field errors. A session already paid or with an attempt running: 409 `checkout_session_not_open`; ' +
          'past its expiry: 409 `checkout_session_expired`.',
        params: TokenParams,
        headers: RequiredIdempotencyKey,
        body: PayBody,
        response: {
          201: PayerViewSchema,
          ...problemResponses({
            400: [...BODY_PROBLEMS, 'invalid_market', 'invalid_rail', 'invalid_currency', 'invalid_customer'],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'checkout_session_not_open', 'checkout_session_expired'],
            422: [...REQUIRED_IDEMPOTENCY_PROBLEMS[422], 'amount_out_of_range', 'amount_not_supported'],
            429: ['rate_limited'],
          }),
        },
      },
    },
    async (request, reply) => {
      const { key, fingerprint } = idempotencyOf(request, true);
      return sendStored(reply, await service.pay(request.params.token, request.body, key, fingerprint));
    },
  );

  app.post(
    '/v1/checkout/by-token/:token/predict-provider',
    {
      config: { auth: 'public' },
      onRequest: limitApi,
      schema: {
        operationId: 'predictProviderByToken',
        tags: ['Checkout (payer)'],
        summary: "Predict the payer's operator on a checkout session",
        description:
          "Called by the hosted page to preselect the rail: POST /v1/predict-provider in the session's market, by token.",
        params: TokenParams,
        body: CheckoutPredictBody,
        response: {
          200: PredictionSchema,
          ...problemResponses({
            400: [...BODY_PROBLEMS, ...PREDICTION_PROBLEMS],
            404: ['not_found'],
            429: ['rate_limited'],
          }),
        },
      },
    },
    async (request) => service.predict(request.params.token, request.body.phone_number),
  );

  app.get(
    '/checkout/:token',
    {
      config: { auth: 'public' },
      // A token the schema refuses is a link that leads nowhere: the 404 page, not a 400 problem document.
      attachValidation: true,
      schema: {
        operationId: 'checkoutPage',
        tags: ['Checkout (payer)'],
        summary: 'The hosted payment page',
        description:
          'The page at `session_url`: English, or French in francophone markets. An unknown or malformed link (a token over its ' +
          'length, bad percent-encoding) is the 404 page, never a problem document.',
        params: TokenParams,
        response: {
          200: htmlResponse('The payment page.'),
          404: htmlResponse('A page saying the link is unknown.'),
          429: htmlResponse('A page asking the payer to wait.'),
        },
      },
    },
    async (request, reply) => {
      if (request.validationError) return sendUnknownLinkPage(reply);
      pageHeaders(reply);
      const wait = payer.check(request.params.token, request.ip, reply);
      if (wait !== undefined)
        return reply.code(429).header('Retry-After', String(wait)).send(renderRateLimitedPage(wait));
      const view = await service.view(request.params.token).catch((err: unknown) => {
        if (err instanceof ApiError && err.code === 'not_found') return undefined;
        throw err;
      });
      if (!view) return sendUnknownLinkPage(reply);
      return reply.send(renderCheckoutPage(request.params.token, view));
    },
  );
}
