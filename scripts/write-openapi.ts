// `npm run openapi`: builds the app exactly as the service does and writes its OpenAPI document to openapi.json.
// The app needs a database to build: a scratch database on DATABASE_URL's server when it is set (dropped after),
// else an embedded PostgreSQL in .data-openapi (removed after). The settings are the defaults of a local run,
// never the caller's environment, so the file is the same wherever it is written.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { loadMigrations, migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { loadCatalogue, MarketCatalogue } from '../src/modules/catalogue/catalogue.js';
import { loadServiceKeys } from '../src/platform/secrets.js';

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
    let serverUrl = process.env.DATABASE_URL || undefined;
    if (!serverUrl) {
      const dataDir = path.join(root, '.data-openapi');
      await rm(dataDir, { recursive: true, force: true });
      const embedded: EmbeddedServer = await startEmbedded({ dataDir, port: 0, database: 'openapi', log: () => undefined });
      cleanups.unshift(async () => {
        await embedded.stop();
        await rm(dataDir, { recursive: true, force: true });
      });
      serverUrl = embedded.url;
    }
    const database = await scratchDatabase(serverUrl);
    cleanups.unshift(database.drop);

    const appDataDir = await mkdtemp(path.join(root, '.data-openapi-app-'));
    cleanups.unshift(() => rm(appDataDir, { recursive: true, force: true }));
    const config = loadConfig({
      DATABASE_URL: database.url,
      DATA_DIR: appDataDir,
      PUBLIC_BASE_URL: OPENAPI_PUBLIC_BASE_URL,
      PAYMENTS_ENV: 'sandbox',
      LOG_LEVEL: 'silent',
    });
    const db = createPool(database.url, 4);
    cleanups.unshift(() => db.end());
    await migrate(db);
    const keys = await loadServiceKeys(db);
    const { app } = await buildApp({
      config,
      db,
      keys,
      catalogue: new MarketCatalogue(loadCatalogue(config.catalogueFile)),
      migrationCount: (await loadMigrations()).length,
      logger: false,
    });
    cleanups.unshift(() => app.close());

    const document = app.swagger();
    await writeFile(output, `${JSON.stringify(document, null, 2)}\n`);
    process.stdout.write(`wrote ${path.relative(process.cwd(), output) || output} (${Object.keys(document.paths ?? {}).length} paths)\n`);
  } finally {
    for (const cleanup of cleanups) {
      await cleanup().catch((err: unknown) => process.stderr.write(`cleanup failed: ${err instanceof Error ? err.message : String(err)}\n`));
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`write-openapi failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
