// Starts the service: configuration, database (embedded unless DATABASE_URL), migrations, bootstrap, HTTP, workers.
import pino from 'pino';
import { bootstrap } from './bootstrap.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase, type OpenDatabase } from './db/open.js';
import { loadCatalogue, MarketCatalogue } from './modules/catalogue/catalogue.js';
import { planProviders } from './modules/providers/providers.registry.js';
import { closeLogs, logStream } from './platform/logging.js';
import { loadSecretsKey, type LoadedSecretsKey } from './platform/secrets-key.js';
import { createService } from './service.js';
import { startWorkers } from './workers/index.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const stream = logStream();
  const options = { level: config.logLevel === 'silent' ? 'silent' : config.logLevel };
  const log = pino(options, stream);
  // Loaded first: a bad catalogue stops the start before the database is opened.
  const catalogue = new MarketCatalogue(loadCatalogue(config.catalogueFile));
  // So is a production start with a rail no provider runs. The secrets key is loaded when the file first needs it
  // (a sealed secret), else right after: a bad file stops the start before a key file is created.
  let secrets: LoadedSecretsKey | undefined;
  const secretsKey = (): LoadedSecretsKey => (secrets ??= loadSecretsKey(config));
  const providerPlan = planProviders(config, catalogue, process.env, () => secretsKey().box);
  const { box, source, created, warnings } = secretsKey();
  log.info(
    { key_id: box.keyId, source },
    `secrets at rest are sealed under key ${box.keyId} from ${source}${created ? ' (created now)' : ''}`,
  );
  for (const warning of warnings) log.warn(warning);
  for (const field of providerPlan.plaintextSecrets) {
    log.warn(
      `PROVIDERS_FILE: ${field} is a plaintext literal; write it {"sealed": …} (npm run secrets -- seal) or {"env": …} to keep it out of the file`,
    );
  }

  // Signals are handled from the first moment: one that arrives while starting stops the start
  // cleanly (the embedded database included) instead of leaving a server behind.
  let signalled: string | undefined;
  let stop: ((signal: string) => void) | undefined;
  const onSignal = (signal: string): void => {
    if (signalled) return;
    signalled = signal;
    stop?.(signal);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  let database: OpenDatabase | undefined;
  const abandon = async (): Promise<void> => {
    log.info({ signal: signalled }, 'stopped while starting');
    await database?.close();
    await closeLogs();
    process.exit(0);
  };

  try {
    database = await openDatabase(
      config,
      (m) => log.debug({ component: 'embedded-postgres' }, m),
      (m) => log.info({ component: 'embedded-postgres' }, m),
      { retrying: (m) => log.warn({ component: 'database' }, m), stopped: () => signalled !== undefined },
    );
    if (signalled) return abandon();
    const { app, services, drain, applied, sealedEndpoints } = await createService(config, database.pool, {
      catalogue,
      providerPlan,
      workerDb: database.workerPool,
      box,
    });
    if (applied.length > 0) log.info({ applied }, 'database migrations applied');
    if (sealedEndpoints > 0)
      log.info({ endpoints: sealedEndpoints }, 'webhook signing secrets stored in plaintext were sealed');
    for (const connector of services.providers.connectors()) {
      // Airtel's is registered in its portal by hand; the others are sent with each request. The token is a secret: not logged.
      const urls = connector.callbackUrls().map((u) => u.replace(connector.callbackToken, '{callback_token}'));
      log.info(
        { connector: connector.name, callback_urls: urls },
        `operator connector '${connector.name}' receives callbacks at these URLs`,
      );
    }
    const boot = await bootstrap(database.pool, config, services.credentials);
    if (boot) {
      log.info(
        { file: boot.file },
        `first start: the demo workspace's token is in ${boot.file} (workspaces[0].integrator.token); create the first dashboard member with \`npm run admin -- create-member\` (the file's first_member says how) or paste the token at ${config.publicBaseUrl}/dashboard, try the tour in README.md, or read the reference at ${config.publicBaseUrl}/docs`,
      );
    }
    if (signalled) return abandon();

    const workers = startWorkers(services, config, database.workerPool, app.log);
    await app.listen({ port: config.port, host: config.host });
    log.info(
      `payments service (${config.paymentsEnv}) listening on ${config.publicBaseUrl}; reference at ${config.publicBaseUrl}/docs`,
    );

    const opened = database;
    stop = (signal: string): void => {
      log.info({ signal }, 'draining: no new requests, finishing those in flight');
      drain();
      // Requests in flight get SHUTDOWN_DRAIN_MS to finish; one that takes longer (a client stalled mid-body, say)
      // has its connection closed, so it cannot hold the stop up.
      const cut = setTimeout(() => {
        log.warn(`requests still open after ${config.shutdownDrainMs} ms: closing their connections`);
        app.server.closeAllConnections();
      }, config.shutdownDrainMs);
      cut.unref();
      // The last resort, should the workers or the database not stop.
      const force = setTimeout(() => {
        log.error('stopping took 30 s longer than the drain time; exiting');
        void closeLogs(1000).then(() => process.exit(1));
      }, config.shutdownDrainMs + 30_000);
      force.unref();
      void (async () => {
        await app.close();
        await workers.stop();
        await opened.close();
        log.info('stopped cleanly');
        await closeLogs();
        process.exit(0);
      })();
    };
    if (signalled) stop(signalled);
  } catch (err) {
    // A stop asked for while the start was still waiting for the database is a clean stop, not a failed start.
    if (signalled && database === undefined) return abandon();
    await database?.close();
    throw err;
  }
}

main().catch(async (err: unknown) => {
  // The log lines that led here go first.
  await closeLogs();
  const message =
    err instanceof ConfigError
      ? `configuration error: ${err.message}`
      : err instanceof Error
        ? err.message
        : String(err);
  process.stderr.write(`payments service failed to start: ${message}\n`);
  process.exit(1);
});
