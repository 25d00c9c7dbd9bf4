// Beneficiaries (create, list, read, deactivate): who a workspace pays out to. Descriptions write the reference docs.
import { Type, type Static } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import { MetadataSchema } from '../collections/collections.schemas.js';
import type { BeneficiaryRow } from './beneficiaries.repository.js';

export const BENEFICIARY_STATUSES = ['active', 'inactive'] as const;

export const CreateBeneficiaryBody = component(
  'CreateBeneficiaryRequest',
  Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: 200,
        description: "The account holder's full name, as the wallet or bank knows it.",
      }),
      market: Type.String({ description: 'ISO 3166-1 alpha-2 market (KE, GH, UG, TZ, RW, ZM, NG, CI).' }),
      rail: Type.String({
        description:
          'The rail payouts to this beneficiary use, offered in that market (mpesa, mtn_momo, bank_transfer, …).',
      }),
      phone_number: Type.Optional(
        Type.String({
          maxLength: 20,
          description: 'Mobile-money rails: the wallet number, E.164 in the market (+254712345678).',
        }),
      ),
      bank_code: Type.Optional(
        Type.String({
          pattern: '^[0-9A-Z]{3,11}$',
          description: "Bank rails: the bank's code (NIBSS code in NG, or BIC).",
        }),
      ),
      account_number: Type.Optional(
        Type.String({ pattern: '^[0-9]{6,20}$', description: 'Bank rails: the account number, 6 to 20 digits.' }),
      ),
      reference: Type.Optional(
        Type.String({ minLength: 1, maxLength: 128, description: 'Your own reference for this beneficiary.' }),
      ),
      metadata: Type.Optional(MetadataSchema),
    },
    { additionalProperties: false },
  ),
);
export type CreateBeneficiaryBody = Static<typeof CreateBeneficiaryBody>;

export const BeneficiarySchema = component(
  'Beneficiary',
  Type.Object(
    {
      beneficiary_id: Uuid('Identifier of the beneficiary.'),
      name: Type.String({ description: "The account holder's name." }),
      market: Type.String({ description: 'Market code.' }),
      rail: Type.String({ description: 'The rail payouts to this beneficiary use.' }),
      currency: Type.String({ description: "The market's currency: what the beneficiary receives." }),
      phone_number: Type.Union([Type.String(), Type.Null()], {
        description: 'Mobile-money wallet number; null on bank rails.',
      }),
      bank_code: Type.Union([Type.String(), Type.Null()], { description: 'Bank code; null on mobile-money rails.' }),
      account_number: Type.Union([Type.String(), Type.Null()], {
        description: 'Bank account number; null on mobile-money rails.',
      }),
      reference: Type.Union([Type.String(), Type.Null()], { description: 'Your reference, if you gave one.' }),
      metadata: MetadataSchema,
      status: Type.Enum(BENEFICIARY_STATUSES, {
        description: '`active` may receive payouts; `inactive` (deactivated) never again.',
      }),
      created_at: DateTime('Creation time.'),
      updated_at: DateTime('Time of the last change.'),
      deactivated_at: Type.Union([DateTime('When it was deactivated.'), Type.Null()], {
        description: 'When it was deactivated; null while active.',
      }),
    },
    {
      additionalProperties: false,
      description: 'A payout destination: a mobile-money wallet or a bank account in one market.',
    },
  ),
);
export type Beneficiary = Static<typeof BeneficiarySchema>;

export const BeneficiaryIdParams = Type.Object({
  beneficiaryId: Type.String({ maxLength: 64, description: 'The beneficiary_id.' }),
});

export const ListBeneficiariesQuery = Type.Object(
  {
    ...ListQuery.properties,
    status: Type.Optional(Type.Enum(BENEFICIARY_STATUSES, { description: 'Only beneficiaries in this status.' })),
  },
  { additionalProperties: false },
);
export type ListBeneficiariesQuery = Static<typeof ListBeneficiariesQuery>;

export const BeneficiaryPage = component(
  'BeneficiaryPage',
  pageSchema(BeneficiarySchema, 'Beneficiaries, newest first.'),
);

export function toBeneficiaryApi(row: BeneficiaryRow): Beneficiary {
  return {
    beneficiary_id: row.id,
    name: row.name,
    market: row.market,
    rail: row.rail,
    currency: row.currency,
    phone_number: row.phone_number,
    bank_code: row.bank_code,
    account_number: row.account_number,
    reference: row.reference,
    metadata: row.metadata,
    status: row.status,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    deactivated_at: row.deactivated_at === null ? null : row.deactivated_at.toISOString(),
  };
}
