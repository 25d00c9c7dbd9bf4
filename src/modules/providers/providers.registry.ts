// Which provider runs each rail. In the sandbox the simulator runs every rail no gateway or connector is
// configured for; in production every rail of the catalogue needs one, or the start is refused.
import { readFileSync } from 'node:fs';
import { Type, type Static } from 'typebox';
import { ConfigError, type Config } from '../../config.js';
import type { TransactionBatcher } from '../../db/batcher.js';
import type { Db } from '../../db/pool.js';
import type { FastifyBaseLogger } from 'fastify';
import type { SecretBox } from '../../platform/secret-box.js';
import { loadSecretsKey } from '../../platform/secrets-key.js';
import { compileBody, fieldErrors } from '../../platform/validation.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import { AIRTEL_MONEY } from './airtel-money/airtel.connector.js';
import {
  checkBaseUrl,
  exponentOf,
  readSecrets,
  type ConnectorCommon,
  type ConnectorKind,
  type SecretSources,
} from './connector-config.js';
import { GatewayEntry, HttpGatewayProvider, type GatewayPlan } from './http-gateway.provider.js';
import { MPESA_DARAJA } from './mpesa-daraja/daraja.connector.js';
import { MTN_MOMO } from './mtn-momo/momo.connector.js';
import { ORANGE_MONEY } from './orange-money/orange.connector.js';
import {
  isConnector,
  type BalanceSink,
  type OperatorConnector,
  type ProviderLookup,
  type RailProvider,
} from './provider.js';
import { SANDBOX_PROVIDER, SandboxProvider } from './sandbox.provider.js';
import { WAVE } from './wave/wave.connector.js';

/** The connector kinds, by their `type` in PROVIDERS_FILE. */
const CONNECTOR_KINDS: Record<string, ConnectorKind> = {
  [MPESA_DARAJA.type]: MPESA_DARAJA,
  [MTN_MOMO.type]: MTN_MOMO,
  [AIRTEL_MONEY.type]: AIRTEL_MONEY,
  [WAVE.type]: WAVE,
  [ORANGE_MONEY.type]: ORANGE_MONEY,
};

/** The file's outline; each connector entry is then checked against its own kind's schema. */
const ProvidersFile = Type.Object(
  {
    gateways: Type.Optional(Type.Array(GatewayEntry)),
    connectors: Type.Optional(
      Type.Array(Type.Object({ type: Type.Enum(Object.keys(CONNECTOR_KINDS)) }, { additionalProperties: true })),
    ),
  },
  { additionalProperties: false },
);

export interface ProviderPlan {
  gateways: GatewayPlan[];
  /** Connector entries, checked, with their secrets read. */
  connectors: ConnectorCommon[];
  /** `MARKET/rail` → provider name, for every rail of the catalogue. */
  rails: Map<string, string>;
  /** Whether the simulator runs any rail. */
  simulated: boolean;
  /**
   * The connector secrets written in the file as plaintext literals, each as `connector 'NAME' field FIELD` (never
   * the value): the start warns about each, since {"sealed": …} or {"env": …} keep them out of the file.
   */
  plaintextSecrets: string[];
}

function problems(validate: ReturnType<typeof compileBody>): string {
  return fieldErrors(validate.errors)
    .map((e) => `field ${e.field} ${e.message}`)
    .join('; ');
}

function readProvidersFile(file: string): Static<typeof ProvidersFile> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`PROVIDERS_FILE ${file} could not be read as JSON: ${(err as Error).message}`);
  }
  const validate = compileBody(ProvidersFile);
  if (!validate(parsed)) throw new ConfigError(`PROVIDERS_FILE ${file} is invalid: ${problems(validate)}`);
  return parsed as Static<typeof ProvidersFile>;
}

/** `{PUBLIC_BASE_URL}/v1/providers/{name}/callbacks/{callback_token}`: where a connector's operator sends its callbacks. */
export function callbackBase(config: Config, connector: { name: string; callback_token: string }): string {
  return `${config.publicBaseUrl}/v1/providers/${connector.name}/callbacks/${connector.callback_token}`;
}

/** Checks one connector entry against its kind and reads its secrets; a mistake is a ConfigError naming the entry and the field. */
function planConnector(
  config: Config,
  entry: { type: string },
  index: number,
  sources: Omit<SecretSources, 'literal'>,
  plaintextSecrets: string[],
): ConnectorCommon {
  const kind = CONNECTOR_KINDS[entry.type] as ConnectorKind;
  const name = (entry as Record<string, unknown>).name;
  const named = typeof name === 'string' ? ` '${name}'` : '';
  const where = `PROVIDERS_FILE: connector${named} (connectors[${index}], ${entry.type})`;
  const validate = compileBody(kind.schema);
  if (!validate(entry)) throw new ConfigError(`${where}: ${problems(validate)}`);
  const settings = readSecrets(
    entry,
    kind.schema,
    {
      ...sources,
      literal: (field) => plaintextSecrets.push(`connector${named} field ${field}`),
    },
    where,
  ) as ConnectorCommon;
  if (!/^[A-Za-z0-9_-]{16,128}$/.test(settings.callback_token)) {
    throw new ConfigError(`${where}: field callback_token must be 16 to 128 letters, digits, '-' or '_'`);
  }
  checkBaseUrl(where, settings.base_url);
  const problem = kind.check?.(settings, callbackBase(config, settings));
  if (problem !== undefined) throw new ConfigError(`${where}: ${problem}`);
  return settings;
}

/**
 * Checks the configuration against the catalogue before anything is opened; a gap is a ConfigError naming the rails.
 * `box` gives the secrets key for the sealed secrets of the file; it is asked for only when the file has one (by
 * default loaded as the start loads it, from SECRETS_KEY or DATA_DIR).
 */
export function planProviders(
  config: Config,
  catalogue: MarketCatalogue,
  env: NodeJS.ProcessEnv = process.env,
  box: () => SecretBox = () => loadSecretsKey(config).box,
): ProviderPlan {
  const file = config.providersFile === undefined ? {} : readProvidersFile(config.providersFile);
  const gateways = file.gateways ?? [];
  const plaintextSecrets: string[] = [];
  let loaded: SecretBox | undefined;
  const sources = { env, box: () => (loaded ??= box()) };
  const connectors = (file.connectors ?? []).map((entry, i) =>
    planConnector(config, entry, i, sources, plaintextSecrets),
  );
  const rails = new Map<string, string>();
  const names = new Set<string>();
  const claim = (name: string, key: string): void => {
    const taken = rails.get(key);
    if (taken !== undefined)
      throw new ConfigError(`PROVIDERS_FILE: rail ${key} is given to both '${taken}' and '${name}'`);
    rails.set(key, name);
  };
  for (const entry of [...gateways, ...connectors]) {
    if (entry.name === SANDBOX_PROVIDER || names.has(entry.name)) {
      throw new ConfigError(
        `PROVIDERS_FILE: the name '${entry.name}' is ${entry.name === SANDBOX_PROVIDER ? 'reserved' : 'used twice'}`,
      );
    }
    names.add(entry.name);
  }
  for (const gateway of gateways) {
    const url = new URL(gateway.base_url);
    if (
      config.paymentsEnv === 'production' &&
      url.protocol !== 'https:' &&
      !['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
    ) {
      throw new ConfigError(
        `PROVIDERS_FILE: gateway '${gateway.name}' must use https in production (plain http only on loopback)`,
      );
    }
    for (const entry of gateway.rails) {
      const [marketCode = '', railCode = ''] = entry.split('/');
      const market = catalogue.market(marketCode);
      if (!market)
        throw new ConfigError(
          `PROVIDERS_FILE: gateway '${gateway.name}' names market ${marketCode}, which the catalogue does not have`,
        );
      const codes = railCode === '*' ? Object.keys(market.rails) : [railCode];
      for (const code of codes) {
        if (!catalogue.rail(market, code))
          throw new ConfigError(
            `PROVIDERS_FILE: gateway '${gateway.name}' names rail ${entry}, which the catalogue does not have`,
          );
        claim(gateway.name, `${marketCode}/${code}`);
      }
    }
  }
  for (const connector of connectors) {
    const kind = CONNECTOR_KINDS[connector.type] as ConnectorKind;
    for (const key of connector.rails) {
      const [marketCode = '', railCode = ''] = key.split('/');
      const market = catalogue.market(marketCode);
      const where = `PROVIDERS_FILE: connector '${connector.name}' field rails`;
      if (!market || !catalogue.rail(market, railCode))
        throw new ConfigError(`${where}: the catalogue has no rail ${key}`);
      const problem = kind.railProblem(connector, marketCode, market.currency, railCode);
      if (problem !== undefined) throw new ConfigError(`${where}: ${key}: ${problem}`);
      claim(connector.name, key);
    }
  }
  const missing: string[] = [];
  for (const marketCode of catalogue.marketCodes()) {
    for (const railCode of Object.keys(catalogue.market(marketCode)?.rails ?? {})) {
      const key = `${marketCode}/${railCode}`;
      if (rails.has(key)) continue;
      if (config.paymentsEnv === 'production') missing.push(key);
      else rails.set(key, SANDBOX_PROVIDER);
    }
  }
  if (missing.length > 0) {
    throw new ConfigError(
      `production needs a rail provider for every rail of the catalogue, and none is configured for ${missing.join(', ')}. ` +
        'Add a connector or gateway for them in PROVIDERS_FILE, or remove them from the catalogue (CATALOGUE_FILE); the sandbox simulator never runs in production.',
    );
  }
  return {
    gateways,
    connectors,
    rails,
    simulated: [...rails.values()].includes(SANDBOX_PROVIDER),
    plaintextSecrets,
  };
}

export class ProviderRegistry implements ProviderLookup {
  private readonly byName = new Map<string, RailProvider>();

  constructor(
    private readonly plan: ProviderPlan,
    providers: RailProvider[],
    /** The simulator, when any rail runs on it (always absent in production). */
    readonly sandbox: SandboxProvider | undefined,
    private readonly catalogue: MarketCatalogue,
  ) {
    for (const p of providers) this.byName.set(p.name, p);
  }

  amountProblem(market: string, rail: string, amount: number, currency: string): string | undefined {
    return this.byName
      .get(this.nameFor(market, rail))
      ?.amountProblem?.(amount, currency, exponentOf(this.catalogue, currency));
  }

  /** The provider's name for a rail of the catalogue (checked at boot, so every rail has one). */
  nameFor(market: string, rail: string): string {
    const name = this.plan.rails.get(`${market}/${rail}`);
    if (name === undefined) throw new Error(`no provider for ${market}/${rail}`);
    return name;
  }

  get(name: string): RailProvider | undefined {
    return this.byName.get(name);
  }

  /** The operator connector of that name, if there is one. */
  connector(name: string): OperatorConnector | undefined {
    const provider = this.byName.get(name);
    return provider && isConnector(provider) ? provider : undefined;
  }

  connectors(): OperatorConnector[] {
    return [...this.byName.values()].filter(isConnector);
  }
}

export function buildProviders(
  plan: ProviderPlan,
  config: Config,
  db: Db,
  sandboxSecret: string,
  catalogue: MarketCatalogue,
  log: FastifyBaseLogger,
  box: SecretBox,
  batcher: TransactionBatcher,
  /** Where balances answered by callback go (operator float). */
  balances?: BalanceSink,
): ProviderRegistry {
  const sandbox = plan.simulated ? new SandboxProvider(db, batcher, sandboxSecret, config.sandboxStepMs) : undefined;
  const providers: RailProvider[] = plan.gateways.map(
    (g) => new HttpGatewayProvider(g, `${config.publicBaseUrl}/v1/providers/${g.name}/callbacks`),
  );
  for (const settings of plan.connectors) {
    const kind = CONNECTOR_KINDS[settings.type] as ConnectorKind;
    providers.push(
      kind.create(settings, {
        db,
        box,
        callbackBase: callbackBase(config, settings),
        catalogue,
        timeoutMs: config.operatorTimeoutMs,
        log: log.child({ connector: settings.name }),
        balances,
      }),
    );
  }
  if (sandbox) providers.push(sandbox);
  return new ProviderRegistry(plan, providers, sandbox, catalogue);
}
