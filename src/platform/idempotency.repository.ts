// SQL of the idempotency engine: the in-flight lock of a key, and the stored outcomes. The workspace id comes first.
import type { Queryable } from '../db/pool.js';

export interface StoredOutcome {
  fingerprint: string;
  response_status: number;
  response_headers: Record<string, string>;
  response_body: string;
  /** False once past retention (not purged yet). */
  live: boolean;
}

/**
 * Marks the key in flight for the rest of the transaction and reads its stored outcome, in one statement. `locked`
 * is false when another request holds the key (this one gets 409 rather than waiting). The outcome is read with the
 * statement's snapshot, taken before the lock was: an outcome committed in between is not seen here, and
 * `insertOutcome` then finds it.
 */
export async function lockAndFind(
  tx: Queryable,
  workspaceId: string,
  key: string,
): Promise<{ locked: boolean; outcome: StoredOutcome | undefined }> {
  const { rows } = await tx.query<{ locked: boolean } & { [K in keyof StoredOutcome]: StoredOutcome[K] | null }>(
    `SELECT pg_try_advisory_xact_lock(hashtextextended($3, 7201)) AS locked,
            k.fingerprint, k.response_status, k.response_headers, k.response_body, k.expires_at > now() AS live
     FROM (SELECT 1) one LEFT JOIN idempotency_keys k ON k.workspace_id = $1 AND k.key = $2`,
    [workspaceId, key, `${workspaceId}/${key}`],
  );
  const row = rows[0];
  if (!row) throw new Error('the idempotency lookup returned no row');
  const outcome = row.fingerprint === null ? undefined : (row as unknown as StoredOutcome);
  return { locked: row.locked, outcome };
}

/** The stored outcome of a key, outside the transaction that found another one had committed it. */
export async function findOutcome(db: Queryable, workspaceId: string, key: string): Promise<StoredOutcome | undefined> {
  const { rows } = await db.query<StoredOutcome>(
    `SELECT fingerprint, response_status, response_headers, response_body, expires_at > now() AS live
     FROM idempotency_keys WHERE workspace_id = $1 AND key = $2`,
    [workspaceId, key],
  );
  return rows[0];
}

/** The stored outcomes of several keys in one read (a bulk request's items), by key; keys without one are absent. */
export async function findOutcomes(
  db: Queryable,
  workspaceId: string,
  keys: readonly string[],
): Promise<Map<string, StoredOutcome>> {
  const { rows } = await db.query<StoredOutcome & { key: string }>(
    `SELECT key, fingerprint, response_status, response_headers, response_body, expires_at > now() AS live
     FROM idempotency_keys WHERE workspace_id = $1 AND key = ANY($2::text[])`,
    [workspaceId, keys],
  );
  return new Map(rows.map(({ key, ...outcome }) => [key, outcome]));
}

export async function deleteOutcome(tx: Queryable, workspaceId: string, key: string): Promise<void> {
  await tx.query('DELETE FROM idempotency_keys WHERE workspace_id = $1 AND key = $2', [workspaceId, key]);
}

/**
 * Stored in the operation's own transaction, so a crash leaves both or neither. False when a request with the same
 * key committed its outcome first (after this transaction's lookup): this transaction must then be undone.
 */
export async function insertOutcome(
  tx: Queryable,
  workspaceId: string,
  key: string,
  fingerprint: string,
  response: { status: number; headers: Record<string, string>; body: string },
  retentionSeconds: number,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO idempotency_keys
       (workspace_id, key, fingerprint, response_status, response_headers, response_body, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, now(), now() + make_interval(secs => $7))
     ON CONFLICT (workspace_id, key) DO NOTHING`,
    [workspaceId, key, fingerprint, response.status, JSON.stringify(response.headers), response.body, retentionSeconds],
  );
  return rowCount === 1;
}

/** A statement and its parameters ($1…$n): the shape of `Statement` in events.repository.ts (platform imports no module). */
export interface WriteStatement {
  text: string;
  values: unknown[];
}

/**
 * `write` with the key's outcome inserted by the same statement, as one more data-modifying WITH: the write and its
 * stored answer commit together, or (on any error, the key's unique violation among them) neither. The outcome's
 * parameters are numbered after the write's. `write` is a plain INSERT or UPDATE, or a data-modifying WITH (not
 * RECURSIVE) whose list the outcome joins: a WITH holding data-modifying statements cannot be nested.
 */
export function withOutcome(
  write: WriteStatement,
  workspaceId: string,
  key: string,
  fingerprint: string,
  response: { status: number; headers: Record<string, string>; body: string },
  retentionSeconds: number,
): WriteStatement {
  const p = (n: number): string => `$${write.values.length + n}`;
  const outcome = `idempotency_outcome AS (
       INSERT INTO idempotency_keys
         (workspace_id, key, fingerprint, response_status, response_headers, response_body, created_at, expires_at)
       VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, now(), now() + make_interval(secs => ${p(7)})))`;
  const leadingWith = /^\s*WITH\s+/i;
  if (/^\s*WITH\s+RECURSIVE\b/i.test(write.text)) throw new Error('an idempotent write cannot be a WITH RECURSIVE');
  const text = leadingWith.test(write.text)
    ? write.text.replace(leadingWith, `WITH ${outcome},\n     `)
    : `WITH ${outcome}\n     ${write.text}`;
  return {
    text,
    values: [
      ...write.values,
      workspaceId,
      key,
      fingerprint,
      response.status,
      JSON.stringify(response.headers),
      response.body,
      retentionSeconds,
    ],
  };
}

/** The key's stored outcome was there first: the unique violation of idempotency_keys' primary key. */
export function isOutcomeTaken(err: unknown): boolean {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  return e?.code === '23505' && e.constraint === 'idempotency_keys_pkey';
}

/** Deletes the key's outcome if it is past retention (not purged yet): it no longer counts. */
export async function deleteExpiredOutcome(db: Queryable, workspaceId: string, key: string): Promise<void> {
  await db.query('DELETE FROM idempotency_keys WHERE workspace_id = $1 AND key = $2 AND expires_at <= now()', [
    workspaceId,
    key,
  ]);
}

/**
 * Deletes up to `batchSize` outcomes past retention, oldest first by the `idempotency_keys_expiry` index; returns
 * how many. Maintenance: spans workspaces. `ctid = ANY(ARRAY(…))` deletes by physical address with a TID scan (an
 * `IN (subquery)` may be planned as a join that reads more of the table); SKIP LOCKED lets another process purging
 * at once take the next rows instead of waiting.
 */
export async function purgeExpired(db: Queryable, batchSize: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM idempotency_keys WHERE expires_at <= now()
       ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED))`,
    [batchSize],
  );
  return rowCount ?? 0;
}

/** The stored answers whose body is sealed (answers holding a secret), locked: what `rotate-key` re-seals. Spans workspaces. */
export async function lockSealedOutcomes(
  tx: Queryable,
): Promise<{ workspace_id: string; key: string; response_body: string }[]> {
  const { rows } = await tx.query<{ workspace_id: string; key: string; response_body: string }>(
    `SELECT workspace_id, key, response_body FROM idempotency_keys WHERE response_body LIKE 'sealed:%' FOR UPDATE`,
  );
  return rows;
}

export async function setOutcomeBodies(
  tx: Queryable,
  rows: { workspace_id: string; key: string; response_body: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  await tx.query(
    `UPDATE idempotency_keys k SET response_body = u.body
     FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u (workspace_id, key, body)
     WHERE k.workspace_id = u.workspace_id AND k.key = u.key`,
    [rows.map((r) => r.workspace_id), rows.map((r) => r.key), rows.map((r) => r.response_body)],
  );
}
