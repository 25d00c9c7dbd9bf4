// Market data: rate sources and rate records. Descriptions write the reference docs.
import { Type, type Static } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { normaliseDecimal } from '../../platform/money.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import type { RateRow, SourceRow } from './market-data.repository.js';

export const SOURCE_KINDS = ['exchange', 'liquidity_provider', 'aggregator', 'central_bank'] as const;
export const SOURCE_STATUSES = ['active', 'inactive'] as const;
const Code = (description: string) => Type.String({ pattern: '^[A-Z][A-Z0-9]{2,9}$', description });
/** A positive decimal with at most 12 places, as a string so no precision is lost in JSON. */
export const RATE_PATTERN = '^(0|[1-9][0-9]{0,19})(\\.[0-9]{1,12})?$';

export const CreateSourceBody = component(
  'CreateRateSourceRequest',
  Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'A unique name, e.g. `Binance P2P` or `Central Bank of Kenya`.',
      }),
      kind: Type.Enum(SOURCE_KINDS, { description: 'What kind of source it is.' }),
      url: Type.Optional(
        Type.String({ format: 'uri', maxLength: 500, description: 'Where its prices are published.' }),
      ),
    },
    { additionalProperties: false },
  ),
);
export type CreateSourceBody = Static<typeof CreateSourceBody>;

export const UpdateSourceBody = component(
  'UpdateRateSourceRequest',
  Type.Object(
    {
      status: Type.Optional(
        Type.Enum(SOURCE_STATUSES, { description: '`inactive` takes its rates out of use at once.' }),
      ),
      url: Type.Optional(
        Type.Union([Type.String({ format: 'uri', maxLength: 500 }), Type.Null()], {
          description: 'Where its prices are published.',
        }),
      ),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
);
export type UpdateSourceBody = Static<typeof UpdateSourceBody>;

export const SourceSchema = component(
  'RateSource',
  Type.Object(
    {
      source_id: Uuid('Identifier of the rate source.'),
      name: Type.String({ description: 'Its unique name.' }),
      kind: Type.Enum(SOURCE_KINDS, { description: 'What kind of source it is.' }),
      url: Type.Union([Type.String(), Type.Null()], { description: 'Where its prices are published, if known.' }),
      status: Type.Enum(SOURCE_STATUSES, {
        description: 'Only rates of an active source are listed as current or used to convert.',
      }),
      created_at: DateTime('Creation time.'),
      updated_at: DateTime('Time of the last change.'),
    },
    { additionalProperties: false, description: 'A source of exchange rates.' },
  ),
);
export type Source = Static<typeof SourceSchema>;

export const SourceIdParams = Type.Object({ sourceId: Type.String({ maxLength: 64, description: 'The source_id.' }) });
export const ListSourcesQuery = Type.Object({ ...ListQuery.properties }, { additionalProperties: false });
export type ListSourcesQuery = Static<typeof ListSourcesQuery>;
export const SourcePage = component('RateSourcePage', pageSchema(SourceSchema, 'Active rate sources, newest first.'));

export const CreateRateBody = component(
  'CreateMarketRateRequest',
  Type.Object(
    {
      source_id: Uuid('The active source this price comes from.'),
      base: Code('What one unit is priced: an asset or currency code (USDT, USDC, USD).'),
      quote: Code('The currency the price is in (KES, NGN, …).'),
      rate: Type.String({
        pattern: RATE_PATTERN,
        description: 'Units of `quote` for one `base`, a decimal string with up to 12 places ("129.45").',
      }),
      observed_at: Type.Optional(
        DateTime('When the source showed this price (default: now). At most 5 minutes in the future.'),
      ),
    },
    { additionalProperties: false },
  ),
);
export type CreateRateBody = Static<typeof CreateRateBody>;

export const RateSchema = component(
  'MarketRate',
  Type.Object(
    {
      rate_id: Uuid('Identifier of the rate record.'),
      source_id: Uuid('The source it came from.'),
      source_name: Type.String({ description: "The source's name." }),
      pair: Type.String({ description: '`BASE/QUOTE`, e.g. `USDT/KES`.' }),
      base: Type.String({ description: 'What one unit is priced.' }),
      quote: Type.String({ description: 'The currency of the price.' }),
      rate: Type.String({ description: 'Units of `quote` for one `base`, exact decimal string.' }),
      observed_at: DateTime('When the source showed this price.'),
      created_at: DateTime('When it was posted here.'),
    },
    { additionalProperties: false, description: 'One observed exchange rate.' },
  ),
);
export type Rate = Static<typeof RateSchema>;

export const ListRatesQuery = Type.Object(
  {
    ...ListQuery.properties,
    pair: Type.Optional(
      Type.String({
        pattern: '^[A-Z][A-Z0-9]{2,9}/[A-Z][A-Z0-9]{2,9}$',
        description: 'Only this pair, `BASE/QUOTE` (USDT/KES).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListRatesQuery = Static<typeof ListRatesQuery>;
export const RatePage = component('MarketRatePage', pageSchema(RateSchema, 'Rate records, newest first.'));

export function toSourceApi(row: SourceRow): Source {
  return {
    source_id: row.id,
    name: row.name,
    kind: row.kind as Source['kind'],
    url: row.url,
    status: row.status,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function toRateApi(row: RateRow): Rate {
  return {
    rate_id: row.id,
    source_id: row.source_id,
    source_name: row.source_name,
    pair: `${row.base}/${row.quote}`,
    base: row.base,
    quote: row.quote,
    rate: normaliseDecimal(row.rate),
    observed_at: row.observed_at.toISOString(),
    created_at: row.created_at.toISOString(),
  };
}
