// The settlement report's query and answer (GET /v1/reports/settlement); descriptions write the reference docs.
import { Type, type Static } from 'typebox';
import { component, DateTime, describedAs, Uuid } from '../../platform/schemas.js';
import type { MismatchEventRow } from './reports.repository.js';

export const SettlementQuery = Type.Object(
  {
    date: Type.String({
      pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$',
      description: 'The UTC day, `YYYY-MM-DD`. A date that does not exist is 400 `validation_failed`.',
    }),
    currency: Type.String({
      pattern: '^[A-Z]{3,5}$',
      description:
        'ISO 4217 currency code (or an asset such as `USDT`) the report is in; one no market takes is 400 `invalid_currency`.',
    }),
  },
  { additionalProperties: false },
);
export type SettlementQuery = Static<typeof SettlementQuery>;

const TallySchema = component(
  'SettlementTally',
  Type.Object(
    {
      count: Type.Integer({ description: 'How many reached this status that day.' }),
      amount: Type.Integer({ description: 'Their amounts, in minor units.' }),
    },
    { additionalProperties: false, description: 'How many reached a status that day, and their amounts.' },
  ),
);
/** How many reached `status` that day, and their amounts. */
const Tally = (status: string) => describedAs(TallySchema, `Those that became ${status} that day.`);

const RailReport = Type.Object(
  {
    market: Type.String({ description: 'ISO 3166-1 alpha-2 market code.' }),
    rail: Type.String({ description: 'The rail.' }),
    collections: Type.Object(
      {
        successful: Tally('successful'),
        failed: Tally('failed'),
        expired: Tally('expired'),
        refunded: Tally('refunded'),
        reversed: Tally('reversed'),
      },
      { additionalProperties: false, description: 'Collections that reached each status that day.' },
    ),
    refunds: Type.Object(
      { successful: Tally('successful'), failed: Tally('failed') },
      { additionalProperties: false, description: 'Refunds of collections on this rail that resolved that day.' },
    ),
    payouts: Type.Object(
      {
        successful: Tally('successful'),
        failed: Tally('failed'),
        fees: Type.Integer({ description: 'The fees of the payouts that succeeded that day, in minor units.' }),
      },
      {
        additionalProperties: false,
        description:
          'Payouts delivered in this currency on this rail that resolved that day (`amount`: what the recipients got).',
      },
    ),
  },
  { additionalProperties: false },
);

export const SettlementReportSchema = component(
  'SettlementReport',
  Type.Object(
    {
      date: Type.String({ description: 'The UTC day reported.' }),
      currency: Type.String({ description: 'The currency reported.' }),
      rails: Type.Array(RailReport, { description: 'Each rail with anything to report that day.' }),
      fees: Type.Integer({
        description: 'Fees earned that day in this currency (payouts and autoconvert), minor units.',
      }),
      ledger: Type.Object(
        {
          opening_available: Type.Integer({ description: 'The available balance at 00:00 UTC.' }),
          closing_available: Type.Integer({ description: 'The available balance at 24:00 UTC (or now, for today).' }),
          movements: Type.Array(
            Type.Object(
              {
                kind: Type.String({
                  description:
                    'The posting kind: `collection_successful`, `collection_reversed`, `refund_reserved`, `refund_released`, `payout_reserved`, …',
                }),
                count: Type.Integer({ description: 'Postings of this kind that day.' }),
                amount: Type.Integer({ description: 'How much they moved the available balance (negative: out).' }),
              },
              { additionalProperties: false },
            ),
            { description: 'The day’s postings that moved the available balance, by kind.' },
          ),
        },
        {
          additionalProperties: false,
          description: 'The available balance from the double-entry ledger: opening + the movements = closing.',
        },
      ),
      reconciliation_mismatches: Type.Array(
        Type.Object(
          {
            event_id: Uuid('The `reconciliation.mismatch` event.'),
            object_type: Type.String({ description: '`collection`, `refund` or `payout`.' }),
            object_id: Uuid('The object the provider disagrees about.'),
            our_status: Type.String({ description: 'Its status here.' }),
            provider_status: Type.String({ description: 'What the provider answered.' }),
            provider: Type.String({ description: 'The provider.' }),
            detected_at: DateTime('When a status query found it.'),
          },
          { additionalProperties: false },
        ),
        {
          description:
            "Disagreements the sweeps' status queries found that day: the provider says successful and we say failed, or the reverse. A person must look.",
        },
      ),
    },
    {
      additionalProperties: false,
      description: 'One UTC day of a workspace in one currency: outcomes per rail, fees, the ledger, and mismatches.',
    },
  ),
);
export type SettlementReport = Static<typeof SettlementReportSchema>;

/** A `reconciliation.mismatch` event as the settlement report lists it: the object and both sides' statuses. */
export function toMismatchApi(m: MismatchEventRow): SettlementReport['reconciliation_mismatches'][number] {
  return {
    event_id: m.id,
    object_type: m.object_type,
    object_id: m.object_id,
    our_status: String(m.data.our_status),
    provider_status: String(m.data.provider_status),
    provider: String(m.data.provider),
    detected_at: m.created_at.toISOString(),
  };
}
