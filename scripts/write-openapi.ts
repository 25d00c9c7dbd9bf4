// `npm run openapi`: builds the app exactly as the service and the tests do (createService) and writes its OpenAPI document to openapi.json.
// The app needs a database to build: a scratch database on DATABASE_URL's server when it is set (dropped after),
// else an embedded PostgreSQL in a .data-openapi-* folder of its own (removed after). The settings are the defaults of a local run,
// never the caller's environment, so the file is the same wherever it is written.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { createPool } from '../src/db/pool.js';
import { createService } from '../src/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const output = path.join(root, 'openapi.json');

/** The settings the document is generated with; test/openapi.test.ts serves it with the same public base URL. */
const OPENAPI_PUBLIC_BASE_URL = 'http://localhost:8080';

async function scratchDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `openapi_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

async function main(): Promise<void> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    // A folder of this run's own, so runs side by side do not share a database cluster.
    const work = await mkdtemp(path.join(root, '.data-openapi-'));
    await chmod(work, 0o755); // as root, the embedded server runs as 'postgres' and must reach its folder
    cleanups.unshift(() => rm(work, { recursive: true, force: true }));
    let serverUrl = process.env.DATABASE_URL || undefined;
    if (!serverUrl) {
      const embedded: EmbeddedServer = await startEmbedded({
        dataDir: path.join(work, 'postgres'),
        port: 0,
        database: 'openapi',
        log: () => undefined,
      });
      cleanups.unshift(() => embedded.stop());
      serverUrl = embedded.url;
    }
    const database = await scratchDatabase(serverUrl);
    cleanups.unshift(database.drop);

    const appDataDir = path.join(work, 'app');
    await mkdir(appDataDir);
    const config = loadConfig({
      DATABASE_URL: database.url,
      DATA_DIR: appDataDir,
      PUBLIC_BASE_URL: OPENAPI_PUBLIC_BASE_URL,
      PAYMENTS_ENV: 'sandbox',
      LOG_LEVEL: 'silent',
    });
    const db = createPool(database.url, 4);
    cleanups.unshift(() => db.end());
    const { app } = await createService(config, db, { logger: false });
    cleanups.unshift(() => app.close());

    const document = app.swagger();
    await writeFile(output, `${JSON.stringify(document, null, 2)}\n`);
    process.stdout.write(
      `wrote ${path.relative(process.cwd(), output) || output} (${Object.keys(document.paths ?? {}).length} paths)\n`,
    );
  } finally {
    for (const cleanup of cleanups) {
      await cleanup().catch((err: unknown) =>
        process.stderr.write(`cleanup failed: ${err instanceof Error ? err.message : String(err)}\n`),
      );
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`write-openapi failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
