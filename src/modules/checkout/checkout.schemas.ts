// Request and response schemas for hosted checkout: sessions and the payer's by-token view.
import { Type, type Static } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import {
  COLLECTION_STATUSES,
  CustomerFields,
  CustomerSchema,
  FAILURE_REASONS,
  MetadataSchema,
  NullablePaymentInstruction,
  type Collection,
} from '../collections/collections.schemas.js';
import type { Market } from '../catalogue/catalogue.schema.js';
import type { CollectionRow } from '../collections/collections.repository.js';
import { apiInstruction, formatAmount, type PaymentInstruction } from '../collections/payment-instructions.js';
import type { SessionRow } from './checkout.repository.js';

export const SESSION_STATUSES = ['open', 'processing', 'complete', 'expired'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/**
 * Why the latest payment attempt did not succeed: the collection's failure reason, `expired` (not authorised in time),
 * or `late_payment_refunded` (authorised after it expired, and sent back to the payer).
 */
export const ATTEMPT_FAILURE_REASONS = [...FAILURE_REASONS, 'expired', 'late_payment_refunded'] as const;
export type AttemptFailureReason = (typeof ATTEMPT_FAILURE_REASONS)[number];

export const EXPIRES_IN_MIN = 300;
export const EXPIRES_IN_MAX = 86_400;
export const EXPIRES_IN_DEFAULT = 3_600;

const SessionStatusSchema = component(
  'CheckoutSessionStatus',
  Type.Enum(SESSION_STATUSES, {
    description:
      '`open` (waiting for the payer, also again after a failed attempt), `processing` (the payer submitted; a collection runs), ' +
      '`complete` (paid: final) or `expired` (final: not paid by `expires_at`, or 5 attempts failed). A session still `processing` at ' +
      '`expires_at` ends with its attempt: `complete` if it succeeds, else `expired`.',
  }),
);

const AttemptFailureSchema = component(
  'CheckoutFailureReason',
  Type.Union([Type.Enum(ATTEMPT_FAILURE_REASONS), Type.Null()], {
    description:
      "Why the latest payment attempt did not succeed: the collection's `failure_reason` (see the Collection), `expired` (the payer " +
      'did not authorise it in time) or `late_payment_refunded` (the payer authorised it after it expired, and the money is being ' +
      'returned by a refund of the collection). Null when no attempt has failed.',
  }),
);

export const CreateSessionBody = component(
  'CreateCheckoutSessionRequest',
  Type.Object(
    {
      amount: Type.Integer({
        description: "Amount in minor units of `currency`. Outside the currency's limits: 422 `amount_out_of_range`.",
      }),
      currency: Type.String({
        maxLength: 8,
        description: 'ISO 4217 code of a currency the catalogue offers (KES, GHS, XOF, …).',
      }),
      redirect_url: Type.String({
        maxLength: 2048,
        description:
          'Where the payer is sent when the session is complete (and offered a link when it expires), with `session_id` and `status` added to ' +
          'its query. An absolute http(s) URL (https in production) without user name or password; otherwise 400 `invalid_redirect_url`.',
      }),
      market: Type.Optional(
        Type.String({
          maxLength: 8,
          description:
            'ISO 3166-1 alpha-2 market code. Optional when only one market uses the currency (KES → KE; XOF is used in CI and SN, so it needs one).',
        }),
      ),
      reference: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 128,
          description: "Your reconciliation reference; each attempt's collection carries it (default: the session id).",
        }),
      ),
      customer: Type.Optional(
        Type.Object(CustomerFields, {
          additionalProperties: false,
          description:
            'What you already know of the payer: a phone number here is filled in on the payment page (the payer can change it).',
        }),
      ),
      metadata: Type.Optional(MetadataSchema),
      expires_in: Type.Optional(
        Type.Integer({
          minimum: EXPIRES_IN_MIN,
          maximum: EXPIRES_IN_MAX,
          description: `Seconds until the session expires if it is not paid, ${EXPIRES_IN_MIN} to ${EXPIRES_IN_MAX} (default ${EXPIRES_IN_DEFAULT}).`,
        }),
      ),
    },
    { additionalProperties: false },
  ),
);
export type CreateSessionBody = Static<typeof CreateSessionBody>;

export const SessionSchema = component(
  'CheckoutSession',
  Type.Object(
    {
      id: Uuid('Identifier of the checkout session.'),
      status: SessionStatusSchema,
      amount: Type.Integer({ description: 'Amount in minor units.' }),
      currency: Type.String({ description: 'ISO 4217 currency code.' }),
      market: Type.String({ description: 'Market code; the page offers the rails of this market.' }),
      reference: Type.Union([Type.String(), Type.Null()], { description: 'Your reference, or null.' }),
      redirect_url: Type.String({ description: 'Where the payer returns to, as given.' }),
      session_url: Type.String({
        description: 'The hosted payment page: send the payer here. It carries a random token, not the session id.',
      }),
      customer: CustomerSchema,
      metadata: MetadataSchema,
      collection_id: Type.Union([Uuid('The collection of the latest payment attempt.'), Type.Null()], {
        description:
          'The collection of the latest payment attempt; null until the payer submits. Read it at GET /v1/collections/{id}.',
      }),
      rail: Type.Union([Type.String(), Type.Null()], {
        description: 'The rail of the latest payment attempt; null until the payer submits.',
      }),
      failure_reason: AttemptFailureSchema,
      attempts: Type.Integer({ description: 'How many payment attempts the payer has made.' }),
      expires_at: DateTime('When the session expires if it is not paid.'),
      completed_at: Type.Union([DateTime('When the payment succeeded.'), Type.Null()], {
        description: 'When the payment succeeded; null until then.',
      }),
      created_at: DateTime('Creation time (UTC, milliseconds).'),
      updated_at: DateTime('Time of the last change.'),
    },
    {
      additionalProperties: false,
      description: 'A hosted checkout session: one amount for the payer to pay on the hosted page.',
    },
  ),
);
export type Session = Static<typeof SessionSchema>;

export const SessionIdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The session id.' }) });

export const ListSessionsQuery = Type.Object(
  // Inline: a query parameter's schema keeps its description only when it is not a reference.
  {
    ...ListQuery.properties,
    status: Type.Optional(Type.Enum(SESSION_STATUSES, { description: 'Only sessions in this status.' })),
  },
  { additionalProperties: false },
);
export type ListSessionsQuery = Static<typeof ListSessionsQuery>;

export const SessionPage = component(
  'CheckoutSessionPage',
  pageSchema(SessionSchema, 'Checkout sessions, newest first.'),
);

// ---- The by-token view: what the hosted page (the payer) sees. No metadata, no ids of other objects.

export const TokenParams = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 128, description: 'The token from the session_url.' }),
});

const RailOption = Type.Object(
  {
    rail: Type.String({ description: 'Rail code, to send back when paying.' }),
    name: Type.String({ description: 'The name payers know it by (M-Pesa, MTN MoMo, …).' }),
    type: Type.Enum(['mobile_money', 'bank_transfer'], { description: 'Kind of rail.' }),
    customer_fields: Type.Array(Type.Enum(['phone_number', 'name', 'email']), {
      description: 'What the payer must enter on this rail.',
    }),
  },
  { additionalProperties: false },
);

export const PayerViewSchema = component(
  'CheckoutPayerView',
  Type.Object(
    {
      status: SessionStatusSchema,
      merchant_name: Type.String({ description: 'The display name of the workspace being paid.' }),
      amount: Type.Integer({ description: 'Amount in minor units.' }),
      currency: Type.String({ description: 'ISO 4217 currency code.' }),
      amount_display: Type.String({
        description: 'The amount formatted for the market, e.g. `KES 1,500.00` or `XOF 5 000`.',
      }),
      market: Type.String({ description: 'Market code.' }),
      market_name: Type.String({ description: 'Market name.' }),
      language: Type.Enum(['en', 'fr'], {
        description: 'Language of the page: French for francophone markets, else English.',
      }),
      phone: Type.Object(
        {
          country_code: Type.String({ description: 'Country calling code without +, e.g. 254.' }),
          national_digits: Type.Integer({ description: 'Digits after the country code.' }),
        },
        { additionalProperties: false, description: "The market's phone-number rule." },
      ),
      rails: Type.Array(RailOption, { description: 'The rails the payer may choose from.' }),
      customer: CustomerSchema,
      expires_at: DateTime('When the session expires if it is not paid.'),
      attempt: Type.Union(
        [
          Type.Object(
            {
              rail: Type.String({ description: 'Rail of the latest attempt.' }),
              status: Type.Enum(COLLECTION_STATUSES, { description: "The attempt's collection status." }),
              payment_instruction: NullablePaymentInstruction,
              failure_reason: AttemptFailureSchema,
            },
            { additionalProperties: false },
          ),
          Type.Null(),
        ],
        { description: 'The latest payment attempt, or null before the first.' },
      ),
      return_url: Type.Union([Type.String(), Type.Null()], {
        description:
          'Once the session is complete or expired: the redirect_url with `session_id` and `status` added. Null before.',
      }),
      sandbox: Type.Boolean({ description: 'True in the sandbox: no real money moves.' }),
    },
    { additionalProperties: false, description: "What the payer's page needs, and nothing more." },
  ),
);
export type PayerView = Static<typeof PayerViewSchema>;

export const PayBody = component(
  'CheckoutPayRequest',
  Type.Object(
    {
      rail: Type.String({ maxLength: 64, description: 'One of the `rails` of the payer view.' }),
      customer: CustomerSchema,
    },
    { additionalProperties: false },
  ),
);
export type PayBody = Static<typeof PayBody>;

/** A session as the API shows it to its workspace; its link is on `publicBaseUrl`. */
export function toSessionApi(row: SessionRow, publicBaseUrl: string): Session {
  return {
    id: row.id,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    market: row.market,
    reference: row.reference,
    redirect_url: row.redirect_url,
    session_url: `${publicBaseUrl}/checkout/${row.token}`,
    customer: row.customer,
    metadata: row.metadata,
    collection_id: row.collection_id,
    rail: row.rail,
    failure_reason: row.failure_reason as AttemptFailureReason | null,
    attempts: row.attempts,
    expires_at: row.expires_at.toISOString(),
    completed_at: row.completed_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * The redirect_url with the session's id and final status added to its query (`session_id`, `status`): where the page
 * sends the payer on completion. Appended to the query exactly as given, so a signed return URL keeps its bytes; a
 * fragment stays last.
 */
export function returnUrl(row: Pick<SessionRow, 'id' | 'redirect_url' | 'status'>): string {
  const hashAt = row.redirect_url.indexOf('#');
  const base = hashAt === -1 ? row.redirect_url : row.redirect_url.slice(0, hashAt);
  const fragment = hashAt === -1 ? '' : row.redirect_url.slice(hashAt);
  const joiner = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return `${base}${joiner}session_id=${encodeURIComponent(row.id)}&status=${encodeURIComponent(row.status)}${fragment}`;
}

/**
 * What the hosted page shows: amount, merchant, rails, status and the latest attempt; never metadata or other ids.
 * `exponent` is the currency's minor-unit exponent; `sandbox` says the page may show the sandbox's hints.
 */
export function toPayerView(
  row: SessionRow,
  merchantName: string,
  attempt:
    | Pick<Collection, 'status' | 'payment_instruction'>
    | Pick<CollectionRow, 'status' | 'payment_instruction'>
    | undefined,
  { market, exponent, sandbox }: { market: Market; exponent: number; sandbox: boolean },
): PayerView {
  const final = row.status === 'complete' || row.status === 'expired';
  return {
    status: row.status,
    merchant_name: merchantName,
    amount: row.amount,
    currency: row.currency,
    amount_display: formatAmount(row.amount, row.currency, exponent, market.language),
    market: row.market,
    market_name: market.name,
    language: market.language,
    phone: { country_code: market.phone.country_code, national_digits: market.phone.national_digits },
    rails: Object.entries(market.rails).map(([code, rail]) => ({
      rail: code,
      name: rail.name,
      type: rail.type,
      customer_fields: [...rail.customer_fields],
    })),
    customer: row.customer,
    expires_at: row.expires_at.toISOString(),
    attempt:
      attempt === undefined || row.rail === null
        ? null
        : {
            rail: row.rail,
            status: attempt.status,
            payment_instruction: apiInstruction(
              attempt.payment_instruction as PaymentInstruction,
            ) as Collection['payment_instruction'],
            failure_reason: row.failure_reason as AttemptFailureReason | null,
          },
    return_url: final ? returnUrl(row) : null,
    sandbox,
  };
}
