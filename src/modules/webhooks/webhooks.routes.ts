// Routes for webhook endpoints and the events API. No SQL here.
import { Type } from 'typebox';
import { requireAuth } from '../../platform/auth.js';
import { sendJsonText, sendStored, type App } from '../../platform/http.js';
import { idempotencyOf } from '../../platform/idempotency.js';
import { ListQuery } from '../../platform/pagination.js';
import {
  BEARER_PROBLEMS,
  BODY_PROBLEMS,
  IDEMPOTENCY_PROBLEMS,
  LIST_QUERY_PROBLEMS,
  OptionalIdempotencyKey,
  problemResponses,
} from '../../platform/schemas.js';
import { EVENT_TYPES, TEST_EVENT_TYPE } from './event-types.js';
import {
  CreateEndpointBody,
  DeliveryPage,
  DeliverySchema,
  EndpointDeliveryPage,
  EndpointIdParams,
  EndpointPage,
  EndpointSchema,
  EndpointWithSecretSchema,
  EventIdParams,
  EventPage,
  EventSchema,
  ListEndpointDeliveriesQuery,
  ListEndpointsQuery,
  ListEventsQuery,
  MAX_ENDPOINTS,
  ResendBody,
  ResendResponse,
  UpdateEndpointBody,
} from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';
import { INTEGRATOR } from '../../platform/access.js';

const DELIVERY_RULES =
  'Each delivery is a POST of `{"id", "type", "timestamp", "data"}` signed per Standard Webhooks (`webhook-id` is the event id, ' +
  'the same on every retry and resend; `webhook-timestamp`; `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`). ' +
  '2xx is success; anything else, a timeout (15 s) or a refused connection is retried immediately, then after 5 s, 5 min, 30 min, ' +
  '2 h, 5 h, 10 h and 10 h (±10% jitter; a later `Retry-After` on 429 or 503 is honoured), then the delivery is failed. ' +
  '410 Gone disables the endpoint. Redirects are not followed.';

/*
 * STORED_EVENTS: the events routes send each event as it was stored and delivered, with JSON.stringify. The typed
 * Event schema (a oneOf of today's objects) stays their declared answer for the document; serialising through it
 * would drop fields an older event carries and answer 500 for one whose data lacks a field today's schema requires.
 */
export function webhooksRoutes(app: App, service: WebhooksService): void {
  app.post(
    '/v1/webhooks/endpoints',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'webhooks',
        audit: { action: 'webhook_endpoint.create', objectType: 'webhook_endpoint' },
      },
      schema: {
        operationId: 'createWebhookEndpoint',
        tags: ['Webhooks'],
        summary: 'Register a webhook endpoint',
        description:
          `201 with the endpoint and its signing secret, shown only here. A workspace may have ${MAX_ENDPOINTS} endpoints ` +
          '(then 409 `webhook_endpoint_limit_reached`). An unusable URL is 400 `invalid_webhook_url`. An Idempotency-Key is honoured. ' +
          'The endpoint receives events that happen after it is created. ' +
          DELIVERY_RULES,
        body: CreateEndpointBody,
        headers: OptionalIdempotencyKey,
        response: {
          201: EndpointWithSecretSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_webhook_url'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'webhook_endpoint_limit_reached'],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false, auth.credentialId);
      return sendStored(reply, await service.create(auth.workspaceId, request.body, key, fingerprint));
    },
  );

  app.get(
    '/v1/webhooks/endpoints',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listWebhookEndpoints',
        tags: ['Webhooks'],
        summary: 'List webhook endpoints',
        description:
          "The workspace's endpoints (deleted ones excepted), newest first, paged by cursor. Secrets are never shown here.",
        querystring: ListEndpointsQuery,
        response: { 200: EndpointPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    async (request) => service.list(requireAuth(request).workspaceId, request.query),
  );

  app.get(
    '/v1/webhooks/endpoints/:id',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getWebhookEndpoint',
        tags: ['Webhooks'],
        summary: 'Get a webhook endpoint',
        params: EndpointIdParams,
        response: { 200: EndpointSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    async (request) => service.get(requireAuth(request).workspaceId, request.params.id),
  );

  app.patch(
    '/v1/webhooks/endpoints/:id',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'webhooks',
        audit: { action: 'webhook_endpoint.update', objectType: 'webhook_endpoint' },
      },
      schema: {
        operationId: 'updateWebhookEndpoint',
        tags: ['Webhooks'],
        summary: 'Change a webhook endpoint',
        description:
          'Changes the URL, the event types, the description, or the status. Disabling marks its pending deliveries failed ' +
          '(resend them from the events API); enabling clears `disabled_reason`, also after a 410.',
        params: EndpointIdParams,
        body: UpdateEndpointBody,
        response: {
          200: EndpointSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_webhook_url'],
            404: ['not_found'],
          }),
        },
      },
    },
    async (request) => service.update(requireAuth(request).workspaceId, request.params.id, request.body),
  );

  app.delete(
    '/v1/webhooks/endpoints/:id',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'webhooks',
        audit: { action: 'webhook_endpoint.delete', objectType: 'webhook_endpoint' },
      },
      schema: {
        operationId: 'deleteWebhookEndpoint',
        tags: ['Webhooks'],
        summary: 'Delete a webhook endpoint',
        description:
          '204. Its pending deliveries stop; its delivery log stays readable from the events API. Deleting again is 404.',
        params: EndpointIdParams,
        response: {
          204: Type.Null({ description: 'Deleted.' }),
          ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request, reply) => {
      await service.delete(requireAuth(request).workspaceId, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/v1/webhooks/endpoints/:id/rotate-secret',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'webhooks',
        audit: { action: 'webhook_endpoint.rotate_secret', objectType: 'webhook_endpoint', objectId: 'params.id' },
      },
      schema: {
        operationId: 'rotateWebhookSecret',
        tags: ['Webhooks'],
        summary: 'Rotate the signing secret',
        description:
          '200 with the endpoint and its new secret, shown only here. For the next 24 hours every delivery carries two signatures, ' +
          'one with each secret, so a receiver can switch to the new secret at its own pace without rejecting an event. ' +
          'An Idempotency-Key is honoured.',
        params: EndpointIdParams,
        headers: OptionalIdempotencyKey,
        response: {
          200: EndpointWithSecretSchema,
          ...problemResponses({ ...BEARER_PROBLEMS, ...IDEMPOTENCY_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false, auth.credentialId);
      return sendStored(reply, await service.rotateSecret(auth.workspaceId, request.params.id, key, fingerprint));
    },
  );

  app.post(
    '/v1/webhooks/endpoints/:id/test',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'webhooks',
        audit: { action: 'webhook_endpoint.test', objectType: 'webhook_endpoint', objectId: 'params.id' },
      },
      schema: {
        operationId: 'testWebhookEndpoint',
        tags: ['Webhooks'],
        summary: 'Send a test event',
        description:
          `202 with the delivery queued: one attempt, right away, of a new \`${TEST_EVENT_TYPE}\` event whose \`data\` is the endpoint, ` +
          'to this endpoint only, whatever event types it subscribes to. It is signed and sent like any delivery; follow it in ' +
          '`GET /v1/webhooks/endpoints/{id}/deliveries`. The event is listed by the events API and can be resent. ' +
          'A disabled endpoint is 409 `webhook_endpoint_disabled`. An Idempotency-Key is honoured.',
        params: EndpointIdParams,
        headers: OptionalIdempotencyKey,
        response: {
          202: DeliverySchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'webhook_endpoint_disabled'],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false, auth.credentialId);
      return sendStored(reply, await service.sendTest(auth.workspaceId, request.params.id, key, fingerprint));
    },
  );

  app.get(
    '/v1/webhooks/endpoints/:id/deliveries',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listWebhookEndpointDeliveries',
        tags: ['Webhooks'],
        summary: "An endpoint's delivery log",
        description:
          "The endpoint's deliveries of every event (sent because it subscribes, resends and tests), newest first, paged by " +
          'cursor, filtered by `status` and creation time; each lists its attempts: status code, duration, the first 4 KB of the ' +
          'answer, the error. Each attempt POSTed the event (`GET /v1/events/{event_id}`) as its body, with `webhook-id` the ' +
          "event id and `webhook-timestamp` the attempt's `created_at` in seconds. Finished deliveries are deleted after 30 days " +
          '(`WEBHOOK_DELIVERY_RETENTION_DAYS`). A deleted endpoint is 404: its deliveries stay readable from the events API.',
        params: EndpointIdParams,
        querystring: ListEndpointDeliveriesQuery,
        response: {
          200: EndpointDeliveryPage,
          ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request) => service.endpointDeliveries(requireAuth(request).workspaceId, request.params.id, request.query),
  );

  app.get(
    '/v1/events',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listEvents',
        tags: ['Events'],
        summary: 'List events',
        description: `The workspace's events, newest first, filtered by type, object and creation time. Types: ${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}.`,
        querystring: ListEventsQuery,
        response: { 200: EventPage, ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS }) },
      },
    },
    // STORED_EVENTS: each event as stored, not re-serialised through the typed Event schema.
    async (request, reply) =>
      sendJsonText(reply, JSON.stringify(await service.listEvents(requireAuth(request).workspaceId, request.query))),
  );

  app.get(
    '/v1/events/:id',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'getEvent',
        tags: ['Events'],
        summary: 'Get an event',
        description: 'The event exactly as deliveries carry it in their body.',
        params: EventIdParams,
        response: { 200: EventSchema, ...problemResponses({ ...BEARER_PROBLEMS, 404: ['not_found'] }) },
      },
    },
    // STORED_EVENTS: the event as stored, as its deliveries carried it.
    async (request, reply) =>
      sendJsonText(reply, JSON.stringify(await service.getEvent(requireAuth(request).workspaceId, request.params.id))),
  );

  app.get(
    '/v1/events/:id/deliveries',
    {
      config: { auth: INTEGRATOR },
      schema: {
        operationId: 'listEventDeliveries',
        tags: ['Events'],
        summary: "An event's deliveries and their attempt log",
        description:
          'One delivery per endpoint (and per resend), newest first; each lists its attempts: status code, duration, the first 4 KB of ' +
          'the answer, the error. A delivery that succeeded or failed is deleted with its attempts 30 days after it finished ' +
          '(`WEBHOOK_DELIVERY_RETENTION_DAYS`); the event stays and can be resent.',
        params: EventIdParams,
        querystring: ListQuery,
        response: {
          200: DeliveryPage,
          ...problemResponses({ ...BEARER_PROBLEMS, 400: LIST_QUERY_PROBLEMS, 404: ['not_found'] }),
        },
      },
    },
    async (request) => service.deliveries(requireAuth(request).workspaceId, request.params.id, request.query),
  );

  app.post(
    '/v1/events/:id/resend',
    {
      config: {
        auth: INTEGRATOR,
        permission: 'events',
        audit: { action: 'event.resend', objectType: 'event', objectId: 'params.id' },
      },
      schema: {
        operationId: 'resendEvent',
        tags: ['Events'],
        summary: 'Resend an event',
        description:
          '202: one new attempt, right away, to the named endpoint or to every enabled endpoint subscribed to the event type, with the same ' +
          '`webhook-id` as before (receivers that deduplicate on it see a repeat). A disabled endpoint is 409 `webhook_endpoint_disabled`; ' +
          'no endpoint to send to is 409 `no_webhook_endpoints`. An Idempotency-Key is honoured.',
        params: EventIdParams,
        body: ResendBody,
        headers: OptionalIdempotencyKey,
        response: {
          202: ResendResponse,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS],
            404: ['not_found'],
            409: [...IDEMPOTENCY_PROBLEMS[409], 'webhook_endpoint_disabled', 'no_webhook_endpoints'],
            422: [...IDEMPOTENCY_PROBLEMS[422]],
          }),
        },
      },
      // The body is optional: none means every subscribed endpoint.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const auth = requireAuth(request);
      const { key, fingerprint } = idempotencyOf(request, false, auth.credentialId);
      return sendStored(
        reply,
        await service.resend(auth.workspaceId, request.params.id, request.body, key, fingerprint),
      );
    },
  );
}
