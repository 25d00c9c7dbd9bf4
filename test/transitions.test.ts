// The transition tables (contract §5 for collections, §7 for refunds) checked against the code's tables and
// `plan()`: pure, no database. The contract's tables are written out here on their own, so the code's copy is
// checked against the document rather than against itself (plus the one departure the README documents).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COLLECTION_STATUSES, type CollectionStatus } from '../src/modules/collections/collections.schemas.js';
import {
  COLLECTION_TRANSITIONS,
  isFinalCollectionStatus,
  planCollection,
} from '../src/modules/collections/collections.states.js';
import { REFUND_STATUSES, REFUND_TRANSITIONS, type RefundStatus } from '../src/modules/refunds/refunds.states.js';
import { plan } from '../src/platform/state-machine.js';

type Edge<S extends string> = readonly [S, S];

/** Contract §5, row by row: "from (one or several) → to". */
const CONTRACT_COLLECTION_ROWS: readonly { from: readonly CollectionStatus[]; to: CollectionStatus }[] = [
  { from: ['created'], to: 'pending' },
  { from: ['created', 'pending'], to: 'processing' },
  { from: ['created', 'pending', 'processing'], to: 'failed' },
  { from: ['created', 'pending'], to: 'expired' },
  { from: ['processing'], to: 'successful' },
  { from: ['successful'], to: 'refunded' },
  { from: ['successful'], to: 'reversed' },
  { from: ['expired'], to: 'successful' },
];
const CONTRACT_COLLECTION_EDGES: readonly Edge<CollectionStatus>[] = CONTRACT_COLLECTION_ROWS.flatMap((row) =>
  row.from.map((from) => [from, row.to] as const),
);
/** Expired is final except for a provider-confirmed late payment (expired → successful). */
const COLLECTION_FINALS: readonly CollectionStatus[] = ['failed', 'refunded', 'reversed'];

/** Contract §7: requested → pending → successful | failed. */
const CONTRACT_REFUND_EDGES: readonly Edge<RefundStatus>[] = [
  ['requested', 'pending'],
  ['pending', 'successful'],
  ['pending', 'failed'],
];
/**
 * The README's "Where this departs from the contract": a refund the provider refuses at initiation goes
 * requested → failed directly (no refund.pending event). Kept apart so the departure stays a deliberate one.
 */
const DOCUMENTED_REFUND_DEPARTURES: readonly Edge<RefundStatus>[] = [['requested', 'failed']];
const REFUND_FINALS: readonly RefundStatus[] = ['successful', 'failed'];

const key = (from: string, to: string): string => `${from}→${to}`;

/** Shortest number of contract edges from `from` to `to`, or undefined when the contract cannot reach it. */
function contractDistance<S extends string>(edges: readonly Edge<S>[], from: S, to: S): number | undefined {
  const distance = new Map<S, number>([[from, 0]]);
  const queue: S[] = [from];
  while (queue.length > 0) {
    const at = queue.shift() as S;
    for (const [a, b] of edges) {
      if (a !== at || distance.has(b)) continue;
      distance.set(b, (distance.get(at) ?? 0) + 1);
      queue.push(b);
    }
  }
  return from === to ? 0 : distance.get(to);
}

function pairs<S extends string>(statuses: readonly S[]): [S, S][] {
  return statuses.flatMap((from) => statuses.filter((to) => to !== from).map((to) => [from, to] as [S, S]));
}

/** The checks shared by both tables. */
function checkTable<S extends string>(
  name: string,
  statuses: readonly S[],
  table: Readonly<Record<S, readonly S[]>>,
  contractEdges: readonly Edge<S>[],
  finals: readonly S[],
): void {
  const allowed = new Set(contractEdges.map(([a, b]) => key(a, b)));

  it(`the code's ${name} table has exactly the documented edges`, () => {
    const codeEdges = statuses.flatMap((from) => table[from].map((to) => key(from, to))).sort();
    assert.deepEqual(codeEdges, [...allowed].sort());
  });

  it(`every row of the documented ${name} table is a direct step of plan()`, () => {
    for (const [from, to] of contractEdges) {
      assert.ok(table[from].includes(to), `${key(from, to)} missing from the table`);
      assert.deepEqual(plan(table, from, to), { kind: 'steps', steps: [to] }, key(from, to));
    }
  });

  it(`every ${name} pair not in the table is refused, or walked through allowed edges only`, () => {
    for (const [from, to] of pairs(statuses)) {
      if (allowed.has(key(from, to))) continue;
      assert.ok(!table[from].includes(to), `${key(from, to)} is not in the contract but the table allows it`);
      const result = plan(table, from, to);
      const distance = contractDistance(contractEdges, from, to);
      if (distance === undefined) {
        assert.deepEqual(
          result,
          { kind: 'refused' },
          `${key(from, to)} cannot be reached under the contract, so must be refused`,
        );
        continue;
      }
      assert.equal(
        result.kind,
        'steps',
        `${key(from, to)} is reachable under the contract (in ${distance} steps), got ${result.kind}`,
      );
      if (result.kind !== 'steps') continue;
      assert.ok(result.steps.length >= 2, `${key(from, to)} is not a contract edge, so it needs intermediate statuses`);
      assert.equal(result.steps.at(-1), to, `${key(from, to)} must end at the target`);
      assert.equal(
        result.steps.length,
        distance,
        `${key(from, to)} should take the shortest way (${distance} steps): ${result.steps.join(', ')}`,
      );
      let at = from;
      for (const step of result.steps) {
        assert.ok(
          allowed.has(key(at, step)),
          `${key(from, to)} walks ${key(at, step)}, which the contract does not allow`,
        );
        at = step;
      }
      assert.equal(
        new Set([from, ...result.steps]).size,
        result.steps.length + 1,
        `${key(from, to)} passes a status twice`,
      );
    }
  });

  it(`the final ${name} statuses reach nothing`, () => {
    for (const final of finals) {
      assert.deepEqual(table[final], [], `${final} is final`);
      for (const to of statuses) {
        if (to === final) continue;
        assert.deepEqual(plan(table, final, to), { kind: 'refused' }, key(final, to));
      }
    }
    // And the non-final ones do lead somewhere.
    for (const status of statuses) {
      if (!finals.includes(status)) assert.ok(table[status].length > 0, `${status} is not final under the contract`);
    }
  });

  it(`the same ${name} status again is a duplicate`, () => {
    for (const status of statuses) assert.deepEqual(plan(table, status, status), { kind: 'duplicate' }, status);
  });
}

describe('collection transitions (contract §5)', () => {
  checkTable('collection', COLLECTION_STATUSES, COLLECTION_TRANSITIONS, CONTRACT_COLLECTION_EDGES, COLLECTION_FINALS);

  it('refuses failed → successful, expired → processing, a stale processing → pending, and successful → failed', () => {
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'failed', 'successful'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'expired', 'processing'), { kind: 'refused' });
    assert.deepEqual(planCollection('expired', 'failed'), { kind: 'refused' });
    assert.deepEqual(planCollection('expired', 'refunded'), { kind: 'refused' });
    assert.deepEqual(planCollection('expired', 'reversed'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'processing', 'pending'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'successful', 'failed'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'processing', 'expired'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'successful', 'processing'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'reversed', 'refunded'), { kind: 'refused' });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'refunded', 'reversed'), { kind: 'refused' });
  });

  it('a provider reporting only the outcome is walked through the statuses between', () => {
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'pending', 'successful'), {
      kind: 'steps',
      steps: ['processing', 'successful'],
    });
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'created', 'successful'), {
      kind: 'steps',
      steps: ['processing', 'successful'],
    });
  });

  it('planCollection is the table walk, except that a walk through successful is refused', () => {
    for (const [from, to] of pairs(COLLECTION_STATUSES)) {
      const raw = plan(COLLECTION_TRANSITIONS, from, to);
      const throughSuccess = raw.kind === 'steps' && raw.steps.slice(0, -1).includes('successful');
      assert.deepEqual(planCollection(from, to), throughSuccess ? { kind: 'refused' } : raw, key(from, to));
    }
  });

  it('never walks through successful: a reversal reported before any success is refused, not a success invented', () => {
    assert.deepEqual(planCollection('processing', 'reversed'), { kind: 'refused' });
    assert.deepEqual(planCollection('pending', 'reversed'), { kind: 'refused' });
    assert.deepEqual(planCollection('created', 'reversed'), { kind: 'refused' });
    assert.deepEqual(planCollection('processing', 'refunded'), { kind: 'refused' });
    assert.deepEqual(planCollection('successful', 'reversed'), { kind: 'steps', steps: ['reversed'] });
    assert.deepEqual(planCollection('expired', 'successful'), { kind: 'steps', steps: ['successful'] });
    assert.deepEqual(planCollection('pending', 'successful'), { kind: 'steps', steps: ['processing', 'successful'] });
    // The raw table would walk it; the rule is what refuses.
    assert.deepEqual(plan(COLLECTION_TRANSITIONS, 'processing', 'reversed'), {
      kind: 'steps',
      steps: ['successful', 'reversed'],
    });
  });

  it('isFinalCollectionStatus names exactly failed, refunded and reversed (an expired collection may still be paid late)', () => {
    assert.deepEqual(COLLECTION_STATUSES.filter(isFinalCollectionStatus).sort(), [...COLLECTION_FINALS].sort());
  });
});

describe('refund transitions (contract §7)', () => {
  checkTable(
    'refund',
    REFUND_STATUSES,
    REFUND_TRANSITIONS,
    [...CONTRACT_REFUND_EDGES, ...DOCUMENTED_REFUND_DEPARTURES],
    REFUND_FINALS,
  );

  it("a refund fails directly from requested (the README's documented departure) and from pending", () => {
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'requested', 'failed'), { kind: 'steps', steps: ['failed'] });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'pending', 'failed'), { kind: 'steps', steps: ['failed'] });
  });

  it('refuses successful → failed, failed → successful, and going back to pending or requested', () => {
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'successful', 'failed'), { kind: 'refused' });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'failed', 'successful'), { kind: 'refused' });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'pending', 'requested'), { kind: 'refused' });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'successful', 'pending'), { kind: 'refused' });
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'failed', 'pending'), { kind: 'refused' });
  });

  it('a refund reported successful while requested passes through pending', () => {
    assert.deepEqual(plan(REFUND_TRANSITIONS, 'requested', 'successful'), {
      kind: 'steps',
      steps: ['pending', 'successful'],
    });
  });
});
