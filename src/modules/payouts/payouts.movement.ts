// A payout as a money movement: what the lifecycle engine needs to move one. A failure gives the reservation back
// to the available balance; a success spends it (the recipient's amount out of the provider's float, the fee earned,
// through FX when converted).
import { findBeneficiary } from '../beneficiaries/beneficiaries.repository.js';
import type { Movement } from '../lifecycle/movement.js';
import { payoutReleasePostings, payoutSettlePostings } from '../conversion/postings.js';
import { lockPayout, PAYOUT_COLUMNS, type PayoutRow } from './payouts.repository.js';
import { payoutFailureReason, toPayoutApi, type PayoutStatus } from './payouts.schemas.js';
import { PAYOUT_TRANSITIONS } from './payouts.states.js';

export const payoutMovement: Movement<PayoutStatus, PayoutRow, undefined> = {
  type: 'payout',
  table: 'payouts',
  columns: PAYOUT_COLUMNS,
  stepColumns: ['completed_at'],
  transitions: PAYOUT_TRANSITIONS,
  initial: 'created',
  reported: ['pending', 'successful', 'failed'],
  inFlight: ['created', 'pending'],
  moneyMoved: ['successful'],
  movedMoney: ['successful'],
  step(row, status, at, reason) {
    const final = status === 'successful' || status === 'failed';
    return {
      ...row,
      status,
      updated_at: at,
      completed_at: final ? at : null,
      failure_reason: status === 'failed' ? payoutFailureReason(reason) : row.failure_reason,
    };
  },
  toApi: (row) => toPayoutApi(row),
  postings: (row, status) =>
    status === 'successful' ? payoutSettlePostings(row) : status === 'failed' ? payoutReleasePostings(row) : [],
  async lock(tx, workspaceId, id) {
    const row = await lockPayout(tx, workspaceId, id);
    return row && { row, context: undefined };
  },
  async initiation(db, row) {
    const beneficiary = await findBeneficiary(db, row.workspace_id, row.beneficiary_id);
    if (!beneficiary) return { giveUp: `beneficiary ${row.beneficiary_id} is gone` };
    return {
      send: (provider) =>
        provider.initiatePayout({
          id: row.id,
          workspaceId: row.workspace_id,
          market: row.market,
          rail: row.rail,
          amount: row.amount,
          currency: row.currency,
          reference: row.reference,
          beneficiary: {
            name: beneficiary.name,
            phone_number: beneficiary.phone_number,
            bank_code: beneficiary.bank_code,
            account_number: beneficiary.account_number,
          },
        }),
    };
  },
  // A payout whose initiation went unanswered may still have been paid (a time-out after the provider took it).
  askBeforeGivingUp: true,
  // A locked read: payouts' moves are few beside collections', for which the compare-and-set is made.
  compareAndSet: false,
};
