// The sandbox simulator (contract §6): a rail provider that moves no money. The last four digits of the
// payer's phone number pick the outcome; its state lives in `sandbox_operations`, and its steps reach us as
// signed callbacks through the same path a real provider's do.
import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../../db/pool.js';
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

export interface DueOperation {
  object_id: string;
  object_type: NoticeObjectType;
  reference: string;
  script: string[];
  next_step: number;
}

export class SandboxProvider implements RailProvider {
  readonly name = SANDBOX_PROVIDER;

  constructor(
    private readonly db: Db,
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

  async queryStatus(
    objectType: NoticeObjectType,
    objectId: string,
  ): Promise<Omit<ProviderNotice, 'noticeId'> | undefined> {
    const { rows } = await this.db.query<{ reference: string; script: string[]; next_step: number }>(
      'SELECT reference, script, next_step FROM sandbox_operations WHERE object_id = $1 AND object_type = $2',
      [objectId, objectType],
    );
    const op = rows[0];
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
    const { rows } = await this.db.query<{ reference: string; first: string }>(
      `WITH ins AS (
         INSERT INTO sandbox_operations (object_id, workspace_id, object_type, reference, script, next_step, next_at, created_at)
         VALUES ($1, $2, $3, $4, $5, 1,
                 CASE WHEN cardinality($5::text[]) > 1 THEN now() + make_interval(secs => $6 / 1000.0) END, now())
         ON CONFLICT (object_id) DO NOTHING
         RETURNING reference, script[1] AS first)
       SELECT reference, first FROM ins
       UNION ALL
       SELECT reference, script[1] FROM sandbox_operations WHERE object_id = $1
       LIMIT 1`,
      [objectId, workspaceId, objectType, reference, script, this.stepMs],
    );
    // Two initiations at once: the second's statement saw neither its own insert (it conflicted) nor the
    // first's (not yet committed when it started); read it again now that it is.
    const row =
      rows[0] ??
      (
        await this.db.query<{ reference: string; first: string }>(
          'SELECT reference, script[1] AS first FROM sandbox_operations WHERE object_id = $1',
          [objectId],
        )
      ).rows[0];
    if (!row) throw new Error(`sandbox operation ${objectId} could not be opened`);
    const { status, reason } = parseStep(row.first);
    return { reference: row.reference, status: status === 'failed' ? 'failed' : 'pending', reason };
  }

  /**
   * Claims the operations whose next step is due. A claim is a lease: if the worker dies before
   * `advance`, the step is reported again when the lease runs out (the notice id is the same, so
   * it is applied once).
   */
  async claimDue(limit: number, leaseMs: number): Promise<DueOperation[]> {
    const { rows } = await this.db.query<DueOperation>(
      `UPDATE sandbox_operations o SET next_at = now() + make_interval(secs => $2 / 1000.0)
       FROM (SELECT object_id FROM sandbox_operations WHERE next_at <= now() ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED) due
       WHERE o.object_id = due.object_id
       RETURNING o.object_id, o.object_type, o.reference, o.script, o.next_step`,
      [limit, leaseMs],
    );
    return rows;
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
    await this.db.query(
      `UPDATE sandbox_operations o
       SET next_step = o.next_step + 1,
           next_at = CASE WHEN o.next_step + 1 < cardinality(o.script) THEN now() + make_interval(secs => $3 / 1000.0) END
       FROM unnest($1::uuid[], $2::int[]) AS done(object_id, step)
       WHERE o.object_id = done.object_id AND o.next_step = done.step`,
      [ops.map((o) => o.object_id), ops.map((o) => o.next_step), this.stepMs],
    );
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
    await tx.query(
      `INSERT INTO sandbox_operations AS o (object_id, workspace_id, object_type, reference, script, next_step, next_at, created_at)
       VALUES ($1, $2, $3, $4, ARRAY[coalesce($5, 'pending')], 1, NULL, now())
       ON CONFLICT (object_id) DO UPDATE
       SET script = CASE WHEN $5::text IS NULL THEN o.script ELSE o.script[1:o.next_step] || $5::text END,
           next_step = CASE WHEN $5::text IS NULL THEN o.next_step ELSE o.next_step + 1 END,
           next_at = NULL`,
      [objectId, workspaceId, objectType, `sbx_${randomBytes(12).toString('hex')}`, status ?? null],
    );
  }
}
