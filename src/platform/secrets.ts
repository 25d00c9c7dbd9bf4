// Service-wide secrets kept in the database, so every node of a deployment signs and verifies alike. Each is stored
// sealed under the secrets key (secret-box.ts), which is kept apart from the database: a copy of the database alone
// cannot mint tokens.
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type JWK, type CryptoKey } from 'jose';
import { withTransaction, type Db, type Queryable } from '../db/pool.js';
import { isSealed, type SecretBox } from './secret-box.js';
import * as repo from './secrets.repository.js';

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

/** Each secret and how a new one is made. */
const MAKE = {
  jwt_signing_key: async (): Promise<StoredSigningKey> => {
    const { privateKey, publicKey } = await generateKeyPair(TOKEN_ALG, { extractable: true });
    return {
      kid: randomBytes(8).toString('hex'),
      private_jwk: await exportJWK(privateKey),
      public_jwk: await exportJWK(publicKey),
    };
  },
  cursor_key: () => Promise.resolve({ key: randomBytes(32).toString('base64') }),
  sandbox_provider_secret: () => Promise.resolve({ key: randomBytes(32).toString('hex') }),
};
const NAMES = Object.keys(MAKE) as (keyof typeof MAKE)[];

/** The stored form of a sealed value. */
interface SealedValue {
  sealed: string;
}

function isSealedValue(value: unknown): value is SealedValue {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.keys(value).length === 1 &&
    isSealed((value as Record<string, unknown>).sealed)
  );
}

const sealValue = (box: SecretBox, plain: unknown): SealedValue => ({ sealed: box.seal(JSON.stringify(plain)) });

/**
 * The service's keys. Missing secrets are created sealed, and any still stored in plaintext (by a version before
 * secrets were sealed) are sealed in place, once: in a transaction holding an advisory lock, so nodes starting
 * together take turns and the second finds the work done.
 */
export async function loadServiceKeys(db: Db, box: SecretBox): Promise<ServiceKeys> {
  let stored = new Map((await repo.findServiceSecrets(db, NAMES)).map((r) => [r.name, r.value]));
  if (!NAMES.every((name) => isSealedValue(stored.get(name)))) {
    stored = await withTransaction(db, async (tx) => {
      await repo.lockServiceSecrets(tx);
      const current = new Map((await repo.findServiceSecrets(tx, NAMES, true)).map((r) => [r.name, r.value]));
      for (const name of NAMES) {
        let value = current.get(name);
        if (value === undefined) value = await repo.insertServiceSecret(tx, name, sealValue(box, await MAKE[name]()));
        if (!isSealedValue(value)) {
          value = sealValue(box, value);
          await repo.updateServiceSecret(tx, name, value);
        }
        current.set(name, value);
      }
      return current;
    });
  }
  const open = <T>(name: (typeof NAMES)[number]): T => {
    try {
      return JSON.parse(box.open((stored.get(name) as SealedValue).sealed)) as T;
    } catch (err) {
      throw new Error(`the service secret ${name} cannot be opened: ${(err as Error).message}`, { cause: err });
    }
  };
  const signing = open<StoredSigningKey>('jwt_signing_key');
  const cursor = open<{ key: string }>('cursor_key');
  const sandbox = open<{ key: string }>('sandbox_provider_secret');
  return {
    kid: signing.kid,
    privateKey: (await importJWK(signing.private_jwk, TOKEN_ALG)) as CryptoKey,
    publicKey: (await importJWK(signing.public_jwk, TOKEN_ALG)) as CryptoKey,
    cursorKey: Buffer.from(cursor.key, 'base64'),
    sandboxProviderSecret: sandbox.key,
  };
}

/**
 * `rotate-key`: every service secret re-sealed by `reseal` (which opens under the old keys and seals under the new),
 * in the caller's transaction; one still in plaintext is sealed. Returns how many.
 */
export async function resealServiceSecrets(tx: Queryable, reseal: (value: string) => string): Promise<number> {
  const rows = await repo.lockAllServiceSecrets(tx);
  for (const row of rows) {
    const value = isSealedValue(row.value) ? row.value.sealed : JSON.stringify(row.value);
    await repo.updateServiceSecret(tx, row.name, { sealed: reseal(value) });
  }
  return rows.length;
}
