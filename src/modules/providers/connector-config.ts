// What every operator connector's entry in PROVIDERS_FILE has in common, and how a secret may be written: a
// literal, or {"env": "VAR_NAME"} to read it from the environment at start.
import type { FastifyBaseLogger } from 'fastify';
import { Type, type TProperties, type TSchema } from 'typebox';
import { ConfigError } from '../../config.js';
import type { Db } from '../../db/pool.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import type { OperatorConnector } from './provider.js';

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
    ],
    { description: `${description} A literal, or {"env": "VAR_NAME"}.` },
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

/**
 * Replaces each {"env": NAME} in a validated entry with the variable's value. The schema allows that form only
 * where a secret goes, so every such object is one.
 */
export function readSecrets(value: unknown, env: NodeJS.ProcessEnv, where: string, path = ''): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1 && keys[0] === 'env' && typeof record.env === 'string') {
    const secret = env[record.env];
    if (secret === undefined || secret === '')
      throw new ConfigError(`${where}: field ${path} names environment variable ${record.env}, which is not set`);
    return secret;
  }
  return Object.fromEntries(keys.map((k) => [k, readSecrets(record[k], env, where, path ? `${path}.${k}` : k)]));
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
  /** Background connections (Daraja keeps the ids of its status queries). */
  db: Db;
  /** `{PUBLIC_BASE_URL}/v1/providers/{name}/callbacks/{callback_token}`. */
  callbackBase: string;
  /** The markets, their phone numbers, and each currency's decimals. */
  catalogue: MarketCatalogue;
  /** Time limit of one call to the operator, in ms. */
  timeoutMs: number;
  log: FastifyBaseLogger;
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
