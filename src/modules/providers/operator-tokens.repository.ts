// SQL of the operator access tokens shared by all nodes (operator-tokens.ts): one row per connector and scope, the
// token sealed, and the lease of the node renewing it. Times are the database's (now()), so nodes' clocks never
// disagree about whether a token is due or a lease is held. Platform-level: a connector serves every workspace.
import type { Queryable } from '../../db/pool.js';

export interface StoredToken {
  /** The sealed token, or null while none has been stored yet. */
  sealed: string | null;
  /** Milliseconds until the token is due for renewal (0 or less: due now). */
  renewInMs: number;
  /** Milliseconds until the operator's stated expiry. */
  expiresInMs: number;
  /** Whether a node holds the renewal lease now. */
  leased: boolean;
}

/** The row of a connector's token, or undefined when there is none yet. */
export async function readToken(db: Queryable, connector: string, scope: string): Promise<StoredToken | undefined> {
  const { rows } = await db.query<{
    sealed_token: string | null;
    renew_in_ms: number | null;
    expires_in_ms: number | null;
    leased: boolean;
  }>(
    `SELECT sealed_token,
            (extract(epoch FROM renew_at - now()) * 1000)::float8 AS renew_in_ms,
            (extract(epoch FROM expires_at - now()) * 1000)::float8 AS expires_in_ms,
            coalesce(renewing_until > now(), false) AS leased
     FROM operator_tokens WHERE connector = $1 AND scope = $2`,
    [connector, scope],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  return {
    sealed: row.sealed_token,
    renewInMs: row.renew_in_ms ?? 0,
    expiresInMs: row.expires_in_ms ?? 0,
    leased: row.leased,
  };
}

/**
 * Takes the renewal lease for `holder` until `leaseMs` from now, in one statement: only when no token is stored or
 * the stored one is due, and no other node holds an unexpired lease. True when taken.
 */
export async function takeLease(
  db: Queryable,
  connector: string,
  scope: string,
  holder: string,
  leaseMs: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO operator_tokens AS t (connector, scope, renewing_by, renewing_until, updated_at)
     VALUES ($1, $2, $3, now() + $4::float8 * interval '1 millisecond', now())
     ON CONFLICT (connector, scope) DO UPDATE
       SET renewing_by = excluded.renewing_by, renewing_until = excluded.renewing_until, updated_at = now()
       WHERE (t.renew_at IS NULL OR t.renew_at <= now())
         AND (t.renewing_until IS NULL OR t.renewing_until <= now())`,
    [connector, scope, holder, leaseMs],
  );
  return rowCount === 1;
}

/**
 * Stores a new token fetched under `holder`'s lease and frees the lease. False (nothing written) when the lease was
 * lost meanwhile (it expired and another node took it).
 */
export async function storeToken(
  db: Queryable,
  connector: string,
  scope: string,
  holder: string,
  sealed: string,
  expiresInMs: number,
  renewInMs: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE operator_tokens
     SET sealed_token = $4, expires_at = now() + $5::float8 * interval '1 millisecond',
         renew_at = now() + $6::float8 * interval '1 millisecond', renewing_by = NULL, renewing_until = NULL, updated_at = now()
     WHERE connector = $1 AND scope = $2 AND renewing_by = $3`,
    [connector, scope, holder, sealed, expiresInMs, renewInMs],
  );
  return rowCount === 1;
}

/** Frees `holder`'s lease without a new token (the operator did not give one): another node may try at once. */
export async function releaseLease(db: Queryable, connector: string, scope: string, holder: string): Promise<void> {
  await db.query(
    `UPDATE operator_tokens SET renewing_by = NULL, renewing_until = NULL, updated_at = now()
     WHERE connector = $1 AND scope = $2 AND renewing_by = $3`,
    [connector, scope, holder],
  );
}

/**
 * The operator refused the token sealed as `sealed`: it is due now, if the row still holds that one. A row already
 * holding a newer token is left alone (renewing again would throw away a good token).
 */
export async function markDue(db: Queryable, connector: string, scope: string, sealed: string): Promise<void> {
  await db.query(
    `UPDATE operator_tokens SET renew_at = now(), updated_at = now()
     WHERE connector = $1 AND scope = $2 AND sealed_token = $3 AND renew_at > now()`,
    [connector, scope, sealed],
  );
}
