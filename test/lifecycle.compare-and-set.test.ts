// A move made from a row read earlier (an initiation's claim, a notice's owner lookup): one compare-and-set update
// with its event, no locked read first; and a row that changed since it was read is never overwritten with the old
// read: the move is then made from the locked row, as without one. A provider notice's record, and a success's
// posting, lines and balances, go in that same statement, which the batcher sends alone (no BEGIN, no COMMIT) when
// nothing shares its batch.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TransactionBatcher } from '../src/db/batcher.js';
import { onCommitted, withTransaction } from '../src/db/pool.js';
import { collectionMovement } from '../src/modules/collections/collections.movement.js';
import { COLLECTION_COLUMNS, type CollectionRow } from '../src/modules/collections/collections.repository.js';
import type { Versioned } from '../src/modules/lifecycle/movement.js';
import { createCollection, startTestApp, type TestApp } from './helpers/harness.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { statementsSent } from './helpers/statements.js';
import { recordNotice } from '../src/modules/lifecycle/notices.repository.js';

let t: TestApp;

/** A save by compare-and-set: the row is changed only if it is still the version read. */
const COMPARE_AND_SET = /t\.xmin = \(\$\d+::text\[\]\)\[r\.ordinality::int\]::xid/;

/** The locked read of a collection (lockCollection). */
const LOCKED_READ = /FROM collections WHERE workspace_id = \$1 AND id = \$2 FOR UPDATE/;

before(async () => {
  t = await startTestApp();
});

after(async () => {
  await t.close();
});

/** A new collection (no workers run: it stays `created`), and its row as read now, with its version. */
async function created(): Promise<Versioned<CollectionRow>> {
  const res = await createCollection(t, t.demoToken);
  assert.equal(res.status, 201);
  return read((res.body as { collection_id: string }).collection_id);
}

async function read(id: string): Promise<Versioned<CollectionRow>> {
  const { rows } = await t.db.query<Versioned<CollectionRow>>(
    `SELECT ${COLLECTION_COLUMNS}, xmin::text AS version FROM collections WHERE id = $1`,
    [id],
  );
  assert.ok(rows[0]);
  return rows[0];
}

/** Moves the collection to pending from `seen`, in a transaction of its own; the outcome and the statements sent. */
async function toPending(seen: Versioned<CollectionRow>, reference: string) {
  const { result, statements } = await statementsSent(t.db, () =>
    withTransaction(t.db, (tx) =>
      t.services.lifecycle.move(
        tx,
        'collection',
        seen.workspace_id,
        seen.id,
        'pending',
        { cause: 'test', providerReference: reference },
        seen,
      ),
    ),
  );
  return { outcome: result?.outcome, texts: statements.map((s) => s.text) };
}

async function eventsOf(id: string): Promise<string[]> {
  const { rows } = await t.db.query<{ type: string }>('SELECT type FROM events WHERE object_id = $1', [id]);
  return rows.map((r) => r.type).sort();
}

describe('a move from a row read earlier', () => {
  it('is one compare-and-set update with its event and outbox row: no locked read', async () => {
    const seen = await created();
    const moved = await toPending(seen, 'REF-CAS-1');
    assert.equal(moved.outcome, 'applied');
    assert.deepEqual(
      moved.texts.filter((text) => LOCKED_READ.test(text)),
      [],
      'no locked read was sent',
    );
    const writes = moved.texts.filter((text) => /UPDATE collections/.test(text));
    assert.equal(writes.length, 1, moved.texts.join('\n---\n'));
    assert.match(writes[0] ?? '', COMPARE_AND_SET);
    assert.match(writes[0] ?? '', /INSERT INTO events/);
    const after = await read(seen.id);
    assert.equal(after.status, 'pending');
    assert.equal(after.provider_reference, 'REF-CAS-1');
    // Each event with its outbox row.
    const { rows } = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events e JOIN outbox o ON o.event_id = e.id WHERE e.object_id = $1',
      [seen.id],
    );
    assert.equal(rows[0]?.n, 2);
    assert.deepEqual(await eventsOf(seen.id), ['collection.created', 'collection.pending']);
  });

  it('changed since it was read: nothing of the old read is written; the move is made from the locked row', async () => {
    const seen = await created();
    // Another writer records the operator's receipt meanwhile (a repeat notice does this without a status change).
    await t.db.query(`UPDATE collections SET provider_receipt = 'RECEIPT-OTHER' WHERE id = $1`, [seen.id]);
    const moved = await toPending(seen, 'REF-CAS-2');
    assert.equal(moved.outcome, 'applied');
    // The compare-and-set found another version and wrote nothing; the locked read followed.
    assert.equal(moved.texts.filter((text) => COMPARE_AND_SET.test(text)).length, 1);
    assert.equal(moved.texts.filter((text) => LOCKED_READ.test(text)).length, 1);
    const after = await read(seen.id);
    assert.equal(after.status, 'pending');
    assert.equal(after.provider_reference, 'REF-CAS-2');
    assert.equal(after.provider_receipt, 'RECEIPT-OTHER', 'the receipt written meanwhile is kept');
    assert.deepEqual(await eventsOf(seen.id), ['collection.created', 'collection.pending'], 'one pending event');
  });

  it('already made by another: a repeat, with no second event', async () => {
    const seen = await created();
    assert.equal((await toPending(seen, 'REF-CAS-3')).outcome, 'applied');
    // The same answer again, from the same (now old) read: the table walk from `created` would allow it.
    const again = await toPending(seen, 'REF-CAS-3');
    assert.equal(again.outcome, 'duplicate');
    assert.deepEqual(await eventsOf(seen.id), ['collection.created', 'collection.pending']);
  });
});

describe("a provider notice's record", () => {
  it('goes in the statement that saves the move it causes; the same notice again is a duplicate, moving nothing', async () => {
    const seen = await created();
    assert.equal((await toPending(seen, 'REF-NOTICE-1')).outcome, 'applied');
    const notice = {
      noticeId: 'notice-fold-1',
      objectType: 'collection' as const,
      objectId: seen.id,
      reference: 'REF-NOTICE-1',
      status: 'processing',
    };
    const applied = await statementsSent(t.workerDb, () => t.services.notices.apply(seen.provider, notice));
    assert.equal(applied.result, 'applied');
    const texts = applied.statements.map((s) => s.text);
    // On the workers' pool (the owner lookup is the caller's), one round trip: the save, sent alone, which commits as
    // it ends, with no BEGIN or COMMIT around it.
    assert.equal(texts.length, 1, texts.join('\n---\n'));
    // One statement saves the row, the event, its outbox row and the notice's record; nothing records it apart.
    const saves = texts.filter((text) => /UPDATE collections/.test(text));
    assert.equal(saves.length, 1, texts.join('\n---\n'));
    assert.match(saves[0] ?? '', /INSERT INTO provider_notices/);
    assert.match(saves[0] ?? '', /INSERT INTO events/);
    assert.equal(texts.filter((text) => /INSERT INTO provider_notices/.test(text)).length, 1);
    assert.deepEqual(
      texts.filter((text) => LOCKED_READ.test(text)),
      [],
      'moved from the owner lookup by compare-and-set',
    );
    const { rows } = await t.db.query<{ outcome: string }>(
      'SELECT outcome FROM provider_notices WHERE provider = $1 AND notice_id = $2',
      [seen.provider, notice.noticeId],
    );
    assert.deepEqual(rows, [{ outcome: 'applied' }]);

    assert.equal(await t.services.notices.apply(seen.provider, notice), 'duplicate');
    assert.deepEqual(await eventsOf(seen.id), ['collection.created', 'collection.pending', 'collection.processing']);
    assert.equal((await read(seen.id)).status, 'processing');
  });
});

describe('a notice id recorded before', () => {
  it('fails the one statement, so nothing moves; the transaction then finds the duplicate', async () => {
    const seen = await created();
    assert.equal((await toPending(seen, 'REF-DUP-1')).outcome, 'applied');
    const notice = {
      noticeId: 'notice-seen-before',
      objectType: 'collection' as const,
      objectId: seen.id,
      reference: 'REF-DUP-1',
      status: 'processing',
    };
    // Recorded before (as refused), by an earlier delivery of the same notice.
    assert.ok(await recordNotice(t.db, seen.provider, seen.workspace_id, notice, 'refused'));
    const again = await statementsSent(t.workerDb, () => t.services.notices.apply(seen.provider, notice));
    assert.equal(again.result, 'duplicate');
    // The one statement failed on the notice's key, undoing its move; the transaction's move rolled back too.
    const save = again.statements.find((s) => /UPDATE collections/.test(s.text) && !/^BEGIN/.test(s.text));
    assert.equal(save?.error?.code, '23505', again.statements.map((s) => s.text).join('\n---\n'));
    assert.ok(
      again.statements.some((s) => /^BEGIN/.test(s.text)),
      'then the transaction',
    );
    assert.equal((await read(seen.id)).status, 'pending');
    assert.deepEqual(await eventsOf(seen.id), ['collection.created', 'collection.pending']);
  });
});

describe("a success's ledger posting", () => {
  it('goes in the statement that saves the move, with its lines and the balances, and the books balance', async () => {
    const seen = await created();
    assert.equal((await toPending(seen, 'REF-POST-1')).outcome, 'applied');
    const notice = (status: string) => ({
      noticeId: `notice-post-${status}`,
      objectType: 'collection' as const,
      objectId: seen.id,
      reference: 'REF-POST-1',
      status,
    });
    assert.equal(await t.services.notices.apply(seen.provider, notice('processing')), 'applied');
    const success = await statementsSent(t.workerDb, () =>
      t.services.notices.apply(seen.provider, notice('successful')),
    );
    assert.equal(success.result, 'applied');
    const texts = success.statements.map((s) => s.text);
    const saves = texts.filter((text) => /UPDATE collections/.test(text));
    assert.equal(saves.length, 1, texts.join('\n---\n'));
    assert.match(saves[0] ?? '', /INSERT INTO ledger_postings/);
    assert.match(saves[0] ?? '', /INSERT INTO ledger_lines/);
    assert.equal(
      texts.filter((text) => /INSERT INTO ledger_postings/.test(text)).length,
      1,
      'posted once, with the save',
    );
    // The balances too (the provider's receivable and the workspace's available balance): one statement in all.
    assert.match(saves[0] ?? '', /INSERT INTO ledger_balances/);
    assert.equal(texts.length, 1, texts.join('\n---\n'));
    const { rows: balances } = await t.db.query<{ account: string; balance: string }>(
      `SELECT account, sum(balance)::text AS balance FROM ledger_balances
       WHERE workspace_id = $1 AND account IN ('provider_receivable', 'workspace_available') AND currency = $2
       GROUP BY account ORDER BY account`,
      [seen.workspace_id, seen.currency],
    );
    const { rows: lineSums } = await t.db.query<{ account: string; balance: string }>(
      `SELECT account, sum(amount)::text AS balance FROM ledger_lines
       WHERE workspace_id = $1 AND account IN ('provider_receivable', 'workspace_available') AND currency = $2
       GROUP BY account ORDER BY account`,
      [seen.workspace_id, seen.currency],
    );
    assert.deepEqual(balances, lineSums, 'the balances are the sums of the lines');
    const { rows } = await t.db.query<{ account: string; amount: string }>(
      `SELECT l.account, l.amount FROM ledger_lines l JOIN ledger_postings p ON p.id = l.posting_id
       WHERE p.object_id = $1 ORDER BY l.account`,
      [seen.id],
    );
    assert.deepEqual(
      rows.map((r) => [r.account, Number(r.amount)]),
      [
        ['provider_receivable', seen.amount],
        ['workspace_available', -seen.amount],
      ],
    );
    assert.deepEqual(await verifyLedger(t.db), [], 'the books balance');
  });

  it('is not written when the compare-and-set finds the row changed', async () => {
    const seen = await created();
    await toPending(seen, 'REF-POST-2');
    const processing = await read(seen.id);
    await withTransaction(t.db, (tx) =>
      t.services.lifecycle.move(
        tx,
        'collection',
        seen.workspace_id,
        seen.id,
        'processing',
        { cause: 'test' },
        processing,
      ),
    );
    const before = await read(seen.id);
    // Changed after this read: the read's compare-and-set to successful writes nothing, the locked path posts once.
    await t.db.query(`UPDATE collections SET provider_receipt = 'RECEIPT-POST-2' WHERE id = $1`, [seen.id]);
    const moved = await statementsSent(t.db, () =>
      withTransaction(t.db, (tx) =>
        t.services.lifecycle.move(
          tx,
          'collection',
          seen.workspace_id,
          seen.id,
          'successful',
          { cause: 'test' },
          before,
        ),
      ),
    );
    assert.equal(moved.result?.outcome, 'applied');
    assert.equal(moved.statements.filter((s) => LOCKED_READ.test(s.text)).length, 1, 'the locked path ran');
    const { rows } = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM ledger_postings WHERE object_id = $1',
      [seen.id],
    );
    assert.equal(rows[0]?.n, 1, 'one posting');
    assert.equal((await read(seen.id)).provider_receipt, 'RECEIPT-POST-2');
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('a move saved alone (savedAlone)', () => {
  it("is one the collection's after does nothing for: no statement, no note but the events'", async () => {
    const seen = await created();
    const heard: unknown[] = [];
    const stop = onCommitted(t.db, (notes) => heard.push(...notes));
    try {
      for (const [from, to] of [
        ['created', 'pending'],
        ['pending', 'processing'],
        ['processing', 'successful'],
      ] as const) {
        const row = { ...seen, status: to };
        assert.ok(collectionMovement.savedAlone?.(row, from), `${from} → ${to} is saved alone`);
        const sent = await statementsSent(t.db, () =>
          withTransaction(t.db, (tx) =>
            (collectionMovement.after as NonNullable<typeof collectionMovement.after>)(
              tx,
              { row, from, cause: 'test' },
              t.services.lifecycle,
            ),
          ),
        );
        assert.deepEqual(
          sent.statements.map((x) => x.text),
          ['BEGIN', 'COMMIT'],
          `after ${from} → ${to} wrote nothing`,
        );
      }
      assert.deepEqual(heard, [], 'and noted nothing for after the commit');
    } finally {
      stop();
    }
    // What after does write for is never saved alone: a failure (the risk rules), a late payment, a checkout session.
    assert.equal(collectionMovement.savedAlone?.({ ...seen, status: 'failed' }, 'pending'), false);
    assert.equal(collectionMovement.savedAlone?.({ ...seen, status: 'successful' }, 'expired'), false);
    assert.equal(
      collectionMovement.savedAlone?.({ ...seen, status: 'successful', checkout_session_id: seen.id }, 'processing'),
      false,
    );
  });
});

describe('moves of one movement in a batch', () => {
  it('are saved by one statement: 20 successes of one workspace, each answered, its balances added once', async () => {
    // 20 collections of the demo workspace, each pending with its operator's reference, read with their versions.
    const seen: Versioned<CollectionRow>[] = [];
    for (let i = 0; i < 20; i++) {
      const row = await created();
      assert.equal((await toPending(row, `REF-BATCH-${i}`)).outcome, 'applied');
      seen.push(await read(row.id));
    }
    // The last one changes after it was read: its part of the statement changes nothing, and it is moved the other
    // way, from its locked row, in the same transaction.
    const changed = seen[19] as Versioned<CollectionRow>;
    await t.db.query(`UPDATE collections SET provider_receipt = 'RECEIPT-MEANWHILE' WHERE id = $1`, [changed.id]);
    const balanceBefore = await available(changed.workspace_id, changed.currency);

    // One slot, held until all 20 are waiting: they make one batch.
    const batcher = new TransactionBatcher(t.workerDb, 100, 1);
    let release = (): void => undefined;
    const holding = new Promise<void>((running) => {
      void batcher.run(() => new Promise<void>((resolve) => ((release = resolve), running())));
    });
    await holding;
    const { result, statements } = await statementsSent(t.workerDb, async () => {
      const moves = seen.map((row, i) => {
        const options = { cause: 'test', providerReference: `REF-BATCH-${i}` };
        const one = t.services.lifecycle.moveStatement(
          'collection',
          row.workspace_id,
          row.id,
          'successful',
          options,
          row,
        );
        assert.ok(one, 'a move that is one statement');
        return batcher.runStatement({
          ...one,
          otherwise: async (tx) =>
            (await t.services.lifecycle.move(tx, 'collection', row.workspace_id, row.id, 'successful', options))!,
        });
      });
      release();
      return Promise.all(moves);
    });
    assert.deepEqual(
      result.map((m) => [m.outcome, m.row.status]),
      seen.map(() => ['applied', 'successful']),
    );
    // The mechanism: the 20 went as one statement (BEGIN, it, the changed one's locked read and save, COMMIT).
    assert.deepEqual(
      { combined: batcher.stats.combined, pieces: batcher.stats.combinedPieces, commits: batcher.stats.commits },
      { combined: 1, pieces: 20, commits: 2 },
    );
    const texts = statements.map((s) => s.text);
    assert.equal(texts.filter((text) => COMPARE_AND_SET.test(text)).length, 1, texts.join('\n---\n'));
    assert.equal(texts.filter((text) => LOCKED_READ.test(text)).length, 1, 'only the changed one was read locked');
    assert.equal(texts.filter((text) => /INSERT INTO ledger_postings/.test(text)).length, 2);

    for (const row of seen) {
      const after = await read(row.id);
      assert.equal(after.status, 'successful');
      // Relayed in the order they happened: the outbox rows, which the relay takes in id order.
      const { rows: relayed } = await t.db.query<{ type: string }>(
        'SELECT e.type FROM outbox o JOIN events e ON e.id = o.event_id WHERE e.object_id = $1 ORDER BY o.id',
        [row.id],
      );
      assert.deepEqual(
        relayed.map((r) => r.type),
        ['collection.created', 'collection.pending', 'collection.processing', 'collection.successful'],
      );
    }
    assert.equal((await read(changed.id)).provider_receipt, 'RECEIPT-MEANWHILE', 'the change made meanwhile is kept');
    const total = seen.reduce((sum, row) => sum + row.amount, 0);
    assert.equal((await available(changed.workspace_id, changed.currency)) - balanceBefore, -total);
    assert.deepEqual(await verifyLedger(t.db), [], 'the books balance');
  });
});

/** The workspace's available balance (credit-normal: negative), summed over its buckets. */
async function available(workspaceId: string, currency: string): Promise<number> {
  const { rows } = await t.db.query<{ balance: string | null }>(
    `SELECT sum(balance)::text AS balance FROM ledger_balances
     WHERE workspace_id = $1 AND account = 'workspace_available' AND currency = $2`,
    [workspaceId, currency],
  );
  return Number(rows[0]?.balance ?? 0);
}
