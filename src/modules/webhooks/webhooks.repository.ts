// SQL for webhook endpoints, deliveries and attempts. The workspace id is always the first argument.
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

// The relay's SQL. Maintenance: the relay works across workspaces; each delivery carries its own.

/** A delivery leased to one sender, with what sending it needs. */
export interface ClaimedDelivery {
  id: string;
  workspace_id: string;
  event_id: string;
  endpoint_id: string;
  kind: 'event' | 'resend' | 'test';
  attempts: number;
  max_attempts: number;
  lease_token: string;
  type: string;
  data: Record<string, unknown>;
  event_created_at: Date;
  url: string;
  secret: string;
  previous_secrets: PreviousSecret[];
  endpoint_live: boolean;
}

/** The outbox rows not yet published, oldest first, locked for this transaction (SKIP LOCKED: others take the next). */
export async function unpublishedOutbox(
  tx: Queryable,
  limit: number,
): Promise<{ id: number; event_id: string; workspace_id: string; type: string; created_at: Date }[]> {
  const { rows } = await tx.query<{
    id: number;
    event_id: string;
    workspace_id: string;
    type: string;
    created_at: Date;
  }>(
    `SELECT o.id, o.event_id, o.workspace_id, e.type, e.created_at FROM outbox o JOIN events e ON e.id = o.event_id
     WHERE o.published_at IS NULL ORDER BY o.id LIMIT $1 FOR UPDATE OF o SKIP LOCKED`,
    [limit],
  );
  return rows;
}

/** New deliveries, due at `at` (a millisecond time: list cursors carry milliseconds). */
export async function insertDeliveries(
  tx: Queryable,
  d: { ids: string[]; workspaces: string[]; events: string[]; endpoints: string[] },
  maxAttempts: number,
  at: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, event_id, endpoint_id, kind, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
     SELECT d.id, d.workspace_id, d.event_id, d.endpoint_id, 'event', 'pending', 0, $5, $6, $6, $6
     FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[]) AS d (id, workspace_id, event_id, endpoint_id)
     ON CONFLICT DO NOTHING`,
    [d.ids, d.workspaces, d.events, d.endpoints, maxAttempts, at],
  );
}

export async function markPublished(tx: Queryable, outboxIds: number[]): Promise<void> {
  await tx.query('UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[])', [outboxIds]);
}

/**
 * Deletes up to `limit` outbox rows published more than `olderThanSeconds` ago (the events table keeps the history),
 * oldest first by the `outbox_published` index; returns how many. Maintenance: spans workspaces. The rows are found
 * and locked (SKIP LOCKED: another process purging at once takes the next ones) in the same statement that deletes
 * them by their physical address, so a batch reads only the rows it deletes.
 */
export async function purgePublishedOutbox(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM outbox WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM outbox WHERE published_at < now() - make_interval(secs => $1)
       ORDER BY published_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}

/**
 * Deletes up to `limit` finished deliveries (succeeded or failed) whose last change is more than `olderThanSeconds`
 * old, with their attempts, in one statement; oldest first by the `webhook_deliveries_finished` index. Maintenance:
 * spans workspaces. Pending deliveries are never touched, nor a failed one whose attempt is still in progress (an
 * endpoint disabled mid-attempt: the attempt's log row still has to be written, and it references the delivery).
 */
export async function purgeFinishedDeliveries(
  db: Queryable,
  olderThanSeconds: number,
  limit: number,
): Promise<{ deliveries: number; attempts: number }> {
  const { rows } = await db.query<{ deliveries: number; attempts: number }>(
    `WITH batch AS (
       SELECT id FROM webhook_deliveries
       WHERE status IN ('succeeded', 'failed') AND updated_at < now() - make_interval(secs => $1)
         AND (lease_until IS NULL OR lease_until < now())
       ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ), attempts AS (
       DELETE FROM webhook_attempts a USING batch WHERE a.delivery_id = batch.id RETURNING 1
     ), deliveries AS (
       DELETE FROM webhook_deliveries d USING batch WHERE d.id = batch.id RETURNING 1
     )
     SELECT (SELECT count(*) FROM deliveries)::int AS deliveries, (SELECT count(*) FROM attempts)::int AS attempts`,
    [olderThanSeconds, limit],
  );
  return rows[0] ?? { deliveries: 0, attempts: 0 };
}

// What every claim returns and sets: the lease (its end and token), the attempt it counts, and what sending needs.
const LEASED = `RETURNING d.id, d.workspace_id, d.event_id, d.endpoint_id, d.kind, d.attempts, d.max_attempts, d.lease_token,
                e.type, e.data, e.created_at AS event_created_at, w.url, w.secret, w.previous_secrets,
                w.status = 'enabled' AND w.deleted_at IS NULL AS endpoint_live`;

/**
 * Across endpoints: of the oldest due deliveries (twice `slots`), of endpoints not in `excluded` (those this sender
 * has at their share, or answering 410: left out before the window is taken, so one slow endpoint's backlog can
 * never fill it and starve the others), at most `share` per endpoint less what this sender already has in flight
 * there (`busy`), at most `slots` in all, leased with SKIP LOCKED in the same statement: two senders never send the
 * same attempt at once.
 */
export async function claimAcrossEndpoints(
  db: Queryable,
  c: { busy: Record<string, number>; share: number; slots: number; leaseMs: number; token: string; excluded: string[] },
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH due AS (
       SELECT d.id, d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
       WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
         AND d.endpoint_id <> ALL($6::uuid[])
       ORDER BY d.next_attempt_at
       LIMIT $3 * 2
       FOR UPDATE SKIP LOCKED
     ), ranked AS (
       SELECT due.id, due.endpoint_id, due.next_attempt_at,
              row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at, due.id) AS rn
       FROM due
     ), pick AS (
       SELECT r.id FROM ranked r LEFT JOIN jsonb_each_text($1::jsonb) b ON b.key = r.endpoint_id::text
       WHERE r.rn <= $2 - coalesce(b.value::int, 0)
       ORDER BY r.next_attempt_at LIMIT $3
     )
     UPDATE webhook_deliveries d
     SET lease_until = now() + make_interval(secs => $4 / 1000.0), lease_token = $5, attempts = d.attempts + 1, updated_at = now()
     FROM pick, events e, webhook_endpoints w
     WHERE d.id = pick.id AND e.id = d.event_id AND w.id = d.endpoint_id
     ${LEASED}`,
    [JSON.stringify(c.busy), c.share, c.slots, c.leaseMs, c.token, c.excluded],
  );
  return rows;
}

/**
 * One endpoint's oldest due deliveries, up to `slots` (the room its share leaves), by the (endpoint_id,
 * next_attempt_at) index: when a slot of a busy endpoint frees, its next delivery is found without walking others'.
 */
export async function claimForEndpoint(
  db: Queryable,
  c: { endpointId: string; slots: number; leaseMs: number; token: string },
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH pick AS (
       SELECT d.id FROM webhook_deliveries d
       WHERE d.endpoint_id = $1 AND d.status = 'pending' AND d.next_attempt_at <= now()
         AND (d.lease_until IS NULL OR d.lease_until < now())
       ORDER BY d.next_attempt_at
       LIMIT $2
       FOR UPDATE SKIP LOCKED
     )
     UPDATE webhook_deliveries d
     SET lease_until = now() + make_interval(secs => $3 / 1000.0), lease_token = $4, attempts = d.attempts + 1, updated_at = now()
     FROM pick, events e, webhook_endpoints w
     WHERE d.id = pick.id AND e.id = d.event_id AND w.id = d.endpoint_id
     ${LEASED}`,
    [c.endpointId, c.slots, c.leaseMs, c.token],
  );
  return rows;
}

/**
 * Gives claimed deliveries back unsent: their lease ends now and the attempt their claim counted is taken back. A
 * delivery whose lease this sender no longer holds is left alone.
 */
export async function handBack(db: Queryable, deliveries: { id: string; lease_token: string }[]): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries d SET lease_until = NULL, lease_token = NULL, attempts = d.attempts - 1, updated_at = now()
     FROM unnest($1::uuid[], $2::uuid[]) AS h (id, lease_token) WHERE d.id = h.id AND d.lease_token = h.lease_token`,
    [deliveries.map((d) => d.id), deliveries.map((d) => d.lease_token)],
  );
}

/** One attempt's log row and its delivery's new state: what `recordAttempts` writes, per attempt. */
export interface AttemptRecord {
  deliveryId: string;
  leaseToken: string;
  status: 'pending' | 'succeeded' | 'failed';
  nextAt: Date | null;
  why: string | null;
  attemptId: string;
  workspaceId: string;
  attempt: number;
  url: string;
  statusCode: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
  succeeded: boolean;
  startedAt: Date;
}

/**
 * Writes attempts, each with its delivery's new state, in one statement. A delivery is updated only while its lease
 * is still this sender's; one stopped meanwhile (its endpoint disabled or deleted) stays failed unless this attempt
 * got through. Returns the deliveries it updated.
 */
export async function recordAttempts(db: Queryable, records: AttemptRecord[]): Promise<Set<string>> {
  const column = <K extends keyof AttemptRecord>(key: K): AttemptRecord[K][] => records.map((r) => r[key]);
  const { rows } = await db.query<{ id: string }>(
    `WITH r AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[], $6::uuid[], $7::uuid[],
                            $8::integer[], $9::text[], $10::integer[], $11::integer[], $12::text[], $13::text[],
                            $14::boolean[], $15::timestamptz[])
         AS r (delivery_id, lease_token, status, next_at, why, attempt_id, workspace_id, attempt, url, status_code,
               duration_ms, response_body, error, succeeded, created_at)
     ), attempt AS (
       INSERT INTO webhook_attempts
         (id, workspace_id, delivery_id, attempt, url, status_code, duration_ms, response_body, error, succeeded, created_at)
       SELECT attempt_id, workspace_id, delivery_id, attempt, url, status_code, duration_ms, response_body, error, succeeded, created_at
       FROM r
     )
     UPDATE webhook_deliveries d SET
       status = CASE WHEN r.status = 'succeeded' OR d.status = 'pending' THEN r.status ELSE d.status END,
       next_attempt_at = CASE WHEN r.status = 'succeeded' OR d.status = 'pending' THEN r.next_at ELSE NULL END,
       last_error = CASE WHEN r.status = 'succeeded' THEN NULL WHEN d.status = 'pending' THEN r.why ELSE d.last_error END,
       lease_until = NULL, lease_token = NULL, updated_at = now()
     FROM r WHERE d.id = r.delivery_id AND d.lease_token = r.lease_token
     RETURNING d.id`,
    [
      column('deliveryId'),
      column('leaseToken'),
      column('status'),
      column('nextAt'),
      column('why'),
      column('attemptId'),
      column('workspaceId'),
      column('attempt'),
      column('url'),
      column('statusCode'),
      column('durationMs'),
      column('responseBody'),
      column('error'),
      column('succeeded'),
      column('startedAt'),
    ],
  );
  return new Set(rows.map((r) => r.id));
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

/** Locks an endpoint (before its deliveries: the order every path takes them, so a burst of 410s cannot deadlock). */
export async function lockEndpoint(tx: Queryable, id: string): Promise<void> {
  await tx.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [id]);
}

/** The endpoint answered 410 Gone: it is disabled. */
export async function disableGoneEndpoint(tx: Queryable, id: string): Promise<void> {
  await tx.query(
    `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'endpoint_gone', updated_at = now()
     WHERE id = $1 AND status = 'enabled' AND deleted_at IS NULL`,
    [id],
  );
}
