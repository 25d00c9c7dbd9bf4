// Service-wide secrets kept in the database, so every node of a deployment signs and verifies alike.
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type JWK, type CryptoKey } from 'jose';
import type { Queryable } from '../db/pool.js';

export const TOKEN_ALG = 'ES256';

export interface ServiceKeys {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** HMAC key for opaque list cursors. */
  cursorKey: Buffer;
  /** HMAC key the sandbox simulator signs its provider callbacks with. */
  sandboxProviderSecret: string;
}

interface StoredSigningKey {
  kid: string;
  private_jwk: JWK;
  public_jwk: JWK;
}

async function getOrCreate<T>(db: Queryable, name: string, make: () => Promise<T>): Promise<T> {
  const existing = await db.query<{ value: T }>('SELECT value FROM service_secrets WHERE name = $1', [name]);
  if (existing.rows[0]) return existing.rows[0].value;
  const value = await make();
  // Two nodes starting at once: the first insert wins and both use what is stored.
  await db.query('INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    JSON.stringify(value),
  ]);
  const stored = await db.query<{ value: T }>('SELECT value FROM service_secrets WHERE name = $1', [name]);
  const row = stored.rows[0];
  if (!row) throw new Error(`service secret ${name} could not be stored`);
  return row.value;
}

export async function loadServiceKeys(db: Queryable): Promise<ServiceKeys> {
  const signing = await getOrCreate<StoredSigningKey>(db, 'jwt_signing_key', async () => {
    const { privateKey, publicKey } = await generateKeyPair(TOKEN_ALG, { extractable: true });
    return {
      kid: randomBytes(8).toString('hex'),
      private_jwk: await exportJWK(privateKey),
      public_jwk: await exportJWK(publicKey),
    };
  });
  const cursor = await getOrCreate<{ key: string }>(db, 'cursor_key', () =>
    Promise.resolve({ key: randomBytes(32).toString('base64') }),
  );
  const sandbox = await getOrCreate<{ key: string }>(db, 'sandbox_provider_secret', () =>
    Promise.resolve({ key: randomBytes(32).toString('hex') }),
  );
  return {
    kid: signing.kid,
    privateKey: (await importJWK(signing.private_jwk, TOKEN_ALG)) as CryptoKey,
    publicKey: (await importJWK(signing.public_jwk, TOKEN_ALG)) as CryptoKey,
    cursorKey: Buffer.from(cursor.key, 'base64'),
    sandboxProviderSecret: sandbox.key,
  };
}
