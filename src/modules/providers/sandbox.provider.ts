// The sandbox simulator (PAYMENTS_ENV=sandbox runs every rail on it): a rail provider that moves no money. The last
// four digits of the payer's phone number pick the outcome; its state lives in `sandbox_operations`, and its steps
// reach us as signed callbacks through the same path a real provider's do.
import type { TransactionBatcher } from '../../db/batcher.js';
import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../../db/pool.js';
import * as repo from './sandbox.repository.js';
import type { DueOperation } from './sandbox.repository.js';
import { signCallback, verifyCallback } from './callback-protocol.js';
import type {
  CallbackHeaders,
  CollectionOrder,
  NoticeObjectType,
  PayoutOrder,
  ProviderAck,
  ProviderNotice,
  RailProvider,
  RefundOrder,
} from './provider.js';

export const SANDBOX_PROVIDER = 'sandbox';

/**
 * What the simulator will report about a collection, in order; the first entry is its answer to the
 * initiation. Each entry is `status` or `status:reason`. Picked by the last four digits of the phone
 * number or, on rails without one (bank transfer), of the reference.
 */
export function collectionScript(lastDigits: string): string[] {
  switch (lastDigits) {
    case '0001':
      return ['pending', 'failed:payer_declined'];
    case '0002':
      return ['failed:insufficient_funds'];
    case '0003':
      return ['pending'];
    case '0004':
      return ['pending', 'processing', 'successful', 'reversed'];
    case '0005':
      return ['pending', 'processing'];
    default:
      return ['pending', 'processing', 'successful'];
  }
}

/**
 * What the simulator reports about a payout, picked by the last four digits of the beneficiary's number
 * (or account): 0001 declined by the recipient, 0002 refused at once (invalid account), 0005 stays
 * pending until driven by hand, anything else paid.
 */
export function payoutScript(lastDigits: string): string[] {
  switch (lastDigits) {
    case '0001':
      return ['pending', 'failed:recipient_declined'];
    case '0002':
      return ['failed:invalid_account'];
    case '0005':
      return ['pending'];
    default:
      return ['pending', 'successful'];
  }
}

/** Refunds in the sandbox succeed unless driven otherwise. */
export const REFUND_SCRIPT = ['pending', 'successful'];

export function outcomeDigits(customer: Record<string, string>, reference: string): string {
  const source = customer.phone_number ?? reference;
  return source.replace(/\D/g, '').slice(-4);
}

function parseStep(step: string): { status: string; reason: string | undefined } {
  const [status, reason] = step.split(':');
  return { status: status ?? step, reason };
}

export type { DueOperation };

export class SandboxProvider implements RailProvider {
  readonly name = SANDBOX_PROVIDER;

  constructor(
    private readonly db: Db,
    /** Opens the operations of initiations made at the same time in one commit. */
    private readonly batcher: TransactionBatcher,
    private readonly secret: string,
    /** Time between two simulated steps (SANDBOX_STEP_MS). */
    private readonly stepMs: number,
  ) {}

  initiateCollection(order: CollectionOrder): Promise<ProviderAck> {
    return this.open(
      'collection',
      order.id,
      order.workspaceId,
      collectionScript(outcomeDigits(order.customer, order.reference)),
    );
  }

  initiateRefund(order: RefundOrder): Promise<ProviderAck> {
    return this.open('refund', order.id, order.workspaceId, REFUND_SCRIPT);
  }

  initiatePayout(order: PayoutOrder): Promise<ProviderAck> {
    const destination = order.beneficiary.phone_number ?? order.beneficiary.account_number ?? order.reference;
    return this.open('payout', order.id, order.workspaceId, payoutScript(destination.replace(/\D/g, '').slice(-4)));
  }

  parseCallback(rawBody: string, headers: CallbackHeaders): ProviderNotice {
    return verifyCallback(this.secret, rawBody, headers);
  }

  /** The simulator keys every operation by our object id. */
  findsByOurId(): boolean {
    return true;
  }

  async queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
  ): Promise<Omit<ProviderNotice, 'noticeId'> | undefined> {
    const op = await repo.findOperation(this.db, objectType, objectId);
    const last = op?.script[op.next_step - 1];
    if (!op || last === undefined) return undefined;
    return { objectType, objectId, reference: op.reference, ...parseStep(last) };
  }

  /** Idempotent by object id: a second initiation answers what the first did and prompts nobody again. */
  private async open(
    objectType: NoticeObjectType,
    objectId: string,
    workspaceId: string,
    script: string[],
  ): Promise<ProviderAck> {
    const reference = `sbx_${randomBytes(12).toString('hex')}`;
    const row = await this.batcher.run((tx) =>
      repo.openOperation(tx, { objectId, workspaceId, objectType, reference, script }, this.stepMs),
    );
    if (!row) throw new Error(`sandbox operation ${objectId} could not be opened`);
    const { status, reason } = parseStep(row.first);
    return { reference: row.reference, status: status === 'failed' ? 'failed' : 'pending', reason };
  }

  /**
   * Claims the operations whose next step is due. A claim is a lease: if the worker dies before
   * `advance`, the step is reported again when the lease runs out (the notice id is the same, so
   * it is applied once).
   */
  claimDue(limit: number, leaseMs: number): Promise<DueOperation[]> {
    return repo.claimDue(this.db, limit, leaseMs);
  }

  /** The signed callback the simulator sends for an operation's next step. */
  callbackFor(op: DueOperation): { body: string; headers: Record<string, string> } {
    const step = op.script[op.next_step];
    if (step === undefined) throw new Error(`sandbox operation ${op.object_id} has no step ${op.next_step}`);
    const { status, reason } = parseStep(step);
    const body = JSON.stringify({
      notice_id: `${op.reference}.${op.next_step}`,
      object_type: op.object_type,
      merchant_reference: op.object_id,
      reference: op.reference,
      status,
      reason: reason ?? null,
      occurred_at: new Date().toISOString(),
    });
    return { body, headers: signCallback(this.secret, body) };
  }

  /** These steps were delivered: schedule each operation's next one, or finish it. A hand-driven outcome that got there first wins. */
  async advance(ops: DueOperation[]): Promise<void> {
    if (ops.length === 0) return;
    await repo.advance(this.db, ops, this.stepMs);
  }

  /**
   * A hand-driven outcome (the simulate endpoints): the script stops here. A provider status becomes the
   * simulator's view of the operation; `undefined` (expiry, which is ours, not the provider's) only stops it.
   */
  async driveByHand(
    tx: Queryable,
    workspaceId: string,
    objectType: NoticeObjectType,
    objectId: string,
    status: string | undefined,
  ): Promise<void> {
    // Written even if the operation was not opened yet (driven right after creation): an initiation that comes
    // later then finds it, answers from it, and runs no script over the hand-driven outcome.
    await repo.driveByHand(
      tx,
      { objectId, workspaceId, objectType, reference: `sbx_${randomBytes(12).toString('hex')}` },
      status ?? null,
    );
  }
}
