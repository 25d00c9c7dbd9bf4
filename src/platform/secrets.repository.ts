// SQL of the service-wide secrets (table service_secrets): one row per secret, its jsonb value sealed as
// {"sealed": "sealed:v1:…"} (a row from before secrets were sealed holds the plaintext until the next start).
import type { Queryable } from '../db/pool.js';

/** Held by the transaction that creates missing secrets or seals plaintext ones, so nodes starting together take turns. */
const SERVICE_SECRETS_LOCK = 7_201_003;

export interface StoredSecret {
  name: string;
  value: unknown;
}

export async function lockServiceSecrets(tx: Queryable): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [SERVICE_SECRETS_LOCK]);
}

/** The rows of these names; `lock` takes them FOR UPDATE. */
export async function findServiceSecrets(
  db: Queryable,
  names: readonly string[],
  lock = false,
): Promise<StoredSecret[]> {
  const { rows } = await db.query<StoredSecret>(
    `SELECT name, value FROM service_secrets WHERE name = ANY($1::text[])${lock ? ' FOR UPDATE' : ''}`,
    [names],
  );
  return rows;
}

/** Every row, locked: what `rotate-key` re-seals. */
export async function lockAllServiceSecrets(tx: Queryable): Promise<StoredSecret[]> {
  const { rows } = await tx.query<StoredSecret>('SELECT name, value FROM service_secrets ORDER BY name FOR UPDATE');
  return rows;
}

/**
 * Stores a new secret, unless a row of that name appeared meanwhile (a node of an earlier version, which takes no
 * lock, starting at the same moment): the value stored is answered either way.
 */
export async function insertServiceSecret(tx: Queryable, name: string, value: unknown): Promise<unknown> {
  const { rows } = await tx.query<{ value: unknown }>(
    `INSERT INTO service_secrets (name, value) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET value = service_secrets.value RETURNING value`,
    [name, JSON.stringify(value)],
  );
  return rows[0]?.value;
}

export async function updateServiceSecret(tx: Queryable, name: string, value: unknown): Promise<void> {
  await tx.query('UPDATE service_secrets SET value = $2 WHERE name = $1', [name, JSON.stringify(value)]);
}
