// The idempotency engine: the outcome is stored in the same transaction as the write (a create's, in the same
// statement).
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { withTransaction, type Db, type Tx } from '../db/pool.js';
import { ApiError } from './errors.js';
import * as repo from './idempotency.repository.js';
import { deleteInBatches, type PurgeResult } from './purge.js';
import { IDEMPOTENCY_KEY_PATTERN } from './schemas.js';
import { isSealed, type SecretBox } from './secret-box.js';

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

export interface IdempotencyOptions {
  /**
   * The answer holds a secret (a token, a webhook signing secret): its stored copy is sealed under the secrets key,
   * so the database alone does not hold the secret for the retention. A replay opens it and answers the same bytes.
   */
  secret?: boolean;
}

const KEY_RE = new RegExp(IDEMPOTENCY_KEY_PATTERN);

export const idempotencyKeyMissing = (): ApiError =>
  new ApiError('idempotency_key_missing', 'This request needs an Idempotency-Key header (a UUID v4 is a good choice).');
export const idempotencyKeyInvalid = (): ApiError =>
  new ApiError('idempotency_key_invalid', 'Idempotency-Key must be 1 to 255 visible ASCII characters, sent once.');

/**
 * The Idempotency-Key header, checked: required routes get 422 when it is absent. The route's declared header
 * (schemas.ts) is checked first, by the same rule; this is what a route reads.
 */
export function idempotencyKey(request: FastifyRequest, required: boolean): string | undefined {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined || raw === '') {
    if (required) throw idempotencyKeyMissing();
    return undefined;
  }
  if (Array.isArray(raw) || !KEY_RE.test(raw)) throw idempotencyKeyInvalid();
  return raw;
}

/**
 * The key and fingerprint of a request, for `IdempotencyEngine.run` (key required) or `maybe` (key optional).
 * `caller` joins the fingerprint on routes whose stored answer is a secret (a new token): only the credential
 * that made the request can replay it; anyone else in the workspace gets 422 idempotency_key_reused.
 */
export function idempotencyOf(
  request: FastifyRequest,
  required: true,
  caller?: string,
): { key: string; fingerprint: string };
export function idempotencyOf(
  request: FastifyRequest,
  required: false,
  caller?: string,
): { key: string | undefined; fingerprint: string };
export function idempotencyOf(
  request: FastifyRequest,
  required: boolean,
  caller?: string,
): { key: string | undefined; fingerprint: string } {
  if (!declaresKey(request)) {
    throw new Error(`${request.method} ${request.routeOptions.url} honours an Idempotency-Key it does not declare`);
  }
  const key = idempotencyKey(request, required);
  const q = request.url.indexOf('?');
  const path = q === -1 ? request.url : request.url.slice(0, q);
  const print = fingerprint(request.method, path, request.body ?? null);
  return { key, fingerprint: caller === undefined ? print : `${print}/${caller}` };
}

/**
 * Whether the route declares the header (`headers: OptionalIdempotencyKey` or `RequiredIdempotencyKey`): a route that
 * honours a key and does not say so is a bug the first request to it shows, not a gap in the reference.
 */
function declaresKey(request: FastifyRequest): boolean {
  const headers = request.routeOptions.schema?.headers as { properties?: Record<string, unknown> } | undefined;
  return Object.keys(headers?.properties ?? {}).some((name) => name.toLowerCase() === 'idempotency-key');
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

const keyInUse = (): ApiError =>
  new ApiError(
    'idempotency_key_in_use',
    'A request with this Idempotency-Key is still being processed; retry shortly.',
    {
      headers: { 'Retry-After': '1' },
    },
  );

/** Thrown inside the transaction to undo it when another request with the key committed its outcome first. */
const COMMITTED_FIRST = Symbol('outcome committed first');

export class IdempotencyEngine {
  constructor(
    private readonly db: Db,
    private readonly retentionSeconds: number,
    private readonly box: SecretBox,
  ) {}

  /**
   * Runs `operation` once per (workspace, key). A transaction-scoped advisory lock marks the key
   * in flight: a concurrent request with the same key gets 409 rather than waiting. The outcome
   * row is inserted in the operation's own transaction, so a crash leaves both or neither.
   * An operation that throws stores nothing, so a corrected retry with the same key can succeed.
   * A replay changes nothing and answers the stored response.
   */
  async run(
    workspaceId: string,
    key: string,
    requestFingerprint: string,
    operation: (tx: Tx) => Promise<StoredResponse>,
    options: IdempotencyOptions = {},
  ): Promise<IdempotentResult> {
    let outcome: { stored: repo.StoredOutcome } | { response: StoredResponse };
    try {
      outcome = await withTransaction(
        this.db,
        async (tx): Promise<{ stored: repo.StoredOutcome } | { response: StoredResponse }> => {
          const { locked, outcome: row } = await repo.lockAndFind(tx, workspaceId, key);
          if (!locked) throw keyInUse();
          if (row?.live) return { stored: row };
          // Past retention but not purged yet: it no longer counts.
          if (row) await repo.deleteOutcome(tx, workspaceId, key);
          const response = await operation(tx);
          const stored = options.secret ? { ...response, body: this.box.seal(response.body) } : response;
          if (!(await repo.insertOutcome(tx, workspaceId, key, requestFingerprint, stored, this.retentionSeconds)))
            throw COMMITTED_FIRST;
          return { response };
        },
      );
    } catch (err) {
      if (err !== COMMITTED_FIRST) throw err;
      // A request with this key committed between our lookup and our lock: everything here was undone; its outcome stands.
      const stored = await repo.findOutcome(this.db, workspaceId, key);
      if (!stored) throw new Error('an idempotency outcome vanished after it was committed', { cause: err });
      outcome = { stored };
    }
    if ('response' in outcome) return { response: outcome.response, replayed: false };
    return this.replay(outcome.stored, requestFingerprint);
  }

  /**
   * A create whose answer is known before it is written (ids, times and body made in the process): `write` and the
   * key's stored answer go in as one statement in autocommit, so a fresh key costs one round trip and one commit, with
   * no BEGIN, COMMIT or lock statement of its own.
   *
   * Same-key races are settled by the primary key of idempotency_keys, not by an advisory lock: a second insert of the
   * key waits on the unique index until the first statement commits, then fails with the unique violation, and the
   * whole statement with it (nothing of its write is kept). The loser then reads the outcome that stands and answers
   * as `run` does: the replay, or 422 for another request. The wait is one statement long, so instead of answering
   * 409 the moment it meets a request in flight, it answers the replay a few milliseconds later. (An
   * INSERT … ON CONFLICT DO UPDATE … WHERE expired would not do: the write's own statements, such as a collection's
   * VALUES insert, cannot be made conditional on the claim, and only an error undoes them.)
   *
   * An outcome past retention but not purged no longer counts: it is deleted (only if still expired) and the statement
   * tried again. 409 `idempotency_key_in_use` is left for a key that keeps changing hands under it (another request's
   * deletion and insert between ours). An error of the write stores nothing, so a corrected retry can succeed.
   */
  async create(
    workspaceId: string,
    key: string,
    requestFingerprint: string,
    write: repo.WriteStatement,
    response: StoredResponse,
    options: IdempotencyOptions = {},
  ): Promise<IdempotentResult> {
    const stored = options.secret ? { ...response, body: this.box.seal(response.body) } : response;
    const { text, values } = repo.withOutcome(
      write,
      workspaceId,
      key,
      requestFingerprint,
      stored,
      this.retentionSeconds,
    );
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await this.db.query(text, values);
        return { response, replayed: false };
      } catch (err) {
        if (!repo.isOutcomeTaken(err)) throw err;
      }
      const row = await repo.findOutcome(this.db, workspaceId, key);
      if (row?.live) return this.replay(row, requestFingerprint);
      if (row) await repo.deleteExpiredOutcome(this.db, workspaceId, key);
      // No row: an expired one was deleted by another request whose own insert has not committed yet; the next
      // attempt waits on it.
    }
    throw keyInUse();
  }

  /**
   * The stored answer of a request whose key has a live outcome, or undefined: for a request refused before it
   * would write (a rail down, the service too busy), so that a retry of a request already done is still answered
   * with its replay (or 422 `idempotency_key_reused` for another request), as the key promises. One statement,
   * only on the refusal path.
   */
  async stored(workspaceId: string, key: string, requestFingerprint: string): Promise<IdempotentResult | undefined> {
    const row = await repo.findOutcome(this.db, workspaceId, key);
    return row?.live ? this.replay(row, requestFingerprint) : undefined;
  }

  /**
   * The stored answers of several requests at once (a bulk request's items), read in one statement: by key, the replay
   * of each live outcome, or the 422 `idempotency_key_reused` its fingerprint earns. A key absent from the map has no
   * live outcome and is for `run`, which settles any race with a request in flight.
   */
  async storedMany(
    workspaceId: string,
    requests: readonly { key: string; fingerprint: string }[],
  ): Promise<Map<string, IdempotentResult | ApiError>> {
    const out = new Map<string, IdempotentResult | ApiError>();
    if (requests.length === 0) return out;
    const rows = await repo.findOutcomes(
      this.db,
      workspaceId,
      requests.map((r) => r.key),
    );
    for (const r of requests) {
      const row = rows.get(r.key);
      if (!row?.live) continue;
      try {
        out.set(r.key, this.replay(row, r.fingerprint));
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        out.set(r.key, err);
      }
    }
    return out;
  }

  /** The answer to a request whose key has a live stored outcome. */
  private replay(row: repo.StoredOutcome, requestFingerprint: string): IdempotentResult {
    if (row.fingerprint !== requestFingerprint) {
      throw new ApiError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request (method, path or body); use a new key for a new operation.',
      );
    }
    // A stored body is JSON, so only a sealed one begins with the sealed prefix.
    const body = isSealed(row.response_body) ? this.box.open(row.response_body) : row.response_body;
    return { response: { status: row.response_status, headers: row.response_headers, body }, replayed: true };
  }

  /** For routes where the key is optional: with a key, as `run`; without one, the operation in a plain transaction. */
  async maybe(
    workspaceId: string,
    key: string | undefined,
    requestFingerprint: string,
    operation: (tx: Tx) => Promise<StoredResponse>,
    options: IdempotencyOptions = {},
  ): Promise<IdempotentResult> {
    if (key !== undefined) return this.run(workspaceId, key, requestFingerprint, operation, options);
    return { response: await withTransaction(this.db, operation), replayed: false };
  }

  /** Deletes outcomes past retention in batches of `batchSize`, each its own statement. Maintenance: spans workspaces. */
  async purgeExpired(batchSize: number): Promise<PurgeResult> {
    return deleteInBatches(batchSize, (limit) => repo.purgeExpired(this.db, limit));
  }
}

/**
 * `rotate-key`: the sealed stored answers re-sealed by `reseal`, in the caller's transaction (at most a retention's
 * worth: they are purged after it). Returns how many.
 */
export async function resealStoredOutcomes(tx: Tx, reseal: (value: string) => string): Promise<number> {
  const rows = await repo.lockSealedOutcomes(tx);
  await repo.setOutcomeBodies(
    tx,
    rows.map((r) => ({ ...r, response_body: reseal(r.response_body) })),
  );
  return rows.length;
}
