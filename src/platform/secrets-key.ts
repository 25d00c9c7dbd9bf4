// Where the secrets key comes from: SECRETS_KEY (and SECRETS_KEY_PREVIOUS during a rotation), or, when it is unset,
// the key file DATA_DIR/secrets.key, created on first start. Kept apart from the database on purpose: a copy of the
// database without the key cannot open the service's signing key or the webhook secrets.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { ConfigError, SECRETS_KEY_FORM, type PaymentsEnv } from './environment.js';
import { KEY_BYTES, SecretBox, type KeyRing } from './secret-box.js';

export const KEY_FILE = 'secrets.key';
/** The key a `rotate-key` replaced: it still opens values sealed before (PROVIDERS_FILE's, say). */
export const PREVIOUS_KEY_FILE = 'secrets.key.previous';
/** The key a `rotate-key` is moving to; left behind only when one was interrupted (running it again finishes it). */
export const NEXT_KEY_FILE = 'secrets.key.new';

/** The settings the secrets key is found by (config.ts's Config has them all). */
export interface SecretsKeySettings {
  /** SECRETS_KEY, when set. */
  secretsKey: Buffer | undefined;
  /** SECRETS_KEY_PREVIOUS, during a rotation. */
  secretsKeyPrevious: Buffer | undefined;
  /** DATA_DIR, where the key file is when SECRETS_KEY is unset. */
  dataDir: string;
  paymentsEnv: PaymentsEnv;
}

export interface LoadedSecretsKey {
  box: SecretBox;
  /** Where the current key came from: `SECRETS_KEY`, or the key file's path. */
  source: string;
  /** The key file, when the key comes from one (no SECRETS_KEY). */
  file: string | undefined;
  /** Whether this call created the key file. */
  created: boolean;
  /** What an operator should hear about, at warn. */
  warnings: string[];
}

/** A new random key. */
export function newSecretsKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

/** The key of a key file, or undefined when there is none; a file of another form is a ConfigError naming it. */
export function readKeyFile(file: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`the secrets key file ${file} cannot be read: ${(err as Error).message}`);
  }
  if (!SECRETS_KEY_FORM.test(text))
    throw new ConfigError(`the secrets key file ${file} must hold 32 bytes in base64 (44 characters); it does not`);
  return Buffer.from(text, 'base64');
}

/**
 * Writes a key file so that it is either absent or complete, never partly written: a temporary file (mode 0600,
 * flushed to disk) renamed onto `file`, or, with `exclusive`, linked to it (failing with EEXIST when it exists).
 */
export function writeKeyFile(file: string, key: Buffer, exclusive = false): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${key.toString('base64')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (exclusive) linkSync(temporary, file);
    else renameSync(temporary, file);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw err;
  }
  if (exclusive) unlinkSync(temporary);
  syncDirectory(dir);
}

/** Renames within a directory and makes the rename durable. */
export function renameDurably(from: string, to: string): void {
  renameSync(from, to);
  syncDirectory(path.dirname(to));
}

/** A rename or link is on disk once its directory is flushed. */
function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The key file's keys: the current one, then those that still open older values. */
function keyFileRing(dir: string, extra: Buffer | undefined): KeyRing & { next: boolean } {
  const current = readKeyFile(path.join(dir, KEY_FILE));
  if (current === undefined) throw new ConfigError(`the secrets key file ${path.join(dir, KEY_FILE)} is missing`);
  const previous = readKeyFile(path.join(dir, PREVIOUS_KEY_FILE));
  const next = readKeyFile(path.join(dir, NEXT_KEY_FILE));
  return {
    current,
    previous: [next, previous, extra].filter((k): k is Buffer => k !== undefined),
    next: next !== undefined,
  };
}

/**
 * The secrets key of this process, as a SecretBox: SECRETS_KEY, or the key file in DATA_DIR (read, or created when
 * absent). Synchronous, so PROVIDERS_FILE's sealed values can be opened while the file is checked.
 */
export function loadSecretsKey(config: SecretsKeySettings): LoadedSecretsKey {
  const warnings: string[] = [];
  if (config.secretsKey !== undefined) {
    const previous = config.secretsKeyPrevious === undefined ? [] : [config.secretsKeyPrevious];
    return {
      box: new SecretBox(config.secretsKey, previous),
      source: 'SECRETS_KEY',
      file: undefined,
      created: false,
      warnings,
    };
  }
  const file = path.join(config.dataDir, KEY_FILE);
  let created = false;
  if (readKeyFile(file) === undefined) {
    try {
      writeKeyFile(file, newSecretsKey(), true);
      created = true;
    } catch (err) {
      // Another process on this DATA_DIR created it first: both use that one.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new ConfigError(`the secrets key file ${file} cannot be created: ${(err as Error).message}`);
    }
  }
  const ring = keyFileRing(config.dataDir, config.secretsKeyPrevious);
  if ((statSync(file).mode & 0o077) !== 0)
    warnings.push(`the secrets key file ${file} can be read by others than its owner: chmod 600 it`);
  if (ring.next)
    warnings.push(
      `${path.join(config.dataDir, NEXT_KEY_FILE)} is left from an interrupted rotate-key; its key opens values too. ` +
        'Run `npm run secrets -- rotate-key` again to finish the rotation',
    );
  if (config.paymentsEnv === 'production')
    warnings.push(
      `PAYMENTS_ENV is production and SECRETS_KEY is unset: secrets are sealed under the key file ${file} of this ` +
        "machine. Several nodes need the same key: set SECRETS_KEY on every node (to this file's content, to keep " +
        'what is sealed already), and keep it apart from the database backups',
    );
  const box = new SecretBox(ring.current, ring.previous, {
    reload: () => keyFileRing(config.dataDir, config.secretsKeyPrevious),
  });
  return { box, source: file, file, created, warnings };
}
