// What the transition-table tests (test/states.*.test.ts) share: a table's edges as text, and the checks every table
// written out from the contract gets against the code's table and `plan()`. Pure: no database.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { plan, type TransitionTable } from '../../src/platform/state-machine.js';

export type Edge<S extends string> = readonly [S, S];

/** Every edge of a table, as "from → to". */
export function edges<S extends string>(table: TransitionTable<S>): string[] {
  return (Object.keys(table) as S[]).flatMap((from) => table[from].map((to) => `${from} → ${to}`)).sort();
}

export const key = (from: string, to: string): string => `${from}→${to}`;

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

/** Every ordered pair of two different statuses. */
export function pairs<S extends string>(statuses: readonly S[]): [S, S][] {
  return statuses.flatMap((from) => statuses.filter((to) => to !== from).map((to) => [from, to] as [S, S]));
}

/** The checks shared by the tables written out from the contract (collections, refunds): five tests. */
export function checkTable<S extends string>(
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
