// Provider notices (callbacks, and answers to status queries) applied to our objects: each notice once,
// by the provider's notice id, in one transaction with the transition it causes. An operator's callback is not
// signed: it is only a claim, applied once the operator's own status query agrees with it.
import type { FastifyBaseLogger } from 'fastify';
import type { TransactionBatcher } from '../../db/batcher.js';
import { Coalescer } from '../../db/coalescer.js';
import type { Db, Tx } from '../../db/pool.js';
import { ApiError } from '../../platform/errors.js';
import { isUuid } from '../../platform/ids.js';
import { MOVEMENTS, type Lifecycle, type MoveOptions, type MoveOutcome } from './lifecycle.service.js';
import { timingSafeEqual } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { recordEvent } from '../events/events.repository.js';
import {
  noteClaimedReference,
  noticeRecorded,
  objectOwners,
  recordNotice,
  type ObjectOwner,
} from './notices.repository.js';
import {
  ANSWER_BY_CALLBACK,
  type CallbackClaim,
  type CallbackHeaders,
  type NoticeObjectType,
  type OperatorConnector,
  type ProviderNotice,
  type ProviderStatus,
} from '../providers/provider.js';
import type { ProviderRegistry } from '../providers/providers.registry.js';

/**
 * Whether a provider's final word contradicts ours about money: it says the money moved and we say the object failed,
 * or it says it failed and we say the money moved. Such a refused notice is a `reconciliation.mismatch` for a person.
 */
function disagrees(objectType: NoticeObjectType, ours: string, theirs: string): boolean {
  const moved: readonly string[] = MOVEMENTS[objectType].movedMoney;
  return (theirs === 'successful' && ours === 'failed') || (theirs === 'failed' && moved.includes(ours));
}

/** The notice id of a provider's answer to a status query: the same answer about the same object twice is one notice. */
export function queryNoticeId(objectType: NoticeObjectType, objectId: string, status: string): string {
  return `query:${objectType}:${objectId}:${status}`;
}

/** Statuses after which nothing more happens at the operator (a claim of one of these waits for the query to agree). */
const FINAL: readonly string[] = ['successful', 'failed', 'reversed'];

/**
 * What a status answer makes of a callback's claim: the notice to apply (the answer; from the claim only a failure
 * reason the query does not carry, never a receipt or an amount), 'wait' when the operator has not caught up yet,
 * or 'contradicted'.
 */
export function confirmClaim(claim: CallbackClaim, answer: ProviderStatus): ProviderNotice | 'wait' | 'contradicted' {
  if (answer.status === claim.status) {
    return {
      ...answer,
      noticeId: queryNoticeId(answer.objectType, answer.objectId, answer.status),
      reason: answer.reason ?? claim.reason,
    };
  }
  return FINAL.includes(claim.status) && !FINAL.includes(answer.status) ? 'wait' : 'contradicted';
}

/** Delays before each status query that confirms a callback: an operator's query can lag its callback by a moment. */
const CONFIRM_DELAYS_MS = [0, 1_000, 3_000];

/** Equal tokens, compared in constant time. */
function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export type NoticeOutcome = MoveOutcome;

/** Thrown inside the transaction to roll it back when the notice turns out to be one already applied. */
const DUPLICATE = Symbol('duplicate notice');

export class ProviderNotices {
  /**
   * The owner lookups of notices received at once, by kind: one statement for the ids asked for while the one before
   * was in flight (a burst of callbacks, the simulator's steps), one round trip each otherwise.
   */
  private readonly owners: Record<NoticeObjectType, Coalescer<string, ObjectOwner>>;

  constructor(
    private readonly db: Db,
    private readonly providers: ProviderRegistry,
    private readonly lifecycle: Lifecycle,
    /** Applies notices many to a commit. */
    private readonly batcher: TransactionBatcher,
    private readonly log: FastifyBaseLogger,
  ) {
    const owners = (type: NoticeObjectType) => new Coalescer((ids: string[]) => objectOwners(db, MOVEMENTS[type], ids));
    this.owners = { collection: owners('collection'), refund: owners('refund'), payout: owners('payout') };
  }

  /** The owner lookups made so far: statements, and the ids they carried. */
  ownerLookups(): { reads: number; keys: number } {
    const all = Object.values(this.owners).map((o) => o.stats);
    return { reads: all.reduce((n, s) => n + s.reads, 0), keys: all.reduce((n, s) => n + s.keys, 0) };
  }

  /** An inbound callback: the provider's signature is checked before anything is read. */
  async receive(providerName: string, rawBody: string, headers: CallbackHeaders): Promise<NoticeOutcome> {
    const provider = this.providers.get(providerName);
    if (!provider?.parseCallback)
      throw new ApiError('not_found', `No provider '${providerName}' with signed callbacks is configured here.`);
    return this.apply(provider.name, provider.parseCallback(rawBody, headers));
  }

  /**
   * An operator's callback: a wrong token is 404 and changes nothing. The connector reads the body; what it claims
   * is confirmed by the operator's status query in the background (the operator gets its answer at once), and
   * an answer the connector could authenticate itself is applied now. Returns the body the operator expects.
   */
  async receiveUnsigned(
    providerName: string,
    token: string,
    path: string,
    body: unknown,
    signed?: { rawBody: string | undefined; headers: CallbackHeaders },
  ): Promise<unknown> {
    const connector = this.providers.connector(providerName);
    if (!connector || !sameToken(token, connector.callbackToken))
      throw new ApiError('not_found', 'No callback is received at this address.');
    const reading = await connector.readCallback(path, body, signed);
    if (reading.confirmed) await this.applyConfirmed(connector.name, reading.confirmed);
    if (reading.claim) this.track(this.confirm(connector, reading.claim));
    return reading.reply;
  }

  /** Waits for the confirmations still running (a graceful stop). */
  async settle(): Promise<void> {
    while (this.confirming.size > 0) await Promise.allSettled([...this.confirming]);
  }

  private readonly confirming = new Set<Promise<void>>();

  private track(work: Promise<void>): void {
    this.confirming.add(work);
    void work.finally(() => this.confirming.delete(work));
  }

  /**
   * Asks the operator about what a callback claimed, and applies its answer if it agrees. A final claim the
   * operator has not caught up with is asked about again after a moment, then left to the reconciliation sweep;
   * one it contradicts changes nothing and is logged.
   */
  private async confirm(connector: OperatorConnector, claim: CallbackClaim): Promise<void> {
    const ids = { provider: connector.name, object_id: claim.objectId, claimed: claim.status };
    try {
      const found = await this.owner(claim.objectType, claim.objectId);
      if (!found || found.row.provider !== connector.name) {
        this.log.warn(ids, 'operator callback about an operation this connector does not run; ignored');
        return;
      }
      const owner = found.row;
      const typed = { ...claim, objectType: found.objectType };
      if (
        owner.provider_reference !== null &&
        claim.reference !== undefined &&
        claim.reference !== owner.provider_reference
      ) {
        this.log.warn(
          { ...ids, reference: claim.reference },
          'operator callback names another reference than the one the operator gave us; ignored',
        );
        return;
      }
      if (owner.provider_reference === null && claim.reference !== undefined) {
        await noteClaimedReference(this.db, owner.workspace_id, found.objectType, claim.objectId, claim.reference);
      }
      for (const delay of CONFIRM_DELAYS_MS) {
        await sleep(delay);
        // The reference we recorded wins over the one the callback names (a Daraja push whose answer was lost has none yet).
        const answer = await connector.queryStatus(
          found.objectType,
          claim.objectId,
          owner.provider_reference ?? claim.reference ?? '',
          typed,
        );
        // An operator whose query answers by callback (Daraja's Transaction Status): that answer will confirm it.
        if (answer === ANSWER_BY_CALLBACK) return;
        if (answer === undefined) {
          this.log.warn(ids, 'operator callback about an operation the operator does not know; nothing changed');
          return;
        }
        const verdict = confirmClaim(typed, answer);
        if (verdict === 'contradicted') {
          this.log.warn(
            { ...ids, queried: answer.status },
            "operator callback contradicted by the operator's status query; nothing changed",
          );
          return;
        }
        if (verdict !== 'wait') {
          await this.applyConfirmed(connector.name, verdict);
          return;
        }
      }
      this.log.info(ids, 'operator has not confirmed the callback yet; the reconciliation sweep asks again');
    } catch (err) {
      this.log.warn({ ...ids, err }, 'confirming an operator callback failed; the reconciliation sweep asks again');
    }
  }

  /** Applies a confirmed notice; one about an object that is not (or no longer) there is logged, not thrown. */
  private async applyConfirmed(providerName: string, notice: ProviderNotice): Promise<void> {
    try {
      await this.apply(providerName, notice);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 'not_found')) throw err;
      this.log.warn(
        { provider: providerName, object_id: notice.objectId },
        'confirmed notice about an operation this provider does not run; ignored',
      );
    }
  }

  /** Who owns an object and which provider runs it; the kind is found by the id when the callback does not say. */
  private async owner(
    objectType: NoticeObjectType | undefined,
    id: string,
  ): Promise<{ objectType: NoticeObjectType; row: ObjectOwner } | undefined> {
    if (!isUuid(id)) return undefined;
    for (const type of objectType === undefined ? (['collection', 'payout', 'refund'] as const) : [objectType]) {
      const found = await this.owners[type].get(id.toLowerCase()); // as PostgreSQL writes a uuid, which the read's rows are keyed by
      if (found) return { objectType: type, row: found };
    }
    return undefined;
  }

  async apply(providerName: string, notice: ProviderNotice): Promise<NoticeOutcome> {
    const m = MOVEMENTS[notice.objectType];
    const unknown = new ApiError(
      'not_found',
      `No ${notice.objectType} ${notice.objectId} is run by provider '${providerName}'.`,
    );
    const owner = (await this.owner(notice.objectType, notice.objectId))?.row;
    if (!owner || owner.provider !== providerName) throw unknown;
    const workspaceId = owner.workspace_id;
    const inTransaction =
      (seen?: ObjectOwner) =>
      async (tx: Tx): Promise<NoticeOutcome> => {
        const { outcome, recorded } = await this.move(tx, workspaceId, providerName, notice, seen);
        // Recorded with the move it causes (in the statement that saves the row), or after a move that changed
        // nothing, in the same transaction. The same notice arriving twice at once waits on the object's row lock,
        // then finds the first one's change already made and its id taken here: it rolls back, with anything its move
        // wrote (a reference the first did not carry). In a batch, that undoes the batch, and each of its notices is
        // applied again alone.
        if (!(recorded ?? (await recordNotice(tx, providerName, workspaceId, notice, outcome)))) throw DUPLICATE;
        return outcome;
      };
    // A move that is one statement (its record strict: a notice id seen before fails it, and the transaction above
    // then finds the duplicate) is sent alone when nothing else is waiting.
    const one = (m.reported as readonly string[]).includes(notice.status)
      ? this.lifecycle.moveStatement(
          notice.objectType,
          workspaceId,
          notice.objectId,
          notice.status as never,
          this.options(providerName, workspaceId, notice, true),
          owner,
        )
      : undefined;
    try {
      return await (one
        ? this.batcher.runStatement<NoticeOutcome>({
            ...one,
            answer: (rows) => (one.answer(rows) ? 'applied' : undefined),
            // From the locked row: the owner lookup's read is what the one statement found changed (or refused).
            otherwise: inTransaction(),
          })
        : this.batcher.run(inTransaction(owner)));
    } catch (err) {
      if (err === DUPLICATE) return 'duplicate';
      if ((err as { constraint?: string }).constraint === 'collections_provider_reference') {
        // The reference is another collection's: one operator payment never makes two collections successful.
        if (await noticeRecorded(this.db, providerName, notice.noticeId)) return 'duplicate';
        this.log.warn(
          { provider: providerName, object_id: notice.objectId, reference: notice.reference },
          'provider notice refused: its reference belongs to another collection',
        );
        return 'refused';
      }
      throw err;
    }
  }

  private async move(
    tx: Tx,
    workspaceId: string,
    providerName: string,
    notice: ProviderNotice,
    /** The object as its owner lookup read it, before this transaction: moved from by compare-and-set if unchanged. */
    seen: ObjectOwner | undefined,
  ): Promise<{ outcome: NoticeOutcome; recorded?: boolean | undefined }> {
    const options = this.options(providerName, workspaceId, notice);
    const m = MOVEMENTS[notice.objectType];
    if (!(m.reported as readonly string[]).includes(notice.status))
      return { outcome: this.refuse(notice, `not a ${notice.objectType} status a provider reports`) };
    const moved = await this.lifecycle.move(
      tx,
      notice.objectType,
      workspaceId,
      notice.objectId,
      notice.status as never,
      options,
      seen,
    );
    // Only the table's refusal is a disagreement: a notice naming another reference or amount is about something else.
    if (moved?.refusedFor === 'transition' && disagrees(notice.objectType, moved.row.status, notice.status)) {
      await recordEvent(tx, workspaceId, {
        type: 'reconciliation.mismatch',
        objectType: notice.objectType,
        objectId: notice.objectId,
        data: {
          object_type: notice.objectType,
          object_id: notice.objectId,
          our_status: moved.row.status,
          provider_status: notice.status,
          provider: providerName,
          provider_reference: notice.reference ?? null,
          notice_id: notice.noticeId,
        },
        at: new Date(),
      });
      this.log.error(
        { object_type: notice.objectType, object_id: notice.objectId, ours: moved.row.status, provider: notice.status },
        'reconciliation mismatch: the provider and we disagree about whether money moved',
      );
    }
    // Applied: the notice's record was written (or found there) with the move. Otherwise the caller records it.
    return { outcome: moved?.outcome ?? 'refused', recorded: moved?.noticeWritten };
  }

  /** A notice's move: its cause, what it reports, and its record written with the move (`strict`: see AppliedNotice). */
  private options(providerName: string, workspaceId: string, notice: ProviderNotice, strict = false): MoveOptions {
    return {
      cause: `provider notice ${notice.noticeId}`,
      reason: notice.reason,
      providerReference: notice.reference,
      receipt: notice.receipt,
      amount: notice.amount,
      notice: { provider: providerName, workspaceId, notice, strict },
      redirectUrl: notice.redirectUrl,
    };
  }

  private refuse(notice: ProviderNotice, why: string): NoticeOutcome {
    this.log.warn(
      { notice_id: notice.noticeId, object_type: notice.objectType, object_id: notice.objectId, status: notice.status },
      `provider notice refused: ${why}`,
    );
    return 'refused';
  }
}
