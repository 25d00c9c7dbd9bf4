// GET /v1/collections filters: market, rail, an exact reference and an exact payer phone number, alone and
// together with status and paging; never another workspace's collections; each filter read from its index in the
// list's order (migration 020), so a page costs its own rows whatever the workspace holds.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Queryable } from '../src/db/pool.js';
import { listCollections, type CollectionMatch } from '../src/modules/collections/collections.repository.js';
import {
  assertProblem,
  createCollection,
  createWorkspace,
  request,
  startTestApp,
  type TestApp,
} from './helpers/harness.js';

let t: TestApp;
let other: { id: string; token: string };
/** Collection ids by name, in the order they were made (the list shows them newest first). */
const made: Record<string, string> = {};

const KE_PHONE = '+254711000111';
const SHARED_REFERENCE = 'filters-shared-ref';

async function make(name: string, token: string, overrides: Record<string, unknown>, path?: string): Promise<void> {
  const res = await createCollection(t, token, overrides, path);
  assert.equal(res.status, 201, res.text);
  made[name] = res.body.collection_id;
}

const list = (query: string, token = t.demoToken) => request(t, 'GET', `/v1/collections?${query}`, { token });
const ids = (body: { data: { collection_id: string }[] }) => body.data.map((c) => c.collection_id);

before(async () => {
  // No workers: every collection stays `created`, except the one simulated to failure below.
  t = await startTestApp();
  other = await createWorkspace(t, 'Filters elsewhere');
  await make('ke1', t.demoToken, { reference: SHARED_REFERENCE, customer: { phone_number: KE_PHONE } });
  await make('ke2', t.demoToken, { reference: 'filters-ke2', customer: { phone_number: KE_PHONE } });
  await make(
    'keAirtel',
    t.demoToken,
    { reference: 'filters-airtel', customer: { phone_number: '+254722000222' } },
    '/v1/collections/KE/rails/airtel_money',
  );
  await make(
    'ug',
    t.demoToken,
    { amount: 5_000, currency: 'UGX', reference: 'filters-ug', customer: { phone_number: '+256772000333' } },
    '/v1/collections/UG/rails/mtn_momo',
  );
  await make(
    'gh',
    t.demoToken,
    { currency: 'GHS', reference: SHARED_REFERENCE, customer: { phone_number: '+233244000444' } },
    '/v1/collections/GH/rails/mtn_momo',
  );
  await make('ke3', t.demoToken, { reference: 'filters-ke3', customer: { phone_number: KE_PHONE } });
  // Another workspace with the same reference and the same payer: never in the demo workspace's lists.
  await make('elsewhere', other.token, { reference: SHARED_REFERENCE, customer: { phone_number: KE_PHONE } });
});
after(async () => t?.close());

describe('GET /v1/collections: market, rail, reference and phone filters', () => {
  it('market alone, rail alone (in every market), and market with rail', async () => {
    const ke = await list('market=KE');
    assert.equal(ke.status, 200, ke.text);
    assert.deepEqual(ids(ke.body), [made.ke3, made.keAirtel, made.ke2, made.ke1]);
    const momo = await list('rail=mtn_momo');
    assert.deepEqual(ids(momo.body), [made.gh, made.ug]);
    const ugMomo = await list('market=UG&rail=mtn_momo');
    assert.deepEqual(ids(ugMomo.body), [made.ug]);
    const none = await list('market=KE&rail=mtn_momo');
    assert.deepEqual(ids(none.body), []);
  });

  it('an exact reference: every collection of the workspace with it, and no prefix match', async () => {
    const shared = await list(`reference=${SHARED_REFERENCE}`);
    assert.deepEqual(ids(shared.body), [made.gh, made.ke1]);
    const prefix = await list('reference=filters-ke');
    assert.deepEqual(ids(prefix.body), []);
  });

  it('an exact payer phone number in E.164', async () => {
    const res = await list(`phone_number=${encodeURIComponent(KE_PHONE)}`);
    assert.deepEqual(ids(res.body), [made.ke3, made.ke2, made.ke1]);
    for (const c of res.body.data) assert.equal(c.customer.phone_number, KE_PHONE);
  });

  it('filters combine with each other and with status', async () => {
    const res = await list(`market=GH&reference=${SHARED_REFERENCE}`);
    assert.deepEqual(ids(res.body), [made.gh]);
    const failed = await request(t, 'POST', `/v1/sandbox/collections/${made.ke2}/simulate`, {
      token: t.demoToken,
      body: { outcome: 'failed', reason: 'payer_declined' },
    });
    assert.equal(failed.status, 200, failed.text);
    const phoneFailed = await list(`phone_number=${encodeURIComponent(KE_PHONE)}&status=failed`);
    assert.deepEqual(ids(phoneFailed.body), [made.ke2]);
    const phoneCreated = await list(`phone_number=${encodeURIComponent(KE_PHONE)}&status=created&rail=mpesa`);
    assert.deepEqual(ids(phoneCreated.body), [made.ke3, made.ke1]);
  });

  it('paging keeps the filter: pages of one walk exactly the filtered set', async () => {
    const seen: string[] = [];
    let query = `phone_number=${encodeURIComponent(KE_PHONE)}&limit=1`;
    for (;;) {
      const res = await list(query);
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body.data.length <= 1);
      seen.push(...ids(res.body));
      if (!res.body.has_more) break;
      query = `phone_number=${encodeURIComponent(KE_PHONE)}&limit=1&cursor=${encodeURIComponent(res.body.next_cursor)}`;
    }
    assert.deepEqual(seen, [made.ke3, made.ke2, made.ke1]);
  });

  it("never shows another workspace's collections, with the same reference or phone number", async () => {
    for (const query of [`reference=${SHARED_REFERENCE}`, `phone_number=${encodeURIComponent(KE_PHONE)}`]) {
      const mine = await list(query);
      assert.ok(!ids(mine.body).includes(made.elsewhere ?? ''), query);
      const theirs = await list(query, other.token);
      assert.deepEqual(ids(theirs.body), [made.elsewhere], query);
    }
  });

  it('400 validation_failed for a phone number that is not E.164, a lowercase market, an empty reference', async () => {
    for (const query of ['phone_number=0711000111', 'market=ke', 'rail=M-Pesa', 'reference=']) {
      assertProblem(await list(query), 400, 'validation_failed');
    }
  });
});

describe('the filters are read from an index, in list order', () => {
  /** The plan of the list query for `match`: the SQL the repository sends, explained with sequential scans off. */
  async function plan(match: CollectionMatch, status?: 'created'): Promise<string> {
    const sent: { text: string; values: unknown[] }[] = [];
    const recorder = {
      query: (text: string, values: unknown[]) => {
        sent.push({ text, values });
        return t.db.query(text, values);
      },
    } as unknown as Queryable;
    const filter = { status, range: { from: undefined, toExclusive: undefined }, after: undefined, fetch: 21 };
    await listCollections(recorder, t.demoWorkspaceId, filter, match);
    const [query] = sent;
    assert.ok(query);
    const client = await t.db.connect();
    try {
      await client.query('SET enable_seqscan = off');
      await client.query('SET enable_bitmapscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (FORMAT JSON) ${query.text}`,
        query.values,
      );
      return JSON.stringify(rows[0]?.['QUERY PLAN']);
    } finally {
      await client.query('RESET ALL');
      client.release();
    }
  }

  it('market, rail, reference and phone each use their own index, with no sort', async () => {
    await t.db.query('ANALYZE collections');
    const cases: [CollectionMatch, string][] = [
      [{ market: 'KE' }, 'collections_list_market'],
      [{ rail: 'mpesa' }, 'collections_list_rail'],
      [{ reference: SHARED_REFERENCE }, 'collections_list_reference'],
      [{ phone_number: KE_PHONE }, 'collections_list_phone'],
    ];
    for (const [match, index] of cases) {
      const explained = await plan(match);
      assert.match(explained, new RegExp(`"Index Name":"${index}"`), `${JSON.stringify(match)}: ${explained}`);
      assert.doesNotMatch(explained, /"Node Type":"Sort"/, `${JSON.stringify(match)}: ${explained}`);
    }
  });
});
