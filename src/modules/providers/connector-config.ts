// What every operator connector's entry in PROVIDERS_FILE has in common, and how a secret may be written: a
// literal, {"env": "VAR_NAME"} to read it from the environment at start, or {"sealed": "sealed:v1:…"} (sealed under
// the secrets key by `npm run secrets -- seal`), so that the file need hold no credential in plaintext.
import type { FastifyBaseLogger } from 'fastify';
import { Type, type TProperties, type TSchema } from 'typebox';
import { ConfigError } from '../../config.js';
import type { Db } from '../../db/pool.js';
import { SecretBoxError, type SecretBox } from '../../platform/secret-box.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import type { BalanceSink, OperatorConnector } from './provider.js';

/** Marks the schemas `Secret` makes, so `readSecrets` knows where secrets go. */
const SECRET_MARK = 'x-secret';

export const Secret = (description: string) =>
  Type.Union(
    [
      Type.String({ minLength: 1, description }),
      Type.Object(
        {
          env: Type.String({
            pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
            description: 'The environment variable holding it.',
          }),
        },
        { additionalProperties: false },
      ),
      Type.Object(
        {
          sealed: Type.String({
            pattern: '^sealed:v1:',
            description: 'The value sealed under the secrets key by `npm run secrets -- seal`.',
          }),
        },
        { additionalProperties: false },
      ),
    ],
    {
      description: `${description} A literal, {"env": "VAR_NAME"} or {"sealed": "sealed:v1:…"}.`,
      [SECRET_MARK]: true,
    },
  );

/** The fields every connector entry has, beside its own. */
export function connectorEntry<T extends string, P extends TProperties>(type: T, own: P) {
  return Type.Object(
    {
      type: Type.Literal(type),
      name: Type.String({
        pattern: '^[a-z][a-z0-9_-]{0,39}$',
        description: 'Names the connector in callback URLs and logs.',
      }),
      rails: Type.Array(Type.String({ pattern: '^[A-Z]{2}/[a-z][a-z0-9_]*$' }), {
        minItems: 1,
        description: 'MARKET/rail pairs it runs.',
      }),
      base_url: Type.String({
        format: 'uri',
        description: "The operator's API address: https, or http on loopback (a local fake).",
      }),
      // Part of the callback URL: its form (URL-safe, 16 to 128 characters) is checked once the secrets are read.
      callback_token: Secret('The secret part of the callback URL.'),
      poll_seconds: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 86_400,
          description: 'Open operations are asked about after this many quiet seconds.',
        }),
      ),
      ...own,
    },
    { additionalProperties: false },
  );
}

/** The settings every connector has once its secrets are read. */
export interface ConnectorCommon {
  type: string;
  name: string;
  rails: string[];
  base_url: string;
  callback_token: string;
  poll_seconds?: number | undefined;
}

/** Where the secrets of PROVIDERS_FILE are read from. */
export interface SecretSources {
  env: NodeJS.ProcessEnv;
  /** The secrets key, asked for when a sealed value is first met. */
  box: () => SecretBox;
  /** Told the field of each secret written as a plaintext literal (to be warned about; never its value). */
  literal: (field: string) => void;
}

/**
 * Replaces each secret of a validated entry (the fields its schema makes with `Secret`) with its value: an {"env":
 * NAME} with the variable's value, a {"sealed": …} opened with the secrets key; a plaintext literal is kept and
 * reported to `sources.literal`. A value that cannot be read is a ConfigError naming the entry and the field.
 */
export function readSecrets(
  value: unknown,
  schema: TSchema,
  sources: SecretSources,
  where: string,
  path = '',
): unknown {
  const node = schema as { [SECRET_MARK]?: boolean; properties?: Record<string, TSchema> };
  if (node[SECRET_MARK] === true) {
    if (typeof value === 'string') {
      sources.literal(path);
      return value;
    }
    const record = value as { env?: string; sealed?: string };
    if (record.env !== undefined) {
      const secret = sources.env[record.env];
      if (secret === undefined || secret === '')
        throw new ConfigError(`${where}: field ${path} names environment variable ${record.env}, which is not set`);
      return secret;
    }
    try {
      return sources.box().open(record.sealed as string);
    } catch (err) {
      if (!(err instanceof SecretBoxError)) throw err;
      throw new ConfigError(`${where}: field ${path} is sealed but cannot be opened: ${err.message}`);
    }
  }
  if (node.properties === undefined || typeof value !== 'object' || value === null || Array.isArray(value))
    return value;
  const properties = node.properties;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => {
      const property = properties[k];
      return [k, property === undefined ? v : readSecrets(v, property, sources, where, path ? `${path}.${k}` : k)];
    }),
  );
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Decimals of a currency of the catalogue (2 for one it does not know). */
export function exponentOf(catalogue: MarketCatalogue, currency: string): number {
  return catalogue.currency(currency)?.exponent ?? 2;
}

/** Connector base URLs are https, or http on loopback only (a local fake). */
export function checkBaseUrl(where: string, baseUrl: string): void {
  const url = new URL(baseUrl);
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return;
  throw new ConfigError(
    `${where}: field base_url must be an https URL (plain http only on loopback), got '${baseUrl}'`,
  );
}

/** What a connector is built with. */
export interface ConnectorDeps {
  /** Background connections (Daraja keeps the ids of its status queries; every connector its access tokens). */
  db: Db;
  /** The secrets key: access tokens are stored sealed under it (operator-tokens.ts). */
  box: SecretBox;
  /** `{PUBLIC_BASE_URL}/v1/providers/{name}/callbacks/{callback_token}`. */
  callbackBase: string;
  /** The markets, their phone numbers, and each currency's decimals. */
  catalogue: MarketCatalogue;
  /** Time limit of one call to the operator, in ms. */
  timeoutMs: number;
  log: FastifyBaseLogger;
  /** Where balances answered by callback go (Daraja's Account Balance): the float module's service. */
  balances?: BalanceSink | undefined;
}

/** One kind of connector: its PROVIDERS_FILE entry, the rails it can run, and how it is built. */
export interface ConnectorKind<S extends ConnectorCommon = ConnectorCommon> {
  type: S['type'];
  schema: TSchema;
  /** Why it cannot run `rail` in a market of `currency` (a message), or undefined when it can. */
  railProblem(settings: S, market: string, currency: string, rail: string): string | undefined;
  /** Checks of the entry the schema cannot make, each a message naming the field; undefined when it is right. */
  check?(settings: S, callbackBase: string): string | undefined;
  create(settings: S, deps: ConnectorDeps): OperatorConnector;
}

/**
 * A Wave Business connector (docs/connectors/wave.md): one API key, bound by Wave to one business wallet, with the
 * Checkout API and, for payouts, the Payout API enabled on it; and the secret of the webhook registered in Wave's
 * Business Portal with the signing-secret strategy.
 */
export const WaveEntry = connectorEntry('wave', {
  api_key: Secret("The API key from Wave's Business Portal (Authorization: Bearer)."),
  webhook_secret: Secret(
    "The webhook's secret shown by the Business Portal when the webhook was registered (the Wave-Signature strategy).",
  ),
  return_url: Type.Optional(
    Type.String({
      format: 'uri',
      description:
        "Where Wave sends the payer's browser after paying, or after a failed payment (the session's success_url and error_url); default PUBLIC_BASE_URL.",
    }),
  ),
  signing_secret: Type.Optional(
    Secret(
      "The key's request-signing secret, when request signing was enabled for the key in the Business Portal: every call then carries Wave-Signature.",
    ),
  ),
});

export interface WaveSettings extends ConnectorCommon {
  type: 'wave';
  api_key: string;
  webhook_secret: string;
  return_url?: string | undefined;
  signing_secret?: string | undefined;
}
