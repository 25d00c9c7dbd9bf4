// A randomised run (fast-check) of over 1,000 operations on collections and refunds — creates, provider
// callbacks (in order, out of order, impossible, duplicated, badly signed), sandbox simulations, refunds,
// idempotent retries, the expiry sweep and the submitter — all through the real code paths (HTTP, and the
// sweep/submitter functions the workers call), checked step by step against a model of contract §5 and §7,
// and at the end of each run against the ledger: verifyLedger() finds nothing, GET /v1/balances equals what
// the final statuses imply, the events of each object are the model's, in strictly increasing time.
//
// One app WITHOUT background workers: nothing moves unless this file moves it, so every answer is
// predictable. Each run uses a workspace of its own. The transition tables are written out here from the
// contract, not imported, so the model is the document's and not the code's. A failure names the seed:
// LEDGER_PROPERTY_SEED=<seed> replays the same operations (expiry timing aside).
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { listObjectEvents } from '../src/modules/events/events.repository.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { expireDue } from '../src/modules/lifecycle/sweeps.js';
import { signCallback } from '../src/modules/providers/callback-protocol.js';
import { loadServiceKeys } from '../src/platform/secrets.js';
import {
  assertProblem,
  createWorkspace,
  newKey,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
  waitFor,
} from './helpers/harness.js';

// ---------------------------------------------------------------------------------------------------------
// The contract's tables (§5 collections, §7 refunds).

type CStatus = 'created' | 'pending' | 'processing' | 'successful' | 'failed' | 'expired' | 'refunded' | 'reversed';
type RStatus = 'requested' | 'pending' | 'successful' | 'failed';
type NoticeStatus = 'pending' | 'processing' | 'successful' | 'failed' | 'reversed';

const COLLECTION_EDGES: Record<CStatus, readonly CStatus[]> = {
  created: ['pending', 'processing', 'failed', 'expired'],
  pending: ['processing', 'failed', 'expired'],
  processing: ['failed', 'successful'],
  successful: ['refunded', 'reversed'],
  failed: [],
  expired: ['successful'], // a late payment: its refund follows (the default late_payment policy)
  refunded: [],
  reversed: [],
};
const REFUND_EDGES: Record<RStatus, readonly RStatus[]> = {
  requested: ['pending', 'failed'],
  pending: ['successful', 'failed'],
  successful: [],
  failed: [],
};
/** Statuses a provider may report about a refund (contract §7; the callback schema's description). */
const REFUND_NOTICE_STATUSES: readonly string[] = ['pending', 'successful', 'failed'];
/** The documented failure reasons of a collection; a provider's unknown reason is a provider error. */
const COLLECTION_REASONS: readonly string[] = [
  'payer_declined',
  'insufficient_funds',
  'provider_error',
  'provider_refused',
];

/**
 * The statuses passed through to get from `from` to `to` along the table (a provider that reports only the
 * final outcome is walked through the statuses between): [] when already there, undefined when unreachable.
 */
function walk<S extends string>(
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

const RAILS = [
  { market: 'KE', rail: 'mpesa', currency: 'KES', countryCode: '254' },
  { market: 'KE', rail: 'airtel_money', currency: 'KES', countryCode: '254' }, // expires after 1 s here
  { market: 'GH', rail: 'mtn_momo', currency: 'GHS', countryCode: '233' },
  { market: 'UG', rail: 'mtn_momo', currency: 'UGX', countryCode: '256' },
] as const;
/** Last four digits of the payer's phone (contract §6): at initiation 0002 fails at once, everything else is pending. */
const DIGITS = ['0001', '0002', '0003', '0004', '0005', '4242', '7310'] as const;

// ---------------------------------------------------------------------------------------------------------
// Operations: plain descriptors; `pick` numbers choose among the objects that exist when the operation runs.

type Op =
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

const noticeStatus = fc.constantFrom<NoticeStatus>('pending', 'processing', 'successful', 'failed', 'reversed');
const pick = fc.nat({ max: 1_000_000 });
const open = fc.boolean();
/** How many copies of a new notice arrive at once: mostly one, sometimes three in parallel (one applies, the others are duplicates). */
const copies = fc.constantFrom(1, 1, 1, 1, 3);
/** True four times in five. */
const mostly = fc.integer({ min: 0, max: 4 }).map((n) => n > 0);

const opArb: fc.Arbitrary<Op> = fc.oneof(
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

interface MCollection {
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

interface MRefund {
  id: string;
  collectionId: string;
  amount: number;
  currency: string;
  status: RStatus;
  reference: string | null;
  failureReason: string | null;
  events: string[];
}

interface RefundAttempt {
  key: string;
  collectionId: string;
  amount: number;
  /** The stored 201 (only a successful request is stored; a refused one may be retried with the same key). */
  stored: string | undefined;
}

interface SimAttempt {
  target: 'collection' | 'refund';
  id: string;
  key: string;
  body: { outcome: string; reason?: string };
  stored: string | undefined;
}

interface Notice {
  notice_id: string;
  object_type: 'collection' | 'refund';
  merchant_reference: string;
  reference: string;
  status: NoticeStatus;
  reason: string | null;
  occurred_at: string;
}

type Outcome = 'applied' | 'duplicate' | 'refused';

class Run {
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
function requestedRefund(id: string, c: MCollection): MRefund {
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
function moneyDisagreement(kind: 'collection' | 'refund', ours: string, theirs: string): boolean {
  const moved = kind === 'collection' ? ['successful', 'refunded', 'reversed'] : ['successful'];
  return (theirs === 'successful' && ours === 'failed') || (theirs === 'failed' && moved.includes(ours));
}

function choose<T>(list: readonly T[], n: number): T | undefined {
  return list.length === 0 ? undefined : list[n % list.length];
}

const isOpenCollection = (c: MCollection): boolean => COLLECTION_EDGES[c.status].length > 0;
const isOpenRefund = (r: MRefund): boolean => REFUND_EDGES[r.status].length > 0;

/** Picks among the open ones when asked (and there are any), else among all. */
function choosePreferring<T>(
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

// ---------------------------------------------------------------------------------------------------------

let t: TestApp;
let secret: string;

before(async () => {
  t = await startTestApp({}, { expirySeconds: { 'KE/airtel_money': 1 } });
  secret = (await loadServiceKeys(t.db, t.box)).sandboxProviderSecret;
});

after(async () => t?.close());

async function sendNotice(notice: Notice, signWith = secret, tamper = false): Promise<ApiResponse> {
  const body = JSON.stringify(notice);
  const headers = signCallback(signWith, body);
  const sent = tamper
    ? body.replace(`"status":"${notice.status}"`, `"status":"${notice.status === 'failed' ? 'successful' : 'failed'}"`)
    : body;
  return request(t, 'POST', '/v1/providers/sandbox/callbacks', { rawBody: sent, headers });
}

function notice(
  objectType: 'collection' | 'refund',
  id: string,
  reference: string,
  status: NoticeStatus,
  reason: string | null,
): Notice {
  return {
    notice_id: `ntc_${randomBytes(9).toString('hex')}`,
    object_type: objectType,
    merchant_reference: id,
    reference,
    status,
    reason,
    occurred_at: new Date().toISOString(),
  };
}

const newReference = (): string => `prv_${randomBytes(8).toString('hex')}`;

function expectOutcome(res: ApiResponse, outcome: Outcome): void {
  assert.equal(res.status, 200, `callback answered ${res.status} ${res.text}`);
  assert.deepEqual(res.body, { received: true, outcome });
}

/** Copies of one notice sent at once: one of them does what the model says, every other is a duplicate. */
function expectOutcomes(answers: ApiResponse[], outcome: Outcome): void {
  for (const res of answers) assert.equal(res.status, 200, `callback answered ${res.status} ${res.text}`);
  const expected = [outcome, ...answers.slice(1).map(() => 'duplicate')].sort();
  assert.deepEqual(
    answers.map((res) => res.body.outcome).sort(),
    expected,
    'outcomes of copies of one notice sent at once',
  );
}

interface RefundAnswer {
  key: string;
  status: number;
  text: string;
  refund?: MRefund;
}

/**
 * Sends one refund request per key, all at once, and checks the answers against the model (contract §7, its
 * rules in the order listed). Of several at once for a refundable collection exactly one is accepted; the
 * others find it in progress.
 */
async function refundRequests(
  run: Run,
  c: MCollection,
  amount: number,
  keys: readonly string[],
): Promise<RefundAnswer[]> {
  const answers = await Promise.all(
    keys.map((key) =>
      request(t, 'POST', `/v1/collections/${c.id}/refund`, {
        token: run.workspace.token,
        body: { amount },
        idempotencyKey: key,
      }),
    ),
  );
  const refused: readonly [number, string] | undefined =
    c.status !== 'successful'
      ? [409, 'collection_not_refundable']
      : run.refundInProgress(c.id)
        ? [409, 'refund_in_progress']
        : amount !== c.amount
          ? [422, 'refund_amount_mismatch']
          : run.available(c.currency) < amount
            ? [422, 'insufficient_balance']
            : undefined;
  if (refused) {
    return answers.map((res, i) => {
      assertProblem(res, refused[0], refused[1]);
      run.count(`refund: ${refused[0]} ${refused[1]}`);
      return { key: keys[i] ?? '', status: res.status, text: res.text };
    });
  }
  assert.equal(
    answers.filter((res) => res.status === 201).length,
    1,
    `exactly one of ${keys.length} refund requests at once is accepted: ${answers.map((res) => res.text).join(' | ')}`,
  );
  return answers.map((res, i) => {
    const key = keys[i] ?? '';
    if (res.status !== 201) {
      assertProblem(res, 409, 'refund_in_progress');
      run.count('refund: 409 refund_in_progress (sent at the same time)');
      return { key, status: res.status, text: res.text };
    }
    assert.equal(res.headers.get('idempotent-replayed'), null);
    assert.equal(res.body.status, 'requested');
    assert.deepEqual(res.body.resolved_at, {});
    assert.equal(res.body.collection_id, c.id);
    assert.equal(res.body.amount, c.amount);
    assert.equal(res.body.currency, c.currency);
    assert.equal(res.headers.get('location'), `/v1/refunds/${res.body.refund_id}`);
    const refund = requestedRefund(res.body.refund_id, c);
    run.refunds.push(refund);
    run.count('refund: 201');
    return { key, status: res.status, text: res.text, refund };
  });
}

async function simulate(run: Run, attempt: SimAttempt): Promise<void> {
  const url =
    attempt.target === 'collection'
      ? `/v1/sandbox/collections/${attempt.id}/simulate`
      : `/v1/sandbox/refunds/${attempt.id}/simulate`;
  const res = await request(t, 'POST', url, {
    token: run.workspace.token,
    body: attempt.body,
    ...(attempt.key ? { idempotencyKey: attempt.key } : {}),
  });
  if (attempt.stored !== undefined) {
    // A stored answer is replayed as it was, whatever happened since; nothing moves.
    assert.equal(res.status, 200, res.text);
    assert.equal(res.text, attempt.stored);
    assert.equal(res.headers.get('idempotent-replayed'), 'true');
    run.count('simulate: replayed');
    return;
  }
  const reason = attempt.body.reason ?? null;
  let accepted: boolean;
  if (attempt.target === 'collection') {
    const c = run.collection(attempt.id);
    const steps = walk(COLLECTION_EDGES, c.status, attempt.body.outcome as CStatus, ['successful']);
    if (steps) run.moveCollection(c, steps, reason);
    accepted = expectSimulated(run, res, 'collection', steps, {
      collection_id: c.id,
      status: c.status,
      failure_reason: c.status === 'failed' ? c.failureReason : null,
    });
  } else {
    const r = run.refunds.find((x) => x.id === attempt.id);
    assert.ok(r);
    const steps = walk(REFUND_EDGES, r.status, attempt.body.outcome as RStatus);
    if (steps) run.moveRefund(r, steps, reason);
    accepted = expectSimulated(run, res, 'refund', steps, { refund_id: r.id, status: r.status });
  }
  if (accepted && attempt.key) attempt.stored = res.text;
}

/**
 * A simulate answer against the model: 409 where the contract has no move to the outcome (`steps` undefined),
 * otherwise 200 showing the object as the model now has it (`shown`, after the steps). Returns whether it was 200.
 */
function expectSimulated(
  run: Run,
  res: ApiResponse,
  kind: SimAttempt['target'],
  steps: readonly string[] | undefined,
  shown: Record<string, unknown>,
): boolean {
  if (steps === undefined) {
    assertProblem(res, 409, 'transition_not_allowed');
    run.count(`simulate ${kind}: 409`);
    return false;
  }
  assert.equal(res.status, 200, res.text);
  for (const [field, value] of Object.entries(shown)) assert.equal(res.body[field], value, field);
  run.count(`simulate ${kind}: 200 ${steps.length === 0 ? 'unchanged' : 'moved'}`);
  return true;
}

/**
 * Sends `op.copies` copies of one provider notice about the object at once (under its recorded reference, or another
 * when the op says so) and checks the answers against the model: refused for another reference, or for a move the
 * contract does not have (`steps` undefined; a disagreement about money also records reconciliation.mismatch);
 * otherwise a duplicate, or applied with `move` taking the steps.
 */
async function noticeCopies<S extends string>(
  run: Run,
  kind: 'collection' | 'refund',
  object: { id: string; status: S; reference: string | null; events: string[] },
  op: { status: NoticeStatus; otherReference: boolean; reason: string | null; copies: number },
  steps: S[] | undefined,
  move: (steps: S[], reason: string | null) => void,
): Promise<{ reference: string; outcome: Outcome }> {
  const reference = op.otherReference || object.reference === null ? newReference() : object.reference;
  const n = notice(kind, object.id, reference, op.status, op.status === 'failed' ? op.reason : null);
  const answers = await Promise.all(Array.from({ length: op.copies }, () => sendNotice(n)));
  let outcome: Outcome;
  if (object.reference !== null && reference !== object.reference) outcome = 'refused';
  else {
    outcome = steps === undefined ? 'refused' : steps.length === 0 ? 'duplicate' : 'applied';
    if (steps === undefined && moneyDisagreement(kind, object.status, op.status)) {
      object.events.push('reconciliation.mismatch');
      run.count('edge: reconciliation mismatch');
    }
    if (steps) {
      // The provider's reference is recorded by a notice that is applied (or repeats the status), never by a refused one.
      object.reference ??= reference;
      move(steps, n.reason);
    }
  }
  expectOutcomes(answers, outcome);
  run.notices.push(n);
  run.count(`${kind} notice: ${outcome}`);
  if (op.copies > 1) run.count(`${kind} notice: concurrent copies`);
  return { reference, outcome };
}

/** A first simulate request for the object; one sent with a key is kept, for a later retry to replay. */
async function simulateFirst(
  run: Run,
  target: SimAttempt['target'],
  id: string,
  op: { outcome: string; reason: string | null; withKey: boolean },
): Promise<void> {
  const attempt: SimAttempt = {
    target,
    id,
    key: op.withKey ? newKey() : '',
    body:
      op.outcome === 'failed' && op.reason !== null
        ? { outcome: op.outcome, reason: op.reason }
        : { outcome: op.outcome },
    stored: undefined,
  };
  await simulate(run, attempt);
  if (attempt.key) run.simAttempts.push(attempt);
}

/** Runs one operation and checks the service's answer against the model; returns a line for the trace. */
async function apply(run: Run, op: Op): Promise<string> {
  const token = run.workspace.token;
  switch (op.kind) {
    case 'create': {
      const rail = RAILS[op.rail] ?? RAILS[0];
      const phone = `+${rail.countryCode}7${String(op.phone).padStart(4, '0')}${op.digits}`;
      const body = {
        amount: op.amount,
        currency: rail.currency,
        reference: `order-${randomBytes(4).toString('hex')}`,
        customer: { phone_number: phone },
        metadata: { order_id: String(run.collections.length) },
      };
      const key = newKey();
      const url = `/v1/collections/${rail.market}/rails/${rail.rail}`;
      const res = await request(t, 'POST', url, { token, body, idempotencyKey: key });
      assert.equal(res.status, 201, `create answered ${res.status} ${res.text}`);
      assert.equal(res.body.status, 'created');
      assert.equal(res.body.amount, op.amount);
      assert.equal(res.body.currency, rail.currency);
      run.collections.push({
        id: res.body.collection_id,
        currency: rail.currency,
        amount: op.amount,
        digits: op.digits,
        expiresAt: Date.parse(res.body.expires_at),
        status: 'created',
        reference: null,
        failureReason: null,
        events: ['collection.created'],
        credited: false,
        lateRefundDue: false,
        create: { path: url, key, body, text: res.text },
      });
      run.count('create: 201');
      return `create ${rail.market}/${rail.rail} ${op.amount} ${rail.currency} …${op.digits} → ${res.body.collection_id}`;
    }

    case 'retryCreate': {
      const c = choose(run.collections, op.pick);
      if (!c) return 'retryCreate: nothing to retry';
      const body = op.alter ? { ...c.create.body, amount: c.amount + 1 } : c.create.body;
      const res = await request(t, 'POST', c.create.path, { token, body, idempotencyKey: c.create.key });
      if (op.alter) {
        assertProblem(res, 422, 'idempotency_key_reused');
        run.count('retry create: 422 key reused');
      } else {
        assert.equal(res.status, 201, res.text);
        assert.equal(res.text, c.create.text);
        assert.equal(res.headers.get('idempotent-replayed'), 'true');
        run.count('retry create: replayed');
      }
      return `retryCreate ${c.id}${op.alter ? ' (other body)' : ''} → ${res.status}`;
    }

    case 'collectionNotice': {
      const c = choosePreferring(run.collections, op.pick, op.open, isOpenCollection);
      if (!c) return 'collectionNotice: no collection';
      const from = c.status;
      const steps = walk(COLLECTION_EDGES, c.status, op.status, ['successful']);
      const { reference, outcome } = await noticeCopies(run, 'collection', c, op, steps, (s, reason) =>
        run.moveCollection(c, s, reason),
      );
      return `collection notice ${c.id} ${from} → ${op.status}${reference === c.reference ? '' : ' (other reference)'}: ${outcome}`;
    }

    case 'refundNotice': {
      const r = choosePreferring(run.refunds, op.pick, op.open, isOpenRefund);
      if (!r) return 'refundNotice: no refund';
      const from = r.status;
      const steps = REFUND_NOTICE_STATUSES.includes(op.status)
        ? walk(REFUND_EDGES, r.status, op.status as RStatus)
        : undefined;
      const { outcome } = await noticeCopies(run, 'refund', r, op, steps, (s, reason) => run.moveRefund(r, s, reason));
      return `refund notice ${r.id} ${from} → ${op.status}: ${outcome}`;
    }

    case 'resendNotice': {
      const original = choose(run.notices, op.pick);
      if (!original) return 'resendNotice: nothing sent yet';
      let again: Notice = { ...original, occurred_at: new Date().toISOString() };
      if (op.alter === 'status') again = { ...again, status: op.status };
      if (op.alter === 'object') {
        const targets = [
          ...run.collections.map((c) => ['collection', c.id] as const),
          ...run.refunds.map((r) => ['refund', r.id] as const),
        ];
        const [type, id] = choose(targets, op.target) ?? ['collection', original.merchant_reference];
        again = { ...again, object_type: type, merchant_reference: id, status: op.status };
      }
      const res = await sendNotice(again);
      expectOutcome(res, 'duplicate');
      run.count(`resend notice (${op.alter}): duplicate`);
      return `resend notice ${original.notice_id} (${op.alter}): duplicate`;
    }

    case 'badSignature': {
      const c = choose(run.collections, op.pick);
      if (!c) return 'badSignature: no collection';
      const n = notice('collection', c.id, c.reference ?? newReference(), op.status, null);
      const res = await sendNotice(
        n,
        op.how === 'secret' ? randomBytes(32).toString('hex') : secret,
        op.how === 'tampered',
      );
      assertProblem(res, 401, 'invalid_signature');
      run.count('bad signature: 401');
      return `bad signature (${op.how}) on ${c.id}: 401`;
    }

    case 'unknownObject': {
      const c = choose(run.collections, op.pick);
      const n =
        op.refundOfCollection && c
          ? notice('refund', c.id, newReference(), 'successful', null) // a collection's id is no refund
          : notice('collection', randomUUID(), newReference(), 'successful', null);
      const res = await sendNotice(n);
      assertProblem(res, 404, 'not_found');
      run.count('notice for an unknown object: 404');
      return `notice for unknown ${n.object_type} ${n.merchant_reference}: 404`;
    }

    case 'simulateCollection': {
      const c = choosePreferring(run.collections, op.pick, op.open, isOpenCollection);
      if (!c) return 'simulateCollection: no collection';
      const from = c.status;
      await simulateFirst(run, 'collection', c.id, op);
      return `simulate collection ${c.id} ${from} → ${op.outcome}: now ${c.status}`;
    }

    case 'simulateRefund': {
      const r = choosePreferring(run.refunds, op.pick, op.open, isOpenRefund);
      if (!r) return 'simulateRefund: no refund';
      const from = r.status;
      await simulateFirst(run, 'refund', r.id, op);
      return `simulate refund ${r.id} ${from} → ${op.outcome}: now ${r.status}`;
    }

    case 'retrySimulate': {
      const attempt = choose(run.simAttempts, op.pick);
      if (!attempt) return 'retrySimulate: nothing to retry';
      await simulate(run, attempt);
      return `retry simulate ${attempt.target} ${attempt.id} ${attempt.body.outcome}`;
    }

    case 'refund': {
      const candidates = op.successfulOnly ? run.collections.filter((c) => c.status === 'successful') : run.collections;
      const c = choose(candidates.length > 0 ? candidates : run.collections, op.pick);
      if (!c) return 'refund: no collection';
      const amount = op.wrongAmount ? c.amount + 1 : c.amount;
      const from = c.status;
      const results = await refundRequests(run, c, amount, Array.from({ length: op.copies }, newKey));
      for (const result of results)
        run.refundAttempts.push({
          key: result.key,
          collectionId: c.id,
          amount,
          stored: result.status === 201 ? result.text : undefined,
        });
      const created = results.find((result) => result.refund)?.refund;
      return `refund ×${op.copies} ${c.id} (${from}) amount ${amount}: ${results.map((result) => result.status).join(',')}${created ? ` → ${created.id}` : ''}`;
    }

    case 'retryRefund': {
      // Mostly a retry of one that was answered 201 (a replay); otherwise of any, refused ones included.
      const answered = run.refundAttempts.filter((a) => a.stored !== undefined);
      const attempt = choose(op.stored && answered.length > 0 ? answered : run.refundAttempts, op.pick);
      if (!attempt) return 'retryRefund: nothing to retry';
      const c = run.collection(attempt.collectionId);
      const amount = op.alter ? attempt.amount + 2 : attempt.amount;
      if (attempt.stored !== undefined) {
        const res = await request(t, 'POST', `/v1/collections/${c.id}/refund`, {
          token,
          body: { amount },
          idempotencyKey: attempt.key,
        });
        if (op.alter) {
          assertProblem(res, 422, 'idempotency_key_reused');
          run.count('retry refund: 422 key reused');
        } else {
          assert.equal(res.status, 201, res.text);
          assert.equal(res.text, attempt.stored);
          assert.equal(res.headers.get('idempotent-replayed'), 'true');
          run.count('retry refund: replayed');
        }
        return `retry refund ${attempt.key}${op.alter ? ' (other body)' : ''}: ${res.status}`;
      }
      // Nothing was stored for a refused request: the retry is a new request under the same key.
      const [result] = await refundRequests(run, c, amount, [attempt.key]);
      assert.ok(result);
      attempt.amount = amount;
      if (result.status === 201) attempt.stored = result.text;
      return `retry refused refund ${attempt.key} amount ${amount}: ${result.status}`;
    }

    case 'expire': {
      if (op.wait) {
        // Now and then, first let the oldest open collection of the 1-second rail come due (well under a second).
        const due = Math.min(
          ...run.collections.filter((c) => c.status === 'created' || c.status === 'pending').map((c) => c.expiresAt),
        );
        if (Number.isFinite(due) && due - Date.now() < 1100) {
          await waitFor('the next expiry to come due', async () => (Date.now() > due + 5 ? true : undefined), 2000);
        }
      }
      const clock = async (): Promise<number> =>
        (await t.db.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]?.now.getTime() ?? NaN;
      const before = await clock();
      await expireDue(
        t.db,
        t.services.batcher,
        t.services.lifecycle,
        t.services.providers,
        t.services.notices,
        t.app.log,
      );
      const afterSweep = (await clock()) + 1;
      const openOnes = run.collections.filter((c) => c.status === 'created' || c.status === 'pending');
      const unsure = openOnes.filter((c) => c.expiresAt > before && c.expiresAt <= afterSweep);
      // Due during the sweep itself: either is right; read which it was.
      const actual = new Map<string, string>();
      if (unsure.length > 0) {
        const { rows } = await t.db.query<{ id: string; status: string }>(
          'SELECT id, status FROM collections WHERE id = ANY($1)',
          [unsure.map((c) => c.id)],
        );
        for (const row of rows) actual.set(row.id, row.status);
      }
      let expired = 0;
      for (const c of openOnes) {
        const due = c.expiresAt <= before || (unsure.includes(c) && actual.get(c.id) === 'expired');
        if (!due) continue;
        run.moveCollection(c, ['expired'], null);
        expired += 1;
        run.count('expiry: expired');
      }
      return `expire: ${expired} of ${openOnes.length} open expired`;
    }

    case 'submitCollection': {
      const c = choosePreferring(run.collections, op.pick, op.open, (x) => x.status === 'created');
      if (!c) return 'submitCollection: no collection';
      const from = c.status;
      t.services.submitter.kick('collection', run.workspace.id, c.id);
      if (c.status !== 'created') {
        // Nothing to hand over: the submitter reads the collection and leaves it alone.
        run.count('submit collection: nothing to do');
        return `submit collection ${c.id} (${from}): nothing to do`;
      }
      c.reference = await submittedReference('collections', c.id);
      // Contract §6: 0002 fails at once (insufficient funds); everything else is pending with the payer.
      if (c.digits === '0002') run.moveCollection(c, ['failed'], 'insufficient_funds');
      else run.moveCollection(c, ['pending'], null);
      run.count('submit collection: submitted');
      return `submit collection ${c.id}: ${c.status}`;
    }

    case 'submitRefund': {
      const r = choosePreferring(run.refunds, op.pick, op.open, (x) => x.status === 'requested');
      if (!r) return 'submitRefund: no refund';
      const from = r.status;
      t.services.submitter.kick('refund', run.workspace.id, r.id);
      if (r.status !== 'requested') {
        run.count('submit refund: nothing to do');
        return `submit refund ${r.id} (${from}): nothing to do`;
      }
      r.reference = await submittedReference('refunds', r.id);
      run.moveRefund(r, ['pending'], null);
      run.count('submit refund: submitted');
      return `submit refund ${r.id}: pending`;
    }

    case 'read': {
      if (op.refund) {
        const r = choose(run.refunds, op.pick);
        if (!r) return 'read: no refund';
        const res = await request(t, 'GET', `/v1/refunds/${r.id}`, { token });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.status, r.status);
        return `read refund ${r.id}: ${r.status}`;
      }
      const c = choose(run.collections, op.pick);
      if (!c) return 'read: no collection';
      const res = await request(t, 'GET', `/v1/collections/${c.id}`, { token });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.status, c.status);
      return `read collection ${c.id}: ${c.status}`;
    }
  }
}

/** After every operation: the database holds exactly the model's objects, statuses and provider references. */
async function checkpoint(run: Run): Promise<void> {
  await assertRowsAreModel(run, 'collections', run.collections);
  await assertRowsAreModel(run, 'refunds', run.refunds);
}

async function assertRowsAreModel(
  run: Run,
  table: 'collections' | 'refunds',
  model: readonly { id: string; status: string; reference: string | null }[],
): Promise<void> {
  const { rows } = await t.db.query<{ id: string; status: string; provider_reference: string | null }>(
    `SELECT id, status, provider_reference FROM ${table} WHERE workspace_id = $1 ORDER BY id`,
    [run.workspace.id],
  );
  assert.deepEqual(
    rows.map((r) => `${r.id} ${r.status} ${r.provider_reference}`),
    [...model].sort((a, b) => (a.id < b.id ? -1 : 1)).map((m) => `${m.id} ${m.status} ${m.reference}`),
    `${table} (id, status, provider reference) differ from the model`,
  );
}

/** The provider reference the submitter recorded for the row, once it has submitted it. */
async function submittedReference(table: 'collections' | 'refunds', id: string): Promise<string> {
  const reference = await waitFor(`submission of ${table} ${id}`, async () => {
    const { rows } = await t.db.query<{ provider_reference: string | null; submitted_at: Date | null }>(
      `SELECT provider_reference, submitted_at FROM ${table} WHERE id = $1`,
      [id],
    );
    return rows[0]?.submitted_at ? (rows[0].provider_reference ?? '') : undefined;
  });
  assert.ok(reference.length > 0, `a submitted row of ${table} has the provider reference`);
  return reference;
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function assertIncreasing(events: { type: string; created_at: Date }[], what: string): void {
  for (let i = 1; i < events.length; i++) {
    const a = events[i - 1];
    const b = events[i];
    assert.ok(
      a && b && a.created_at.getTime() < b.created_at.getTime(),
      `${what}: event ${i} (${b?.type}) is not after event ${i - 1} (${a?.type})`,
    );
  }
}

/** The end of a run: the ledger, the balances, the statuses read over HTTP and every object's events. */
async function finalChecks(run: Run): Promise<void> {
  const token = run.workspace.token;
  assert.deepEqual(await verifyLedger(t.db), [], 'verifyLedger reports broken invariants');

  const expected = new Map<string, number>();
  for (const c of run.collections) {
    if (!c.credited) continue;
    if (c.status !== 'successful')
      assert.ok(c.status === 'refunded' || c.status === 'reversed', `a credited collection is ${c.status}`);
    expected.set(c.currency, run.available(c.currency));
  }
  const balances = await request(t, 'GET', '/v1/balances', { token });
  assert.equal(balances.status, 200, balances.text);
  assert.deepEqual(
    balances.body.data.map((b: { currency: string; available: number }) => ({
      currency: b.currency,
      available: b.available,
    })),
    [...expected.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([currency, available]) => ({ currency, available })),
    'GET /v1/balances differs from what the final statuses imply',
  );

  // Postings: one of each kind per object at most, and exactly where the model says money moved.
  const postings = await t.db.query<{ kind: string; object_id: string; n: number }>(
    'SELECT kind, object_id, count(*)::int AS n FROM ledger_postings WHERE workspace_id = $1 GROUP BY kind, object_id ORDER BY kind, object_id',
    [run.workspace.id],
  );
  for (const p of postings.rows) assert.equal(p.n, 1, `${p.kind} posted ${p.n} times for ${p.object_id}`);
  const twice = await t.db.query(
    "SELECT object_id FROM ledger_postings WHERE kind = 'collection_successful' GROUP BY object_id HAVING count(*) > 1",
  );
  assert.deepEqual(twice.rows, [], 'a collection has two collection_successful postings');
  const expectedPostings = [
    ...run.collections.filter((c) => c.credited).map((c) => `collection_successful ${c.id}`),
    ...run.collections.filter((c) => c.status === 'reversed').map((c) => `collection_reversed ${c.id}`),
    ...run.refunds.map((r) => `refund_reserved ${r.id}`),
    ...run.refunds.filter((r) => r.status === 'failed').map((r) => `refund_released ${r.id}`),
    ...run.refunds.filter((r) => r.status === 'successful').map((r) => `refund_settled ${r.id}`),
  ].sort();
  assert.deepEqual(
    postings.rows.map((p) => `${p.kind} ${p.object_id}`).sort(),
    expectedPostings,
    'ledger postings differ from the model',
  );

  await inParallel(run.collections, 6, async (c) => {
    const res = await request(t, 'GET', `/v1/collections/${c.id}`, { token });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, c.status, `collection ${c.id} status`);
    assert.equal(
      res.body.failure_reason,
      c.status === 'failed' ? c.failureReason : null,
      `collection ${c.id} failure_reason`,
    );
    const events = await listObjectEvents(t.db, run.workspace.id, c.id);
    assert.equal(events[0]?.type, 'collection.created', `collection ${c.id}: the first event`);
    assertIncreasing(events, `collection ${c.id}`);
    assert.deepEqual(
      events.map((e) => e.type),
      c.events,
      `collection ${c.id}: events`,
    );
  });
  await inParallel(run.refunds, 6, async (r) => {
    const res = await request(t, 'GET', `/v1/refunds/${r.id}`, { token });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, r.status, `refund ${r.id} status`);
    assert.equal(
      res.body.failure_reason,
      r.status === 'failed' ? r.failureReason : null,
      `refund ${r.id} failure_reason`,
    );
    if (r.status === 'successful' || r.status === 'failed') assert.equal(typeof res.body.resolved_at, 'string');
    else assert.deepEqual(res.body.resolved_at, {});
    const events = await listObjectEvents(t.db, run.workspace.id, r.id);
    assertIncreasing(events, `refund ${r.id}`);
    assert.deepEqual(
      events.map((e) => e.type),
      r.events,
      `refund ${r.id}: events`,
    );
  });
}

const RUNS = 5;
const OPS_PER_RUN = 210;

describe('ledger property: a randomised run of the lifecycle', () => {
  it(`${RUNS} runs of ${OPS_PER_RUN} operations end with the ledger sound and the balances the final statuses imply`, async () => {
    const stats = new Map<string, number>();
    let operations = 0;
    let runs = 0;
    const seed = process.env.LEDGER_PROPERTY_SEED;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: OPS_PER_RUN, maxLength: OPS_PER_RUN }), async (ops) => {
        runs += 1;
        const run = new Run(await createWorkspace(t, `property run ${runs}`), stats);
        for (const [i, op] of ops.entries()) {
          try {
            run.trace.push(`#${i} ${await apply(run, op)}`);
            await run.takeInLateRefunds(t.db);
            await checkpoint(run);
          } catch (err) {
            throw new Error(
              `operation #${i} ${JSON.stringify(op)} of run ${runs} failed: ${(err as Error).message}\nlast operations:\n${run.trace.slice(-25).join('\n')}`,
              {
                cause: err,
              },
            );
          }
          operations += 1;
        }
        try {
          await finalChecks(run);
        } catch (err) {
          throw new Error(
            `the end of run ${runs} failed: ${(err as Error).message}\nlast operations:\n${run.trace.slice(-25).join('\n')}`,
            { cause: err },
          );
        }
      }),
      {
        numRuns: RUNS,
        endOnFailure: true,
        ...(seed ? { seed: Number(seed) } : {}),
        // The failing run's own message (with its last operations) and the seed to replay it, rather than the
        // whole counterexample (hundreds of descriptors).
        plugins: [
          () => ({
            onAllRunsComplete: (details: fc.RunDetails<[Op[]]>) => {
              if (!details.failed) return;
              const cause =
                details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
              throw new Error(`property failed (replay with LEDGER_PROPERTY_SEED=${details.seed}): ${cause}`, {
                cause: details.errorInstance,
              });
            },
          }),
        ],
      },
    );

    console.log(`${operations} operations in ${runs} runs`);
    for (const [what, n] of [...stats.entries()].sort()) console.log(`  ${what}: ${n}`);
    assert.ok(operations >= 1000, `only ${operations} operations ran`);
    // The run exercised what it claims to: every kind of answer came up.
    for (const what of [
      'create: 201',
      'collection notice: applied',
      'collection notice: duplicate',
      'collection notice: refused',
      'refund notice: applied',
      'refund notice: refused',
      'resend notice (same): duplicate',
      'refund: 201',
      'refund: 409 collection_not_refundable',
      'simulate collection: 200 moved',
      'simulate collection: 409',
      'simulate refund: 200 moved',
      'retry create: replayed',
      'retry refund: replayed',
      'submit collection: submitted',
      'submit refund: submitted',
      'expiry: expired',
    ]) {
      assert.ok((stats.get(what) ?? 0) > 0, `the run never produced "${what}"`);
    }
  });
});

describe('verifyLedger can fail', () => {
  /** Runs `breakIt` in a transaction, returns what verifyLedger sees inside it, and rolls back. */
  async function violationsWhile(breakIt: (client: import('pg').PoolClient) => Promise<void>): Promise<string[]> {
    const client = await t.db.connect();
    try {
      await client.query('BEGIN');
      await breakIt(client);
      return (await verifyLedger(client)).map((v) => v.invariant);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  }

  /** A successful collection (hence a posting and balances) in a workspace of its own. */
  async function successfulCollection(): Promise<{ workspaceId: string; id: string }> {
    const ws = await createWorkspace(t, 'verify-can-fail');
    const res = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: ws.token,
      idempotencyKey: newKey(),
      body: { amount: 1500, currency: 'KES', reference: 'broken-books', customer: { phone_number: '+254712345678' } },
    });
    assert.equal(res.status, 201, res.text);
    const sim = await request(t, 'POST', `/v1/sandbox/collections/${res.body.collection_id}/simulate`, {
      token: ws.token,
      body: { outcome: 'successful' },
    });
    assert.equal(sim.status, 200, sim.text);
    return { workspaceId: ws.id, id: res.body.collection_id };
  }

  it('reports a balance that no longer equals the sum of its lines', async () => {
    const { workspaceId } = await successfulCollection();
    assert.deepEqual(await verifyLedger(t.db), []);
    const seen = await violationsWhile(async (client) => {
      const updated = await client.query(
        "UPDATE ledger_balances SET balance = balance - 1 WHERE workspace_id = $1 AND account = 'workspace_available'",
        [workspaceId],
      );
      assert.equal(updated.rowCount, 1);
    });
    assert.deepEqual(seen, ['every balance equals the sum of its lines']);
    assert.deepEqual(await verifyLedger(t.db), [], 'the rollback restored the books');
  });

  it('reports a posting whose lines do not sum to zero', async () => {
    const { workspaceId, id } = await successfulCollection();
    const seen = await violationsWhile(async (client) => {
      const posting = await client.query<{ id: string }>(
        "SELECT id FROM ledger_postings WHERE object_id = $1 AND kind = 'collection_successful'",
        [id],
      );
      const postingId = posting.rows[0]?.id;
      assert.ok(postingId);
      await client.query(
        "UPDATE ledger_lines SET amount = amount + 1 WHERE posting_id = $1 AND account = 'provider_receivable'",
        [postingId],
      );
      // Keep the balance in step with its lines, so only the posting itself is wrong (and the credit no longer its amount).
      await client.query(
        "UPDATE ledger_balances SET balance = balance + 1 WHERE workspace_id = $1 AND account = 'provider_receivable'",
        [workspaceId],
      );
    });
    assert.deepEqual(
      seen.sort(),
      [
        'a collection is credited exactly when it reached successful, for its own amount',
        'every posting has at least two lines and sums to zero',
      ].sort(),
    );
  });

  it('reports a collection that became successful without its credit', async () => {
    const ws = await createWorkspace(t, 'verify-can-fail-status');
    const res = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: ws.token,
      idempotencyKey: newKey(),
      body: { amount: 1500, currency: 'KES', reference: 'no-credit', customer: { phone_number: '+254712345678' } },
    });
    assert.equal(res.status, 201, res.text);
    const seen = await violationsWhile(async (client) => {
      await client.query("UPDATE collections SET status = 'successful' WHERE id = $1", [res.body.collection_id]);
    });
    assert.deepEqual(seen, ['a collection is credited exactly when it reached successful, for its own amount']);
  });
});
