// Migrations that change what existing rows mean, checked on rows written under the schema before them.
// 015: refunds reserve their amount when requested; refunds in flight when it runs are reserved by it, so they
// settle or release like new ones, and the books still balance.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { migrate, MIGRATIONS_DIR } from '../src/db/migrate.js';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { createTestDatabase } from './helpers/harness.js';
import type { ScratchDatabase } from './helpers/database.js';

let database: ScratchDatabase;
let pool: pg.Pool;
let before015: string;

before(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  before015 = mkdtempSync(path.join(tmpdir(), 'migrations-'));
  for (const name of readdirSync(MIGRATIONS_DIR).filter((n) => n < '015_')) {
    cpSync(path.join(MIGRATIONS_DIR, name), path.join(before015, name));
  }
});
after(async () => {
  await pool?.end();
  await database?.drop();
  rmSync(before015, { recursive: true, force: true });
});

const WORKSPACE = '01890a5d-ac96-774b-bcce-b302099a8001';

/** A successful collection credited as 014 did, and a refund of it in `status` (014 posted nothing for it yet). */
async function collectionWithRefund(n: number, status: 'requested' | 'pending', amount: number): Promise<string> {
  const collection = `01890a5d-ac96-774b-bcce-b30209900${n}00`;
  const refund = `01890a5d-ac96-774b-bcce-b30209900${n}01`;
  const posting = `01890a5d-ac96-774b-bcce-b30209900${n}02`;
  await pool.query(
    `INSERT INTO collections (id, workspace_id, market, rail, amount, currency, reference, status, customer, metadata,
                              created_at, updated_at, expires_at, provider, submit_after)
     VALUES ($1, $2, 'KE', 'mpesa', $3, 'KES', 'r', 'successful', '{}', '{}', now(), now(), now(), 'sandbox', now())`,
    [collection, WORKSPACE, amount],
  );
  await pool.query(
    `INSERT INTO ledger_postings (id, workspace_id, kind, object_type, object_id, currency, created_at)
     VALUES ($1, $2, 'collection_successful', 'collection', $3, 'KES', now())`,
    [posting, WORKSPACE, collection],
  );
  await pool.query(
    `INSERT INTO ledger_lines (posting_id, workspace_id, account, currency, amount)
     VALUES ($1, $2, 'provider_receivable', 'KES', $3), ($1, $2, 'workspace_available', 'KES', -$3::bigint)`,
    [posting, WORKSPACE, amount],
  );
  await pool.query(
    `INSERT INTO ledger_balances AS b (workspace_id, account, currency, balance, updated_at)
     VALUES ($1, 'provider_receivable', 'KES', $2, now()), ($1, 'workspace_available', 'KES', -$2::bigint, now())
     ON CONFLICT (workspace_id, account, currency) DO UPDATE SET balance = b.balance + excluded.balance`,
    [WORKSPACE, amount],
  );
  await pool.query(
    `INSERT INTO refunds (id, workspace_id, collection_id, amount, currency, status, provider, submit_after, requested_at, updated_at)
     VALUES ($1, $2, $3, $4, 'KES', $5, 'sandbox', now(), now(), now())`,
    [refund, WORKSPACE, collection, amount, status],
  );
  return refund;
}

describe('migration 015 (refunds reserve)', () => {
  it('reserves the refunds in flight when it runs: available drops by them, and the books balance', async () => {
    await migrate(pool, before015);
    await pool.query(
      `INSERT INTO workspaces (id, name, display_name, environment, kind, created_at)
       VALUES ($1, 'old', 'Old', 'sandbox', 'integrator', now())`,
      [WORKSPACE],
    );
    const requested = await collectionWithRefund(1, 'requested', 1_500);
    const pending = await collectionWithRefund(2, 'pending', 2_500);
    await collectionWithRefund(3, 'requested', 4_000);
    await pool.query("UPDATE refunds SET status = 'failed', resolved_at = now() WHERE id = $1", [
      '01890a5d-ac96-774b-bcce-b30209900301',
    ]);

    await migrate(pool);

    const { rows } = await pool.query<{ object_id: string }>(
      "SELECT object_id FROM ledger_postings WHERE kind = 'refund_reserved' ORDER BY object_id",
    );
    assert.deepEqual(
      rows.map((r) => r.object_id),
      [requested, pending],
    );
    const balances = await pool.query<{ account: string; balance: string }>(
      'SELECT account, balance FROM ledger_balances WHERE workspace_id = $1 ORDER BY account',
      [WORKSPACE],
    );
    assert.deepEqual(
      balances.rows.map((b) => [b.account, Number(b.balance)]),
      [
        ['provider_receivable', 8_000],
        ['refunds_in_flight', -4_000],
        ['workspace_available', -4_000],
      ],
    );
    assert.deepEqual(await verifyLedger(pool), []);
    const reason = await pool.query<{ reason: string }>('SELECT DISTINCT reason FROM refunds');
    assert.deepEqual(reason.rows, [{ reason: 'merchant_request' }]);
    const policy = await pool.query<{ late_payment: string }>('SELECT late_payment FROM workspaces');
    assert.deepEqual(policy.rows, [{ late_payment: 'refund' }]);
  });
});
