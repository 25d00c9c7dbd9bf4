// Secrets at rest: AES-256-GCM under the service's secrets key (src/platform/secrets-key.ts says where it comes from).
// A sealed value is one string, `sealed:v1:<key id>:<iv>:<ciphertext>:<tag>` (base64url parts), so it fits wherever
// the plaintext did (a text column, a JSON field, PROVIDERS_FILE). The key id says which key sealed it, so values
// sealed under a previous key still open during a rotation, and an error can say which key is missing.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const PREFIX = `sealed:${VERSION}:`;
const ALGORITHM = 'aes-256-gcm';
export const KEY_BYTES = 32;
/** GCM's recommended nonce size; a random one per value (2^32 values under one key keep collisions negligible). */
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A key the box does not hold is looked for again (the key file re-read) at most this often. */
const RELOAD_INTERVAL_MS = 1000;

/** A key's public name: the first 16 hex characters of its SHA-256 (it tells keys apart and reveals nothing of them). */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** Whether a value has the sealed form (it may still fail to open). */
export function isSealed(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(PREFIX);
}

/** The id of the key a sealed value names, or undefined when it is not a sealed value. */
export function sealedKeyId(value: string): string | undefined {
  return isSealed(value) ? value.slice(PREFIX.length).split(':')[0] : undefined;
}

export class SecretBoxError extends Error {}

export interface KeyRing {
  current: Buffer;
  previous: Buffer[];
}

export interface SecretBoxOptions {
  /**
   * Reads the keys again when a value names a key the box does not hold: with the key file, `rotate-key` replaces it
   * while the service runs, and the service then takes the new key up (and seals with it) instead of failing.
   */
  reload?: () => KeyRing;
}

export class SecretBox {
  private current: Buffer;
  private currentId: string;
  private readonly keys = new Map<string, Buffer>();
  private lastReload = 0;

  constructor(
    current: Buffer,
    previous: readonly Buffer[] = [],
    private readonly options: SecretBoxOptions = {},
  ) {
    if (current.length !== KEY_BYTES) throw new SecretBoxError(`a secrets key must be ${KEY_BYTES} bytes`);
    this.current = current;
    this.currentId = keyId(current);
    this.add([current, ...previous]);
  }

  /** The id of the key new values are sealed under. */
  get keyId(): string {
    return this.currentId;
  }

  /** The ids of every key the box can open with, the current one first. */
  get keyIds(): string[] {
    return [this.currentId, ...[...this.keys.keys()].filter((id) => id !== this.currentId)];
  }

  isSealed(value: unknown): value is string {
    return isSealed(value);
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.current, iv, { authTagLength: TAG_BYTES });
    // The version and key id are authenticated too: a value cannot be passed off as sealed under another key.
    const header = `${PREFIX}${this.currentId}`;
    cipher.setAAD(Buffer.from(header));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [header, b64(iv), b64(ciphertext), b64(cipher.getAuthTag())].join(':');
  }

  /** The plaintext; throws a SecretBoxError naming the key when no key held fits, or when the value was altered. */
  open(sealed: string): string {
    if (!isSealed(sealed)) throw new SecretBoxError('not a sealed value (sealed:v1:…)');
    const parts = sealed.slice(PREFIX.length).split(':');
    const [id, iv, ciphertext, tag] = parts;
    if (parts.length !== 4 || id === undefined || iv === undefined || ciphertext === undefined || tag === undefined)
      throw new SecretBoxError('a sealed value is malformed: it must read sealed:v1:<key id>:<iv>:<data>:<tag>');
    const key = this.keys.get(id) ?? this.reloadFor(id);
    if (key === undefined)
      throw new SecretBoxError(
        `a value is sealed under key ${id}, which this process does not have (its keys: ${this.keyIds.join(', ')}); ` +
          'start it with the SECRETS_KEY (or SECRETS_KEY_PREVIOUS, or DATA_DIR/secrets.key) that sealed it',
      );
    try {
      const decipher = createDecipheriv(ALGORITHM, key, unb64(iv), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(`${PREFIX}${id}`));
      decipher.setAuthTag(unb64(tag));
      return Buffer.concat([decipher.update(unb64(ciphertext)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretBoxError(`a value sealed under key ${id} does not open: it was altered or damaged`);
    }
  }

  private add(keys: readonly Buffer[]): void {
    for (const key of keys) {
      if (key.length !== KEY_BYTES) throw new SecretBoxError(`a secrets key must be ${KEY_BYTES} bytes`);
      this.keys.set(keyId(key), key);
    }
  }

  /** Reads the keys again (at most once a second) and answers the one named `id`, if they hold it now. */
  private reloadFor(id: string): Buffer | undefined {
    if (!this.options.reload || Date.now() - this.lastReload < RELOAD_INTERVAL_MS) return undefined;
    this.lastReload = Date.now();
    let ring: KeyRing;
    try {
      ring = this.options.reload();
    } catch {
      return undefined;
    }
    this.add([ring.current, ...ring.previous]);
    // The file's current key is the one to seal with from now on; the old one stays to open what it sealed.
    this.current = ring.current;
    this.currentId = keyId(ring.current);
    return this.keys.get(id);
  }
}

const b64 = (bytes: Buffer): string => bytes.toString('base64url');

function unb64(text: string): Buffer {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new SecretBoxError('a sealed value is malformed: a part is not base64url');
  return Buffer.from(text, 'base64url');
}
