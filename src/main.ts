// Starts the service: configuration, database (embedded unless DATABASE_URL), migrations, bootstrap, HTTP, workers.
import pino from 'pino';
import { bootstrap } from './bootstrap.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './db/open.js';
import { loadCatalogue } from './modules/catalogue/catalogue.js';
import { createService } from './service.js';
import { every } from './workers/periodic.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.logLevel === 'silent' ? 'silent' : config.logLevel });
  loadCatalogue(config.catalogueFile); // a bad catalogue stops the start before the database does
  const database = await openDatabase(
    config,
    (m) => log.debug({ component: 'embedded-postgres' }, m),
    (m) => log.info({ component: 'embedded-postgres' }, m),
  );
  try {
    const { app, services, drain, applied } = await createService(config, database.pool);
    if (applied.length > 0) log.info({ applied }, 'database migrations applied');
    const boot = await bootstrap(database.pool, config, services.credentials);
    if (boot) log.info({ file: boot.file }, `first start: bootstrap credentials written to ${boot.file}`);

    const jobs = [
      every(60 * 60 * 1000, 'idempotency-purge', () => services.idempotency.purgeExpired(), (name, err) => log.error({ err, job: name }, 'job failed')),
    ];

    await app.listen({ port: config.port, host: config.host });
    log.info(`payments service (${config.paymentsEnv}) listening on ${config.publicBaseUrl}; reference at ${config.publicBaseUrl}/docs`);

    let stopping = false;
    const shutdown = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'draining: no new requests, finishing those in flight');
      drain();
      const force = setTimeout(() => {
        log.error('drain took longer than 30 s; exiting');
        process.exit(1);
      }, 30_000);
      force.unref();
      void (async () => {
        await app.close();
        await Promise.all(jobs.map((j) => j.stop()));
        await database.close();
        log.info('stopped cleanly');
        process.exit(0);
      })();
    };
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    process.on('SIGINT', () => shutdown('SIGINT'));
  } catch (err) {
    await database.close();
    throw err;
  }
}

main().catch((err: unknown) => {
  const message = err instanceof ConfigError ? `configuration error: ${err.message}` : err instanceof Error ? err.message : String(err);
  process.stderr.write(`payments service failed to start: ${message}\n`);
  process.exit(1);
});
