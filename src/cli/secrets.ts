// `npm run secrets -- seal | rotate-key`: the secrets kept at rest (docs/operations.md, "Secrets at rest").
//   seal        reads a value on stdin and prints it sealed under the secrets key, to be written in PROVIDERS_FILE as
//               {"sealed": "…"}, so that the file holds no credential in plaintext.
//   rotate-key  makes a new key and re-seals every sealed value of the database under it, in one transaction. With the
//               key file (no SECRETS_KEY), DATA_DIR/secrets.key is then replaced and the old key kept in
//               secrets.key.previous; with SECRETS_KEY, the new key is printed, to be set on every node.
// Exit 0: done; 1: failure (rotate-key: nothing changed, the transaction rolled back); 2: bad arguments.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../config.js';
import { openDatabase } from '../db/open.js';
import { withTransaction } from '../db/pool.js';
import { resealSecondFactorSecrets } from '../modules/members/second-factor.service.js';
import { resealEndpointSecrets } from '../modules/webhooks/webhooks.service.js';
import { resealStoredOutcomes } from '../platform/idempotency.js';
import { isSealed, keyId, SecretBox } from '../platform/secret-box.js';
import {
  loadSecretsKey,
  newSecretsKey,
  NEXT_KEY_FILE,
  PREVIOUS_KEY_FILE,
  readKeyFile,
  renameDurably,
  writeKeyFile,
} from '../platform/secrets-key.js';
import { resealServiceSecrets } from '../platform/secrets.js';

const USAGE = `Usage:
  npm run secrets -- seal < value.txt     # prints the value (stdin, one trailing newline dropped) sealed under the
                                          # secrets key: write it in PROVIDERS_FILE as {"sealed": "sealed:v1:…"}
  npm run secrets -- rotate-key           # re-seals every secret of the database under a new key

Uses SECRETS_KEY (unset: the key file DATA_DIR/secrets.key, DATA_DIR defaulting to ./data) and DATABASE_URL (unset:
the embedded database in DATA_DIR), as npm start does.
Exit 0: done; 1: failure (rotate-key changed nothing); 2: bad arguments.
`;

type Command = 'seal' | 'rotate-key' | 'help';

/** The command the arguments name, or a message saying what is wrong with them. */
function parseCommand(argv: string[]): Command | { problem: string } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { help: { type: 'boolean', default: false } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    return { problem: (err as Error).message };
  }
  if (parsed.values.help) return 'help';
  const [command, ...extra] = parsed.positionals;
  if (command !== 'seal' && command !== 'rotate-key')
    return { problem: command ? `unknown command '${command}'` : 'a command is needed' };
  if (extra.length > 0) return { problem: `unexpected argument '${extra.join(' ')}'` };
  return command;
}

/** Writes to stdout and waits until it is handed on, so that a key is known to be out before it is put to use. */
function writeOut(text: string): Promise<void> {
  return new Promise((resolve, reject) => process.stdout.write(text, (err) => (err ? reject(err) : resolve())));
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('secrets: type the value, then Ctrl-D\n');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // `echo value |` and a file ending in a newline: that newline is not part of the value.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

async function seal(config: Config): Promise<number> {
  const value = await readStdin();
  if (value === '') {
    process.stderr.write(`secrets: no value on stdin\n\n${USAGE}`);
    return 2;
  }
  const { box, source, created } = loadSecretsKey(config);
  await writeOut(`${box.seal(value)}\n`);
  // A key file created just now means no service has run on this DATA_DIR yet: worth saying, in case it is the wrong one.
  process.stderr.write(
    `secrets: sealed under key ${box.keyId} (${source}${created ? ', created now' : ''}); ` +
      'write it in PROVIDERS_FILE as {"sealed": "<the line above>"}\n',
  );
  return 0;
}

/** The fields of PROVIDERS_FILE written sealed, as `connector 'NAME' field PATH` (the file is not rewritten). */
function sealedInProvidersFile(file: string | undefined): string[] {
  if (file === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
  const found: string[] = [];
  const walk = (value: unknown, owner: string, field: string): void => {
    if (typeof value !== 'object' || value === null) return;
    if (!Array.isArray(value) && isSealed((value as { sealed?: unknown }).sealed)) {
      found.push(`${owner} field ${field}`);
      return;
    }
    for (const [k, v] of Object.entries(value)) walk(v, owner, field ? `${field}.${k}` : k);
  };
  const connectors = (parsed as { connectors?: unknown }).connectors;
  if (Array.isArray(connectors))
    connectors.forEach((c, i) => {
      const name = (c as { name?: unknown }).name;
      walk(c, typeof name === 'string' ? `connector '${name}'` : `connectors[${i}]`, '');
    });
  return found;
}

async function rotateKey(config: Config): Promise<number> {
  const loaded = loadSecretsKey(config);
  const old = loaded.box;
  const oldId = old.keyId;
  // With the key file, the new key is on disk (secrets.key.new) before any value is sealed under it, so a crash after
  // the commit cannot lose it; one left by an interrupted rotation is the key that rotation may have committed to, so
  // this run finishes it with the same key.
  const pending = loaded.file === undefined ? undefined : path.join(config.dataDir, NEXT_KEY_FILE);
  let newKey = pending === undefined ? undefined : readKeyFile(pending);
  const resumed = newKey !== undefined;
  if (newKey === undefined) {
    newKey = newSecretsKey();
    if (pending !== undefined) writeKeyFile(pending, newKey, true);
  }
  const next = new SecretBox(newKey);
  // A value still in plaintext (a row an earlier version wrote) is sealed too.
  const reseal = (value: string): string => next.seal(isSealed(value) ? old.open(value) : value);

  let printed = false;
  let counts: { serviceSecrets: number; endpoints: number; answers: number; secondFactors: number };
  try {
    const database = await openDatabase(config, () => undefined);
    try {
      counts = await withTransaction(database.pool, async (tx) => {
        const result = {
          serviceSecrets: await resealServiceSecrets(tx, reseal),
          endpoints: await resealEndpointSecrets(tx, reseal),
          answers: await resealStoredOutcomes(tx, reseal),
          secondFactors: await resealSecondFactorSecrets(tx, reseal),
        };
        if (pending === undefined) {
          // Printed before the commit: a key printed and never used is harmless, one used and never printed is not.
          await writeOut(`${newKey.toString('base64')}\n`);
          printed = true;
        }
        return result;
      });
    } finally {
      await database.close();
    }
  } catch (err) {
    if (pending !== undefined && !resumed) rmSync(pending, { force: true });
    process.stderr.write(
      `secrets: rotate-key failed and changed nothing (the transaction rolled back): ${(err as Error).message}` +
        `${printed ? '; the key printed above is not in use' : ''}\n`,
    );
    return 1;
  }

  const newId = next.keyId;
  process.stderr.write(
    `secrets: re-sealed ${counts.serviceSecrets} service secrets, the signing secrets of ${counts.endpoints} webhook ` +
      `endpoints, ${counts.answers} stored answers and ${counts.secondFactors} members' second factors under key ${newId} (was ${oldId})${resumed ? ', finishing an interrupted rotation' : ''}\n`,
  );
  if (loaded.file !== undefined && pending !== undefined) {
    const current = readKeyFile(loaded.file);
    try {
      // The old key stays beside the new one: it still opens PROVIDERS_FILE's sealed values and older backups.
      if (current !== undefined && keyId(current) !== newId)
        writeKeyFile(path.join(config.dataDir, PREVIOUS_KEY_FILE), current);
      renameDurably(pending, loaded.file);
    } catch (err) {
      process.stderr.write(
        `secrets: the database is sealed under key ${newId}, kept in ${pending}, but ${loaded.file} could not be ` +
          `replaced: ${(err as Error).message}. The service opens values with ${NEXT_KEY_FILE} meanwhile; run rotate-key again to finish\n`,
      );
      return 1;
    }
    process.stderr.write(
      `secrets: ${loaded.file} now holds key ${newId}; the old key is kept in ${PREVIOUS_KEY_FILE}. A running service ` +
        'takes the new key up by itself\n',
    );
  } else {
    process.stderr.write(
      `secrets: set SECRETS_KEY to the key printed above (key ${newId}) and SECRETS_KEY_PREVIOUS to the old one (key ` +
        `${oldId}) on every node, and restart them; keep it apart from the database backups\n`,
    );
  }
  const sealed = sealedInProvidersFile(config.providersFile);
  const keeper = loaded.file !== undefined ? `${PREVIOUS_KEY_FILE}` : 'SECRETS_KEY_PREVIOUS';
  process.stderr.write(
    sealed.length > 0
      ? `secrets: PROVIDERS_FILE is not rewritten: re-seal ${sealed.join(', ')} with \`npm run secrets -- seal\`; ` +
          `${keeper} keeps them working meanwhile\n`
      : `secrets: sealed values in PROVIDERS_FILE are never rewritten by rotate-key: re-seal any with \`npm run secrets -- seal\` ` +
          `(${keeper} keeps them working meanwhile)\n`,
  );
  return 0;
}

const command = parseCommand(process.argv.slice(2));
if (typeof command === 'object') {
  process.stderr.write(`secrets: ${command.problem}\n\n${USAGE}`);
  process.exitCode = 2;
} else if (command === 'help') {
  process.stdout.write(USAGE);
} else {
  try {
    const config = loadConfig();
    process.exitCode = command === 'seal' ? await seal(config) : await rotateKey(config);
  } catch (err) {
    process.stderr.write(`secrets: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
