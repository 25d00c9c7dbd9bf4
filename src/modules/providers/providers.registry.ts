// Which provider runs each rail. In the sandbox the simulator runs every rail no gateway is configured
// for; in production every rail of the catalogue needs a configured gateway, or the start is refused.
import { readFileSync } from 'node:fs';
import { Type, type Static } from 'typebox';
import { ConfigError, type Config } from '../../config.js';
import type { Db } from '../../db/pool.js';
import { compileBody, fieldErrors } from '../../platform/validation.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import { HttpGatewayProvider } from './http-gateway.provider.js';
import type { RailProvider } from './provider.js';
import { SANDBOX_PROVIDER, SandboxProvider } from './sandbox.provider.js';

const ProvidersFile = Type.Object(
  {
    gateways: Type.Array(
      Type.Object(
        {
          name: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,39}$' }),
          base_url: Type.String({ format: 'uri' }),
          api_key: Type.String({ minLength: 1 }),
          callback_secret: Type.String({ minLength: 16 }),
          rails: Type.Array(Type.String({ pattern: '^[A-Z]{2}/([a-z][a-z0-9_]*|\\*)$' }), { minItems: 1 }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
type ProvidersFile = Static<typeof ProvidersFile>;
export type GatewayPlan = ProvidersFile['gateways'][number];

export interface ProviderPlan {
  gateways: GatewayPlan[];
  /** `MARKET/rail` → provider name, for every rail of the catalogue. */
  rails: Map<string, string>;
  /** Whether the simulator runs any rail. */
  simulated: boolean;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function readProvidersFile(file: string): ProvidersFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`PROVIDERS_FILE ${file} could not be read as JSON: ${(err as Error).message}`);
  }
  const validate = compileBody(ProvidersFile);
  if (!validate(parsed)) {
    throw new ConfigError(`PROVIDERS_FILE ${file} is invalid: ${fieldErrors(validate.errors).map((e) => `${e.field} ${e.message}`).join('; ')}`);
  }
  return parsed as ProvidersFile;
}

/** Checks the configuration against the catalogue before anything is opened; a gap is a ConfigError naming the rails. */
export function planProviders(config: Config, catalogue: MarketCatalogue): ProviderPlan {
  const gateways = config.providersFile === undefined ? [] : readProvidersFile(config.providersFile).gateways;
  const rails = new Map<string, string>();
  const names = new Set<string>();
  for (const gateway of gateways) {
    if (gateway.name === SANDBOX_PROVIDER || names.has(gateway.name)) {
      throw new ConfigError(`PROVIDERS_FILE: gateway name '${gateway.name}' is ${gateway.name === SANDBOX_PROVIDER ? 'reserved' : 'used twice'}`);
    }
    names.add(gateway.name);
    const url = new URL(gateway.base_url);
    if (config.paymentsEnv === 'production' && url.protocol !== 'https:' && !LOOPBACK.has(url.hostname)) {
      throw new ConfigError(`PROVIDERS_FILE: gateway '${gateway.name}' must use https in production (plain http only on loopback)`);
    }
    for (const entry of gateway.rails) {
      const [marketCode = '', railCode = ''] = entry.split('/');
      const market = catalogue.market(marketCode);
      if (!market) throw new ConfigError(`PROVIDERS_FILE: gateway '${gateway.name}' names market ${marketCode}, which the catalogue does not have`);
      const codes = railCode === '*' ? Object.keys(market.rails) : [railCode];
      for (const code of codes) {
        if (!catalogue.rail(market, code)) throw new ConfigError(`PROVIDERS_FILE: gateway '${gateway.name}' names rail ${entry}, which the catalogue does not have`);
        const key = `${marketCode}/${code}`;
        const taken = rails.get(key);
        if (taken !== undefined) throw new ConfigError(`PROVIDERS_FILE: rail ${key} is given to both '${taken}' and '${gateway.name}'`);
        rails.set(key, gateway.name);
      }
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
        'Add a gateway for them in PROVIDERS_FILE, or remove them from the catalogue (CATALOGUE_FILE); the sandbox simulator never runs in production.',
    );
  }
  return { gateways, rails, simulated: [...rails.values()].includes(SANDBOX_PROVIDER) };
}

export class ProviderRegistry {
  private readonly byName = new Map<string, RailProvider>();

  constructor(
    private readonly plan: ProviderPlan,
    providers: RailProvider[],
    /** The simulator, when any rail runs on it (always absent in production). */
    readonly sandbox: SandboxProvider | undefined,
  ) {
    for (const p of providers) this.byName.set(p.name, p);
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
}

export function buildProviders(plan: ProviderPlan, config: Config, db: Db, sandboxSecret: string): ProviderRegistry {
  const sandbox = plan.simulated ? new SandboxProvider(db, sandboxSecret, config.sandboxStepMs) : undefined;
  const providers: RailProvider[] = plan.gateways.map(
    (g) => new HttpGatewayProvider(g, `${config.publicBaseUrl}/v1/providers/${g.name}/callbacks`),
  );
  if (sandbox) providers.push(sandbox);
  return new ProviderRegistry(plan, providers, sandbox);
}
