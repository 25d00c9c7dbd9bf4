// Request and response schemas for collections (create, list, read); descriptions write the reference docs.
import { Type, type Static } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import type { CollectionRow } from './collections.repository.js';
import { apiInstruction } from './payment-instructions.js';

export const COLLECTION_STATUSES = [
  'created',
  'pending',
  'processing',
  'successful',
  'failed',
  'expired',
  'refunded',
  'reversed',
] as const;
export type CollectionStatus = (typeof COLLECTION_STATUSES)[number];

/** Why a collection failed: each code with what it means (the operators' own result codes map onto these). */
export const FAILURE_REASON_MEANINGS = {
  payer_declined: 'the payer declined or cancelled the prompt',
  insufficient_funds: 'not enough money in the payer’s account',
  wrong_pin: 'the payer entered a wrong PIN',
  prompt_expired: 'the payer did not answer the prompt in time',
  payer_unreachable: 'the payer’s phone could not be reached',
  payer_busy: 'the payer already had a payment in progress',
  payer_limit_reached: 'the payer reached a transaction limit',
  payer_not_found: 'the number has no mobile-money account',
  provider_error: 'the provider could not run it',
  provider_refused: 'the provider refused the initiation',
} as const;
export type FailureReason = keyof typeof FAILURE_REASON_MEANINGS;
export const FAILURE_REASONS = Object.keys(FAILURE_REASON_MEANINGS) as [FailureReason, ...FailureReason[]];

/** `code` (meaning), … for a field's description. */
export function describeReasons(meanings: Record<string, string>): string {
  return Object.entries(meanings)
    .map(([code, meaning]) => `\`${code}\` (${meaning})`)
    .join(', ');
}

/** A provider's free-text reason, mapped onto the codes we document; anything unknown is a provider error. */
export function failureReason(reason: string | undefined): FailureReason {
  return (FAILURE_REASONS as readonly string[]).includes(reason ?? '') ? (reason as FailureReason) : 'provider_error';
}

const StatusSchema = component(
  'CollectionStatus',
  Type.Enum(COLLECTION_STATUSES, {
    description: 'Lifecycle status: created, pending, processing, successful, failed, expired, refunded or reversed.',
  }),
);

const FailureReasonSchema = component(
  'CollectionFailureReason',
  Type.Enum(FAILURE_REASONS, { description: 'Why a collection failed (the Collection explains each code).' }),
);

/** The operator's receipt field of collections, refunds and payouts. */
export const ProviderReceipt = (what: string) =>
  Type.Union([Type.String(), Type.Null()], {
    description:
      `The operator's own receipt of the ${what} (an M-Pesa receipt number, MTN's financialTransactionId, an Airtel Money id), once the ` +
      'operator has confirmed it; quote it to the operator and the payer. Null until then, and on the sandbox simulator.',
  });

/** The payer's fields: the Customer component, and checkout's optional prefill. */
export const CustomerFields = {
  phone_number: Type.Optional(
    Type.String({
      maxLength: 20,
      description:
        "Payer's mobile number in E.164 form in the market's country (+254712345678). Required on mobile-money rails.",
    }),
  ),
  name: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: "Payer's full name. Required on bank-transfer rails." }),
  ),
  email: Type.Optional(
    Type.String({ format: 'email', maxLength: 254, description: "Payer's email address, for receipts." }),
  ),
};

export const CustomerSchema = component(
  'Customer',
  Type.Object(CustomerFields, {
    additionalProperties: false,
    description: 'The payer. Which fields are required depends on the rail (see the catalogue).',
  }),
);

export const MetadataSchema = component(
  'Metadata',
  Type.Record(Type.String(), Type.Unknown(), {
    maxProperties: 50,
    propertyNames: { maxLength: 40 },
    description:
      'Your own key-value data (up to 50 keys of at most 40 characters, 16 KiB as JSON, 32 levels deep). Returned unchanged on the object and in every webhook payload.',
  }),
);

export const CreateCollectionBody = component(
  'CreateCollectionRequest',
  Type.Object(
    {
      amount: Type.Integer({
        description:
          "Amount in minor units of `currency` (an integer). Outside the currency's limits: 422 `amount_out_of_range`.",
      }),
      currency: Type.String({ description: "ISO 4217 code; must be the market's currency (KES for KE)." }),
      reference: Type.String({
        minLength: 1,
        maxLength: 128,
        description: 'Your reconciliation reference, echoed back.',
      }),
      customer: CustomerSchema,
      metadata: Type.Optional(MetadataSchema),
    },
    { additionalProperties: false },
  ),
);
export type CreateCollectionBody = Static<typeof CreateCollectionBody>;

export const CollectionPathParams = Type.Object({
  market: Type.String({ description: 'ISO 3166-1 alpha-2 market code, uppercase (KE, GH, UG, TZ, RW, ZM, NG, CI).' }),
  rail: Type.String({
    description: 'Payment rail offered in that market, lowercase (mpesa, mtn_momo, bank_transfer, …).',
  }),
});

const instructionMessage = Type.String({ description: 'What to tell the payer.' });

export const PushPromptInstructionSchema = component(
  'PushPromptInstruction',
  Type.Object(
    {
      type: Type.Literal('push_prompt', {
        description: 'The payer receives a prompt on their phone and approves it with their PIN.',
      }),
      message: instructionMessage,
    },
    { additionalProperties: false, description: "A prompt on the payer's phone (an STK push, say)." },
  ),
);

export const UssdCodeInstructionSchema = component(
  'UssdCodeInstruction',
  Type.Object(
    {
      type: Type.Literal('ussd_code', { description: 'The payer dials a USSD code to approve the payment.' }),
      ussd_code: Type.String({ description: 'The code to dial, e.g. #144*82#.' }),
      message: instructionMessage,
    },
    { additionalProperties: false, description: 'A USSD code the payer dials.' },
  ),
);

export const BankTransferInstructionSchema = component(
  'BankTransferInstruction',
  Type.Object(
    {
      type: Type.Literal('bank_transfer', {
        description: 'The payer transfers the amount to a dedicated account.',
      }),
      bank_name: Type.String({ description: 'Bank holding the receiving account.' }),
      account_number: Type.String({ description: 'Receiving account number, dedicated to this collection.' }),
      account_name: Type.String({ description: 'Name on the receiving account.' }),
      message: instructionMessage,
    },
    { additionalProperties: false, description: 'An account the payer transfers the amount to.' },
  ),
);

export const RedirectInstructionSchema = component(
  'RedirectInstruction',
  Type.Object(
    {
      type: Type.Literal('redirect', {
        description: "The payer opens the operator's page and confirms there (Wave, Orange Money Web Payment).",
      }),
      url: Type.String({
        format: 'uri',
        description:
          "The operator's page for this payment: Wave's launch URL (on a phone it opens the Wave app), or Orange Money's payment page. Show it as a link or button; it is only good until the collection expires.",
      }),
      message: instructionMessage,
    },
    {
      additionalProperties: false,
      description:
        "A page of the operator the payer opens to pay. Its address comes with the operator's answer: until then (status created) the collection's instruction is null.",
    },
  ),
);

/** Each variant by its `type`: generated clients get one named type per variant and narrow on `type`. */
export const PaymentInstructionSchema = component(
  'PaymentInstruction',
  Type.Union(
    [PushPromptInstructionSchema, UssdCodeInstructionSchema, BankTransferInstructionSchema, RedirectInstructionSchema],
    {
      description: 'How the payer completes the payment, by its `type`.',
      discriminator: {
        propertyName: 'type',
        mapping: {
          push_prompt: '#/components/schemas/PushPromptInstruction',
          ussd_code: '#/components/schemas/UssdCodeInstruction',
          bank_transfer: '#/components/schemas/BankTransferInstruction',
          redirect: '#/components/schemas/RedirectInstruction',
        },
      },
    },
  ),
);

/** A collection's (or checkout attempt's) instruction, null when the rail is purely asynchronous. */
export const NullablePaymentInstruction = Type.Union([PaymentInstructionSchema, Type.Null()], {
  description: 'How the payer completes the payment; null when the rail is purely asynchronous.',
});

export const CollectionSchema = component(
  'Collection',
  Type.Object(
    {
      collection_id: Uuid('Identifier of the collection.'),
      integrator_id: Uuid('Identifier of the owning integrator (the workspace).'),
      market: Type.String({ description: 'Market code from the request path.' }),
      rail: Type.String({ description: 'Payment rail from the request path.' }),
      amount: Type.Integer({ description: 'Amount in minor units.' }),
      currency: Type.String({ description: 'ISO 4217 currency code.' }),
      reference: Type.String({ description: 'Echo of the request reference.' }),
      status: StatusSchema,
      customer: CustomerSchema,
      metadata: MetadataSchema,
      payment_instruction: NullablePaymentInstruction,
      failure_reason: Type.Union([FailureReasonSchema, Type.Null()], {
        description: `Why the collection failed, once it has: ${describeReasons(FAILURE_REASON_MEANINGS)}. Null otherwise.`,
      }),
      provider_receipt: ProviderReceipt('payment'),
      created_at: DateTime('Creation time (UTC, milliseconds).'),
      updated_at: DateTime('Time of the last status change.'),
      expires_at: DateTime('When the collection expires if the payer has not authorised it.'),
    },
    { additionalProperties: false, description: 'A collection: an inbound payment on one rail of one market.' },
  ),
);
export type Collection = Static<typeof CollectionSchema>;

export const ListCollectionsQuery = Type.Object(
  {
    ...ListQuery.properties,
    // Inline: a query parameter's schema keeps its description only when it is not a reference.
    status: Type.Optional(Type.Enum(COLLECTION_STATUSES, { description: 'Only collections in this status.' })),
    market: Type.Optional(
      Type.String({ pattern: '^[A-Z]{2}$', description: 'Only collections in this market (KE, GH, …).' }),
    ),
    rail: Type.Optional(
      Type.String({
        pattern: '^[a-z][a-z0-9_]{0,39}$',
        description: 'Only collections on this rail (mpesa, mtn_momo, …), in any market unless `market` is given too.',
      }),
    ),
    reference: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Only collections with exactly this reference.' }),
    ),
    phone_number: Type.Optional(
      Type.String({
        pattern: '^\\+[1-9][0-9]{6,14}$',
        description: 'Only collections whose payer has exactly this phone number, in E.164 form (+254712345678).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListCollectionsQuery = Static<typeof ListCollectionsQuery>;

export const CollectionPage = component('CollectionPage', pageSchema(CollectionSchema, 'Collections, newest first.'));

export const CollectionIdParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'The collection_id.' }),
});

/**
 * A collection as the API shows it (its answers, its events, the dashboard). The API's names are the interface
 * spec's and are not renamed: the owner of a collection is its "integrator" there (`integrator_id`, "Identifier of
 * the owning integrator") and its workspace everywhere inside (`workspace_id`). The trigger collection_api_json
 * (migration 011, the stored text a list reads) maps it the same way.
 */
export function toCollectionApi(row: CollectionRow): Collection {
  return {
    collection_id: row.id,
    integrator_id: row.workspace_id, // the spec's integrator is our workspace
    market: row.market,
    rail: row.rail,
    amount: row.amount,
    currency: row.currency,
    reference: row.reference,
    status: row.status,
    customer: row.customer,
    metadata: row.metadata,
    payment_instruction: apiInstruction(row.payment_instruction) as Collection['payment_instruction'],
    failure_reason: row.failure_reason as Collection['failure_reason'],
    provider_receipt: row.provider_receipt,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
  };
}
