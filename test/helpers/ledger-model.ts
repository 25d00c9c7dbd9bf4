// The model the ledger property test (test/ledger.property.test.ts) checks the service against: the contract's
// transition tables (of collections and of refunds), written out here from the contract, not imported, so the model is
// the document's and not the code's; the markets and the random operations (fast-check arbitraries); and what the
// model does with each move. Pure: no database.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { TestApp } from './harness.js';

// ---------------------------------------------------------------------------------------------------------
// The contract's transition tables of collections and of refunds.

export type CStatus =
  'created' | 'pending' | 'processing' | 'successful' | 'failed' | 'expired' | 'refunded' | 'reversed';
export type RStatus = 'requested' | 'pending' | 'successful' | 'failed';
export type NoticeStatus = 'pending' | 'processing' | 'successful' | 'failed' | 'reversed';

export const COLLECTION_EDGES: Record<CStatus, readonly CStatus[]> = {
  created: ['pending', 'processing', 'failed', 'expired'],
  pending: ['processing', 'failed', 'expired'],
  processing: ['failed', 'successful'],
  successful: ['refunded', 'reversed'],
  failed: [],
  expired: ['successful'], // a late payment: its refund follows (the default late_payment policy)
  refunded: [],
  reversed: [],
};
export const REFUND_EDGES: Record<RStatus, readonly RStatus[]> = {
  requested: ['pending', 'failed'],
  pending: ['successful', 'failed'],
  successful: [],
  failed: [],
};
/** Statuses a provider may report about a refund (the refund statuses; the callback schema's description). */
export const REFUND_NOTICE_STATUSES: readonly string[] = ['pending', 'successful', 'failed'];
/** The documented failure reasons of a collection; a provider's unknown reason is a provider error. */
export const COLLECTION_REASONS: readonly string[] = [
  'payer_declined',
  'insufficient_funds',
  'provider_error',
  'provider_refused',
];

/**
 * The statuses passed through to get from `from` to `to` along the table (a provider that reports only the
 * final outcome is walked through the statuses between): [] when already there, undefined when unreachable.
 */
export function walk<S extends string>(
  edges: Record<S, readonly S[]>,
  from: S,
  to: S,
  notThrough: readonly S[] = [],
): S[] | undefined {
  if (from === to) return [];
  const previous = new Map<S, S>([[from, from]]);
  const queue: S[] = [from];
  while (queue.length > 0) {
    const at = queue.shift() as S;
    for (const next of edges[at]) {
      if (previous.has(next)) continue;
      previous.set(next, at);
      if (next === to) {
        const steps: S[] = [];
        for (let s: S = to; s !== from; s = previous.get(s) as S) steps.unshift(s);
        return steps;
      }
      // A status that moves money (successful) is never inferred on the way to another: it must be reported.
      if (!notThrough.includes(next)) queue.push(next);
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Markets: several currencies, and one rail whose collections expire after 1 s (an operator catalogue file).

export const RAILS = [
  { market: 'KE', rail: 'mpesa', currency: 'KES', countryCode: '254' },
  { market: 'KE', rail: 'airtel_money', currency: 'KES', countryCode: '254' }, // expires after 1 s here
  { market: 'GH', rail: 'mtn_momo', currency: 'GHS', countryCode: '233' },
  { market: 'UG', rail: 'mtn_momo', currency: 'UGX', countryCode: '256' },
] as const;
/**
 * Last four digits of the payer's phone (the sandbox's outcomes): at initiation 0002 fails at once, everything else is
 * pending.
 */
export const DIGITS = ['0001', '0002', '0003', '0004', '0005', '4242', '7310'] as const;

// ---------------------------------------------------------------------------------------------------------
// Operations: plain descriptors; `pick` numbers choose among the objects that exist when the operation runs.

export type Op =
  | { kind: 'create'; rail: number; digits: string; amount: number; phone: number }
  | { kind: 'retryCreate'; pick: number; alter: boolean }
  | {
      kind: 'collectionNotice';
      pick: number;
      open: boolean;
      status: NoticeStatus;
      otherReference: boolean;
      reason: string | null;
      copies: number;
    }
  | {
      kind: 'refundNotice';
      pick: number;
      open: boolean;
      status: NoticeStatus;
      otherReference: boolean;
      reason: string | null;
      copies: number;
    }
  | { kind: 'resendNotice'; pick: number; alter: 'same' | 'status' | 'object'; target: number; status: NoticeStatus }
  | { kind: 'badSignature'; pick: number; status: NoticeStatus; how: 'secret' | 'tampered' }
  | { kind: 'unknownObject'; refundOfCollection: boolean; pick: number }
  | {
      kind: 'simulateCollection';
      pick: number;
      open: boolean;
      outcome: 'successful' | 'failed' | 'expired' | 'reversed';
      reason: string | null;
      withKey: boolean;
    }
  | {
      kind: 'simulateRefund';
      pick: number;
      open: boolean;
      outcome: 'successful' | 'failed';
      reason: string | null;
      withKey: boolean;
    }
  | { kind: 'retrySimulate'; pick: number }
  | { kind: 'refund'; pick: number; successfulOnly: boolean; wrongAmount: boolean; copies: number }
  | { kind: 'retryRefund'; pick: number; alter: boolean; stored: boolean }
  | { kind: 'expire'; wait: boolean }
  | { kind: 'submitCollection'; pick: number; open: boolean }
  | { kind: 'submitRefund'; pick: number; open: boolean }
  | { kind: 'read'; pick: number; refund: boolean };

export const noticeStatus = fc.constantFrom<NoticeStatus>('pending', 'processing', 'successful', 'failed', 'reversed');
export const pick = fc.nat({ max: 1_000_000 });
export const open = fc.boolean();
/** How many copies of a new notice arrive at once: mostly one, sometimes three in parallel (one applies, the others are duplicates). */
export const copies = fc.constantFrom(1, 1, 1, 1, 3);
/** True four times in five. */
export const mostly = fc.integer({ min: 0, max: 4 }).map((n) => n > 0);

export const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 13,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      rail: fc.constantFrom(0, 1, 1, 2, 3),
      digits: fc.constantFrom(...DIGITS),
      amount: fc.integer({ min: 500, max: 250_000 }),
      phone: fc.nat({ max: 9999 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('retryCreate' as const), pick, alter: fc.boolean() }) },
  {
    weight: 22,
    arbitrary: fc.record({
      kind: fc.constant('collectionNotice' as const),
      pick,
      open,
      status: noticeStatus,
      otherReference: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      reason: fc.constantFrom(null, 'payer_declined', 'insufficient_funds', 'provider_refused', 'line_busy'),
      copies,
    }),
  },
  {
    weight: 11,
    arbitrary: fc.record({
      kind: fc.constant('refundNotice' as const),
      pick,
      open: mostly,
      status: fc.constantFrom<NoticeStatus>(
        'pending',
        'successful',
        'failed',
        'pending',
        'successful',
        'failed',
        'processing',
        'reversed',
      ),
      otherReference: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      reason: fc.constantFrom(null, 'provider_refused', 'insufficient_provider_balance'),
      copies,
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('resendNotice' as const),
      pick,
      alter: fc.constantFrom('same' as const, 'status' as const, 'object' as const),
      target: pick,
      status: noticeStatus,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('badSignature' as const),
      pick,
      status: noticeStatus,
      how: fc.constantFrom('secret' as const, 'tampered' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('unknownObject' as const), refundOfCollection: fc.boolean(), pick }),
  },
  {
    weight: 9,
    arbitrary: fc.record({
      kind: fc.constant('simulateCollection' as const),
      pick,
      open,
      outcome: fc.constantFrom(
        'successful' as const,
        'successful' as const,
        'failed' as const,
        'expired' as const,
        'reversed' as const,
      ),
      reason: fc.constantFrom(null, 'payer_declined', 'provider_refused'),
      withKey: fc.boolean(),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('simulateRefund' as const),
      pick,
      open,
      outcome: fc.constantFrom('successful' as const, 'failed' as const),
      reason: fc.constantFrom(null, 'provider_refused', 'insufficient_provider_balance'),
      withKey: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('retrySimulate' as const), pick }) },
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      pick,
      successfulOnly: mostly,
      wrongAmount: fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
      copies,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('retryRefund' as const),
      pick,
      alter: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      stored: mostly,
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('expire' as const), wait: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('submitCollection' as const), pick, open: mostly }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('submitRefund' as const), pick, open: mostly }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('read' as const), pick, refund: fc.boolean() }) },
);

// ---------------------------------------------------------------------------------------------------------
// The model.

export interface MCollection {
  id: string;
  currency: string;
  amount: number;
  digits: string;
  expiresAt: number;
  status: CStatus;
  reference: string | null;
  failureReason: string | null;
  /** Event types, in order. */
  events: string[];
  /** Reached successful at some point: credited once, for good. */
  credited: boolean;
  /** Paid after it expired: the service requested a refund of it, which the model has yet to take in. */
  lateRefundDue: boolean;
  create: { path: string; key: string; body: Record<string, unknown>; text: string };
}

export interface MRefund {
  id: string;
  collectionId: string;
  amount: number;
  currency: string;
  status: RStatus;
  reference: string | null;
  failureReason: string | null;
  events: string[];
}

export interface RefundAttempt {
  key: string;
  collectionId: string;
  amount: number;
  /** The stored 201 (only a successful request is stored; a refused one may be retried with the same key). */
  stored: string | undefined;
}

export interface SimAttempt {
  target: 'collection' | 'refund';
  id: string;
  key: string;
  body: { outcome: string; reason?: string };
  stored: string | undefined;
}

export interface Notice {
  notice_id: string;
  object_type: 'collection' | 'refund';
  merchant_reference: string;
  reference: string;
  status: NoticeStatus;
  reason: string | null;
  occurred_at: string;
}

export type Outcome = 'applied' | 'duplicate' | 'refused';

export class Run {
  readonly collections: MCollection[] = [];
  readonly refunds: MRefund[] = [];
  readonly refundAttempts: RefundAttempt[] = [];
  readonly simAttempts: SimAttempt[] = [];
  /** Notices the service recorded (answered 200): the same notice_id again is a duplicate. */
  readonly notices: Notice[] = [];
  readonly trace: string[] = [];

  constructor(
    readonly workspace: { id: string; token: string },
    readonly stats: Map<string, number>,
  ) {}

  count(what: string): void {
    this.stats.set(what, (this.stats.get(what) ?? 0) + 1);
  }

  collection(id: string): MCollection {
    const c = this.collections.find((x) => x.id === id);
    assert.ok(c, `no collection ${id} in the model`);
    return c;
  }

  refundInProgress(collectionId: string): boolean {
    return this.refunds.some(
      (r) => r.collectionId === collectionId && (r.status === 'requested' || r.status === 'pending'),
    );
  }

  /** Applies the steps of a collection move (each its own event; failed records why). */
  moveCollection(c: MCollection, steps: CStatus[], reason: string | null): void {
    for (const s of steps) {
      if (c.status === 'expired' && s === 'successful') {
        // A late payment: told first, credited, and refunded by the service (the workspace keeps the default policy).
        c.events.push('collection.late_payment');
        c.lateRefundDue = true;
        this.count('edge: late payment');
      }
      c.status = s;
      c.events.push(`collection.${s}`);
      if (s === 'successful') c.credited = true;
      if (s === 'failed')
        c.failureReason = reason !== null && COLLECTION_REASONS.includes(reason) ? reason : 'provider_error';
      if (s === 'reversed') {
        // The payer has the money back: refunds not yet sent to the provider fail instead of being sent.
        for (const r of this.refunds) {
          if (r.collectionId === c.id && r.status === 'requested')
            this.moveRefund(r, ['failed'], 'collection_reversed');
        }
      }
    }
  }

  /** The refunds the service requested for late payments, read from the database (their ids are its own). */
  async takeInLateRefunds(db: TestApp['db']): Promise<void> {
    for (const c of this.collections.filter((x) => x.lateRefundDue)) {
      const { rows } = await db.query<{ id: string }>(
        "SELECT id FROM refunds WHERE workspace_id = $1 AND collection_id = $2 AND reason = 'late_payment'",
        [this.workspace.id, c.id],
      );
      assert.equal(rows.length, 1, `one late-payment refund of ${c.id}`);
      this.refunds.push(requestedRefund(rows[0]?.id as string, c));
      c.lateRefundDue = false;
    }
  }

  /**
   * What GET /v1/balances should say for `currency`: a successful collection counts its amount; a refunded or a
   * reversed one nothing (credited, then debited once); a refund requested or pending holds its amount back. The one
   * edge: a refund requested while the collection was successful, which succeeded after the provider had reversed
   * the collection — the money went back to the payer twice (the reversal and the refund), each debited.
   */
  available(currency: string): number {
    let total = 0;
    for (const c of this.collections) {
      if (!c.credited || c.currency !== currency) continue;
      const refundedToo = this.refunds.some((r) => r.collectionId === c.id && r.status === 'successful');
      total += c.status === 'successful' ? c.amount : c.status === 'reversed' && refundedToo ? -c.amount : 0;
    }
    for (const r of this.refunds) {
      if (r.currency === currency && (r.status === 'requested' || r.status === 'pending')) total -= r.amount;
    }
    return total;
  }

  /** Applies the steps of a refund move; a refund that succeeds makes its collection refunded (if it is still successful). */
  moveRefund(r: MRefund, steps: RStatus[], reason: string | null): void {
    for (const s of steps) {
      r.status = s;
      r.events.push(`refund.${s}`);
      if (s === 'failed') r.failureReason = reason ?? 'provider_error';
    }
    if (steps.length > 0 && r.status === 'successful') {
      const c = this.collection(r.collectionId);
      if (c.status === 'successful') this.moveCollection(c, ['refunded'], null);
      else this.count('edge: refund succeeded on a collection no longer successful');
    }
  }
}

/** A new refund of the whole of `c`, as the service writes it. */
export function requestedRefund(id: string, c: MCollection): MRefund {
  return {
    id,
    collectionId: c.id,
    amount: c.amount,
    currency: c.currency,
    status: 'requested',
    reference: null,
    failureReason: null,
    events: ['refund.requested'],
  };
}

/** A provider's refused word that contradicts ours about money: it records a `reconciliation.mismatch` event. */
export function moneyDisagreement(kind: 'collection' | 'refund', ours: string, theirs: string): boolean {
  const moved = kind === 'collection' ? ['successful', 'refunded', 'reversed'] : ['successful'];
  return (theirs === 'successful' && ours === 'failed') || (theirs === 'failed' && moved.includes(ours));
}

export function choose<T>(list: readonly T[], n: number): T | undefined {
  return list.length === 0 ? undefined : list[n % list.length];
}

export const isOpenCollection = (c: MCollection): boolean => COLLECTION_EDGES[c.status].length > 0;
export const isOpenRefund = (r: MRefund): boolean => REFUND_EDGES[r.status].length > 0;

/** Picks among the open ones when asked (and there are any), else among all. */
export function choosePreferring<T>(
  list: readonly T[],
  n: number,
  preferOpen: boolean,
  isOpen: (x: T) => boolean,
): T | undefined {
  if (preferOpen) {
    const openOnes = list.filter(isOpen);
    if (openOnes.length > 0) return choose(openOnes, n);
  }
  return choose(list, n);
}
