// The group commit the lifecycle's background moves share: work that arrives together commits together, and one
// piece that fails neither loses nor blocks the others. Work that is one statement is sent alone, without a
// transaction, when nothing shares its batch; what it does otherwise (it changed nothing, or failed) runs in one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TransactionBatcher, type OneStatement } from '../src/db/batcher.js';
import { createPool, onCommitted, type Db, type Tx } from '../src/db/pool.js';
import { statementsSent } from './helpers/statements.js';
import type { ScratchDatabase } from './helpers/database.js';
import { createTestDatabase } from './helpers/harness.js';

let database: ScratchDatabase;
let db: Db;

before(async () => {
  database = await createTestDatabase();
  db = createPool(database.url, 4);
  await db.query('CREATE TABLE moves (id int PRIMARY KEY, at_xid xid8 NOT NULL DEFAULT pg_current_xact_id())');
});

after(async () => {
  await db.end();
  await database.drop();
});

const insert = (id: number) => async (tx: import('../src/db/pool.js').Tx) => {
  await tx.query('INSERT INTO moves (id) VALUES ($1)', [id]);
  return id;
};

test('work that arrives together is committed together: 200 pieces in a handful of transactions, each answered', async () => {
  const batcher = new TransactionBatcher(db, 100, 2);
  const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => batcher.run(insert(i))));
  assert.deepEqual(
    answers,
    Array.from({ length: 200 }, (_, i) => i),
  );
  const { rows } = await db.query<{ n: string; xacts: string }>(
    'SELECT count(*) AS n, count(DISTINCT at_xid) AS xacts FROM moves WHERE id < 200',
  );
  assert.equal(Number(rows[0]?.n), 200);
  // The first piece runs alone at once; what queues meanwhile goes in batches of at most 100.
  assert.ok(Number(rows[0]?.xacts) <= 5, `200 pieces took ${rows[0]?.xacts} transactions`);
  assert.equal(batcher.stats.commits, Number(rows[0]?.xacts));
  assert.equal(batcher.stats.applied, 200);
  assert.equal(batcher.stats.split, 0);
});

test('a piece that fails is refused alone: the batch is undone and the others are committed each on its own', async () => {
  const batcher = new TransactionBatcher(db, 100, 1);
  // The first holds the only slot, so the next ten queue and make one batch; the duplicate key fails inside it.
  const first = batcher.run(insert(1000));
  const rest = [1001, 1002, 1003, 1001, 1004].map((id) =>
    batcher.run(insert(id)).then(
      (value) => ({ ok: true as const, value }),
      (err: unknown) => ({ ok: false as const, code: (err as { code?: string }).code }),
    ),
  );
  assert.equal(await first, 1000);
  const outcomes = await Promise.all(rest);
  assert.deepEqual(
    outcomes.map((o) => (o.ok ? o.value : o.code)),
    [1001, 1002, 1003, '23505', 1004],
  );
  assert.equal(batcher.stats.split, 1, 'the batch was split once');
  const { rows } = await db.query<{ id: number }>('SELECT id FROM moves WHERE id >= 1000 ORDER BY id');
  assert.deepEqual(
    rows.map((r) => r.id),
    [1000, 1001, 1002, 1003, 1004],
  );
});

test('a lone piece of work runs at once, in its own transaction', async () => {
  const batcher = new TransactionBatcher(db, 100, 2);
  assert.equal(await batcher.run(insert(2000)), 2000);
  assert.deepEqual(batcher.stats, { commits: 1, applied: 1, split: 0, fallbacks: 0, combined: 0, combinedPieces: 0 });
});

/** One statement inserting `id`, answering it; what it does otherwise: insert `instead` in a transaction. */
const oneInsert = (id: number, instead: number): OneStatement<number> => ({
  text: 'INSERT INTO moves (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET id = excluded.id WHERE false RETURNING id',
  values: [id],
  notes: new Map([['test:one', `inserted ${id}`]]),
  answer: (rows) => (rows[0] as { id: number } | undefined)?.id,
  otherwise: async (tx: Tx) => {
    await tx.query('INSERT INTO moves (id) VALUES ($1)', [instead]);
    return instead;
  },
});

test('one statement with nothing else waiting is sent alone, with no transaction; its notes follow its commit', async () => {
  const batcher = new TransactionBatcher(db, 100, 2);
  const heard: unknown[] = [];
  const stop = onCommitted(db, (notes) => heard.push(...notes));
  try {
    const { result, statements } = await statementsSent(db, () => batcher.runStatement(oneInsert(3000, 3001)));
    assert.equal(result, 3000);
    assert.deepEqual(
      statements.map((s) => s.text.split(' ')[0]),
      ['INSERT'],
      'no BEGIN, no COMMIT',
    );
    assert.deepEqual(heard, ['inserted 3000']);
    assert.deepEqual(batcher.stats, { commits: 1, applied: 1, split: 0, fallbacks: 0, combined: 0, combinedPieces: 0 });
  } finally {
    stop();
  }
});

test('a statement that changes nothing, or fails, is done the other way, in a transaction of its own', async () => {
  const batcher = new TransactionBatcher(db, 100, 2);
  const heard: unknown[] = [];
  const stop = onCommitted(db, (notes) => heard.push(...notes));
  try {
    // 3000 is there: the statement inserts nothing (its conflict updates nothing) and answers no row.
    const unchanged = await statementsSent(db, () => batcher.runStatement(oneInsert(3000, 3002)));
    assert.equal(unchanged.result, 3002);
    assert.deepEqual(
      unchanged.statements.map((s) => s.text.split(' ')[0]),
      ['INSERT', 'BEGIN', 'INSERT', 'COMMIT'],
    );
    assert.deepEqual(heard, [], "the statement's notes are not told: it changed nothing");
    // A statement that fails (the key is there and it does not say what to do then).
    const failing: OneStatement<number> = {
      ...oneInsert(3000, 3003),
      text: 'INSERT INTO moves (id) VALUES ($1) RETURNING id',
    };
    const failed = await statementsSent(db, () => batcher.runStatement(failing));
    assert.equal(failed.result, 3003);
    assert.equal(failed.statements[0]?.error?.code, '23505');
    assert.equal(batcher.stats.fallbacks, 2);
    const { rows } = await db.query<{ id: number }>('SELECT id FROM moves WHERE id BETWEEN 3000 AND 3099 ORDER BY id');
    assert.deepEqual(
      rows.map((r) => r.id),
      [3000, 3002, 3003],
    );
  } finally {
    stop();
  }
});

test("in a batch, a statement is one statement of the batch's transaction", async () => {
  const batcher = new TransactionBatcher(db, 100, 1);
  // The first holds the only slot, so the next two queue and make one batch.
  const first = batcher.run(insert(3100));
  const batched = [batcher.runStatement(oneInsert(3101, 3199)), batcher.run(insert(3102))];
  assert.equal(await first, 3100);
  assert.deepEqual(await Promise.all(batched), [3101, 3102]);
  const { rows } = await db.query<{ xacts: string }>(
    'SELECT count(DISTINCT at_xid) AS xacts FROM moves WHERE id IN (3101, 3102)',
  );
  assert.equal(Number(rows[0]?.xacts), 1);
});

test('a statement whose answer cannot be read is not done again the other way: it is refused, in doubt', async () => {
  const batcher = new TransactionBatcher(db, 100, 2);
  const unreadable: OneStatement<number> = {
    ...oneInsert(3200, 3201),
    answer: () => {
      throw new Error('unreadable answer');
    },
  };
  await assert.rejects(batcher.runStatement(unreadable), /unreadable answer/);
  const { rows } = await db.query<{ id: number }>('SELECT id FROM moves WHERE id IN (3200, 3201)');
  assert.deepEqual(
    rows.map((r) => r.id),
    [3200],
    'the statement committed; its otherwise never ran',
  );
  assert.equal(batcher.stats.fallbacks, 0);
});

/**
 * `oneInsert` that may go with others of its kind (`target`: what it changes): together, one statement inserts every
 * part's id, answering each inserted one under its part.
 */
const togetherInsert = (id: number, instead: number, target = String(id)): OneStatement<number> => ({
  ...oneInsert(id, instead),
  together: {
    kind: 'insert',
    target,
    part: id,
    combine: (parts) => ({
      text: `WITH inserted AS (
               INSERT INTO moves (id) SELECT id FROM unnest($1::int[]) AS p(id)
               ON CONFLICT (id) DO UPDATE SET id = excluded.id WHERE false RETURNING id)
             SELECT p.n::int - 1 AS part, inserted.id FROM inserted JOIN unnest($1::int[]) WITH ORDINALITY AS p(id, n) USING (id)`,
      values: [parts],
    }),
  },
});

test('in a batch, statements of one kind are sent as one: each answered from its rows, or done the other way', async () => {
  await db.query('INSERT INTO moves (id) VALUES (3303)');
  const batcher = new TransactionBatcher(db, 100, 1);
  const heard: unknown[] = [];
  const stop = onCommitted(db, (notes) => heard.push(...notes));
  try {
    // The first holds the only slot while the rest queue, and make one batch.
    let release = (): void => undefined;
    await new Promise<void>((running) => {
      void batcher.run(() => new Promise<void>((resolve) => ((release = resolve), running())));
    });
    const { result, statements } = await statementsSent(db, async () => {
      const queued = [
        batcher.runStatement(togetherInsert(3301, 3391)),
        batcher.runStatement(togetherInsert(3302, 3392)),
        // There already: its part inserts nothing, and it inserts 3393 instead, after the statement.
        batcher.runStatement(togetherInsert(3303, 3393)),
        // Changes what 3301 changes: not in the same statement, but after it.
        batcher.runStatement(togetherInsert(3304, 3394, '3301')),
        batcher.run(insert(3305)),
      ];
      release();
      return Promise.all(queued);
    });
    assert.deepEqual(result, [3301, 3302, 3393, 3304, 3305]);
    assert.deepEqual(
      statements.map((s) => s.text.trim().split(/\s/)[0]),
      ['COMMIT', 'BEGIN', 'WITH', 'INSERT', 'INSERT', 'INSERT', 'COMMIT'],
      "the held piece's COMMIT; then the three of one kind as one statement, 3393 instead of 3303, 3304, 3305",
    );
    const { rows } = await db.query<{ xacts: string }>(
      'SELECT count(DISTINCT at_xid) AS xacts FROM moves WHERE id IN (3301, 3302, 3393, 3304, 3305)',
    );
    assert.equal(Number(rows[0]?.xacts), 1, 'one transaction');
    assert.deepEqual(
      { combined: batcher.stats.combined, pieces: batcher.stats.combinedPieces, applied: batcher.stats.applied },
      { combined: 1, pieces: 3, applied: 6 },
    );
    // Notes are kept by key (one wake-up for the batch): the first applied piece's.
    assert.deepEqual(heard, ['inserted 3301'], 'the notes of those applied, told after the commit');
  } finally {
    stop();
  }
});
