// The ledger postings of deposits, autoconvert credits and payouts, as pure functions: each posting is in one
// currency and sums to zero, so no minor unit is made or lost. A conversion is two postings: the source amount
// into FX in the source currency, the converted amount out of FX in the target currency.
import {
  CUSTODY_ASSETS,
  FEE_INCOME,
  FX_CONVERSION,
  PAYOUTS_IN_FLIGHT,
  PROVIDER_RECEIVABLE,
  WORKSPACE_AVAILABLE,
  type Posting,
} from '../ledger/ledger.repository.js';

/** A confirmed deposit kept in its asset: custody holds it, the workspace's asset balance owes it. */
export function depositPostings(depositId: string, asset: string, amount: number): Posting[] {
  return [
    {
      kind: 'deposit_credited',
      objectType: 'deposit',
      objectId: depositId,
      currency: asset,
      lines: [
        { account: CUSTODY_ASSETS, amount },
        { account: WORKSPACE_AVAILABLE, amount: -amount },
      ],
    },
  ];
}

/** A confirmed deposit converted: the asset into custody and FX; the converted amount, less the fee, to the workspace. */
export function autoconvertPostings(
  creditId: string,
  source: { asset: string; amount: number },
  target: { currency: string; gross: number; fee: number },
): Posting[] {
  return [
    {
      kind: 'autoconvert_source',
      objectType: 'autoconvert_credit',
      objectId: creditId,
      currency: source.asset,
      lines: [
        { account: CUSTODY_ASSETS, amount: source.amount },
        { account: FX_CONVERSION, amount: -source.amount },
      ],
    },
    {
      kind: 'autoconvert_target',
      objectType: 'autoconvert_credit',
      objectId: creditId,
      currency: target.currency,
      lines: [
        { account: FX_CONVERSION, amount: target.gross },
        { account: WORKSPACE_AVAILABLE, amount: -(target.gross - target.fee) },
        { account: FEE_INCOME, amount: -target.fee },
      ],
    },
  ];
}

export interface PayoutMoney {
  id: string;
  source_currency: string;
  source_amount: number;
  currency: string;
  gross_amount: number;
  fee: number;
  amount: number;
}

/** A posting of payout `p`, in `currency`. */
function payoutPosting(kind: Posting['kind'], p: PayoutMoney, currency: string, lines: Posting['lines']): Posting {
  return { kind, objectType: 'payout', objectId: p.id, currency, lines };
}

/** Committed: the source amount leaves the available balance for the payouts in flight. */
export function payoutReservePostings(p: PayoutMoney): Posting[] {
  return [
    payoutPosting('payout_reserved', p, p.source_currency, [
      { account: WORKSPACE_AVAILABLE, amount: p.source_amount },
      { account: PAYOUTS_IN_FLIGHT, amount: -p.source_amount },
    ]),
  ];
}

/** Failed: the reservation goes back to the available balance. */
export function payoutReleasePostings(p: PayoutMoney): Posting[] {
  return [
    payoutPosting('payout_released', p, p.source_currency, [
      { account: PAYOUTS_IN_FLIGHT, amount: p.source_amount },
      { account: WORKSPACE_AVAILABLE, amount: -p.source_amount },
    ]),
  ];
}

/**
 * Successful: the reservation is spent. The recipient's amount leaves the provider's float and the fee is
 * earned; from an asset, through FX (the asset in, the payout currency out).
 */
export function payoutSettlePostings(p: PayoutMoney): Posting[] {
  const payoutSide = [
    { account: PROVIDER_RECEIVABLE, amount: -p.amount },
    { account: FEE_INCOME, amount: -p.fee },
  ];
  if (p.source_currency === p.currency) {
    return [
      payoutPosting('payout_settled', p, p.currency, [
        { account: PAYOUTS_IN_FLIGHT, amount: p.source_amount },
        ...payoutSide,
      ]),
    ];
  }
  return [
    payoutPosting('payout_settled', p, p.source_currency, [
      { account: PAYOUTS_IN_FLIGHT, amount: p.source_amount },
      { account: FX_CONVERSION, amount: -p.source_amount },
    ]),
    payoutPosting('payout_converted', p, p.currency, [
      { account: FX_CONVERSION, amount: p.gross_amount },
      ...payoutSide,
    ]),
  ];
}
