// Request and response schemas for refunds (refund a collection, and the reads); descriptions write the reference docs.
import { Type, type Static } from 'typebox';
import { REFUND_STATUSES } from './refunds.states.js';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { component, DateTime, EmptyObject, Uuid } from '../../platform/schemas.js';
import { describeReasons, ProviderReceipt } from '../collections/collections.schemas.js';

export const REFUND_FAILURE_REASON_MEANINGS = {
  provider_error: 'the provider could not run it',
  provider_refused: 'the provider refused it',
  insufficient_provider_balance: 'our account at the operator did not hold enough to return the money',
  collection_reversed: 'the provider reversed the payment before the refund was sent, so it was not',
} as const;
export type RefundFailureReason = keyof typeof REFUND_FAILURE_REASON_MEANINGS;
export const REFUND_FAILURE_REASONS = Object.keys(REFUND_FAILURE_REASON_MEANINGS) as [
  RefundFailureReason,
  ...RefundFailureReason[],
];

/** A provider's free-text reason mapped onto the documented codes; anything else is a provider error. */
export function refundFailureReason(reason: string | undefined): RefundFailureReason {
  return (REFUND_FAILURE_REASONS as readonly string[]).includes(reason ?? '')
    ? (reason as RefundFailureReason)
    : 'provider_error';
}

export const REFUND_REASON_MEANINGS = {
  merchant_request: 'requested through the API',
  late_payment:
    "made by the service: the provider confirmed the payment after the collection expired, and the workspace's `late_payment` policy (or a checkout session already paid or retried) sends it back",
} as const;
export type RefundReason = keyof typeof REFUND_REASON_MEANINGS;
export const REFUND_REASONS = Object.keys(REFUND_REASON_MEANINGS) as [RefundReason, ...RefundReason[]];

export const CreateRefundBody = component(
  'CreateRefundRequest',
  Type.Object(
    {
      amount: Type.Integer({
        description:
          "Minor units; must equal the collection's amount (full refunds only). Another amount: 422 `refund_amount_mismatch`.",
      }),
    },
    { additionalProperties: false },
  ),
);
export type CreateRefundBody = Static<typeof CreateRefundBody>;

export const RefundSchema = component(
  'Refund',
  Type.Object(
    {
      refund_id: Uuid('Identifier of the refund.'),
      collection_id: Uuid('Identifier of the refunded collection.'),
      amount: Type.Integer({ description: "Minor units; equals the collection's amount." }),
      currency: Type.String({ description: 'ISO 4217 currency code.' }),
      status: Type.Enum(REFUND_STATUSES, { description: 'requested → pending → successful or failed.' }),
      reason: Type.Enum(REFUND_REASONS, {
        description: `Why the refund was made: ${describeReasons(REFUND_REASON_MEANINGS)}.`,
      }),
      failure_reason: Type.Union([Type.String(), Type.Null()], {
        description: `Why the refund failed, once it has: ${describeReasons(REFUND_FAILURE_REASON_MEANINGS)}. Null otherwise.`,
      }),
      provider_receipt: ProviderReceipt('refund'),
      metadata: Type.Record(Type.String(), Type.Unknown(), {
        description: "The refunded collection's metadata, unchanged (also in every refund webhook).",
      }),
      requested_at: DateTime('When the refund was requested.'),
      resolved_at: Type.Union([DateTime('When the refund became successful or failed.'), EmptyObject], {
        description: 'When the refund became successful or failed; an empty object `{}` until then.',
      }),
    },
    { additionalProperties: false, description: 'A full refund of a successful collection.' },
  ),
);
export type Refund = Static<typeof RefundSchema>;

export const RefundIdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The refund_id.' }) });

export const ListRefundsQuery = Type.Object(
  {
    ...ListQuery.properties,
    status: Type.Optional(Type.Enum(REFUND_STATUSES, { description: 'Only refunds in this status.' })),
  },
  { additionalProperties: false },
);
export type ListRefundsQuery = Static<typeof ListRefundsQuery>;

export const RefundPage = component('RefundPage', pageSchema(RefundSchema, 'Refunds, newest first.'));

/** The API's view of a refund row; `metadata` is the refunded collection's. */
export function toRefundApi(
  row: {
    id: string;
    collection_id: string;
    amount: number;
    currency: string;
    status: Refund['status'];
    reason: RefundReason;
    failure_reason: string | null;
    provider_receipt: string | null;
    requested_at: Date;
    resolved_at: Date | null;
  },
  metadata: Record<string, unknown>,
): Refund {
  return {
    refund_id: row.id,
    collection_id: row.collection_id,
    amount: row.amount,
    currency: row.currency,
    status: row.status,
    reason: row.reason,
    failure_reason: row.failure_reason,
    provider_receipt: row.provider_receipt,
    metadata,
    requested_at: row.requested_at.toISOString(),
    resolved_at: row.resolved_at === null ? {} : row.resolved_at.toISOString(),
  };
}
