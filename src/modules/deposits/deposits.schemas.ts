// Deposit addresses, deposits and autoconvert credits. Descriptions write the reference docs.
import { Type, type Static } from 'typebox';
import { ListQuery, pageSchema } from '../../platform/pagination.js';
import { normaliseDecimal } from '../../platform/money.js';
import { component, DateTime, Uuid } from '../../platform/schemas.js';
import { MetadataSchema } from '../collections/collections.schemas.js';
import { ASSET_CODES, NETWORKS } from '../conversion/assets.js';
import type { AddressRow, CreditRow, DepositRow } from './deposits.repository.js';

export const DEPOSIT_STATUSES = ['pending', 'confirmed', 'credited', 'failed'] as const;
export type DepositStatus = (typeof DEPOSIT_STATUSES)[number];
/** What a reporter (the liquidity provider's chain watcher, or the sandbox) may say about a transfer. */
export const REPORTED_STATUSES = ['pending', 'confirmed', 'failed'] as const;
export type ReportedStatus = (typeof REPORTED_STATUSES)[number];

const AssetField = Type.String({ maxLength: 10, description: `The asset: ${ASSET_CODES.join(', ')}.` });
const NetworkField = Type.String({
  maxLength: 20,
  description: `The network: ${NETWORKS.join(', ')} (USDT: tron, ethereum, polygon; USDC: ethereum, polygon, base, solana).`,
});
/** Asset amounts are minor units: 10^-6 of the asset; at most a billion units of it in one deposit. */
export const MAX_DEPOSIT = 1_000_000_000_000_000;
const AssetAmount = (description: string) => Type.Integer({ minimum: 1, maximum: MAX_DEPOSIT, description });
const TxHash = Type.String({
  minLength: 1,
  maxLength: 100,
  description:
    'The transaction hash on the network: 64 hex digits (with or without 0x, any case) on EVM networks and TRON, a base58 signature on Solana.',
});

export const CreateAddressBody = component(
  'CreateDepositAddressRequest',
  Type.Object(
    {
      asset: AssetField,
      network: NetworkField,
      autoconvert_currency: Type.Optional(
        Type.String({
          pattern: '^[A-Z]{3}$',
          description:
            'Convert confirmed deposits to this fiat currency (KES, NGN, …) at the current rate; left out, they stay in the asset.',
        }),
      ),
      label: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description: 'Your own name for the address (a customer, a wallet).',
        }),
      ),
      metadata: Type.Optional(MetadataSchema),
    },
    { additionalProperties: false },
  ),
);
export type CreateAddressBody = Static<typeof CreateAddressBody>;

export const DepositAddressSchema = component(
  'DepositAddress',
  Type.Object(
    {
      deposit_address_id: Uuid('Identifier of the deposit address.'),
      asset: Type.String({ description: 'The asset it takes.' }),
      network: Type.String({ description: 'The network it is on.' }),
      address: Type.String({ description: 'The address to send to. Send only this asset on this network.' }),
      autoconvert_currency: Type.Union([Type.String(), Type.Null()], {
        description: 'The fiat currency confirmed deposits are converted to; null keeps them in the asset.',
      }),
      label: Type.Union([Type.String(), Type.Null()], { description: 'Your name for it.' }),
      metadata: MetadataSchema,
      created_at: DateTime('When it became yours.'),
    },
    {
      additionalProperties: false,
      description: "An on-chain address of the workspace's, for one asset on one network.",
    },
  ),
);
export type DepositAddress = Static<typeof DepositAddressSchema>;

export const PoolBody = component(
  'DepositAddressPoolRequest',
  Type.Object(
    {
      asset: AssetField,
      network: NetworkField,
      addresses: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 500,
        uniqueItems: true,
        description: "Addresses your custody controls, in the network's format; each is handed to one workspace.",
      }),
    },
    { additionalProperties: false },
  ),
);
export type PoolBody = Static<typeof PoolBody>;

export const PoolResultSchema = component(
  'DepositAddressPoolResult',
  Type.Object(
    {
      asset: Type.String({ description: 'The asset.' }),
      network: Type.String({ description: 'The network.' }),
      added: Type.Integer({ description: 'Addresses new to the pool.' }),
      already_known: Type.Integer({
        description: 'Addresses already known (in the pool or assigned), left as they were.',
      }),
      available: Type.Integer({ description: 'Addresses of this asset and network now waiting in the pool.' }),
    },
    { additionalProperties: false, description: 'What stocking the pool did.' },
  ),
);

export const DepositSchema = component(
  'Deposit',
  Type.Object(
    {
      deposit_id: Uuid('Identifier of the deposit.'),
      deposit_address_id: Uuid('The address it arrived on.'),
      address: Type.String({ description: 'That address.' }),
      asset: Type.String({ description: 'The asset.' }),
      network: Type.String({ description: 'The network.' }),
      amount: Type.Integer({ description: 'Minor units of the asset (10^-6).' }),
      tx_hash: Type.String({ description: 'The transaction on the network (hex hashes in lowercase without 0x).' }),
      log_index: Type.Integer({ description: 'Which transfer of the transaction it is.' }),
      status: Type.Enum(DEPOSIT_STATUSES, {
        description: 'pending → confirmed → credited; pending → failed when the transfer is dropped.',
      }),
      confirmations: Type.Integer({ description: 'Confirmations last reported.' }),
      failure_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed; null otherwise.' }),
      credited_currency: Type.Union([Type.String(), Type.Null()], {
        description: 'What the balance was credited in: the asset, or the autoconvert currency. Null until credited.',
      }),
      credited_amount: Type.Union([Type.Integer(), Type.Null()], {
        description: 'Minor units credited to the balance; null until credited.',
      }),
      credit_id: Type.Union([Uuid('The autoconvert credit.'), Type.Null()], {
        description:
          'The autoconvert credit (`GET /v1/api/autoconvert/credits/{creditId}`) when it was converted; null otherwise.',
      }),
      created_at: DateTime('When it was first reported.'),
      updated_at: DateTime('Time of the last change.'),
      confirmed_at: Type.Union([DateTime('When it was confirmed.'), Type.Null()], {
        description: 'When it was confirmed; null before.',
      }),
      credited_at: Type.Union([DateTime('When it was credited.'), Type.Null()], {
        description: 'When it was credited; null before.',
      }),
    },
    { additionalProperties: false, description: 'A transfer that arrived on one of your deposit addresses.' },
  ),
);
export type Deposit = Static<typeof DepositSchema>;

export const ReportDepositBody = component(
  'ReportDepositRequest',
  Type.Object(
    {
      network: NetworkField,
      address: Type.String({ minLength: 1, maxLength: 100, description: 'The deposit address it arrived on.' }),
      asset: AssetField,
      amount: AssetAmount("Minor units of the asset (10^-6), converted from the token's own decimals."),
      tx_hash: TxHash,
      log_index: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: 100_000,
          description: 'Which transfer of the transaction this is (its log or instruction index; default 0).',
        }),
      ),
      status: Type.Enum(REPORTED_STATUSES, {
        description: '`pending` when seen, `confirmed` once final on the chain, `failed` when dropped before that.',
      }),
      confirmations: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Confirmations so far.' }),
      ),
      reason: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description: 'With `failed`: why (e.g. `dropped`, `reorganised`).',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);
export type ReportDepositBody = Static<typeof ReportDepositBody>;

export const SandboxDepositBody = component(
  'SandboxDepositRequest',
  Type.Object(
    {
      deposit_address_id: Uuid('One of your deposit addresses.'),
      amount: AssetAmount('Minor units of the asset (10^-6): 25000000 is 25 USDT.'),
      tx_hash: Type.Optional(TxHash),
    },
    { additionalProperties: false },
  ),
);
export type SandboxDepositBody = Static<typeof SandboxDepositBody>;

export const SimulateDepositBody = component(
  'SimulateDepositRequest',
  Type.Object(
    {
      outcome: Type.Enum(['confirmed', 'failed'] as const, {
        description: '`confirmed` (then credited, once a current rate exists for a conversion) or `failed`.',
      }),
      reason: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'With `failed`: why.' })),
    },
    { additionalProperties: false },
  ),
);
export type SimulateDepositBody = Static<typeof SimulateDepositBody>;

export const CreditSchema = component(
  'AutoconvertCredit',
  Type.Object(
    {
      credit_id: Uuid('Identifier of the credit.'),
      deposit_id: Uuid('The deposit it converted.'),
      source_asset: Type.String({ description: 'The asset received.' }),
      source_amount: Type.Integer({ description: 'Minor units of the asset received (10^-6).' }),
      target_currency: Type.String({ description: 'The fiat currency credited.' }),
      gross_amount: Type.Integer({
        description: 'source_amount at the rate, in minor units of target_currency, rounded down.',
      }),
      fee: Type.Integer({
        description: 'The conversion fee, minor units of target_currency: fee_bps of gross_amount, rounded down.',
      }),
      fee_bps: Type.Integer({ description: 'The fee rate in basis points (AUTOCONVERT_FEE_BPS when converted).' }),
      amount: Type.Integer({ description: 'What the balance received: gross_amount − fee.' }),
      rate: Type.String({ description: 'Units of target_currency per unit of the asset, exact decimal string.' }),
      rate_id: Uuid('The rate record used.'),
      rate_source_id: Uuid('Its source.'),
      rate_source_name: Type.String({ description: "The source's name." }),
      rate_observed_at: DateTime('When the source showed the rate.'),
      created_at: DateTime('When the deposit was converted and credited.'),
    },
    { additionalProperties: false, description: 'A confirmed deposit converted to fiat and credited to the balance.' },
  ),
);
export type Credit = Static<typeof CreditSchema>;

export const AddressIdParams = Type.Object({
  addressId: Type.String({ maxLength: 64, description: 'The deposit_address_id.' }),
});
export const DepositIdParams = Type.Object({
  depositId: Type.String({ maxLength: 64, description: 'The deposit_id.' }),
});
export const CreditIdParams = Type.Object({ creditId: Type.String({ maxLength: 64, description: 'The credit_id.' }) });

export const ListAddressesQuery = Type.Object({ ...ListQuery.properties }, { additionalProperties: false });
export type ListAddressesQuery = Static<typeof ListAddressesQuery>;
export const ListDepositsQuery = Type.Object(
  {
    ...ListQuery.properties,
    status: Type.Optional(Type.Enum(DEPOSIT_STATUSES, { description: 'Only deposits in this status.' })),
  },
  { additionalProperties: false },
);
export type ListDepositsQuery = Static<typeof ListDepositsQuery>;
export const AddressPage = component(
  'DepositAddressPage',
  pageSchema(DepositAddressSchema, 'Deposit addresses, newest first.'),
);
export const DepositPage = component('DepositPage', pageSchema(DepositSchema, 'Deposits, newest first.'));

export function toAddressApi(row: AddressRow): DepositAddress {
  return {
    deposit_address_id: row.id,
    asset: row.asset,
    network: row.network,
    address: row.address,
    autoconvert_currency: row.autoconvert_currency,
    label: row.label,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
  };
}

export function toDepositApi(row: DepositRow): Deposit {
  return {
    deposit_id: row.id,
    deposit_address_id: row.deposit_address_id,
    address: row.address,
    asset: row.asset,
    network: row.network,
    amount: row.amount,
    tx_hash: row.tx_hash,
    log_index: row.log_index,
    status: row.status,
    confirmations: row.confirmations,
    failure_reason: row.failure_reason,
    credited_currency: row.credited_currency,
    credited_amount: row.credited_amount,
    credit_id: row.credit_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    confirmed_at: row.confirmed_at?.toISOString() ?? null,
    credited_at: row.credited_at?.toISOString() ?? null,
  };
}

export function toCreditApi(row: CreditRow): Credit {
  return {
    credit_id: row.id,
    deposit_id: row.deposit_id,
    source_asset: row.source_asset,
    source_amount: row.source_amount,
    target_currency: row.target_currency,
    gross_amount: row.gross_amount,
    fee: row.fee,
    fee_bps: row.fee_bps,
    amount: row.amount,
    rate: normaliseDecimal(row.rate),
    rate_id: row.rate_id,
    rate_source_id: row.rate_source_id,
    rate_source_name: row.rate_source_name,
    rate_observed_at: row.rate_observed_at.toISOString(),
    created_at: row.created_at.toISOString(),
  };
}
