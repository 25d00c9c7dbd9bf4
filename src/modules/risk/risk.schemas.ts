// Request and response schemas for risk signals (report, read, list the open ones) and the admin's review; descriptions
// write the reference docs.
import { Type, type Static } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import type { SignalRow } from './risk.repository.js';

export const SIGNAL_STATUSES = ['open', 'acknowledged', 'resolved'] as const;
export type SignalStatus = (typeof SIGNAL_STATUSES)[number];
export const SEVERITIES = ['low', 'medium', 'high'] as const;
export type Severity = (typeof SEVERITIES)[number];
/** What a token holder may report. */
export const REPORTED_TYPES = [
  'fraud_suspected',
  'account_takeover',
  'chargeback',
  'sanctions_match',
  'other',
] as const;
/** What the built-in rules raise. */
export const RULE_TYPES = ['repeated_failed_collections', 'refund_burst', 'large_payout'] as const;
export type RuleType = (typeof RULE_TYPES)[number];
export const SUBJECT_TYPES = [
  'phone_number',
  'collection',
  'refund',
  'beneficiary',
  'checkout_session',
  'workspace',
  'payout',
  'other',
] as const;
export const SIGNAL_SOURCES = ['rule', 'integrator', 'liquidity_provider', 'admin'] as const;

const subject = (idDescription: string) =>
  Type.Object(
    {
      type: Type.Enum(SUBJECT_TYPES, { description: 'What the signal is about.' }),
      id: Type.String({ minLength: 1, maxLength: 128, description: idDescription }),
    },
    { additionalProperties: false, description: 'What the signal is about: a type and an identifier.' },
  );

/** The reference's words for the rule of src/platform/phone-mask.ts, which the risk service applies per audience. */
const PHONE_MASK_RULE =
  'A `liquidity_provider` token sees every phone number masked: the country code and the last 4 digits stay, each ' +
  'other digit is `*` (`+254712345678` → `+254*****5678`; the last 2 when the national number is shorter than 8 ' +
  'digits). Integrator and admin tokens see it whole.';

export const CreateSignalBody = component(
  'CreateRiskSignalRequest',
  Type.Object(
    {
      type: Type.Enum(REPORTED_TYPES, { description: 'The kind of risk being reported.' }),
      severity: Type.Enum(SEVERITIES, { description: 'How urgent: low, medium or high.' }),
      subject: subject('Its identifier: an object id, or the phone number in E.164 form.'),
      description: Type.String({
        minLength: 1,
        maxLength: 1000,
        description: 'What was seen, for the person who reviews it.',
      }),
      details: Type.Optional(
        Type.Record(Type.String(), Type.Unknown(), {
          maxProperties: 50,
          description: 'Your own structured evidence (up to 50 keys, 16 KiB as JSON).',
        }),
      ),
      workspace_id: Type.Optional(Uuid('Admin only: the workspace the signal concerns (default: the caller’s own).')),
    },
    { additionalProperties: false },
  ),
);
export type CreateSignalBody = Static<typeof CreateSignalBody>;

export const SignalSchema = component(
  'RiskSignal',
  Type.Object(
    {
      signal_id: Uuid('Identifier of the signal.'),
      workspace_id: Uuid('The workspace the signal concerns.'),
      type: Type.String({
        description: `A built-in rule (${RULE_TYPES.map((t) => `\`${t}\``).join(', ')})) or a reported kind (${REPORTED_TYPES.map((t) => `\`${t}\``).join(', ')}).`,
      }),
      severity: Type.Enum(SEVERITIES, { description: 'low, medium or high.' }),
      status: Type.Enum(SIGNAL_STATUSES, {
        description: '`open` until the admin acknowledges it, then `acknowledged`; `resolved` is final.',
      }),
      source: Type.Enum(SIGNAL_SOURCES, {
        description: '`rule` for a built-in rule, else the audience of the token that reported it.',
      }),
      subject: subject(`Its identifier: an object id, or the phone number in E.164 form. ${PHONE_MASK_RULE}`),
      description: Type.String({
        description: 'What was seen. Phone numbers in it (E.164) are masked for a `liquidity_provider` token.',
      }),
      details: Type.Record(Type.String(), Type.Unknown(), {
        description:
          'Evidence: for a rule, the count, window and threshold that fired it. Phone numbers (E.164) in its texts are masked for a `liquidity_provider` token.',
      }),
      resolution_note: Type.Union([Type.String(), Type.Null()], {
        description:
          "The admin's note when acknowledging or resolving. Phone numbers in it (E.164) are masked for a `liquidity_provider` token.",
      }),
      acknowledged_at: Type.Union([DateTime('When the admin acknowledged it.'), Type.Null()], {
        description: 'When the admin acknowledged it; null before.',
      }),
      resolved_at: Type.Union([DateTime('When the admin resolved it.'), Type.Null()], {
        description: 'When the admin resolved it; null before.',
      }),
      created_at: DateTime('When it was raised.'),
      updated_at: DateTime('Time of the last change.'),
    },
    {
      additionalProperties: false,
      description: 'A risk signal: something about a workspace’s traffic that a person should look at.',
    },
  ),
);
export type Signal = Static<typeof SignalSchema>;

export const SignalPage = component('RiskSignalPage', pageSchema(SignalSchema, 'Open signals, newest first.'));
export const ListOpenQuery = Type.Object({ ...ListQuery.properties }, { additionalProperties: false });
export type ListOpenQuery = Static<typeof ListOpenQuery>;

export const SignalIdParams = Type.Object({ signalId: Type.String({ maxLength: 64, description: 'The signal_id.' }) });

export const ReviewSignalBody = component(
  'ReviewRiskSignalRequest',
  Type.Object(
    {
      status: Type.Enum(['acknowledged', 'resolved'], {
        description: 'open → acknowledged → resolved (or open → resolved).',
      }),
      note: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: 'Why: what was found or done.' })),
    },
    { additionalProperties: false },
  ),
);
export type ReviewSignalBody = Static<typeof ReviewSignalBody>;

/** A signal row as the API shows it (whole: `forAudience` in risk.service.ts masks it for a liquidity provider). */
export function toSignalApi(row: SignalRow): Signal {
  return {
    signal_id: row.id,
    workspace_id: row.workspace_id,
    type: row.type,
    severity: row.severity,
    status: row.status,
    source: row.source,
    subject: { type: row.subject_type as Signal['subject']['type'], id: row.subject_id },
    description: row.description,
    details: row.details,
    resolution_note: row.resolution_note,
    acknowledged_at: row.acknowledged_at?.toISOString() ?? null,
    resolved_at: row.resolved_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
