// The deposit state machine: pending (seen on chain) → confirmed → credited (in the balance), or failed.
import type { TransitionTable } from '../../platform/state-machine.js';
import type { DepositStatus } from './deposits.schemas.js';

export const DEPOSIT_TRANSITIONS: TransitionTable<DepositStatus> = {
  pending: ['confirmed', 'failed'],
  confirmed: ['credited'],
  credited: [],
  failed: [],
};
