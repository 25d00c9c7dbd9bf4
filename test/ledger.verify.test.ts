// verifyLedger can fail: each invariant it checks, broken on purpose inside a transaction that is rolled back, is
// reported. (The ledger property test, test/ledger.property.test.ts, relies on verifyLedger finding nothing.)
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { createWorkspace, newKey, request, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;

before(async () => {
  t = await startTestApp();
});

after(async () => t?.close());

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
