// The idempotency engine (contract §4): the outcome is stored in the same transaction as the write.
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { QueryResult } from 'pg';
import { withTransaction, type Db, type Tx } from '../db/pool.js';
import { ApiError } from './errors.js';

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  /** The exact bytes sent, so a replay is byte-identical. */
  body: string;
}

export interface IdempotentResult {
  response: StoredResponse;
  replayed: boolean;
}

const KEY_RE = /^[\x21-\x7e]{1,255}$/;

/** The Idempotency-Key header, checked: required routes get 422 when it is absent. */
export function idempotencyKey(request: FastifyRequest, required: boolean): string | undefined {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined || raw === '') {
    if (required) throw new ApiError('idempotency_key_missing', 'This request needs an Idempotency-Key header (a UUID v4 is a good choice).');
    return undefined;
  }
  if (Array.isArray(raw) || !KEY_RE.test(raw)) {
    throw new ApiError('idempotency_key_invalid', 'Idempotency-Key must be 1 to 255 visible ASCII characters, sent once.');
  }
  return raw;
}

/**
 * The key and fingerprint of a request, for `IdempotencyEngine.run` (key required) or `maybe` (key optional).
 * `caller` joins the fingerprint on routes whose stored answer is a secret (a new token): only the credential
 * that made the request can replay it; anyone else in the workspace gets 422 idempotency_key_reused.
 */
export function idempotencyOf(request: FastifyRequest, required: true, caller?: string): { key: string; fingerprint: string };
export function idempotencyOf(request: FastifyRequest, required: false, caller?: string): { key: string | undefined; fingerprint: string };
export function idempotencyOf(request: FastifyRequest, required: boolean, caller?: string): { key: string | undefined; fingerprint: string } {
  const key = idempotencyKey(request, required);
  const q = request.url.indexOf('?');
  const path = q === -1 ? request.url : request.url.slice(0, q);
  const print = fingerprint(request.method, path, request.body ?? null);
  return { key, fingerprint: caller === undefined ? print : `${print}/${caller}` };
}

/** Canonical JSON: object keys sorted at every depth, so key order never changes a fingerprint. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function fingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n${canonicalJson(body ?? null)}`)
    .digest('hex');
}

interface StoredRow {
  fingerprint: string;
  response_status: number;
  response_headers: Record<string, string>;
  response_body: string;
}

export class IdempotencyEngine {
  constructor(
    private readonly db: Db,
    private readonly retentionSeconds: number,
  ) {}

  /**
   * Runs `operation` once per (workspace, key). A transaction-scoped advisory lock marks the key
   * in flight: a concurrent request with the same key gets 409 rather than waiting. The outcome
   * row is inserted in the operation's own transaction, so a crash leaves both or neither.
   * An operation that throws stores nothing, so a corrected retry with the same key can succeed.
   */
  async run(
    workspaceId: string,
    key: string,
    requestFingerprint: string,
    operation: (tx: Tx) => Promise<StoredResponse>,
  ): Promise<IdempotentResult> {
    const client = await this.db.connect();
    const literal = (value: string): string => client.escapeLiteral(value);
    try {
      // One round trip: the transaction, the in-flight lock, and the stored outcome. They are three statements of
      // one simple query, so the lookup runs with a snapshot taken after the lock is held and sees an outcome that
      // a request with this key committed just before. The workspace id and the key (visible ASCII) are escaped
      // literals: the simple protocol takes no parameters.
      const opened = (await client.query(
        `BEGIN; SELECT pg_try_advisory_xact_lock(hashtextextended(${literal(`${workspaceId}/${key}`)}, 7201)) AS locked; ` +
          `SELECT fingerprint, response_status, response_headers, response_body, expires_at > now() AS live
           FROM idempotency_keys WHERE workspace_id = ${literal(workspaceId)} AND key = ${literal(key)}`,
      )) as unknown as QueryResult[];
      if (!Array.isArray(opened) || opened.length !== 3) throw new Error('the idempotency lookup did not answer its three statements');
      const [, lockResult, lookup] = opened as [unknown, QueryResult<{ locked: boolean }>, QueryResult<StoredRow & { live: boolean }>];
      if (!lockResult.rows[0]?.locked) {
        throw new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry shortly.', {
          headers: { 'Retry-After': '1' },
        });
      }
      const row = lookup.rows[0];
      if (row?.live) {
        await client.query('ROLLBACK');
        if (row.fingerprint !== requestFingerprint) {
          throw new ApiError(
            'idempotency_key_reused',
            'This Idempotency-Key was already used with a different request (method, path or body); use a new key for a new operation.',
          );
        }
        return {
          response: { status: row.response_status, headers: row.response_headers, body: row.response_body },
          replayed: true,
        };
      }
      if (row) {
        // Past retention but not purged yet: it no longer counts.
        await client.query('DELETE FROM idempotency_keys WHERE workspace_id = $1 AND key = $2', [workspaceId, key]);
      }
      const response = await operation(client);
      // Parameters, not literals, here: a stored answer can hold a secret (a new token, a signing secret), and
      // statement text shows in pg_stat_activity and in the server's log of a failed statement.
      await client.query(
        `INSERT INTO idempotency_keys
           (workspace_id, key, fingerprint, response_status, response_headers, response_body, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, now(), now() + make_interval(secs => $7))`,
        [workspaceId, key, requestFingerprint, response.status, JSON.stringify(response.headers), response.body, this.retentionSeconds],
      );
      await client.query('COMMIT');
      return { response, replayed: false };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** For routes where the key is optional: with a key, as `run`; without one, the operation in a plain transaction. */
  async maybe(
    workspaceId: string,
    key: string | undefined,
    requestFingerprint: string,
    operation: (tx: Tx) => Promise<StoredResponse>,
  ): Promise<IdempotentResult> {
    if (key !== undefined) return this.run(workspaceId, key, requestFingerprint, operation);
    return { response: await withTransaction(this.db, operation), replayed: false };
  }

  /** Deletes outcomes past retention, in batches; returns how many went. Maintenance: spans workspaces. */
  async purgeExpired(batchSize = 5000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await this.db.query(
        `DELETE FROM idempotency_keys WHERE ctid IN (
           SELECT ctid FROM idempotency_keys WHERE expires_at <= now() LIMIT $1)`,
        [batchSize],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < batchSize) return total;
    }
  }
}
