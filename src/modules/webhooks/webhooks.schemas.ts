// Webhook endpoints, events and their deliveries (contract §10); descriptions write the reference docs.
import { UUID_PATTERN } from '../../platform/ids.js';
import { Type, type Static } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import { ALL_EVENTS, EVENT_TYPES, TEST_EVENT_TYPE } from './event-types.js';
import { MAX_URL_LENGTH } from './url-guard.js';

export const ENDPOINT_STATUSES = ['enabled', 'disabled'] as const;
export const DISABLED_REASONS = ['disabled_by_user', 'endpoint_gone'] as const;
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export const DELIVERY_KINDS = ['event', 'resend', 'test'] as const;
/** How many endpoints (not deleted) one workspace may have. */
export const MAX_ENDPOINTS = 16;
/** Earlier secrets still signing after rotations (the newest ones); an older one stops signing at once. */
export const MAX_PREVIOUS_SECRETS = 2;
/** How long a secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_SECONDS = 24 * 3600;

const EventTypeSchema = component(
  'EnabledEventType',
  Type.Enum([ALL_EVENTS, ...EVENT_TYPES], {
    description: `An event type, or \`${ALL_EVENTS}\` for every type (including types added later).`,
  }),
);

// No length bounds here: an empty or over-long URL is refused by the URL check, as 400 invalid_webhook_url.
const Url = Type.String({
  description:
    `Where deliveries are POSTed: an absolute http(s) URL of at most ${MAX_URL_LENGTH} characters, without credentials or a fragment. ` +
    'In production: https, and the host must not resolve to a loopback, private or link-local address ' +
    '(checked now and again at every delivery). The sandbox also accepts http and local addresses.',
});
const EnabledEvents = Type.Array(EventTypeSchema, {
  minItems: 1,
  maxItems: 64,
  uniqueItems: true,
  description: `The event types this endpoint receives. Default \`["${ALL_EVENTS}"]\`.`,
});
const Description = Type.String({ maxLength: 500, description: 'Your own note about this endpoint.' });

export const CreateEndpointBody = component(
  'CreateWebhookEndpointRequest',
  Type.Object(
    { url: Url, enabled_events: Type.Optional(EnabledEvents), description: Type.Optional(Description) },
    { additionalProperties: false },
  ),
);
export type CreateEndpointBody = Static<typeof CreateEndpointBody>;

export const UpdateEndpointBody = component(
  'UpdateWebhookEndpointRequest',
  Type.Object(
    {
      url: Type.Optional(Url),
      enabled_events: Type.Optional(EnabledEvents),
      description: Type.Optional(
        Type.Union([Description, Type.Null()], { description: 'A new note, or null to remove it.' }),
      ),
      status: Type.Optional(
        Type.Enum(ENDPOINT_STATUSES, {
          description:
            '`disabled` stops deliveries: pending ones are marked failed (resend them later from the events API). `enabled` turns it back on, ' +
            'also after the service disabled it for a 410.',
        }),
      ),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
);
export type UpdateEndpointBody = Static<typeof UpdateEndpointBody>;

const endpointFields = {
  id: Uuid('Identifier of the endpoint.'),
  url: Type.String({ description: 'Where deliveries go.' }),
  description: Type.Union([Type.String(), Type.Null()], { description: 'Your note, if any.' }),
  enabled_events: Type.Array(Type.String(), {
    description: `Event types delivered here; \`${ALL_EVENTS}\` is every type.`,
  }),
  status: Type.Enum(ENDPOINT_STATUSES, { description: '`enabled` receives deliveries; `disabled` receives none.' }),
  disabled_reason: Type.Union([Type.Enum(DISABLED_REASONS), Type.Null()], {
    description: '`disabled_by_user` (PATCH), or `endpoint_gone`: the endpoint answered 410 Gone. Null while enabled.',
  }),
  previous_secret_expires_at: Type.Union(
    [DateTime('After a rotation, when the previous secret stops signing.'), Type.Null()],
    {
      description:
        'After a rotation, when the previous secret stops signing deliveries (24 hours later); null when only one secret signs.',
    },
  ),
  created_at: DateTime('Creation time.'),
  updated_at: DateTime('Time of the last change.'),
};

export const EndpointSchema = component(
  'WebhookEndpoint',
  Type.Object(endpointFields, {
    additionalProperties: false,
    description: 'A URL that receives signed event deliveries. The signing secret is never shown here.',
  }),
);
export type Endpoint = Static<typeof EndpointSchema>;

export const EndpointWithSecretSchema = component(
  'WebhookEndpointWithSecret',
  Type.Object(
    {
      ...endpointFields,
      secret: Type.String({
        description:
          'The signing secret (`whsec_…`), shown only in this response. Verify deliveries with it, e.g. ' +
          '`new Webhook(secret).verify(body, headers)` from the `standardwebhooks` package.',
      }),
    },
    {
      additionalProperties: false,
      description: 'The endpoint, with its signing secret: store the secret now, it is not shown again.',
    },
  ),
);
export type EndpointWithSecret = Static<typeof EndpointWithSecretSchema>;

export const EndpointIdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The endpoint id.' }) });

export const ListEndpointsQuery = Type.Object(
  {
    ...ListQuery.properties,
    status: Type.Optional(Type.Enum(ENDPOINT_STATUSES, { description: 'Only endpoints in this status.' })),
  },
  { additionalProperties: false },
);
export type ListEndpointsQuery = Static<typeof ListEndpointsQuery>;
export const EndpointPage = component(
  'WebhookEndpointPage',
  pageSchema(EndpointSchema, "The workspace's endpoints, newest first."),
);

// Events

export const EventSchema = component(
  'Event',
  Type.Object(
    {
      id: Uuid('Identifier of the event; also the `webhook-id` of every delivery of it.'),
      type: Type.String({
        description: `The event type: ${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}; or \`${TEST_EVENT_TYPE}\`, sent by POST /v1/webhooks/endpoints/{id}/test (its \`data\` is the endpoint).`,
      }),
      timestamp: DateTime('When the change happened.'),
      data: Type.Record(Type.String(), Type.Unknown(), {
        description:
          'The object as the API returned it at that moment (a collection or a refund). Collection and refund events carry the ' +
          "collection's `metadata` unchanged.",
      }),
    },
    {
      additionalProperties: false,
      description: 'Something that happened, exactly as webhook deliveries carry it in their body.',
    },
  ),
);
export type Event = Static<typeof EventSchema>;

export const EventIdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The event id.' }) });

export const ListEventsQuery = Type.Object(
  {
    ...ListQuery.properties,
    type: Type.Optional(Type.Enum([...EVENT_TYPES, TEST_EVENT_TYPE], { description: 'Only events of this type.' })),
    // Inline, not the Uuid component: a query parameter's schema keeps its description only when it is not a reference.
    object_id: Type.Optional(
      Type.String({
        format: 'uuid',
        pattern: UUID_PATTERN,
        description: 'Only events about this object (a collection_id or refund_id).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListEventsQuery = Static<typeof ListEventsQuery>;
export const EventPage = component('EventPage', pageSchema(EventSchema, "The workspace's events, newest first."));

export const AttemptSchema = component(
  'DeliveryAttempt',
  Type.Object(
    {
      attempt: Type.Integer({ description: 'Attempt number within the delivery, from 1.' }),
      url: Type.String({ description: 'The URL called.' }),
      status_code: Type.Union([Type.Integer(), Type.Null()], {
        description: 'The HTTP status the endpoint answered; null if it never answered.',
      }),
      duration_ms: Type.Integer({ description: 'Milliseconds from sending to the answer (or to the failure).' }),
      response_body: Type.Union([Type.String(), Type.Null()], { description: 'The first 4 KB of the answer body.' }),
      error: Type.Union([Type.String(), Type.Null()], {
        description:
          'Why no answer came: `connection refused`, `timed out after 15000 ms`, `refused: …` (a forbidden address in production), …',
      }),
      succeeded: Type.Boolean({ description: 'True when the endpoint answered 2xx.' }),
      created_at: DateTime(
        'When the attempt was made; its `webhook-timestamp` header is this time in whole seconds since the epoch.',
      ),
    },
    { additionalProperties: false },
  ),
);

export const DeliverySchema = component(
  'Delivery',
  Type.Object(
    {
      id: Uuid('Identifier of the delivery.'),
      event_id: Uuid('The event delivered; the `webhook-id` header of every attempt.'),
      endpoint_id: Uuid('The endpoint delivered to.'),
      kind: Type.Enum(DELIVERY_KINDS, {
        description:
          '`event`: sent because the endpoint subscribes, retried on the schedule; `resend`: asked for with POST /v1/events/{id}/resend, one attempt; ' +
          '`test`: a `webhook.test` event asked for with POST /v1/webhooks/endpoints/{id}/test, one attempt.',
      }),
      status: Type.Enum(DELIVERY_STATUSES, {
        description:
          '`pending` (an attempt is due or in progress), `succeeded` (a 2xx came back) or `failed` (attempts exhausted, 410, or the endpoint was disabled).',
      }),
      next_attempt_at: Type.Union([DateTime('When the next attempt is due.'), Type.Null()], {
        description: 'When the next attempt is due; null unless pending.',
      }),
      last_error: Type.Union([Type.String(), Type.Null()], {
        description: 'Why the latest attempt failed, or why the delivery stopped.',
      }),
      attempts: Type.Array(AttemptSchema, { description: 'Every attempt so far, oldest first.' }),
      created_at: DateTime('When the delivery was queued.'),
      updated_at: DateTime('Time of the last change.'),
    },
    { additionalProperties: false, description: 'One event on its way to one endpoint, with its attempt log.' },
  ),
);
export type Delivery = Static<typeof DeliverySchema>;

export const DeliveryPage = component(
  'DeliveryPage',
  pageSchema(DeliverySchema, 'Deliveries of the event, newest first, each with its attempts.'),
);

export const ListEndpointDeliveriesQuery = Type.Object(
  {
    ...ListQuery.properties,
    status: Type.Optional(Type.Enum(DELIVERY_STATUSES, { description: 'Only deliveries in this status.' })),
  },
  { additionalProperties: false },
);
export type ListEndpointDeliveriesQuery = Static<typeof ListEndpointDeliveriesQuery>;

export const EndpointDeliveryPage = component(
  'EndpointDeliveryPage',
  pageSchema(DeliverySchema, "The endpoint's deliveries of every event, newest first, each with its attempts."),
);

export const ResendBody = component(
  'ResendEventRequest',
  Type.Object(
    {
      endpoint_id: Type.Optional(
        Uuid('Send to this endpoint only. Without it: every enabled endpoint that subscribes to the event type.'),
      ),
    },
    { additionalProperties: false },
  ),
);
export type ResendBody = Static<typeof ResendBody>;

export const ResendResponse = component(
  'ResendResult',
  Type.Object(
    {
      data: Type.Array(DeliverySchema, {
        description: 'The deliveries queued, one per endpoint; each makes one attempt right away.',
      }),
    },
    { additionalProperties: false, description: 'The deliveries this resend queued.' },
  ),
);
