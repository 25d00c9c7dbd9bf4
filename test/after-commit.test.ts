// The after-commit hook (src/platform/after-commit.ts): what a transaction notes with emitOnCommit is emitted once it
// commits, once per reaction, and never when it rolls back; a batch of work sharing one transaction emits its notes
// once. And the relay's rounds (workers/index.ts, oneAtATime): calls made during a round share the next one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { TransactionBatcher } from '../src/db/batcher.js';
import { createPool, withTransaction, type Db } from '../src/db/pool.js';
import { AfterCommit, emitOnCommit, type Committed } from '../src/platform/after-commit.js';
import { oneAtATime } from '../src/workers/index.js';
import type { ScratchDatabase } from './helpers/database.js';
import { createTestDatabase } from './helpers/harness.js';

let database: ScratchDatabase;
let db: Db;
const hook = new AfterCommit();
const heard: Committed[] = [];

before(async () => {
  database = await createTestDatabase();
  db = createPool(database.url, 4);
  hook.watch(db);
  hook.listen((c) => heard.push(c));
});

after(async () => {
  await db.end();
  await database.drop();
});

test('a note is emitted once its transaction has committed, once per reaction however often it was noted', async () => {
  heard.length = 0;
  let heardInside = -1;
  await withTransaction(db, async (tx) => {
    emitOnCommit(tx, { kind: 'events' });
    emitOnCommit(tx, { kind: 'events' });
    emitOnCommit(tx, { kind: 'collection', workspaceId: 'w', id: 'c1' });
    emitOnCommit(tx, { kind: 'collection', workspaceId: 'w', id: 'c1' });
    emitOnCommit(tx, { kind: 'collection', workspaceId: 'w', id: 'c2' });
    await tx.query('SELECT 1');
    heardInside = heard.length;
  });
  assert.equal(heardInside, 0, 'nothing is emitted before the commit');
  assert.deepEqual(heard, [
    { kind: 'events' },
    { kind: 'collection', workspaceId: 'w', id: 'c1' },
    { kind: 'collection', workspaceId: 'w', id: 'c2' },
  ]);
});

test('a transaction that rolls back emits nothing, and its notes do not leak into the next one on its connection', async () => {
  heard.length = 0;
  await assert.rejects(
    withTransaction(db, async (tx) => {
      emitOnCommit(tx, { kind: 'refund', workspaceId: 'w', id: 'r1' });
      throw new Error('undone');
    }),
    /undone/,
  );
  assert.deepEqual(heard, []);
  // Every connection of the pool runs a transaction that notes nothing: none emits the rolled-back note.
  await Promise.all([1, 2, 3, 4].map(() => withTransaction(db, (tx) => tx.query('SELECT pg_sleep(0.05)'))));
  assert.deepEqual(heard, []);
});

test("a batch of work sharing one transaction emits its notes once, after the batch's commit", async () => {
  heard.length = 0;
  const batcher = new TransactionBatcher(db, 100, 1);
  await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      batcher.run(async (tx) => {
        await tx.query('SELECT 1');
        emitOnCommit(tx, { kind: 'events' });
        emitOnCommit(tx, { kind: 'payout', workspaceId: 'w', id: `p${i % 2}` });
      }),
    ),
  );
  const events = heard.filter((c) => c.kind === 'events').length;
  // One per transaction: the batcher commits the twenty in a few (the first alone, the rest together).
  assert.ok(
    events >= 1 && events <= batcher.stats.commits,
    `${events} events notes for ${batcher.stats.commits} commits`,
  );
  assert.ok(events < 20, `${events} events notes for 20 pieces of work`);
  assert.deepEqual(
    new Set(heard.filter((c) => c.kind === 'payout').map((c) => (c as { id: string }).id)),
    new Set(['p0', 'p1']),
  );
});

test('the relay runs one round at a time, and the calls made during a round share the next one', async () => {
  let rounds = 0;
  let running = 0;
  let most = 0;
  const relayRound = oneAtATime(async () => {
    rounds += 1;
    running += 1;
    most = Math.max(most, running);
    await sleep(30);
    running -= 1;
  });
  const first = relayRound.run();
  const during = Array.from({ length: 10 }, () => relayRound.run());
  await Promise.all([first, ...during]);
  assert.equal(most, 1, 'never two rounds at once');
  assert.equal(rounds, 2, 'the ten calls made during the first round share one more round');
  // Each call is answered by a round that began after it: the ten by the second.
  assert.notEqual(during[0], first);
  await relayRound.run();
  assert.equal(rounds, 3);
  await relayRound.settled();
});

test('rounds start at most once every gapMs: a call soon after a round waits for the gap, a later one does not', async () => {
  const starts: number[] = [];
  const relayRound = oneAtATime(async () => {
    starts.push(Date.now());
    await sleep(5);
  }, 100);
  await relayRound.run();
  await relayRound.run(); // right after the first round: waits out the gap
  assert.ok(starts[1]! - starts[0]! >= 95, `second round ${starts[1]! - starts[0]!} ms after the first`);
  await sleep(150);
  const called = Date.now();
  await relayRound.run(); // past the gap: starts at once
  assert.ok(starts[2]! - called < 50, `third round ${starts[2]! - called} ms after its call`);
  await relayRound.settled();
});
