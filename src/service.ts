// Assembles the service on an open database: migrations, service keys, catalogue, the app. Used by main, tests and scripts.
// Secrets an earlier version stored in plaintext are sealed here, before anything is served.
import type { FastifyServerOptions } from 'fastify';
import { buildApp, type Services } from './app.js';
import type { Config } from './config.js';
import { loadMigrations, migrate } from './db/migrate.js';
import type { Db } from './db/pool.js';
import { loadCatalogue, MarketCatalogue } from './modules/catalogue/catalogue.js';
import { planProviders, type ProviderPlan } from './modules/providers/providers.registry.js';
import type { LookUpAddresses } from './modules/webhooks/url-guard.js';
import { sealPlaintextEndpointSecrets } from './modules/webhooks/webhooks.service.js';
import type { App } from './platform/http.js';
import type { SecretBox } from './platform/secret-box.js';
import { loadSecretsKey } from './platform/secrets-key.js';
import { loadServiceKeys } from './platform/secrets.js';

export interface Service {
  app: App;
  services: Services;
  drain: () => void;
  /** Migration versions this start applied. */
  applied: number[];
  /** Webhook endpoints whose secrets this start found in plaintext and sealed. */
  sealedEndpoints: number;
}

export interface ServiceOptions {
  logger?: FastifyServerOptions['logger'];
  /** Already loaded by the caller (main checks it before opening the database); else loaded here. */
  catalogue?: MarketCatalogue;
  /** Already checked by the caller (main refuses a production start without providers early); else planned here. */
  providerPlan?: ProviderPlan;
  /** Name resolution for the production webhook address guard; the system resolver by default. */
  lookUpAddresses?: LookUpAddresses;
  /** The background work's own connections (`OpenDatabase.workerPool`); the API's pool when unset. */
  workerDb?: Db;
  /** The secrets key, already loaded by the caller (main logs where it came from); else loaded here from the config. */
  box?: SecretBox;
}

export async function createService(config: Config, db: Db, options: ServiceOptions = {}): Promise<Service> {
  const { logger } = options;
  const box = options.box ?? loadSecretsKey(config).box;
  const catalogue = options.catalogue ?? new MarketCatalogue(loadCatalogue(config.catalogueFile));
  const providerPlan = options.providerPlan ?? planProviders(config, catalogue, process.env, () => box);
  const applied = await migrate(db);
  const keys = await loadServiceKeys(db, box);
  const sealedEndpoints = await sealPlaintextEndpointSecrets(db, box);
  const built = await buildApp({
    config,
    db,
    ...(options.workerDb === undefined ? {} : { workerDb: options.workerDb }),
    keys,
    box,
    catalogue,
    providerPlan,
    migrationCount: (await loadMigrations()).length,
    ...(logger === undefined ? {} : { logger }),
    ...(options.lookUpAddresses === undefined ? {} : { lookUpAddresses: options.lookUpAddresses }),
  });
  return { ...built, applied, sealedEndpoints };
}
