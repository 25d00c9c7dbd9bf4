// Webhook endpoints, events and their deliveries; descriptions write the reference docs.
import { RailAvailabilitySchema } from '../availability/availability.schemas.js';
import { UUID_PATTERN } from '../../platform/ids.js';
import { Type, type Static, type TSchema } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import { ALL_EVENTS, EVENT_TYPES, TEST_EVENT_TYPE } from './event-types.js';
import { MAX_URL_LENGTH } from './url-guard.js';
import type { AttemptRow, DeliveryRow, EndpointRow, EventRow } from './webhooks.repository.js';
import { SessionSchema } from '../checkout/checkout.schemas.js';
import { CollectionSchema } from '../collections/collections.schemas.js';
import { DepositSchema } from '../deposits/deposits.schemas.js';
import { OperatorFloatAccountSchema } from '../float/float.schemas.js';
import { PayoutSchema } from '../payouts/payouts.schemas.js';
import { RefundSchema } from '../refunds/refunds.schemas.js';
import { SignalSchema } from '../risk/risk.schemas.js';

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

/** What a `reconciliation.mismatch` event carries: the provider's final word contradicts ours about whether money moved. */
export const ReconciliationMismatchSchema = component(
  'ReconciliationMismatch',
  Type.Object(
    {
      object_type: Type.Enum(['collection', 'refund', 'payout'], { description: 'What the disagreement is about.' }),
      object_id: Uuid('Its id: a collection_id, refund_id or payout transaction_id.'),
      our_status: Type.String({ description: 'Its status here, which the provider contradicts.' }),
      provider_status: Type.String({ description: 'The status the provider reported.' }),
      provider: Type.String({ description: 'The provider that reported it.' }),
      provider_reference: Type.Union([Type.String(), Type.Null()], {
        description: "The provider's reference for it, if it gave one.",
      }),
      notice_id: Type.String({ description: "The provider's notice (callback or status query) that disagreed." }),
    },
    { additionalProperties: false, description: 'For a person to look at: the provider and we disagree about money.' },
  ),
);

/** Each event type's `data`: the object as the API returned it at the moment of the change. */
function eventData(type: string): { schema: TSchema; what: string } {
  const object = type.slice(0, type.lastIndexOf('.'));
  switch (object) {
    case 'collection':
      return { schema: CollectionSchema, what: "the collection (with the collection's `metadata`)" };
    case 'refund':
      return { schema: RefundSchema, what: "the refund (with its collection's `metadata`)" };
    case 'checkout.session':
      return { schema: SessionSchema, what: 'the checkout session' };
    case 'risk_signal':
      return { schema: SignalSchema, what: 'the risk signal' };
    case 'reconciliation':
      return { schema: ReconciliationMismatchSchema, what: 'what the provider and we disagree about' };
    case 'deposit':
      return { schema: DepositSchema, what: 'the deposit' };
    case 'payout':
      return { schema: PayoutSchema, what: 'the payout transaction' };
    case 'rail':
      return { schema: RailAvailabilitySchema, what: 'the rail' };
    case 'webhook':
      return { schema: EndpointSchema, what: 'the endpoint the test is sent to' };
    case 'operator':
      return { schema: OperatorFloatAccountSchema, what: 'the operator account (in the operator workspace)' };
    default:
      // A new event type must say what its data is before the service starts.
      throw new Error(`event type ${type}: no data schema (src/modules/webhooks/webhooks.schemas.ts)`);
  }
}

/** Every event type a delivery or the events API can carry: the catalogue and the test event. */
export const ALL_EVENT_TYPES: readonly string[] = [...EVENT_TYPES, TEST_EVENT_TYPE];

/** `checkout.session.completed` → `CheckoutSessionCompletedEvent`: the event type's component name. */
export const eventSchemaName = (type: string): string =>
  `${type
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')}Event`;

/** One named component per event type, its `type` fixed and its `data` the object's own schema. */
const EVENT_VARIANTS = ALL_EVENT_TYPES.map((type) => {
  const { schema, what } = eventData(type);
  return component(
    eventSchemaName(type),
    Type.Object(
      {
        id: Uuid('Identifier of the event; the `webhook-id` of every delivery of it.'),
        type: Type.Literal(type, { description: 'The event type.' }),
        timestamp: DateTime('When the change happened.'),
        data: schema,
      },
      {
        additionalProperties: false,
        description:
          type === TEST_EVENT_TYPE
            ? `\`${type}\`, sent by POST /v1/webhooks/endpoints/{id}/test to that endpoint only; \`data\` is ${what}.`
            : `\`${type}\`; \`data\` is ${what} as the API returned it then.`,
      },
    ),
  );
});

/** An event as the service stores and sends it; the document types it by `type` (EventSchema). */
export interface Event {
  id: string;
  type: string;
  timestamp: string;
  data: unknown;
}

/**
 * Something that happened, one named variant per `type` (a `oneOf` with a discriminator): a generated client narrows
 * on `type` to the typed `data`.
 */
export const EventSchema = component(
  'Event',
  Type.Unsafe<Event>({
    oneOf: EVENT_VARIANTS,
    description: 'Something that happened, exactly as webhook deliveries carry it in their body; typed by its `type`.',
    discriminator: {
      propertyName: 'type',
      mapping: Object.fromEntries(ALL_EVENT_TYPES.map((t) => [t, `#/components/schemas/${eventSchemaName(t)}`])),
    },
  }),
);

export const EventIdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The event id.' }) });

export const ListEventsQuery = Type.Object(
  {
    ...ListQuery.properties,
    type: Type.Optional(Type.Enum(ALL_EVENT_TYPES, { description: 'Only events of this type.' })),
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

/** The Standard Webhooks headers every delivery carries (components.parameters of the document). */
const WEBHOOK_HEADERS = {
  WebhookId: {
    in: 'header',
    name: 'webhook-id',
    required: true,
    description: 'The event id: the same on every retry and resend of it; deduplicate on it.',
    schema: { type: 'string' },
  },
  WebhookTimestamp: {
    in: 'header',
    name: 'webhook-timestamp',
    required: true,
    description: 'When this attempt was sent, in whole seconds since the epoch; refuse one too far from now.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  WebhookSignature: {
    in: 'header',
    name: 'webhook-signature',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the endpoint secret, space-separated when two secrets sign ' +
      '(after a rotation). Verify with a Standard Webhooks library, e.g. `new Webhook(secret).verify(body, headers)`.',
    schema: { type: 'string' },
  },
} as const;

/**
 * The deliveries as OpenAPI 3.1 `webhooks`: one POST per event type whose body is that type's event, so a generated
 * client types a handler per type (and the `Event` union types one handler for all).
 */
export const WEBHOOKS_DOCUMENT = {
  parameters: WEBHOOK_HEADERS,
  responses: {
    WebhookReceived: {
      description:
        'Any 2xx ends the delivery. 410 Gone disables the endpoint; anything else, a timeout (15 s) or a refused connection is retried.',
    },
  },
  webhooks: Object.fromEntries(
    ALL_EVENT_TYPES.map((type) => {
      const name = eventSchemaName(type);
      return [
        type,
        {
          post: {
            operationId: `on${name}`,
            tags: ['Webhooks'],
            summary: `A \`${type}\` event`,
            parameters: Object.keys(WEBHOOK_HEADERS).map((h) => ({ $ref: `#/components/parameters/${h}` })),
            requestBody: {
              required: true,
              content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } },
            },
            responses: { '2XX': { $ref: '#/components/responses/WebhookReceived' } },
          },
        },
      ];
    }),
  ),
};

export function toEndpointApi(row: EndpointRow, now = new Date()): Endpoint {
  const live = row.previous_secrets.map((p) => new Date(p.expires_at)).filter((d) => d > now);
  const latest = live.length === 0 ? null : new Date(Math.max(...live.map((d) => d.getTime())));
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    enabled_events: row.enabled_events,
    status: row.status,
    disabled_reason: row.disabled_reason,
    previous_secret_expires_at: latest === null ? null : latest.toISOString(),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function toEventApi(row: EventRow): Event {
  return { id: row.id, type: row.type, timestamp: row.created_at.toISOString(), data: row.data };
}

export function toDeliveryApi(row: DeliveryRow, attempts: AttemptRow[]): Delivery {
  return {
    id: row.id,
    event_id: row.event_id,
    endpoint_id: row.endpoint_id,
    kind: row.kind,
    status: row.status,
    next_attempt_at: row.next_attempt_at === null ? null : row.next_attempt_at.toISOString(),
    last_error: row.last_error,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      url: a.url,
      status_code: a.status_code,
      duration_ms: a.duration_ms,
      response_body: a.response_body,
      error: a.error,
      succeeded: a.succeeded,
      created_at: a.created_at.toISOString(),
    })),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
