// `npm run migrate`: applies pending migrations to DATABASE_URL (or the embedded database) and exits.
import { loadConfig } from '../config.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/open.js';

const config = loadConfig();
const database = await openDatabase(config, () => undefined);
try {
  const applied = await migrate(database.pool);
  process.stdout.write(applied.length ? `applied migrations: ${applied.join(', ')}\n` : 'database is up to date\n');
} catch (err) {
  process.stderr.write(`migration failed: ${(err as Error).message}\n`);
  process.exitCode = 1;
} finally {
  await database.close();
}
