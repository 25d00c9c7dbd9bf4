// Risk signals: reported by token holders, read one at a time and listed while open, reviewed by the
// admin, and raised by built-in rules inside the transaction of the change that shows the pattern.
import { withTransaction, type Db, type Tx } from '../../db/pool.js';
import type { AuthContext } from '../../platform/auth.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { canonicalJson, type IdempotencyEngine, type IdempotentResult } from '../../platform/idempotency.js';
import { isUuid, uuidv7, uuidv7Time } from '../../platform/ids.js';
import { maskPhoneNumber, maskPhoneNumbersIn, maskPhoneNumbersInJson } from '../../platform/phone-mask.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import type { Audience } from '../../platform/tokens.js';
import { stepTime } from '../../platform/time.js';
import type { CollectionRow } from '../collections/collections.repository.js';
import { recordEvent } from '../events/events.repository.js';
import * as repo from './risk.repository.js';
import {
  toSignalApi,
  type CreateSignalBody,
  type ListOpenQuery,
  type ReviewSignalBody,
  type RuleType,
  type Severity,
  type Signal,
} from './risk.schemas.js';

/** The built-in rules: how many events of a kind within a window raise a signal. Data, in one place. */
export const RISK_RULES: Readonly<
  Record<Exclude<RuleType, 'large_payout'>, { threshold: number; windowSeconds: number; severity: Severity }>
> = {
  /** One payer's number failing again and again: card-testing style probing, or a payer being pushed to pay. */
  repeated_failed_collections: { threshold: 3, windowSeconds: 3600, severity: 'medium' },
  /** Many refunds in a short time: a compromised key or an insider draining the balance. */
  refund_burst: { threshold: 5, windowSeconds: 600, severity: 'high' },
};

/**
 * A payout committed for at least this share of its currency's largest collection amount (the catalogue's
 * max_amount) raises `large_payout` about that payout: a drained balance leaves in few, large payouts.
 */
export const LARGE_PAYOUT_RULE = { percentOfCurrencyMax: 50, severity: 'high' as Severity };

/** Reported evidence is for a person to read, and goes out in every webhook: kept small. */
const DETAILS_MAX_BYTES = 16 * 1024;

/** Failures on the payer's side; provider errors and refusals are the rail's. */
const PAYER_FAILURES: readonly string[] = ['payer_declined', 'insufficient_funds'];

/** The audiences that see payer phone numbers whole; any other (a liquidity provider) sees them masked. */
const SEES_PHONE_NUMBERS: readonly Audience[] = ['integrator', 'admin'];

/**
 * A signal as a token of `audience` may see it. A liquidity provider gets every payer phone number masked
 * (src/platform/phone-mask.ts): the subject, and any written in the description, the details or the admin's note.
 * It has no other way to read a signal: events and webhooks are the integrator's.
 */
export function forAudience(signal: Signal, audience: Audience): Signal {
  if (SEES_PHONE_NUMBERS.includes(audience)) return signal;
  const { subject } = signal;
  return {
    ...signal,
    subject: {
      type: subject.type,
      id: subject.type === 'phone_number' ? maskPhoneNumber(subject.id) : maskPhoneNumbersIn(subject.id),
    },
    description: maskPhoneNumbersIn(signal.description),
    details: maskPhoneNumbersInJson(signal.details) as Signal['details'],
    resolution_note: signal.resolution_note === null ? null : maskPhoneNumbersIn(signal.resolution_note),
  };
}

export class RiskService {
  constructor(
    private readonly db: Db,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * POST /v1/api/risk/signals: a token holder reports a risk in its own workspace; the admin may name another
   * workspace.
   */
  async create(
    auth: AuthContext,
    body: CreateSignalBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    if (body.workspace_id !== undefined && auth.audience !== 'admin') {
      throw new ApiError(
        'forbidden',
        'Only an admin token may raise a signal about another workspace; leave workspace_id out.',
      );
    }
    if (body.details !== undefined && Buffer.byteLength(canonicalJson(body.details)) > DETAILS_MAX_BYTES) {
      throw new ApiError('validation_failed', 'details is larger than 16 KiB.', {
        errors: [{ field: 'details', message: 'must be at most 16 KiB as JSON' }],
      });
    }
    const workspaceId = body.workspace_id ?? auth.workspaceId;
    return this.idempotency.maybe(auth.workspaceId, key, requestFingerprint, async (tx) => {
      const exists = await tx.query('SELECT 1 FROM workspaces WHERE id = $1', [workspaceId]);
      if (exists.rowCount === 0)
        throw new ApiError('not_found', 'No workspace with that id exists.', {
          errors: [{ field: 'workspace_id', message: 'is not a workspace' }],
        });
      const row = await this.insert(tx, workspaceId, {
        type: body.type,
        severity: body.severity,
        source: auth.audience,
        subject: body.subject,
        description: body.description,
        details: body.details ?? {},
      });
      if (!row) throw new Error('a reported signal is never deduplicated');
      // A liquidity provider's own report comes back masked too: every signal it reads is.
      const shown = forAudience(toSignalApi(row), auth.audience);
      return { status: 201, headers: { location: `/v1/api/risk/signals/${row.id}` }, body: JSON.stringify(shown) };
    });
  }

  /** GET /v1/api/risk/signals/{signalId}: the caller's own workspace's signal; the admin reads any. */
  async get(auth: AuthContext, id: string): Promise<Signal> {
    const row = !isUuid(id)
      ? undefined
      : auth.audience === 'admin'
        ? await repo.findSignalAnyWorkspace(this.db, id)
        : await repo.findSignal(this.db, auth.workspaceId, id);
    if (!row) throw notFound('risk signal');
    return forAudience(toSignalApi(row), auth.audience);
  }

  /**
   * GET /v1/api/risk/signals/open: open signals of the caller's workspace, newest first; the admin's list is every
   * workspace's (its review queue).
   */
  async listOpen(auth: AuthContext, query: ListOpenQuery): Promise<Page<Signal>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listOpen(this.db, auth.audience === 'admin' ? null : auth.workspaceId, filter);
    return this.cursors.page(rows, limit, (row) => forAudience(toSignalApi(row), auth.audience));
  }

  /** The admin acknowledges (open → acknowledged) or resolves (open or acknowledged → resolved, final) a signal. */
  async review(id: string, body: ReviewSignalBody): Promise<Signal> {
    return withTransaction(this.db, async (tx) => {
      const row = isUuid(id) ? await repo.lockSignalAnyWorkspace(tx, id) : undefined;
      if (!row) throw notFound('risk signal');
      const allowed = body.status === 'acknowledged' ? row.status === 'open' : row.status !== 'resolved';
      if (!allowed)
        throw new ApiError('transition_not_allowed', `A ${row.status} signal cannot become ${body.status}.`);
      const at = stepTime(row.updated_at);
      const next: repo.SignalRow = {
        ...row,
        status: body.status,
        resolution_note: body.note ?? row.resolution_note,
        acknowledged_at: row.acknowledged_at ?? (body.status === 'acknowledged' ? at : null),
        resolved_at: body.status === 'resolved' ? at : null,
        updated_at: at,
      };
      await repo.saveReview(tx, next);
      return toSignalApi(next);
    });
  }

  // ---- Built-in rules, run inside the transaction of the change.

  /**
   * A collection the payer's side failed (declined, no funds): the number's third such failure within the hour
   * raises `repeated_failed_collections`. Provider errors do not count: an outage is not the payer's doing.
   */
  async afterCollectionMoved(tx: Tx, workspaceId: string, collection: CollectionRow): Promise<void> {
    const phone = collection.customer.phone_number;
    if (
      collection.status !== 'failed' ||
      phone === undefined ||
      !PAYER_FAILURES.includes(collection.failure_reason ?? '')
    )
      return;
    const rule = RISK_RULES.repeated_failed_collections;
    await repo.lockRuleSubject(tx, workspaceId, 'repeated_failed_collections', phone);
    const since = await this.countFrom(
      tx,
      workspaceId,
      'repeated_failed_collections',
      'phone_number',
      phone,
      rule.windowSeconds,
    );
    const count = await repo.countPayerFailuresForPhone(tx, workspaceId, phone, since, PAYER_FAILURES);
    if (count < rule.threshold) return;
    await this.insert(tx, workspaceId, {
      type: 'repeated_failed_collections',
      severity: rule.severity,
      source: 'rule',
      subject: { type: 'phone_number', id: phone },
      description: `${count} collections from ${phone} were declined or lacked funds within ${rule.windowSeconds / 60} minutes.`,
      details: {
        count,
        threshold: rule.threshold,
        window_seconds: rule.windowSeconds,
        last_collection_id: collection.id,
      },
    });
  }

  /** A refund requested: the fifth within ten minutes in the workspace raises `refund_burst`. */
  async afterRefundRequested(tx: Tx, workspaceId: string, refundId: string): Promise<void> {
    const rule = RISK_RULES.refund_burst;
    await repo.lockRuleSubject(tx, workspaceId, 'refund_burst', workspaceId);
    const since = await this.countFrom(tx, workspaceId, 'refund_burst', 'workspace', workspaceId, rule.windowSeconds);
    const count = await repo.countRefundsSince(tx, workspaceId, since);
    if (count < rule.threshold) return;
    await this.insert(tx, workspaceId, {
      type: 'refund_burst',
      severity: rule.severity,
      source: 'rule',
      subject: { type: 'workspace', id: workspaceId },
      description: `${count} refunds were requested within ${rule.windowSeconds / 60} minutes.`,
      details: { count, threshold: rule.threshold, window_seconds: rule.windowSeconds, last_refund_id: refundId },
    });
  }

  /** A payout at or above its currency's threshold raises `large_payout` (one signal per payout). */
  async afterPayoutCommitted(
    tx: Tx,
    workspaceId: string,
    payout: { id: string; amount: number; currency: string; beneficiary_id: string },
    threshold: number,
  ): Promise<void> {
    if (payout.amount < threshold) return;
    await this.insert(tx, workspaceId, {
      type: 'large_payout',
      severity: LARGE_PAYOUT_RULE.severity,
      source: 'rule',
      subject: { type: 'payout', id: payout.id },
      description: `A payout of ${payout.amount} ${payout.currency} minor units was committed (threshold ${threshold}).`,
      details: { amount: payout.amount, currency: payout.currency, threshold, beneficiary_id: payout.beneficiary_id },
    });
  }

  /** A rule counts events in its window, but only those after its last signal for the subject: those were seen. */
  private async countFrom(
    tx: Tx,
    workspaceId: string,
    rule: RuleType,
    subjectType: string,
    subjectId: string,
    windowSeconds: number,
  ): Promise<Date> {
    const windowStart = new Date(Date.now() - windowSeconds * 1000);
    const last = await repo.lastRuleSignalAt(tx, workspaceId, rule, subjectType, subjectId);
    return last !== undefined && last > windowStart ? last : windowStart;
  }

  /** Writes a signal and its `risk_signal.created` event; undefined when a rule's signal is already open for the subject. */
  private async insert(
    tx: Tx,
    workspaceId: string,
    s: {
      type: string;
      severity: Severity;
      source: repo.SignalRow['source'];
      subject: { type: string; id: string };
      description: string;
      details: Record<string, unknown>;
    },
  ): Promise<repo.SignalRow | undefined> {
    const id = uuidv7();
    const now = uuidv7Time(id);
    const row: repo.SignalRow = {
      id,
      workspace_id: workspaceId,
      type: s.type,
      severity: s.severity,
      status: 'open',
      source: s.source,
      subject_type: s.subject.type,
      subject_id: s.subject.id,
      description: s.description,
      details: s.details,
      resolution_note: null,
      acknowledged_at: null,
      resolved_at: null,
      created_at: now,
      updated_at: now,
    };
    if (!(await repo.insertSignal(tx, workspaceId, row))) return undefined;
    await recordEvent(tx, workspaceId, {
      type: 'risk_signal.created',
      objectType: 'risk_signal',
      objectId: id,
      data: toSignalApi(row),
      at: now,
    });
    return row;
  }
}
