// The shape of the market and rail catalogue, checked at boot when an operator supplies one.
import { Type, type Static } from 'typebox';

const CustomerField = Type.Union([Type.Literal('phone_number'), Type.Literal('name'), Type.Literal('email')]);

const Instruction = Type.Union([
  Type.Object({ type: Type.Literal('push_prompt') }, { additionalProperties: false }),
  Type.Object(
    { type: Type.Literal('ussd_code'), ussd_code: Type.String({ minLength: 1 }) },
    { additionalProperties: false },
  ),
  Type.Object(
    { type: Type.Literal('bank_transfer'), bank_name: Type.String({ minLength: 1 }) },
    { additionalProperties: false },
  ),
  // The operator gives a page (or an app link) for the payer to open: its address comes with the operator's answer.
  Type.Object({ type: Type.Literal('redirect') }, { additionalProperties: false }),
  Type.Null(),
]);

export const RailSchema = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    type: Type.Union([Type.Literal('mobile_money'), Type.Literal('bank_transfer')]),
    customer_fields: Type.Array(CustomerField),
    expiry_seconds: Type.Integer({ minimum: 1, maximum: 7 * 86_400 }),
    instruction: Instruction,
    // Off for a rail whose operator's API has no such call (Orange Money's Web Payment): refused with a 422, never faked.
    refunds: Type.Optional(
      Type.Boolean({ description: 'Whether collections on this rail can be refunded (default true).' }),
    ),
    payouts: Type.Optional(Type.Boolean({ description: 'Whether payouts can be made over this rail (default true).' })),
  },
  { additionalProperties: false },
);

export const MarketSchema = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    currency: Type.String({ pattern: '^[A-Z]{3}$' }),
    language: Type.Union([Type.Literal('en'), Type.Literal('fr')]),
    phone: Type.Object(
      {
        country_code: Type.String({ pattern: '^[1-9][0-9]{0,2}$' }),
        national_digits: Type.Integer({ minimum: 4, maximum: 13 }),
      },
      { additionalProperties: false },
    ),
    rails: Type.Record(Type.String({ pattern: '^[a-z][a-z0-9_]*$' }), RailSchema),
  },
  { additionalProperties: false },
);

export const CatalogueSchema = Type.Object(
  {
    currencies: Type.Record(
      Type.String({ pattern: '^[A-Z]{3}$' }),
      Type.Object(
        {
          exponent: Type.Integer({ minimum: 0, maximum: 4 }),
          min_amount: Type.Integer({ minimum: 1 }),
          max_amount: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
        },
        { additionalProperties: false },
      ),
    ),
    markets: Type.Record(Type.String({ pattern: '^[A-Z]{2}$' }), MarketSchema),
  },
  { additionalProperties: false },
);

export type Catalogue = Static<typeof CatalogueSchema>;
export type Market = Static<typeof MarketSchema>;
export type Rail = Static<typeof RailSchema>;
