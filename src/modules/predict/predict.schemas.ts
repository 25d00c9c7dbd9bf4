// Request and answer of the operator prediction (POST /v1/predict-provider and the checkout page's by-token twin).
import { Type, type Static } from 'typebox';
import { component } from '../../platform/schemas.js';

const phoneNumber = (description: string) => Type.String({ minLength: 1, maxLength: 32, description });

export const PredictProviderBody = component(
  'PredictProviderRequest',
  Type.Object(
    {
      phone_number: phoneNumber(
        'International (`+254712345678`, `00254…`, `254…`) or local (`0712 345 678`, needs `market`); spaces, dashes, dots and parentheses are ignored.',
      ),
      market: Type.Optional(
        Type.String({
          maxLength: 8,
          description: 'Market code (`KE`…): needed for a local number; an international one must then be of it.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);
export type PredictProviderBody = Static<typeof PredictProviderBody>;

export const CheckoutPredictBody = component(
  'CheckoutPredictProviderRequest',
  Type.Object(
    { phone_number: phoneNumber('The number the payer typed, local or international.') },
    { additionalProperties: false },
  ),
);
export type CheckoutPredictBody = Static<typeof CheckoutPredictBody>;

export const PredictionSchema = component(
  'ProviderPrediction',
  Type.Object(
    {
      phone_number: Type.String({ description: 'The number in E.164, e.g. `+254712345678`.' }),
      market: Type.String({ description: 'Market code of the number.' }),
      operator: Type.String({ description: 'The operator the numbering plan gives the prefix to.' }),
      rails: Type.Array(Type.String(), {
        description:
          "Catalogue rail ids this number can pay by, likeliest first: the operator's wallet, then any-operator ones (Wave). May be empty.",
      }),
      portability: Type.Boolean({
        description:
          'True where numbers can move to another operator: the prediction is then a guess; let the payer change it.',
      }),
    },
    { additionalProperties: false, description: 'The operator and rails predicted from a phone number.' },
  ),
);
export type Prediction = Static<typeof PredictionSchema>;
