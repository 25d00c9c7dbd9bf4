// Schemas for the ledger's API (GET /v1/balances), and the mapping of its rows to them.
import { Type, type Static } from 'typebox';
import { DateTime } from '../../platform/schemas.js';
import type { BalanceRow } from './ledger.repository.js';

export const BalanceSchema = Type.Object(
  {
    currency: Type.String({ description: 'ISO 4217 currency code.' }),
    available: Type.Integer({
      description:
        'Minor units: successful collections, less successful refunds and reversals. Collections still in flight are not counted.',
    }),
    updated_at: DateTime('When this balance last moved.'),
  },
  { additionalProperties: false },
);
export type Balance = Static<typeof BalanceSchema>;

export const BalanceList = Type.Object(
  {
    data: Type.Array(BalanceSchema, {
      description: 'One entry per currency the workspace has ever been credited in.',
    }),
  },
  { additionalProperties: false, description: "The workspace's balances, one per currency." },
);

/**
 * A workspace's available balance in one currency. The workspace account is credit-normal: its ledger balance is
 * negative when we owe the workspace money, so what the workspace has available is its opposite.
 */
export function toBalanceApi(row: BalanceRow): Balance {
  return { currency: row.currency, available: -row.balance, updated_at: row.updated_at.toISOString() };
}
