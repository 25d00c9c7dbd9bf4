// The group commit the lifecycle's background moves share: work that arrives together commits together, and one
// piece that fails neither loses nor blocks the others.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TransactionBatcher } from '../src/db/batcher.js';
import { createPool, type Db } from '../src/db/pool.js';
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
  assert.deepEqual(batcher.stats, { commits: 1, applied: 1, split: 0 });
});
