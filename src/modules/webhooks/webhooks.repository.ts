// SQL for webhook endpoints, events, deliveries and attempts as the API reads and writes them. The workspace id is
// always the first argument. The relay's SQL (outbox, claims, attempts, purges) is in relay.repository.ts.
import type { Queryable } from '../../db/pool.js';
import { listQuery, type ListFilter } from '../../platform/pagination.js';
import { TEST_EVENT_TYPE } from './event-types.js';

export interface PreviousSecret {
  /** Sealed, as `secret` is. */
  secret: string;
  expires_at: string;
}

export interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  description: string | null;
  enabled_events: string[];
  status: 'enabled' | 'disabled';
  disabled_reason: 'disabled_by_user' | 'endpoint_gone' | null;
  /** The signing secret as stored: sealed (`sealed:v1:…`); webhooks.service.ts seals and opens it. */
  secret: string;
  previous_secrets: PreviousSecret[];
  created_at: Date;
  updated_at: Date;
}

const ENDPOINT_COLUMNS =
  'id, workspace_id, url, description, enabled_events, status, disabled_reason, secret, previous_secrets, created_at, updated_at';

export async function insertEndpoint(db: Queryable, e: EndpointRow): Promise<void> {
  await db.query(
    `INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      e.id,
      e.workspace_id,
      e.url,
      e.description,
      e.enabled_events,
      e.status,
      e.disabled_reason,
      e.secret,
      JSON.stringify(e.previous_secrets),
      e.created_at,
      e.updated_at,
    ],
  );
}

export async function countEndpoints(db: Queryable, workspaceId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM webhook_endpoints WHERE workspace_id = $1 AND deleted_at IS NULL',
    [workspaceId],
  );
  return rows[0]?.n ?? 0;
}

export async function findEndpoint(
  db: Queryable,
  workspaceId: string,
  id: string,
  lock = false,
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
    [workspaceId, id],
  );
  return rows[0];
}

export async function listEndpoints(
  db: Queryable,
  workspaceId: string,
  f: ListFilter<'enabled' | 'disabled'>,
): Promise<EndpointRow[]> {
  const { text, values } = listQuery(
    'webhook_endpoints',
    ENDPOINT_COLUMNS,
    { workspace_id: workspaceId, deleted_at: null },
    f,
  );
  return (await db.query<EndpointRow>(text, values)).rows;
}

/**
 * The enabled endpoints of these workspaces. `share` (the fan-out) keeps them from being disabled or deleted
 * until the deliveries made for them are committed, so that disabling, which locks the endpoint first and
 * then fails its pending deliveries, sees those deliveries too.
 */
export async function enabledEndpoints(
  db: Queryable,
  workspaceIds: string[],
  share = false,
): Promise<Pick<EndpointRow, 'id' | 'workspace_id' | 'enabled_events' | 'created_at'>[]> {
  const { rows } = await db.query<Pick<EndpointRow, 'id' | 'workspace_id' | 'enabled_events' | 'created_at'>>(
    `SELECT id, workspace_id, enabled_events, created_at FROM webhook_endpoints
     WHERE workspace_id = ANY($1::uuid[]) AND status = 'enabled' AND deleted_at IS NULL${share ? ' FOR SHARE' : ''}`,
    [workspaceIds],
  );
  return rows;
}

export async function updateEndpoint(
  db: Queryable,
  workspaceId: string,
  id: string,
  changes: Partial<
    Pick<
      EndpointRow,
      'url' | 'description' | 'enabled_events' | 'status' | 'disabled_reason' | 'secret' | 'previous_secrets'
    >
  >,
  at: Date,
): Promise<EndpointRow | undefined> {
  const sets: string[] = [];
  const values: unknown[] = [workspaceId, id, at];
  for (const [column, value] of Object.entries(changes)) {
    values.push(column === 'previous_secrets' ? JSON.stringify(value) : value);
    sets.push(`${column} = $${values.length}`);
  }
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET ${[...sets, 'updated_at = $3'].join(', ')}
     WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING ${ENDPOINT_COLUMNS}`,
    values,
  );
  return rows[0];
}

export async function deleteEndpoint(db: Queryable, workspaceId: string, id: string, at: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE webhook_endpoints SET deleted_at = $3, updated_at = $3 WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL',
    [workspaceId, id, at],
  );
  return rowCount === 1;
}

/** Stops an endpoint's pending deliveries (disabled, gone or deleted); an attempt in progress still logs its result. */
export async function failPendingDeliveries(
  db: Queryable,
  workspaceId: string,
  endpointId: string,
  reason: string,
  exceptId?: string,
): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = $3, updated_at = now()
     WHERE workspace_id = $1 AND endpoint_id = $2 AND status = 'pending' AND id IS DISTINCT FROM $4`,
    [workspaceId, endpointId, reason, exceptId ?? null],
  );
}

// Events

export interface EventRow {
  id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

export async function findEvent(db: Queryable, workspaceId: string, id: string): Promise<EventRow | undefined> {
  const { rows } = await db.query<EventRow>(
    'SELECT id, type, data, created_at FROM events WHERE workspace_id = $1 AND id = $2',
    [workspaceId, id],
  );
  return rows[0];
}

export async function listEvents(
  db: Queryable,
  workspaceId: string,
  f: ListFilter,
  type: string | undefined,
  objectId: string | undefined,
): Promise<EventRow[]> {
  const scope: Record<string, unknown> = { workspace_id: workspaceId };
  if (objectId !== undefined) scope.object_id = objectId;
  if (type !== undefined) scope.type = type;
  const { text, values } = listQuery('events', 'id, type, data, created_at', scope, f);
  return (await db.query<EventRow>(text, values)).rows;
}

// Deliveries

export interface DeliveryRow {
  id: string;
  workspace_id: string;
  event_id: string;
  endpoint_id: string;
  kind: 'event' | 'resend' | 'test';
  status: 'pending' | 'succeeded' | 'failed';
  next_attempt_at: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  url: string;
  status_code: number | null;
  duration_ms: number;
  response_body: string | null;
  error: string | null;
  succeeded: boolean;
  created_at: Date;
}

const DELIVERY_COLUMNS =
  'id, workspace_id, event_id, endpoint_id, kind, status, next_attempt_at, last_error, created_at, updated_at';

export async function insertResendDeliveries(
  db: Queryable,
  workspaceId: string,
  eventId: string,
  deliveries: { id: string; endpointId: string }[],
  at: Date,
): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(
    `INSERT INTO webhook_deliveries (id, workspace_id, event_id, endpoint_id, kind, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
     SELECT d.id, $1, $2, d.endpoint_id, 'resend', 'pending', 0, 1, $3, $3, $3
     FROM unnest($4::uuid[], $5::uuid[]) AS d (id, endpoint_id)
     RETURNING ${DELIVERY_COLUMNS}`,
    [workspaceId, eventId, at, deliveries.map((d) => d.id), deliveries.map((d) => d.endpointId)],
  );
  return rows;
}

export async function listDeliveries(
  db: Queryable,
  workspaceId: string,
  eventId: string,
  f: ListFilter,
): Promise<DeliveryRow[]> {
  const { text, values } = listQuery(
    'webhook_deliveries',
    DELIVERY_COLUMNS,
    { workspace_id: workspaceId, event_id: eventId },
    f,
  );
  return (await db.query<DeliveryRow>(text, values)).rows;
}

/**
 * A test event (`webhook.test`, about the endpoint) and its one delivery to that endpoint, due now. No outbox row:
 * the relay sends the delivery but never fans the event out to other endpoints.
 */
export async function insertTestEvent(
  db: Queryable,
  workspaceId: string,
  t: { eventId: string; deliveryId: string; endpointId: string; data: unknown; at: Date },
): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(
    `WITH e AS (
       INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
       VALUES ($2, $1, $7, 'webhook_endpoint', $4, $5, $6) RETURNING id)
     INSERT INTO webhook_deliveries (id, workspace_id, event_id, endpoint_id, kind, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
     SELECT $3, $1, e.id, $4, 'test', 'pending', 0, 1, $6, $6, $6 FROM e
     RETURNING ${DELIVERY_COLUMNS}`,
    [workspaceId, t.eventId, t.deliveryId, t.endpointId, JSON.stringify(t.data), t.at, TEST_EVENT_TYPE],
  );
  const row = rows[0];
  if (!row) throw new Error('the test delivery was not written');
  return row;
}

/** One endpoint's deliveries of every event, newest first (its delivery log). */
export async function listEndpointDeliveries(
  db: Queryable,
  workspaceId: string,
  endpointId: string,
  f: ListFilter<'pending' | 'succeeded' | 'failed'>,
): Promise<DeliveryRow[]> {
  const { text, values } = listQuery(
    'webhook_deliveries',
    DELIVERY_COLUMNS,
    { workspace_id: workspaceId, endpoint_id: endpointId },
    f,
  );
  return (await db.query<DeliveryRow>(text, values)).rows;
}

export async function attemptsOf(db: Queryable, workspaceId: string, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  const { rows } = await db.query<AttemptRow>(
    `SELECT delivery_id, attempt, url, status_code, duration_ms, response_body, error, succeeded, created_at
     FROM webhook_attempts WHERE workspace_id = $1 AND delivery_id = ANY($2::uuid[]) ORDER BY delivery_id, attempt, created_at`,
    [workspaceId, deliveryIds],
  );
  return rows;
}

// Secrets at rest (webhooks.service.ts seals and opens them). Maintenance: these span workspaces.

type EndpointSecrets = Pick<EndpointRow, 'id' | 'secret' | 'previous_secrets'>;

/** Below every id: where batches in the order of ids begin. */
export const FIRST_ID = '00000000-0000-0000-0000-000000000000';

/**
 * Up to `limit` endpoints after `after` (in the order of their ids) with a secret still in plaintext (stored by a
 * version before secrets were sealed), locked. Nodes starting together take the rows in the same order, so they wait
 * for each other rather than deadlock; a row another node sealed meanwhile no longer matches once its lock is free,
 * and the next one takes its place in the batch.
 */
export async function lockPlaintextSecrets(tx: Queryable, after: string, limit: number): Promise<EndpointSecrets[]> {
  const { rows } = await tx.query<EndpointSecrets>(
    `SELECT id, secret, previous_secrets FROM webhook_endpoints
     WHERE id > $1
       AND (secret NOT LIKE 'sealed:%'
            OR EXISTS (SELECT 1 FROM jsonb_array_elements(previous_secrets) p WHERE p->>'secret' NOT LIKE 'sealed:%'))
     ORDER BY id LIMIT $2 FOR UPDATE`,
    [after, limit],
  );
  return rows;
}

/** Up to `limit` endpoints (deleted ones too) after `after` in the order of their ids, locked: `rotate-key`'s batches. */
export async function lockEndpointSecretsAfter(
  tx: Queryable,
  after: string,
  limit: number,
): Promise<EndpointSecrets[]> {
  const { rows } = await tx.query<EndpointSecrets>(
    'SELECT id, secret, previous_secrets FROM webhook_endpoints WHERE id > $1 ORDER BY id LIMIT $2 FOR UPDATE',
    [after, limit],
  );
  return rows;
}

/** Writes endpoints' secrets (sealed, or re-sealed) in one statement; `updated_at` stays: nothing an integrator sees changed. */
export async function setEndpointSecrets(tx: Queryable, rows: EndpointSecrets[]): Promise<void> {
  if (rows.length === 0) return;
  await tx.query(
    `UPDATE webhook_endpoints w SET secret = u.secret, previous_secrets = u.previous_secrets::jsonb
     FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u (id, secret, previous_secrets) WHERE w.id = u.id`,
    [rows.map((r) => r.id), rows.map((r) => r.secret), rows.map((r) => JSON.stringify(r.previous_secrets))],
  );
}
