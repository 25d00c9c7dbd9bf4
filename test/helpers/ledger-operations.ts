// How the ledger property test (test/ledger.property.test.ts) runs each operation through the real code paths (HTTP,
// and the sweep/submitter functions the workers call) and checks the service's answer against the model
// (./ledger-model.ts). One app WITHOUT background workers: nothing moves unless the test moves it, so every answer is
// predictable. `startLedgerApp()` registers the app's start and stop on the calling file; `t` is then its own.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { expireDue } from '../../src/modules/lifecycle/sweeps.js';
import { signCallback } from '../../src/modules/providers/callback-protocol.js';
import { loadServiceKeys } from '../../src/platform/secrets.js';
import { assertProblem, newKey, request, startTestApp, type ApiResponse, type TestApp, waitFor } from './harness.js';
import {
  choose,
  choosePreferring,
  COLLECTION_EDGES,
  isOpenCollection,
  isOpenRefund,
  moneyDisagreement,
  RAILS,
  REFUND_EDGES,
  REFUND_NOTICE_STATUSES,
  requestedRefund,
  walk,
  type CStatus,
  type MCollection,
  type MRefund,
  type Notice,
  type NoticeStatus,
  type Op,
  type Outcome,
  type RStatus,
  type Run,
  type SimAttempt,
} from './ledger-model.js';

/** The calling file's app, once `startLedgerApp()`'s `before` has run. */
export let t: TestApp;
let secret: string;

/** Starts the app (KE airtel_money collections expire after 1 s) before the calling file's tests; closes it after. */
export function startLedgerApp(): void {
  before(async () => {
    t = await startTestApp({}, { expirySeconds: { 'KE/airtel_money': 1 } });
    secret = (await loadServiceKeys(t.db, t.box)).sandboxProviderSecret;
  });

  after(async () => t?.close());
}

async function sendNotice(notice: Notice, signWith = secret, tamper = false): Promise<ApiResponse> {
  const body = JSON.stringify(notice);
  const headers = signCallback(signWith, body);
  const sent = tamper
    ? body.replace(`"status":"${notice.status}"`, `"status":"${notice.status === 'failed' ? 'successful' : 'failed'}"`)
    : body;
  return request(t, 'POST', '/v1/providers/sandbox/callbacks', { rawBody: sent, headers });
}

function notice(
  objectType: 'collection' | 'refund',
  id: string,
  reference: string,
  status: NoticeStatus,
  reason: string | null,
): Notice {
  return {
    notice_id: `ntc_${randomBytes(9).toString('hex')}`,
    object_type: objectType,
    merchant_reference: id,
    reference,
    status,
    reason,
    occurred_at: new Date().toISOString(),
  };
}

const newReference = (): string => `prv_${randomBytes(8).toString('hex')}`;

function expectOutcome(res: ApiResponse, outcome: Outcome): void {
  assert.equal(res.status, 200, `callback answered ${res.status} ${res.text}`);
  assert.deepEqual(res.body, { received: true, outcome });
}

/** Copies of one notice sent at once: one of them does what the model says, every other is a duplicate. */
function expectOutcomes(answers: ApiResponse[], outcome: Outcome): void {
  for (const res of answers) assert.equal(res.status, 200, `callback answered ${res.status} ${res.text}`);
  const expected = [outcome, ...answers.slice(1).map(() => 'duplicate')].sort();
  assert.deepEqual(
    answers.map((res) => res.body.outcome).sort(),
    expected,
    'outcomes of copies of one notice sent at once',
  );
}

interface RefundAnswer {
  key: string;
  status: number;
  text: string;
  refund?: MRefund;
}

/**
 * Sends one refund request per key, all at once, and checks the answers against the model (the refund rules, in the
 * contract's order: refundable, amount, in progress). Of several at once for a refundable collection exactly one is
 * accepted; the others find it in progress.
 */
async function refundRequests(
  run: Run,
  c: MCollection,
  amount: number,
  keys: readonly string[],
): Promise<RefundAnswer[]> {
  const answers = await Promise.all(
    keys.map((key) =>
      request(t, 'POST', `/v1/collections/${c.id}/refund`, {
        token: run.workspace.token,
        body: { amount },
        idempotencyKey: key,
      }),
    ),
  );
  const refused: readonly [number, string] | undefined =
    c.status !== 'successful'
      ? [409, 'collection_not_refundable']
      : run.refundInProgress(c.id)
        ? [409, 'refund_in_progress']
        : amount !== c.amount
          ? [422, 'refund_amount_mismatch']
          : run.available(c.currency) < amount
            ? [422, 'insufficient_balance']
            : undefined;
  if (refused) {
    return answers.map((res, i) => {
      assertProblem(res, refused[0], refused[1]);
      run.count(`refund: ${refused[0]} ${refused[1]}`);
      return { key: keys[i] ?? '', status: res.status, text: res.text };
    });
  }
  assert.equal(
    answers.filter((res) => res.status === 201).length,
    1,
    `exactly one of ${keys.length} refund requests at once is accepted: ${answers.map((res) => res.text).join(' | ')}`,
  );
  return answers.map((res, i) => {
    const key = keys[i] ?? '';
    if (res.status !== 201) {
      assertProblem(res, 409, 'refund_in_progress');
      run.count('refund: 409 refund_in_progress (sent at the same time)');
      return { key, status: res.status, text: res.text };
    }
    assert.equal(res.headers.get('idempotent-replayed'), null);
    assert.equal(res.body.status, 'requested');
    assert.deepEqual(res.body.resolved_at, {});
    assert.equal(res.body.collection_id, c.id);
    assert.equal(res.body.amount, c.amount);
    assert.equal(res.body.currency, c.currency);
    assert.equal(res.headers.get('location'), `/v1/refunds/${res.body.refund_id}`);
    const refund = requestedRefund(res.body.refund_id, c);
    run.refunds.push(refund);
    run.count('refund: 201');
    return { key, status: res.status, text: res.text, refund };
  });
}

async function simulate(run: Run, attempt: SimAttempt): Promise<void> {
  const url =
    attempt.target === 'collection'
      ? `/v1/sandbox/collections/${attempt.id}/simulate`
      : `/v1/sandbox/refunds/${attempt.id}/simulate`;
  const res = await request(t, 'POST', url, {
    token: run.workspace.token,
    body: attempt.body,
    ...(attempt.key ? { idempotencyKey: attempt.key } : {}),
  });
  if (attempt.stored !== undefined) {
    // A stored answer is replayed as it was, whatever happened since; nothing moves.
    assert.equal(res.status, 200, res.text);
    assert.equal(res.text, attempt.stored);
    assert.equal(res.headers.get('idempotent-replayed'), 'true');
    run.count('simulate: replayed');
    return;
  }
  const reason = attempt.body.reason ?? null;
  let accepted: boolean;
  if (attempt.target === 'collection') {
    const c = run.collection(attempt.id);
    const steps = walk(COLLECTION_EDGES, c.status, attempt.body.outcome as CStatus, ['successful']);
    if (steps) run.moveCollection(c, steps, reason);
    accepted = expectSimulated(run, res, 'collection', steps, {
      collection_id: c.id,
      status: c.status,
      failure_reason: c.status === 'failed' ? c.failureReason : null,
    });
  } else {
    const r = run.refunds.find((x) => x.id === attempt.id);
    assert.ok(r);
    const steps = walk(REFUND_EDGES, r.status, attempt.body.outcome as RStatus);
    if (steps) run.moveRefund(r, steps, reason);
    accepted = expectSimulated(run, res, 'refund', steps, { refund_id: r.id, status: r.status });
  }
  if (accepted && attempt.key) attempt.stored = res.text;
}

/**
 * A simulate answer against the model: 409 where the contract has no move to the outcome (`steps` undefined),
 * otherwise 200 showing the object as the model now has it (`shown`, after the steps). Returns whether it was 200.
 */
function expectSimulated(
  run: Run,
  res: ApiResponse,
  kind: SimAttempt['target'],
  steps: readonly string[] | undefined,
  shown: Record<string, unknown>,
): boolean {
  if (steps === undefined) {
    assertProblem(res, 409, 'transition_not_allowed');
    run.count(`simulate ${kind}: 409`);
    return false;
  }
  assert.equal(res.status, 200, res.text);
  for (const [field, value] of Object.entries(shown)) assert.equal(res.body[field], value, field);
  run.count(`simulate ${kind}: 200 ${steps.length === 0 ? 'unchanged' : 'moved'}`);
  return true;
}

/**
 * Sends `op.copies` copies of one provider notice about the object at once (under its recorded reference, or another
 * when the op says so) and checks the answers against the model: refused for another reference, or for a move the
 * contract does not have (`steps` undefined; a disagreement about money also records reconciliation.mismatch);
 * otherwise a duplicate, or applied with `move` taking the steps.
 */
async function noticeCopies<S extends string>(
  run: Run,
  kind: 'collection' | 'refund',
  object: { id: string; status: S; reference: string | null; events: string[] },
  op: { status: NoticeStatus; otherReference: boolean; reason: string | null; copies: number },
  steps: S[] | undefined,
  move: (steps: S[], reason: string | null) => void,
): Promise<{ reference: string; outcome: Outcome }> {
  const reference = op.otherReference || object.reference === null ? newReference() : object.reference;
  const n = notice(kind, object.id, reference, op.status, op.status === 'failed' ? op.reason : null);
  const answers = await Promise.all(Array.from({ length: op.copies }, () => sendNotice(n)));
  let outcome: Outcome;
  if (object.reference !== null && reference !== object.reference) outcome = 'refused';
  else {
    outcome = steps === undefined ? 'refused' : steps.length === 0 ? 'duplicate' : 'applied';
    if (steps === undefined && moneyDisagreement(kind, object.status, op.status)) {
      object.events.push('reconciliation.mismatch');
      run.count('edge: reconciliation mismatch');
    }
    if (steps) {
      // The provider's reference is recorded by a notice that is applied (or repeats the status), never by a refused one.
      object.reference ??= reference;
      move(steps, n.reason);
    }
  }
  expectOutcomes(answers, outcome);
  run.notices.push(n);
  run.count(`${kind} notice: ${outcome}`);
  if (op.copies > 1) run.count(`${kind} notice: concurrent copies`);
  return { reference, outcome };
}

/** A first simulate request for the object; one sent with a key is kept, for a later retry to replay. */
async function simulateFirst(
  run: Run,
  target: SimAttempt['target'],
  id: string,
  op: { outcome: string; reason: string | null; withKey: boolean },
): Promise<void> {
  const attempt: SimAttempt = {
    target,
    id,
    key: op.withKey ? newKey() : '',
    body:
      op.outcome === 'failed' && op.reason !== null
        ? { outcome: op.outcome, reason: op.reason }
        : { outcome: op.outcome },
    stored: undefined,
  };
  await simulate(run, attempt);
  if (attempt.key) run.simAttempts.push(attempt);
}

/** Runs one operation and checks the service's answer against the model; returns a line for the trace. */
export async function apply(run: Run, op: Op): Promise<string> {
  const token = run.workspace.token;
  switch (op.kind) {
    case 'create': {
      const rail = RAILS[op.rail] ?? RAILS[0];
      const phone = `+${rail.countryCode}7${String(op.phone).padStart(4, '0')}${op.digits}`;
      const body = {
        amount: op.amount,
        currency: rail.currency,
        reference: `order-${randomBytes(4).toString('hex')}`,
        customer: { phone_number: phone },
        metadata: { order_id: String(run.collections.length) },
      };
      const key = newKey();
      const url = `/v1/collections/${rail.market}/rails/${rail.rail}`;
      const res = await request(t, 'POST', url, { token, body, idempotencyKey: key });
      assert.equal(res.status, 201, `create answered ${res.status} ${res.text}`);
      assert.equal(res.body.status, 'created');
      assert.equal(res.body.amount, op.amount);
      assert.equal(res.body.currency, rail.currency);
      run.collections.push({
        id: res.body.collection_id,
        currency: rail.currency,
        amount: op.amount,
        digits: op.digits,
        expiresAt: Date.parse(res.body.expires_at),
        status: 'created',
        reference: null,
        failureReason: null,
        events: ['collection.created'],
        credited: false,
        lateRefundDue: false,
        create: { path: url, key, body, text: res.text },
      });
      run.count('create: 201');
      return `create ${rail.market}/${rail.rail} ${op.amount} ${rail.currency} …${op.digits} → ${res.body.collection_id}`;
    }

    case 'retryCreate': {
      const c = choose(run.collections, op.pick);
      if (!c) return 'retryCreate: nothing to retry';
      const body = op.alter ? { ...c.create.body, amount: c.amount + 1 } : c.create.body;
      const res = await request(t, 'POST', c.create.path, { token, body, idempotencyKey: c.create.key });
      if (op.alter) {
        assertProblem(res, 422, 'idempotency_key_reused');
        run.count('retry create: 422 key reused');
      } else {
        assert.equal(res.status, 201, res.text);
        assert.equal(res.text, c.create.text);
        assert.equal(res.headers.get('idempotent-replayed'), 'true');
        run.count('retry create: replayed');
      }
      return `retryCreate ${c.id}${op.alter ? ' (other body)' : ''} → ${res.status}`;
    }

    case 'collectionNotice': {
      const c = choosePreferring(run.collections, op.pick, op.open, isOpenCollection);
      if (!c) return 'collectionNotice: no collection';
      const from = c.status;
      const steps = walk(COLLECTION_EDGES, c.status, op.status, ['successful']);
      const { reference, outcome } = await noticeCopies(run, 'collection', c, op, steps, (s, reason) =>
        run.moveCollection(c, s, reason),
      );
      return `collection notice ${c.id} ${from} → ${op.status}${reference === c.reference ? '' : ' (other reference)'}: ${outcome}`;
    }

    case 'refundNotice': {
      const r = choosePreferring(run.refunds, op.pick, op.open, isOpenRefund);
      if (!r) return 'refundNotice: no refund';
      const from = r.status;
      const steps = REFUND_NOTICE_STATUSES.includes(op.status)
        ? walk(REFUND_EDGES, r.status, op.status as RStatus)
        : undefined;
      const { outcome } = await noticeCopies(run, 'refund', r, op, steps, (s, reason) => run.moveRefund(r, s, reason));
      return `refund notice ${r.id} ${from} → ${op.status}: ${outcome}`;
    }

    case 'resendNotice': {
      const original = choose(run.notices, op.pick);
      if (!original) return 'resendNotice: nothing sent yet';
      let again: Notice = { ...original, occurred_at: new Date().toISOString() };
      if (op.alter === 'status') again = { ...again, status: op.status };
      if (op.alter === 'object') {
        const targets = [
          ...run.collections.map((c) => ['collection', c.id] as const),
          ...run.refunds.map((r) => ['refund', r.id] as const),
        ];
        const [type, id] = choose(targets, op.target) ?? ['collection', original.merchant_reference];
        again = { ...again, object_type: type, merchant_reference: id, status: op.status };
      }
      const res = await sendNotice(again);
      expectOutcome(res, 'duplicate');
      run.count(`resend notice (${op.alter}): duplicate`);
      return `resend notice ${original.notice_id} (${op.alter}): duplicate`;
    }

    case 'badSignature': {
      const c = choose(run.collections, op.pick);
      if (!c) return 'badSignature: no collection';
      const n = notice('collection', c.id, c.reference ?? newReference(), op.status, null);
      const res = await sendNotice(
        n,
        op.how === 'secret' ? randomBytes(32).toString('hex') : secret,
        op.how === 'tampered',
      );
      assertProblem(res, 401, 'invalid_signature');
      run.count('bad signature: 401');
      return `bad signature (${op.how}) on ${c.id}: 401`;
    }

    case 'unknownObject': {
      const c = choose(run.collections, op.pick);
      const n =
        op.refundOfCollection && c
          ? notice('refund', c.id, newReference(), 'successful', null) // a collection's id is no refund
          : notice('collection', randomUUID(), newReference(), 'successful', null);
      const res = await sendNotice(n);
      assertProblem(res, 404, 'not_found');
      run.count('notice for an unknown object: 404');
      return `notice for unknown ${n.object_type} ${n.merchant_reference}: 404`;
    }

    case 'simulateCollection': {
      const c = choosePreferring(run.collections, op.pick, op.open, isOpenCollection);
      if (!c) return 'simulateCollection: no collection';
      const from = c.status;
      await simulateFirst(run, 'collection', c.id, op);
      return `simulate collection ${c.id} ${from} → ${op.outcome}: now ${c.status}`;
    }

    case 'simulateRefund': {
      const r = choosePreferring(run.refunds, op.pick, op.open, isOpenRefund);
      if (!r) return 'simulateRefund: no refund';
      const from = r.status;
      await simulateFirst(run, 'refund', r.id, op);
      return `simulate refund ${r.id} ${from} → ${op.outcome}: now ${r.status}`;
    }

    case 'retrySimulate': {
      const attempt = choose(run.simAttempts, op.pick);
      if (!attempt) return 'retrySimulate: nothing to retry';
      await simulate(run, attempt);
      return `retry simulate ${attempt.target} ${attempt.id} ${attempt.body.outcome}`;
    }

    case 'refund': {
      const candidates = op.successfulOnly ? run.collections.filter((c) => c.status === 'successful') : run.collections;
      const c = choose(candidates.length > 0 ? candidates : run.collections, op.pick);
      if (!c) return 'refund: no collection';
      const amount = op.wrongAmount ? c.amount + 1 : c.amount;
      const from = c.status;
      const results = await refundRequests(run, c, amount, Array.from({ length: op.copies }, newKey));
      for (const result of results)
        run.refundAttempts.push({
          key: result.key,
          collectionId: c.id,
          amount,
          stored: result.status === 201 ? result.text : undefined,
        });
      const created = results.find((result) => result.refund)?.refund;
      return `refund ×${op.copies} ${c.id} (${from}) amount ${amount}: ${results.map((result) => result.status).join(',')}${created ? ` → ${created.id}` : ''}`;
    }

    case 'retryRefund': {
      // Mostly a retry of one that was answered 201 (a replay); otherwise of any, refused ones included.
      const answered = run.refundAttempts.filter((a) => a.stored !== undefined);
      const attempt = choose(op.stored && answered.length > 0 ? answered : run.refundAttempts, op.pick);
      if (!attempt) return 'retryRefund: nothing to retry';
      const c = run.collection(attempt.collectionId);
      const amount = op.alter ? attempt.amount + 2 : attempt.amount;
      if (attempt.stored !== undefined) {
        const res = await request(t, 'POST', `/v1/collections/${c.id}/refund`, {
          token,
          body: { amount },
          idempotencyKey: attempt.key,
        });
        if (op.alter) {
          assertProblem(res, 422, 'idempotency_key_reused');
          run.count('retry refund: 422 key reused');
        } else {
          assert.equal(res.status, 201, res.text);
          assert.equal(res.text, attempt.stored);
          assert.equal(res.headers.get('idempotent-replayed'), 'true');
          run.count('retry refund: replayed');
        }
        return `retry refund ${attempt.key}${op.alter ? ' (other body)' : ''}: ${res.status}`;
      }
      // Nothing was stored for a refused request: the retry is a new request under the same key.
      const [result] = await refundRequests(run, c, amount, [attempt.key]);
      assert.ok(result);
      attempt.amount = amount;
      if (result.status === 201) attempt.stored = result.text;
      return `retry refused refund ${attempt.key} amount ${amount}: ${result.status}`;
    }

    case 'expire': {
      if (op.wait) {
        // Now and then, first let the oldest open collection of the 1-second rail come due (well under a second).
        const due = Math.min(
          ...run.collections.filter((c) => c.status === 'created' || c.status === 'pending').map((c) => c.expiresAt),
        );
        if (Number.isFinite(due) && due - Date.now() < 1100) {
          await waitFor('the next expiry to come due', async () => (Date.now() > due + 5 ? true : undefined), 2000);
        }
      }
      const clock = async (): Promise<number> =>
        (await t.db.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]?.now.getTime() ?? NaN;
      const before = await clock();
      await expireDue(
        t.db,
        t.services.batcher,
        t.services.lifecycle,
        t.services.providers,
        t.services.notices,
        t.app.log,
      );
      const afterSweep = (await clock()) + 1;
      const openOnes = run.collections.filter((c) => c.status === 'created' || c.status === 'pending');
      const unsure = openOnes.filter((c) => c.expiresAt > before && c.expiresAt <= afterSweep);
      // Due during the sweep itself: either is right; read which it was.
      const actual = new Map<string, string>();
      if (unsure.length > 0) {
        const { rows } = await t.db.query<{ id: string; status: string }>(
          'SELECT id, status FROM collections WHERE id = ANY($1)',
          [unsure.map((c) => c.id)],
        );
        for (const row of rows) actual.set(row.id, row.status);
      }
      let expired = 0;
      for (const c of openOnes) {
        const due = c.expiresAt <= before || (unsure.includes(c) && actual.get(c.id) === 'expired');
        if (!due) continue;
        run.moveCollection(c, ['expired'], null);
        expired += 1;
        run.count('expiry: expired');
      }
      return `expire: ${expired} of ${openOnes.length} open expired`;
    }

    case 'submitCollection': {
      const c = choosePreferring(run.collections, op.pick, op.open, (x) => x.status === 'created');
      if (!c) return 'submitCollection: no collection';
      const from = c.status;
      t.services.submitter.kick('collection', run.workspace.id, c.id);
      if (c.status !== 'created') {
        // Nothing to hand over: the submitter reads the collection and leaves it alone.
        run.count('submit collection: nothing to do');
        return `submit collection ${c.id} (${from}): nothing to do`;
      }
      c.reference = await submittedReference('collections', c.id);
      // The sandbox's outcomes: 0002 fails at once (insufficient funds); everything else is pending with the payer.
      if (c.digits === '0002') run.moveCollection(c, ['failed'], 'insufficient_funds');
      else run.moveCollection(c, ['pending'], null);
      run.count('submit collection: submitted');
      return `submit collection ${c.id}: ${c.status}`;
    }

    case 'submitRefund': {
      const r = choosePreferring(run.refunds, op.pick, op.open, (x) => x.status === 'requested');
      if (!r) return 'submitRefund: no refund';
      const from = r.status;
      t.services.submitter.kick('refund', run.workspace.id, r.id);
      if (r.status !== 'requested') {
        run.count('submit refund: nothing to do');
        return `submit refund ${r.id} (${from}): nothing to do`;
      }
      r.reference = await submittedReference('refunds', r.id);
      run.moveRefund(r, ['pending'], null);
      run.count('submit refund: submitted');
      return `submit refund ${r.id}: pending`;
    }

    case 'read': {
      if (op.refund) {
        const r = choose(run.refunds, op.pick);
        if (!r) return 'read: no refund';
        const res = await request(t, 'GET', `/v1/refunds/${r.id}`, { token });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.status, r.status);
        return `read refund ${r.id}: ${r.status}`;
      }
      const c = choose(run.collections, op.pick);
      if (!c) return 'read: no collection';
      const res = await request(t, 'GET', `/v1/collections/${c.id}`, { token });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.status, c.status);
      return `read collection ${c.id}: ${c.status}`;
    }
  }
}

/** The provider reference the submitter recorded for the row, once it has submitted it. */
async function submittedReference(table: 'collections' | 'refunds', id: string): Promise<string> {
  const reference = await waitFor(`submission of ${table} ${id}`, async () => {
    const { rows } = await t.db.query<{ provider_reference: string | null; submitted_at: Date | null }>(
      `SELECT provider_reference, submitted_at FROM ${table} WHERE id = $1`,
      [id],
    );
    return rows[0]?.submitted_at ? (rows[0].provider_reference ?? '') : undefined;
  });
  assert.ok(reference.length > 0, `a submitted row of ${table} has the provider reference`);
  return reference;
}
