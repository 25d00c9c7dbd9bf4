// An initiation's claim marks its row `sent_at` (maybe sent) under the claim's id; `releaseClaim` undoes exactly that
// claim for a sender that sent nothing (its claim's answer was lost): the row gets back the mark it had before, and is
// due at once. A row another sender has claimed since, or one already answered, is left alone. (The sender's side, a
// claim whose answer is cut as it commits, is tested against the Daraja fake in connectors.daraja.test.ts.)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { collectionMovement } from '../src/modules/collections/collections.movement.js';
import { claimInitiations, releaseClaim } from '../src/modules/lifecycle/movements.repository.js';
import { createCollection, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;

before(async () => {
  t = await startTestApp();
});

after(async () => {
  await t.close();
});

/** A new collection (no workers run: it stays `created`, unclaimed): the job a sender would claim it by. */
async function job(): Promise<{ workspaceId: string; id: string; attempt: number }> {
  const res = await createCollection(t, t.demoToken);
  assert.equal(res.status, 201);
  return { workspaceId: t.demoWorkspaceId, id: (res.body as { collection_id: string }).collection_id, attempt: 0 };
}

async function mark(id: string): Promise<{ sent_at: Date | null; due: boolean; claim_id: string | null }> {
  const { rows } = await t.db.query<{ sent_at: Date | null; due: boolean; claim_id: string | null }>(
    'SELECT sent_at, submit_after <= now() AS due, claim_id FROM collections WHERE id = $1',
    [id],
  );
  return rows[0] as { sent_at: Date | null; due: boolean; claim_id: string | null };
}

it('a released claim leaves the row as before it: never marked, and due at once', async () => {
  const j = await job();
  const claim = randomUUID();
  const [taken] = await claimInitiations(t.db, collectionMovement, [j], 30, claim);
  assert.equal(taken?.sent_before, null);
  assert.notEqual((await mark(j.id)).sent_at, null, 'the claim marked it maybe sent');
  assert.deepEqual(await releaseClaim(t.db, collectionMovement, [j], claim), [j.id]);
  assert.deepEqual(await mark(j.id), { sent_at: null, due: true, claim_id: null });
});

it('a row marked by an earlier claim keeps that mark when a later claim is released', async () => {
  const j = await job();
  const earlier = new Date(Date.now() - 60_000);
  await t.db.query('UPDATE collections SET sent_at = $2 WHERE id = $1', [j.id, earlier]);
  const claim = randomUUID();
  const [taken] = await claimInitiations(t.db, collectionMovement, [j], 30, claim);
  assert.equal(taken?.sent_before?.getTime(), earlier.getTime());
  assert.deepEqual(await releaseClaim(t.db, collectionMovement, [j], claim), [j.id]);
  const after = await mark(j.id);
  assert.equal(after.sent_at?.getTime(), earlier.getTime(), 'still maybe sent, by the earlier claim');
  assert.equal(after.due, true);
});

it("a release does not touch another sender's later claim, nor a claim never made", async () => {
  const j = await job();
  const first = randomUUID();
  await claimInitiations(t.db, collectionMovement, [j], 30, first);
  // The lease ran out, and another sender claimed it.
  await t.db.query('UPDATE collections SET submit_after = now() WHERE id = $1', [j.id]);
  const second = randomUUID();
  assert.equal((await claimInitiations(t.db, collectionMovement, [j], 30, second)).length, 1);
  const claimed = await mark(j.id);
  assert.deepEqual(await releaseClaim(t.db, collectionMovement, [j], first), []);
  assert.deepEqual(await mark(j.id), claimed, 'the later claim stands');
  const other = await job();
  assert.deepEqual(await releaseClaim(t.db, collectionMovement, [other], first), []);
  assert.equal((await mark(other.id)).claim_id, null);
});

it('an initiation already answered is not released', async () => {
  const j = await job();
  const claim = randomUUID();
  await claimInitiations(t.db, collectionMovement, [j], 30, claim);
  await t.db.query("UPDATE collections SET status = 'pending', submitted_at = now() WHERE id = $1", [j.id]);
  assert.deepEqual(await releaseClaim(t.db, collectionMovement, [j], claim), []);
  assert.notEqual((await mark(j.id)).sent_at, null);
});
