// Request and response schemas of the audit log (GET /v1/audit-events), the row → API mapper and the CSV export's
// columns; descriptions write the reference docs.
import { Type, type Static } from 'typebox';
import { UUID_PATTERN } from '../../platform/ids.js';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import type { AuditEventRow } from './audit.repository.js';

const nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const AuditEventSchema = component(
  'AuditEvent',
  Type.Object(
    {
      id: Uuid('Identifier of the audit event (time-ordered).'),
      workspace_id: Uuid('The workspace; the nil UUID for a failed sign-in whose token named none.'),
      occurred_at: DateTime('When the request was answered.'),
      actor_type: Type.String({
        description:
          'Who acted: `api_key`, `member` (a dashboard member), `dashboard` (a dashboard session opened with a pasted ' +
          'token), `admin` or `anonymous` (a failed sign-in); more may come.',
      }),
      actor_id: nullable('The credential, or the member, that acted; null when nobody is known.'),
      action: Type.String({
        description:
          'A stable dotted name of what was done: `refund.create`, `credential.rotate`, `dashboard.sign_in_failed`.',
      }),
      object_type: nullable('The kind of object: `refund`, `credential`.'),
      object_id: nullable('The object: the id answered, else the one in the path; null when neither.'),
      status: Type.Integer({ description: 'The HTTP status answered: 2xx done, 4xx refused.' }),
      client_address: nullable("The client's IP address (the browser's, for the dashboard)."),
      request_id: Type.String({ description: 'The `X-Request-Id` answered.' }),
    },
    {
      additionalProperties: false,
      description: 'One audited request: who did what to which object, when and from where.',
    },
  ),
);
export type AuditEvent = Static<typeof AuditEventSchema>;

export const AuditEventPage = component('AuditEventPage', pageSchema(AuditEventSchema, 'Audit events, newest first.'));

const uuidFilter = (description: string) => Type.Optional(Type.String({ pattern: UUID_PATTERN, description }));

export const ListAuditEventsQuery = Type.Object(
  {
    ...ListQuery.properties,
    workspace_id: uuidFilter("Whose log: required with the admin token; an integrator's own only (else 404)."),
    action: Type.Optional(Type.String({ maxLength: 64, description: 'Only this action.' })),
    actor_id: uuidFilter('Only this actor (a credential id or a member id).'),
    object_id: Type.Optional(Type.String({ maxLength: 200, description: 'Only this object.' })),
  },
  { additionalProperties: false },
);
export type ListAuditEventsQuery = Static<typeof ListAuditEventsQuery>;

export function toAuditEventApi(row: AuditEventRow): AuditEvent {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    occurred_at: row.occurred_at.toISOString(),
    actor_type: row.actor_type,
    actor_id: row.actor_id,
    action: row.action,
    object_type: row.object_type,
    object_id: row.object_id,
    status: row.status,
    client_address: row.client_address,
    request_id: row.request_id,
  };
}

/** The CSV export's columns, in order: the API's fields. */
export const AUDIT_CSV_COLUMNS = [
  'id',
  'occurred_at',
  'workspace_id',
  'actor_type',
  'actor_id',
  'action',
  'object_type',
  'object_id',
  'status',
  'client_address',
  'request_id',
] as const satisfies readonly (keyof AuditEvent)[];
