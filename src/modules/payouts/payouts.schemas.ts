// Offramp routes and payout transactions (list, read, commit). Descriptions write the reference docs.
import { Type, type Static } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import {
  component,
  DateTime,
  describedAs,
  IDEMPOTENCY_KEY_PATTERN,
  PROBLEM_SCHEMA_ID,
  Uuid,
} from '../../platform/schemas.js';
import type { Problem } from '../../platform/errors.js';
import { normaliseDecimal } from '../../platform/money.js';
import type { PayoutRow, RouteRow } from './payouts.repository.js';
import { describeReasons, MetadataSchema, ProviderReceipt } from '../collections/collections.schemas.js';

export const ROUTE_STATUSES = ['active', 'inactive'] as const;
export const PAYOUT_STATUSES = ['created', 'pending', 'successful', 'failed'] as const;
export type PayoutStatus = (typeof PAYOUT_STATUSES)[number];
export const PAYOUT_FAILURE_REASON_MEANINGS = {
  recipient_declined: 'the recipient declined it',
  invalid_account: 'the number or account cannot receive it',
  recipient_limit_reached: 'the recipient reached a transaction or balance limit',
  insufficient_provider_balance: 'our account at the operator did not hold enough to pay it',
  provider_refused: 'the provider refused the initiation',
  provider_error: 'the provider could not run it',
} as const;
export type PayoutFailureReason = keyof typeof PAYOUT_FAILURE_REASON_MEANINGS;
export const PAYOUT_FAILURE_REASONS = Object.keys(PAYOUT_FAILURE_REASON_MEANINGS) as [
  PayoutFailureReason,
  ...PayoutFailureReason[],
];

export function payoutFailureReason(reason: string | undefined): PayoutFailureReason {
  return (PAYOUT_FAILURE_REASONS as readonly string[]).includes(reason ?? '')
    ? (reason as PayoutFailureReason)
    : 'provider_error';
}

const Code = Type.String({
  pattern: '^[A-Z][A-Z0-9]{2,9}$',
  description:
    'What payouts on the route are paid from: an asset (USDT, USDC) or the payout currency itself (a fiat balance).',
});
const Minor = (description: string) => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });
const Fee = {
  fee_fixed: Type.Integer({
    minimum: 0,
    maximum: 1_000_000_000,
    description: 'Fixed fee per payout, minor units of the payout currency.',
  }),
  fee_bps: Type.Integer({
    minimum: 0,
    maximum: 10_000,
    description: 'Percentage fee in basis points of the converted amount (rounded down).',
  }),
};

export const CreateRouteBody = component(
  'CreateOfframpRouteRequest',
  Type.Object(
    {
      source: Code,
      market: Type.String({ description: 'The market paid into (KE, NG, …).' }),
      rail: Type.String({ description: 'The rail paid over, offered in that market.' }),
      min_amount: Minor('Smallest payout, minor units of the source.'),
      max_amount: Minor('Largest payout, minor units of the source.'),
      fee_fixed: Type.Optional(Fee.fee_fixed),
      fee_bps: Type.Optional(Fee.fee_bps),
    },
    { additionalProperties: false },
  ),
);
export type CreateRouteBody = Static<typeof CreateRouteBody>;

export const UpdateRouteBody = component(
  'UpdateOfframpRouteRequest',
  Type.Object(
    {
      status: Type.Optional(
        Type.Enum(ROUTE_STATUSES, {
          description: '`inactive` stops new payouts on the route at once (payouts in flight go on).',
        }),
      ),
      min_amount: Type.Optional(Minor('Smallest payout, minor units of the source.')),
      max_amount: Type.Optional(Minor('Largest payout, minor units of the source.')),
      fee_fixed: Type.Optional(Fee.fee_fixed),
      fee_bps: Type.Optional(Fee.fee_bps),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
);
export type UpdateRouteBody = Static<typeof UpdateRouteBody>;

export const RouteSchema = component(
  'OfframpRoute',
  Type.Object(
    {
      route_id: Uuid('Identifier of the route.'),
      source: Type.String({ description: 'What payouts are paid from: an asset or the payout currency.' }),
      source_type: Type.Enum(['asset', 'balance'] as const, {
        description:
          '`asset` converts at the current rate when the payout is committed; `balance` pays from the same currency.',
      }),
      market: Type.String({ description: 'The market paid into.' }),
      rail: Type.String({ description: 'The rail paid over.' }),
      currency: Type.String({ description: "The payout currency (the market's)." }),
      min_amount: Type.Integer({ description: 'Smallest payout, minor units of the source.' }),
      max_amount: Type.Integer({ description: 'Largest payout, minor units of the source.' }),
      fee_fixed: Type.Integer({ description: 'Fixed fee, minor units of the payout currency.' }),
      fee_bps: Type.Integer({ description: 'Percentage fee, basis points of the converted amount.' }),
      status: Type.Enum(ROUTE_STATUSES, {
        description: 'Only active routes take payouts and are listed by `GET /v1/api/routes`.',
      }),
      created_at: DateTime('Creation time.'),
      updated_at: DateTime('Time of the last change.'),
    },
    {
      additionalProperties: false,
      description:
        'A way to pay out: from an asset or a balance, to a currency over one rail of one market, with limits and a fee.',
    },
  ),
);
export type Route = Static<typeof RouteSchema>;

export const CommitBody = component(
  'CommitPayoutRequest',
  Type.Object(
    {
      route_id: Uuid('An active route (`GET /v1/api/routes` lists them).'),
      beneficiary_id: Uuid("An active beneficiary of yours on the route's market and rail."),
      amount: Minor(
        "What to pay from the route's source, in its minor units (10^-6 of an asset; cents of a currency). It is reserved from your balance at once.",
      ),
      reference: Type.String({
        minLength: 1,
        maxLength: 128,
        description: 'Your reference for the payout, shown to the recipient where the rail allows.',
      }),
      metadata: Type.Optional(MetadataSchema),
    },
    { additionalProperties: false },
  ),
);
export type CommitBody = Static<typeof CommitBody>;

export const PayoutSchema = component(
  'Payout',
  Type.Object(
    {
      transaction_id: Uuid('Identifier of the payout transaction.'),
      route_id: Uuid('The route it was committed on.'),
      beneficiary_id: Uuid('The recipient.'),
      market: Type.String({ description: 'The market paid into.' }),
      rail: Type.String({ description: 'The rail paid over.' }),
      source_currency: Type.String({ description: 'What it was paid from: an asset or the payout currency.' }),
      source_amount: Type.Integer({ description: 'Minor units of the source reserved from your balance.' }),
      currency: Type.String({ description: 'The payout currency.' }),
      gross_amount: Type.Integer({
        description:
          'source_amount at the rate (rounded down), or source_amount itself when nothing is converted; minor units of currency.',
      }),
      fee: Type.Integer({
        description: 'fee_fixed + fee_bps of gross_amount (rounded down), minor units of currency.',
      }),
      amount: Type.Integer({ description: 'What the recipient receives: gross_amount − fee.' }),
      rate: Type.Union([Type.String(), Type.Null()], {
        description: 'Units of currency per unit of the source, exact decimal string; null when nothing is converted.',
      }),
      rate_id: Type.Union([Uuid('The rate record used.'), Type.Null()], {
        description: 'The rate record used; null when nothing is converted.',
      }),
      rate_source_name: Type.Union([Type.String(), Type.Null()], {
        description: "The rate's source; null when nothing is converted.",
      }),
      reference: Type.String({ description: 'Your reference.' }),
      metadata: MetadataSchema,
      status: Type.Enum(PAYOUT_STATUSES, {
        description:
          'created (reserved, on its way to the provider) → pending (the provider accepted it) → successful | failed. A failed payout gives the reservation back.',
      }),
      failure_reason: Type.Union([Type.Enum(PAYOUT_FAILURE_REASONS), Type.Null()], {
        description: `Why it failed: ${describeReasons(PAYOUT_FAILURE_REASON_MEANINGS)}. Null otherwise.`,
      }),
      provider_receipt: ProviderReceipt('payment to the recipient'),
      created_at: DateTime('When it was committed.'),
      updated_at: DateTime('Time of the last change.'),
      completed_at: Type.Union([DateTime('When it became successful or failed.'), Type.Null()], {
        description: 'When it became successful or failed; null before.',
      }),
    },
    {
      additionalProperties: false,
      description: 'A payout to a beneficiary, reserved from your balance when committed.',
    },
  ),
);
export type Payout = Static<typeof PayoutSchema>;

/** Most items one bulk commit takes. */
export const BULK_PAYOUT_MAX_ITEMS = 100;

export const BulkPayoutRequest = component(
  'BulkPayoutRequest',
  Type.Object(
    {
      items: Type.Array(
        Type.Object(
          {
            idempotency_key: Type.String({
              minLength: 1,
              maxLength: 255,
              pattern: IDEMPOTENCY_KEY_PATTERN,
              description:
                "The item's Idempotency-Key, in the same key space as the header of `POST /api/transactions/commit`: a key " +
                'committed either way is answered from its stored payout by both. Unique within the request.',
            }),
            route_id: Uuid('As in CommitPayoutRequest.'),
            beneficiary_id: Uuid('As in CommitPayoutRequest.'),
            amount: Minor('As in CommitPayoutRequest.'),
            reference: Type.String({ minLength: 1, maxLength: 128, description: 'As in CommitPayoutRequest.' }),
            metadata: Type.Optional(MetadataSchema),
          },
          { additionalProperties: false, description: 'One payout: a commit body with its own idempotency key.' },
        ),
        {
          minItems: 1,
          maxItems: BULK_PAYOUT_MAX_ITEMS,
          description: `1 to ${BULK_PAYOUT_MAX_ITEMS} payouts, committed in this order, each on its own.`,
        },
      ),
    },
    { additionalProperties: false },
  ),
);
export type BulkPayoutRequest = Static<typeof BulkPayoutRequest>;
export type BulkPayoutItem = BulkPayoutRequest['items'][number];

export const BULK_ITEM_STATUSES = ['committed', 'refused'] as const;

export const BulkPayoutResult = component(
  'BulkPayoutResult',
  Type.Object(
    {
      data: Type.Array(
        Type.Object(
          {
            index: Type.Integer({ minimum: 0, description: "The item's position in the request, from 0." }),
            idempotency_key: Type.String({ description: "The item's key." }),
            status: Type.Enum(BULK_ITEM_STATUSES, {
              description: 'committed: `payout` is the payout; refused: `problem` says why, and nothing was reserved.',
            }),
            replayed: Type.Optional(
              Type.Boolean({
                description:
                  'Committed: true when the key had already committed it (this answer is the stored payout).',
              }),
            ),
            payout: Type.Optional(PayoutSchema),
            problem: Type.Optional(
              describedAs(
                Type.Unsafe<Problem>({ $ref: `${PROBLEM_SCHEMA_ID}#` }),
                "Refused: the problem the same item would get from `POST /api/transactions/commit` (its `status` is that answer's).",
              ),
            ),
          },
          { additionalProperties: false },
        ),
        { description: 'One answer per item, in request order.' },
      ),
    },
    { additionalProperties: false, description: 'The answer to a bulk commit: each item committed or refused.' },
  ),
);
export type BulkPayoutResult = Static<typeof BulkPayoutResult>;

export const RouteIdParams = Type.Object({ routeId: Type.String({ maxLength: 64, description: 'The route_id.' }) });
export const TransactionIdParams = Type.Object({
  transactionId: Type.String({ maxLength: 64, description: 'The transaction_id.' }),
});
export const ListRoutesQuery = Type.Object({ ...ListQuery.properties }, { additionalProperties: false });
export type ListRoutesQuery = Static<typeof ListRoutesQuery>;
export const ListPayoutsQuery = Type.Object(
  {
    ...ListQuery.properties,
    status: Type.Optional(Type.Enum(PAYOUT_STATUSES, { description: 'Only payouts in this status.' })),
  },
  { additionalProperties: false },
);
export type ListPayoutsQuery = Static<typeof ListPayoutsQuery>;
export const RoutePage = component('OfframpRoutePage', pageSchema(RouteSchema, 'Active offramp routes, newest first.'));
export const PayoutPage = component('PayoutPage', pageSchema(PayoutSchema, 'Payout transactions, newest first.'));

/** A payout as the API shows it (its answers, its events, the dashboard). */
export function toPayoutApi(row: PayoutRow): Payout {
  return {
    transaction_id: row.id,
    route_id: row.route_id,
    beneficiary_id: row.beneficiary_id,
    market: row.market,
    rail: row.rail,
    source_currency: row.source_currency,
    source_amount: row.source_amount,
    currency: row.currency,
    gross_amount: row.gross_amount,
    fee: row.fee,
    amount: row.amount,
    rate: row.rate === null ? null : normaliseDecimal(row.rate),
    rate_id: row.rate_id,
    rate_source_name: row.rate_source_name,
    reference: row.reference,
    metadata: row.metadata,
    status: row.status,
    failure_reason: row.failure_reason as PayoutFailureReason | null,
    provider_receipt: row.provider_receipt,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}

export function toRouteApi(row: RouteRow): Route {
  return {
    route_id: row.id,
    source: row.source,
    source_type: row.source === row.currency ? 'balance' : 'asset',
    market: row.market,
    rail: row.rail,
    currency: row.currency,
    min_amount: row.min_amount,
    max_amount: row.max_amount,
    fee_fixed: row.fee_fixed,
    fee_bps: row.fee_bps,
    status: row.status,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
