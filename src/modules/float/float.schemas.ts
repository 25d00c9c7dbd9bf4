// The API's shapes of operator float: one operator account's balance with its threshold and status, and the list.
import { Type, type Static } from 'typebox';
import { component, DateTime } from '../../platform/schemas.js';

/** ok: read and at or above its threshold (or none set); low: below it; unknown: never read, or the last read failed or is stale. */
export const FLOAT_STATUSES = ['ok', 'low', 'unknown'] as const;
export type FloatStatus = (typeof FLOAT_STATUSES)[number];

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

export const OperatorFloatAccountSchema = component(
  'OperatorFloatAccount',
  Type.Object(
    {
      connector: Type.String({ description: 'The connector (its name in PROVIDERS_FILE).' }),
      account: Type.String({
        description:
          "The account at the operator: MoMo's `collection` or `disbursement`, Airtel's `wallet`, each account Daraja's Account Balance names (`Utility Account` is what B2C pays from). Empty while a connector's first read has failed.",
      }),
      currency: nullable(Type.String({ pattern: '^[A-Z]{3}$' }), 'ISO 4217 code of the balance; null until read.'),
      balance: nullable(Type.Integer(), 'The available balance in minor units at `read_at`; null until read.'),
      read_at: nullable(DateTime('When the operator gave the balance.'), 'When the operator gave `balance`.'),
      threshold: nullable(
        Type.Integer(),
        'The configured threshold in minor units (OPERATOR_FLOAT_THRESHOLDS); null when none is set.',
      ),
      status: Type.Enum(FLOAT_STATUSES, {
        description:
          '`ok`: at or above the threshold (or none set); `low`: below it; `unknown`: not read yet, the last read failed (see `error`), or no reading for three intervals.',
      }),
      error: nullable(Type.String(), 'Why the last read failed (or is stale); null when it succeeded.'),
      error_at: nullable(DateTime('When the read failed.'), 'When the last read failed.'),
    },
    { additionalProperties: false, description: 'One operator account holding the money payouts are paid from.' },
  ),
);
export type OperatorFloatAccount = Static<typeof OperatorFloatAccountSchema>;

export const OperatorFloatListSchema = component(
  'OperatorFloatList',
  Type.Object(
    {
      data: Type.Array(OperatorFloatAccountSchema, {
        description: 'Every operator account, by connector and account.',
      }),
    },
    { additionalProperties: false, description: "The operators' accounts and their balances." },
  ),
);
