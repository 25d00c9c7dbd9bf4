// The relay's SQL: outbox rows turned into deliveries, due deliveries claimed under a lease, attempts recorded, claims
// handed back, an endpoint that answered 410 disabled, and the purges of the published outbox and of finished
// deliveries. Maintenance: the relay works across workspaces; each delivery carries its own. The SQL the API's
// endpoints, events and delivery logs read and write is in webhooks.repository.ts.
import type { Queryable } from '../../db/pool.js';
import type { PreviousSecret } from './webhooks.repository.js';

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

/**
 * A claim's lease commits without waiting for the disk (or for a synchronous standby): its statement's own transaction
 * sets `synchronous_commit` off (`set_config(…, true)` lasts until that transaction ends, and PostgreSQL applies the
 * setting in force when a transaction commits). A lease is a hint: lost in a crash or failover before it reached the
 * disk, its delivery is due again and is sent again, which at-least-once delivery already allows (a sender that dies
 * mid-attempt does the same). The attempt's record, what the delivery log shows, commits synchronously, and WAL is
 * flushed in order, so a recorded attempt's lease is never the part lost. Not for claims whose loss would repeat
 * something that must happen once: an operator's initiation claim stays synchronous.
 */
const LEASE_COMMIT = `lease_commit AS (SELECT set_config('synchronous_commit', 'off', true))`;

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
    `WITH ${LEASE_COMMIT}, due AS (
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
     FROM pick, lease_commit, events e, webhook_endpoints w
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
    `WITH ${LEASE_COMMIT}, pick AS (
       SELECT d.id FROM webhook_deliveries d
       WHERE d.endpoint_id = $1 AND d.status = 'pending' AND d.next_attempt_at <= now()
         AND (d.lease_until IS NULL OR d.lease_until < now())
       ORDER BY d.next_attempt_at
       LIMIT $2
       FOR UPDATE SKIP LOCKED
     )
     UPDATE webhook_deliveries d
     SET lease_until = now() + make_interval(secs => $3 / 1000.0), lease_token = $4, attempts = d.attempts + 1, updated_at = now()
     FROM pick, lease_commit, events e, webhook_endpoints w
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
