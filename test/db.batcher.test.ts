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
  assert.deepEqual(batcher.stats, { commits: 1, applied: 1, split: 0, fallbacks: 0 });
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
    assert.deepEqual(batcher.stats, { commits: 1, applied: 1, split: 0, fallbacks: 0 });
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
