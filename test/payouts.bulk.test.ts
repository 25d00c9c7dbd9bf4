// Bulk payouts (POST /v1/payouts/bulk) through HTTP: each item committed or refused on its own, in request order; an
// item that would overdraw is refused while the others commit; a retried request, a key shared with the single commit
// and two bulk requests racing on the same keys commit nothing twice; the request's limits and who may call it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { verifyLedger } from '../src/modules/ledger/ledger.verify.js';
import { fingerprint } from '../src/platform/idempotency.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  FAST_LIFECYCLE,
  liquidityProviderToken,
  newKey,
  request,
  startTestApp,
  waitFor,
} from './helpers/harness.js';

const t = await startTestApp(FAST_LIFECYCLE, { workers: true });
after(async () => t.close());
const lpToken = await liquidityProviderToken(t);

interface Item {
  idempotency_key: string;
  route_id: string;
  beneficiary_id: string;
  amount: number;
  reference: string;
  metadata?: Record<string, string>;
}
interface Result {
  index: number;
  idempotency_key: string;
  status: 'committed' | 'refused';
  replayed?: boolean;
  payout?: { transaction_id: string; source_amount: number; reference: string; status: string };
  problem?: { code: string; status: number; errors?: { field: string }[] };
}

async function createRoute(): Promise<string> {
  const res = await request(t, 'POST', '/v1/api/routes', {
    token: lpToken,
    body: { source: 'KES', market: 'KE', rail: 'mpesa', min_amount: 100, max_amount: 20_000_000 },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.route_id;
}

/** A beneficiary whose number ends 0005: its payouts stay pending, so nothing settles under a test. */
async function beneficiary(token: string, phone = '+254712340005'): Promise<string> {
  const res = await request(t, 'POST', '/v1/api/beneficiaries', {
    token,
    body: { name: 'Achieng Otieno', market: 'KE', rail: 'mpesa', phone_number: phone },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.beneficiary_id;
}

/** Credits `amount` KES cents to the workspace: a collection driven to successful. */
async function fund(token: string, amount: number): Promise<void> {
  const c = await createCollection(t, token, { amount });
  assert.equal(c.status, 201, c.text);
  const s = await request(t, 'POST', `/v1/sandbox/collections/${c.body.collection_id}/simulate`, {
    token,
    body: { outcome: 'successful' },
  });
  assert.equal(s.status, 200, s.text);
}

async function available(token: string): Promise<number> {
  const res = await request(t, 'GET', '/v1/balances', { token });
  return res.body.data.find((b: { currency: string }) => b.currency === 'KES')?.available ?? 0;
}

const bulk = (token: string, items: unknown[]) =>
  request<{ data: Result[] }>(t, 'POST', '/v1/payouts/bulk', { token, body: { items } });

async function payoutsOf(workspaceId: string): Promise<{ id: string; reference: string; source_amount: number }[]> {
  const { rows } = await t.db.query<{ id: string; reference: string; source_amount: number }>(
    'SELECT id, reference, source_amount FROM payouts WHERE workspace_id = $1 ORDER BY reference',
    [workspaceId],
  );
  return rows;
}

async function createdEvents(workspaceId: string): Promise<string[]> {
  const { rows } = await t.db.query<{ object_id: string }>(
    "SELECT object_id FROM events WHERE workspace_id = $1 AND type = 'payout.created' ORDER BY object_id",
    [workspaceId],
  );
  return rows.map((r) => r.object_id);
}

const item = (route: string, ben: string, amount: number, reference: string, key = newKey()): Item => ({
  idempotency_key: key,
  route_id: route,
  beneficiary_id: ben,
  amount,
  reference,
});
const withoutKey = ({ idempotency_key: _key, ...body }: Item) => body;

describe('POST /v1/payouts/bulk: each item on its own', () => {
  it('a balance that covers some items: those commit (ordinary payouts with their events), the one that would overdraw and the bad ones are refused, in request order', async () => {
    const ws = await createWorkspace(t, 'bulk-partial');
    await fund(ws.token, 5_000);
    const route = await createRoute();
    const ben = await beneficiary(ws.token);
    const inactive = await beneficiary(ws.token, '+254712340105');
    const gone = await request(t, 'DELETE', `/v1/api/beneficiaries/${inactive}`, { token: ws.token });
    assert.equal(gone.status, 200, gone.text);
    const other = await createWorkspace(t, 'bulk-partial-other');
    const foreign = await beneficiary(other.token);
    const items = [
      item(route, ben, 1_500, 'bulk-a'),
      item(route, ben, 1_500, 'bulk-b'),
      item(route, ben, 1_500, 'bulk-c'),
      item(route, ben, 1_500, 'bulk-d'), // 500 left: would overdraw
      item(route, inactive, 200, 'bulk-e'),
      item(route, foreign, 200, 'bulk-f'),
      item(route, ben, 50, 'bulk-g'), // under the route's minimum
      item(route, ben, 400, 'bulk-h'), // fits what is left
    ];
    const res = await bulk(ws.token, items);
    assert.equal(res.status, 200, res.text);
    const data = res.body.data;
    assert.deepEqual(
      data.map((d) => [d.index, d.idempotency_key, d.status, d.problem?.code]),
      items.map((x, i) => [
        i,
        x.idempotency_key,
        ...(
          [
            ['committed', undefined],
            ['committed', undefined],
            ['committed', undefined],
            ['refused', 'insufficient_balance'],
            ['refused', 'beneficiary_inactive'],
            ['refused', 'not_found'],
            ['refused', 'amount_out_of_range'],
            ['committed', undefined],
          ] as const
        )[i]!,
      ]),
    );
    assert.equal(data[3]!.problem!.status, 422);
    assert.deepEqual(
      data[3]!.problem!.errors?.map((e) => e.field),
      ['amount'],
    );
    for (const d of data.filter((x) => x.status === 'committed')) {
      assert.equal(d.replayed, false);
      assert.equal(d.payout!.reference, items[d.index]!.reference);
      assert.equal(d.payout!.status, 'created');
    }
    // Ordinary payouts: readable one by one, each with its own payout.created event, the reservation in the ledger.
    const committed = data.filter((d) => d.status === 'committed').map((d) => d.payout!.transaction_id);
    for (const id of committed) {
      const one = await request(t, 'GET', `/v1/api/transactions/${id}`, { token: ws.token });
      assert.equal(one.status, 200, one.text);
    }
    assert.deepEqual(await createdEvents(ws.id), [...committed].sort());
    assert.deepEqual(
      (await payoutsOf(ws.id)).map((p) => [p.reference, p.source_amount]),
      [
        ['bulk-a', 1_500],
        ['bulk-b', 1_500],
        ['bulk-c', 1_500],
        ['bulk-h', 400],
      ],
    );
    assert.equal(await available(ws.token), 100);
    assert.deepEqual(await verifyLedger(t.db), []);
  });

  it('a retried request commits nothing twice: committed keys answer their stored payouts (one read, replayed), refused ones are tried again', async () => {
    const ws = await createWorkspace(t, 'bulk-retry');
    await fund(ws.token, 3_000);
    const route = await createRoute();
    const ben = await beneficiary(ws.token);
    const items = [
      item(route, ben, 1_000, 'retry-a'),
      item(route, ben, 1_000, 'retry-b'),
      item(route, ben, 2_000, 'retry-c'), // 1_000 left: refused the first time
    ];
    const first = await bulk(ws.token, items);
    assert.deepEqual(
      first.body.data.map((d) => d.status),
      ['committed', 'committed', 'refused'],
    );
    // The mechanism: each committed key's outcome is stored under the single commit's fingerprint of its body.
    const { rows } = await t.db.query<{ key: string; fingerprint: string; response_status: number }>(
      'SELECT key, fingerprint, response_status FROM idempotency_keys WHERE workspace_id = $1 ORDER BY key',
      [ws.id],
    );
    const committedKeys = items.slice(0, 2);
    assert.deepEqual(
      rows.filter((r) => items.some((x) => x.idempotency_key === r.key)),
      committedKeys
        .map((x) => ({
          key: x.idempotency_key,
          fingerprint: fingerprint('POST', '/api/transactions/commit', withoutKey(x)),
          response_status: 201,
        }))
        .sort((a, b) => a.key.localeCompare(b.key)),
    );

    await fund(ws.token, 1_000); // now the third fits
    const again = await bulk(ws.token, items);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(
      again.body.data.map((d) => [d.status, d.replayed]),
      [
        ['committed', true],
        ['committed', true],
        ['committed', false],
      ],
    );
    for (const i of [0, 1])
      assert.deepEqual(again.body.data[i]!.payout, first.body.data[i]!.payout, 'the stored payout, not a new one');

    // The audit log: each request's row, and one payout.commit row per payout it wrote (none for a replayed key).
    const audit = await t.db.query<{ action: string; object_id: string | null; request_id: string }>(
      `SELECT action, object_id, request_id FROM audit_events WHERE workspace_id = $1 AND action LIKE 'payout.%'
        ORDER BY occurred_at, action`,
      [ws.id],
    );
    const ids = (d: { payout?: { transaction_id: string } }) => d.payout?.transaction_id;
    const rowsOf = (res: typeof first) =>
      audit.rows.filter((r) => r.request_id === res.headers.get('x-request-id')).map((r) => [r.action, r.object_id]);
    assert.deepEqual(rowsOf(first), [
      ['payout.bulk_commit', null],
      ['payout.commit', ids(first.body.data[0]!)],
      ['payout.commit', ids(first.body.data[1]!)],
    ]);
    assert.deepEqual(rowsOf(again), [
      ['payout.bulk_commit', null],
      ['payout.commit', ids(again.body.data[2]!)],
    ]);
    assert.equal((await payoutsOf(ws.id)).length, 3);
    assert.equal((await createdEvents(ws.id)).length, 3);
    assert.equal(await available(ws.token), 0);

    // A key reused with another body is refused; the rest of the request still commits.
    const changed = [{ ...items[0]!, amount: 999 }, item(route, ben, 0 + 100, 'retry-d')];
    await fund(ws.token, 100);
    const reused = await bulk(ws.token, changed);
    assert.deepEqual(
      reused.body.data.map((d) => [d.status, d.problem?.code]),
      [
        ['refused', 'idempotency_key_reused'],
        ['committed', undefined],
      ],
    );
    assert.equal((await payoutsOf(ws.id)).length, 4);
  });

  it('shares the key space of POST /api/transactions/commit: a key committed by either is replayed by the other', async () => {
    const ws = await createWorkspace(t, 'bulk-keys');
    await fund(ws.token, 10_000);
    const route = await createRoute();
    const ben = await beneficiary(ws.token);
    const single = item(route, ben, 1_000, 'keys-single');
    const made = await request(t, 'POST', '/api/transactions/commit', {
      token: ws.token,
      body: withoutKey(single),
      idempotencyKey: single.idempotency_key,
    });
    assert.equal(made.status, 201, made.text);
    const inBulk = item(route, ben, 2_000, 'keys-bulk');
    const res = await bulk(ws.token, [single, inBulk, { ...single, idempotency_key: newKey(), reference: 'keys-x' }]);
    assert.deepEqual(
      res.body.data.map((d) => [d.status, d.replayed]),
      [
        ['committed', true],
        ['committed', false],
        ['committed', false],
      ],
    );
    assert.equal(res.body.data[0]!.payout!.transaction_id, made.body.transaction_id);
    // The bulk-committed key, sent to the single commit: its stored 201, byte for byte what a single commit stores.
    const replay = await request(t, 'POST', '/api/transactions/commit', {
      token: ws.token,
      body: withoutKey(inBulk),
      idempotencyKey: inBulk.idempotency_key,
    });
    assert.equal(replay.status, 201, replay.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.headers.get('location'), `/v1/api/transactions/${res.body.data[1]!.payout!.transaction_id}`);
    assert.deepEqual(replay.body, res.body.data[1]!.payout);
    // Another body under that key, through the single commit: 422 as any reuse.
    assertProblem(
      await request(t, 'POST', '/api/transactions/commit', {
        token: ws.token,
        body: { ...withoutKey(inBulk), amount: 2_001 },
        idempotencyKey: inBulk.idempotency_key,
      }),
      422,
      'idempotency_key_reused',
    );
    assert.equal((await payoutsOf(ws.id)).length, 3);
    assert.equal(await available(ws.token), 10_000 - 1_000 - 2_000 - 1_000);
  });
});

describe('POST /v1/payouts/bulk: at once', () => {
  it('two bulk requests racing on the same keys commit each key once; every answer for a key is its one payout or idempotency_key_in_use', async () => {
    const ws = await createWorkspace(t, 'bulk-race');
    await fund(ws.token, 100_000);
    const route = await createRoute();
    const ben = await beneficiary(ws.token);
    const items = Array.from({ length: 12 }, (_, i) =>
      item(route, ben, 1_000 + i, `race-${String(i).padStart(2, '0')}`),
    );
    // The second request sends them in the other order, so the two meet in the middle.
    const [a, b] = await Promise.all([bulk(ws.token, items), bulk(ws.token, [...items].reverse())]);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    const payouts = await payoutsOf(ws.id);
    assert.deepEqual(
      payouts.map((p) => [p.reference, p.source_amount]),
      items.map((x) => [x.reference, x.amount]),
      'one payout per key',
    );
    const idOf = new Map(payouts.map((p) => [p.reference, p.id]));
    for (const d of [...a.body.data, ...b.body.data]) {
      const reference = items.find((x) => x.idempotency_key === d.idempotency_key)!.reference;
      if (d.status === 'committed') assert.equal(d.payout!.transaction_id, idOf.get(reference));
      else assert.equal(d.problem!.code, 'idempotency_key_in_use', JSON.stringify(d));
    }
    // Each key was committed by exactly one of the two (replayed: false); the other met it in flight or stored.
    for (const x of items) {
      const answers = [...a.body.data, ...b.body.data].filter((d) => d.idempotency_key === x.idempotency_key);
      assert.equal(answers.length, 2);
      assert.equal(answers.filter((d) => d.status === 'committed' && d.replayed === false).length, 1, x.reference);
    }
    // Request order is kept in each answer.
    assert.deepEqual(
      b.body.data.map((d) => d.idempotency_key),
      [...items].reverse().map((x) => x.idempotency_key),
    );
    assert.equal((await createdEvents(ws.id)).length, 12);
    const total = items.reduce((s, x) => s + x.amount, 0);
    assert.equal(await available(ws.token), 100_000 - total);
    // Whatever was in use is answered by a retry from its stored payout.
    const retry = await bulk(ws.token, items);
    assert.ok(retry.body.data.every((d) => d.status === 'committed' && d.replayed === true));
    assert.equal((await payoutsOf(ws.id)).length, 12);
  });

  it('a key another request holds is tried again after the other items: still held, refused idempotency_key_in_use; released meanwhile, committed', async () => {
    const ws = await createWorkspace(t, 'bulk-held');
    await fund(ws.token, 100_000);
    const route = await createRoute();
    const ben = await beneficiary(ws.token);
    const held = item(route, ben, 1_000, 'held');
    const others = Array.from({ length: 80 }, (_, i) => item(route, ben, 100, `other-${String(i).padStart(2, '0')}`));
    // Another request's hold on the key, as the idempotency engine takes it (src/platform/idempotency.repository.ts).
    const holder = await t.db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 7201))', [
        `${ws.id}/${held.idempotency_key}`,
      ]);
      const first = await bulk(ws.token, [held, others[0]!]);
      assert.deepEqual(
        first.body.data.map((d) => [d.status, d.problem?.code]),
        [
          ['refused', 'idempotency_key_in_use'],
          ['committed', undefined],
        ],
      );
      assert.equal(first.body.data[0]!.problem!.status, 409);
      // Released while the request works through its other items: the second pass commits the held key.
      const second = bulk(ws.token, [held, ...others.slice(1)]);
      await waitFor('the request to pass its first items', async () =>
        (await payoutsOf(ws.id)).some((p) => p.reference === 'other-02') ? true : undefined,
      );
      await holder.query('COMMIT');
      const answer = await second;
      assert.deepEqual(
        [answer.body.data[0]!.status, answer.body.data[0]!.replayed],
        ['committed', false],
        JSON.stringify(answer.body.data[0]),
      );
      assert.ok(answer.body.data.every((d) => d.status === 'committed'));
    } finally {
      holder.release();
    }
    const payouts = await payoutsOf(ws.id);
    assert.equal(payouts.length, 81);
    assert.equal(payouts.filter((p) => p.reference === 'held').length, 1);
  });

  it('two bulk requests with their own keys against a balance that covers 7 of 16 items: exactly 7 commit, the balance never goes negative', async () => {
    const ws = await createWorkspace(t, 'bulk-overdraw');
    await fund(ws.token, 7_500);
    const route = await createRoute();
    const ben = await beneficiary(ws.token);
    const batch = (p: string) => Array.from({ length: 8 }, (_, i) => item(route, ben, 1_000, `${p}-${i}`));
    const [a, b] = await Promise.all([bulk(ws.token, batch('x')), bulk(ws.token, batch('y'))]);
    const all = [...a.body.data, ...b.body.data];
    assert.equal(all.filter((d) => d.status === 'committed').length, 7);
    for (const d of all.filter((x) => x.status === 'refused')) assert.equal(d.problem!.code, 'insufficient_balance');
    assert.equal((await payoutsOf(ws.id)).length, 7);
    assert.equal(await available(ws.token), 500);
    assert.deepEqual(await verifyLedger(t.db), []);
  });
});

describe('POST /v1/payouts/bulk: the request', () => {
  it('more than 100 items, none, duplicate keys, an unknown field: 400 and nothing committed', async () => {
    const ws = await createWorkspace(t, 'bulk-limits');
    await fund(ws.token, 1_000_000);
    const route = await createRoute();
    const ben = await beneficiary(ws.token);
    const many = Array.from({ length: 101 }, (_, i) => item(route, ben, 100, `many-${i}`));
    assertProblem(await bulk(ws.token, many), 400, 'validation_failed');
    assertProblem(await bulk(ws.token, []), 400, 'validation_failed');
    const dup = [
      item(route, ben, 100, 'dup-0', 'same'),
      item(route, ben, 100, 'dup-1'),
      item(route, ben, 200, 'dup-2', 'same'),
    ];
    const res = await bulk(ws.token, dup);
    assertProblem(res, 400, 'validation_failed');
    assert.deepEqual((res.body as unknown as { errors: unknown[] }).errors, [
      { field: 'items.2.idempotency_key', message: 'repeats the key of items.0' },
    ]);
    assertProblem(await bulk(ws.token, [{ ...item(route, ben, 100, 'typo'), amuont: 1 }]), 400, 'validation_failed');
    assertProblem(
      await bulk(ws.token, [{ ...item(route, ben, 100, 'bad-key'), idempotency_key: 'a b' }]),
      400,
      'validation_failed',
    );
    assert.equal((await payoutsOf(ws.id)).length, 0);
    // 100 is allowed.
    const hundred = await bulk(ws.token, many.slice(0, 100));
    assert.equal(hundred.status, 200, hundred.text);
    assert.equal(hundred.body.data.filter((d) => d.status === 'committed').length, 100);
    assert.equal((await payoutsOf(ws.id)).length, 100);
  });

  it('401 without a token; 403 for a liquidity provider', async () => {
    assertProblem(await bulk(undefined as unknown as string, []), 401, 'unauthorized');
    assertProblem(
      await request(t, 'POST', '/v1/payouts/bulk', {
        token: lpToken,
        body: { items: [item(randomUUID(), randomUUID(), 100, 'lp')] },
      }),
      403,
      'forbidden',
    );
  });
});
