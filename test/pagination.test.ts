// GET /v1/collections (and every list): cursor paging, limits, status and date filters, tampered cursors,
// stability under concurrent inserts. Through HTTP on a real database.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createCollection,
  createWorkspace,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
  assertProblem,
} from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

interface Item {
  collection_id: string;
  created_at: string;
  status: string;
  [key: string]: unknown;
}

interface PageBody {
  data: Item[];
  has_more: boolean;
  next_cursor: string | null;
}

/** A 400 validation_failed whose `errors` names the field. */
function assertFieldProblem(res: ApiResponse, code: string, field: string): void {
  assertProblem(res, 400, code);
  assert.ok(Array.isArray(res.body.errors), `no errors array: ${res.text}`);
  assert.ok(
    res.body.errors.some((e: { field: string }) => e.field === field),
    `expected an errors entry for '${field}': ${res.text}`,
  );
}

/** The body is a page on 200 and a problem document otherwise. */
const list = (token: string, query = ''): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/collections${query ? `?${query}` : ''}`, { token });

/** Creates `count` collections, `concurrency` at a time; returns their records in creation order of the responses. */
async function createMany(token: string, count: number, concurrency = 10): Promise<Item[]> {
  const out: Item[] = [];
  for (let i = 0; i < count; i += concurrency) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(concurrency, count - i) }, () => createCollection(t, token)),
    );
    for (const res of batch) {
      assert.equal(res.status, 201, res.text);
      out.push(res.body as Item);
    }
  }
  return out;
}

/** Follows next_cursor from the first page to the last; returns every page body. */
/** Asserts the pages hold `lengths` items, and every page but the last says has_more. */
function assertPages(pages: PageBody[], lengths: number[]): void {
  assert.deepEqual(
    pages.map((p) => p.data.length),
    lengths,
  );
  assert.deepEqual(
    pages.map((p) => p.has_more),
    lengths.map((_, i) => i < lengths.length - 1),
  );
}

async function walk(token: string, query: string, maxPages = 1000): Promise<PageBody[]> {
  const pages: PageBody[] = [];
  let cursor: string | null = null;
  do {
    const q: string = [query, cursor === null ? '' : `cursor=${encodeURIComponent(cursor)}`].filter(Boolean).join('&');
    const res = await list(token, q);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['data', 'has_more', 'next_cursor']);
    pages.push(res.body);
    if (res.body.has_more) {
      assert.equal(typeof res.body.next_cursor, 'string', 'has_more without a next_cursor');
      assert.ok((res.body.next_cursor as string).length > 0);
    } else {
      assert.equal(res.body.next_cursor, null, 'the last page must have next_cursor null');
    }
    cursor = res.body.next_cursor;
    assert.ok(pages.length <= maxPages, 'the walk does not end');
  } while (cursor !== null);
  return pages;
}

const ids = (items: Item[]): string[] => items.map((c) => c.collection_id);

/** Newest first: created_at descending, ties by collection_id descending. */
function assertNewestFirst(items: Item[]): void {
  for (let i = 1; i < items.length; i++) {
    const a = items[i - 1] as Item;
    const b = items[i] as Item;
    const ordered = a.created_at > b.created_at || (a.created_at === b.created_at && a.collection_id > b.collection_id);
    assert.ok(
      ordered,
      `items ${i - 1} and ${i} are out of order: ${a.created_at} ${a.collection_id} then ${b.created_at} ${b.collection_id}`,
    );
  }
}

/** The ids the database holds for a workspace, in the contract's order, optionally filtered. */
async function expectedIds(workspaceId: string, where = 'TRUE', params: unknown[] = []): Promise<string[]> {
  const { rows } = await t.db.query<{ id: string }>(
    `SELECT id FROM collections WHERE workspace_id = $1 AND (${where}) ORDER BY created_at DESC, id DESC`,
    [workspaceId, ...params],
  );
  return rows.map((r) => r.id);
}

function assertEachOnce(items: Item[], expected: string[]): void {
  const got = ids(items);
  assert.equal(new Set(got).size, got.length, 'an item appears more than once');
  assert.deepEqual(got, expected);
}

describe('GET /v1/collections: walking 250 collections', () => {
  let ws: { id: string; token: string };
  let created: Item[];

  before(async () => {
    ws = await createWorkspace(t, 'pagination-walk');
    created = await createMany(ws.token, 250);
  });

  it('limit=100 gives pages of 100, 100, 50 with has_more true, true, false and next_cursor null on the last', async () => {
    const pages = await walk(ws.token, 'limit=100');
    assertPages(pages, [100, 100, 50]);
    assert.equal(typeof pages[0]?.next_cursor, 'string');
    assert.equal(typeof pages[1]?.next_cursor, 'string');
    assert.notEqual(pages[0]?.next_cursor, pages[1]?.next_cursor);
    assert.equal(pages[2]?.next_cursor, null);
  });

  it('returns every collection of the workspace exactly once, newest first, each as the full record', async () => {
    const items = (await walk(ws.token, 'limit=100')).flatMap((p) => p.data);
    assert.equal(items.length, 250);
    assert.equal(new Set(ids(items)).size, 250, 'an item appears more than once');
    assert.deepEqual(new Set(ids(items)), new Set(ids(created)));
    assertNewestFirst(items);
    assert.deepEqual(ids(items), await expectedIds(ws.id));
    const byId = new Map(created.map((c) => [c.collection_id, c]));
    for (const item of items) assert.deepEqual(item, byId.get(item.collection_id));
    for (const item of items) assert.equal(item.integrator_id, ws.id);
  });

  it('the order is the same at every page size, and a page size dividing the total ends without an empty page', async () => {
    const all = (await walk(ws.token, 'limit=100')).flatMap((p) => p.data);
    const by50 = await walk(ws.token, 'limit=50');
    assert.deepEqual(
      by50.map((p) => p.data.length),
      [50, 50, 50, 50, 50],
    );
    assert.deepEqual(
      by50.map((p) => p.has_more),
      [true, true, true, true, false],
    );
    assert.deepEqual(ids(by50.flatMap((p) => p.data)), ids(all));
    const by1 = await walk(ws.token, 'limit=1');
    assert.equal(by1.length, 250);
    assert.deepEqual(ids(by1.flatMap((p) => p.data)), ids(all));
  });

  it('the default limit is 20', async () => {
    const res = await list(ws.token);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.length, 20);
    assert.equal(res.body.has_more, true);
    assert.equal(typeof res.body.next_cursor, 'string');
    const all = await expectedIds(ws.id);
    assert.deepEqual(ids(res.body.data), all.slice(0, 20));
    const second = await list(ws.token, `cursor=${encodeURIComponent(res.body.next_cursor as string)}`);
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(ids(second.body.data), all.slice(20, 40));
  });

  it('limit=1 and limit=100 are accepted', async () => {
    const one = await list(ws.token, 'limit=1');
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.data.length, 1);
    const hundred = await list(ws.token, 'limit=100');
    assert.equal(hundred.status, 200, hundred.text);
    assert.equal(hundred.body.data.length, 100);
  });

  it("shows only the caller's workspace: another workspace sees none of these", async () => {
    const other = await createWorkspace(t, 'pagination-other');
    const res = await list(other.token, 'limit=100');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { data: [], has_more: false, next_cursor: null });
    const demo = (await walk(t.demoToken, 'limit=100')).flatMap((p) => p.data);
    const mine = new Set(ids(created));
    assert.ok(demo.every((c) => !mine.has(c.collection_id)));
  });

  it("a cursor of one workspace does not reveal another workspace's collections", async () => {
    const first = await list(ws.token, 'limit=10');
    assert.equal(first.status, 200, first.text);
    const other = await createWorkspace(t, 'pagination-cursor-other');
    const theirs = ids(await createMany(other.token, 3));
    // Older than the cursor's position, so a cursor that leaked across workspaces would page into them.
    await t.db.query(`UPDATE collections SET created_at = '2020-01-01T00:00:00Z' WHERE workspace_id = $1`, [other.id]);
    const res = await list(other.token, `limit=100&cursor=${encodeURIComponent(first.body.next_cursor as string)}`);
    // The cursor is only a position: it may be refused, or it pages through the caller's own collections only.
    if (res.status === 200) {
      const page = res.body as PageBody;
      assert.deepEqual(new Set(ids(page.data)), new Set(theirs));
      assert.ok(page.data.every((c) => c.integrator_id === other.id));
    } else {
      assertProblem(res, 400, 'invalid_cursor');
    }
  });
});

describe('GET /v1/collections: limit and unknown parameters', () => {
  let ws: { id: string; token: string };
  before(async () => {
    ws = await createWorkspace(t, 'pagination-limits');
    await createMany(ws.token, 3);
  });

  for (const limit of ['0', '101', 'abc', '-1', '1.5', '1000000']) {
    it(`limit=${limit} is 400 validation_failed naming limit`, async () => {
      assertFieldProblem(await list(ws.token, `limit=${limit}`), 'validation_failed', 'limit');
    });
  }

  it('an unknown query parameter is 400 validation_failed naming it', async () => {
    const res = await list(ws.token, 'foo=1');
    assertFieldProblem(res, 'validation_failed', 'foo');
    assertFieldProblem(await list(ws.token, 'limit=10&foo=1'), 'validation_failed', 'foo');
    assertFieldProblem(await list(ws.token, 'page=2'), 'validation_failed', 'page');
  });

  it('needs a token: 401 without one', async () => {
    assertProblem(await request(t, 'GET', '/v1/collections'), 401, 'unauthorized');
  });
});

describe('GET /v1/collections: status filter', () => {
  let ws: { id: string; token: string };
  let failed: string[];

  before(async () => {
    ws = await createWorkspace(t, 'pagination-status');
    const created = await createMany(ws.token, 40);
    // Every other one of the first 30 (15 in all), spread through the list.
    failed = created.filter((_, i) => i < 30 && i % 2 === 0).map((c) => c.collection_id);
    const upd = await t.db.query(`UPDATE collections SET status = 'failed' WHERE workspace_id = $1 AND id = ANY($2)`, [
      ws.id,
      failed,
    ]);
    assert.equal(upd.rowCount, 15);
    const pending = created.slice(30, 33).map((c) => c.collection_id);
    await t.db.query(`UPDATE collections SET status = 'pending' WHERE workspace_id = $1 AND id = ANY($2)`, [
      ws.id,
      pending,
    ]);
  });

  it('status=failed with limit=100 returns exactly the failed ones, each once, newest first', async () => {
    const pages = await walk(ws.token, 'status=failed&limit=100');
    assert.equal(pages.length, 1);
    assert.equal(pages[0]?.has_more, false);
    const items = pages.flatMap((p) => p.data);
    assert.ok(items.every((c) => c.status === 'failed'));
    assertEachOnce(items, await expectedIds(ws.id, `status = 'failed'`));
    assert.deepEqual(new Set(ids(items)), new Set(failed));
  });

  it('status=failed with limit=7 crosses pages (7, 7, 1) and still returns each exactly once', async () => {
    const pages = await walk(ws.token, 'status=failed&limit=7');
    assertPages(pages, [7, 7, 1]);
    const items = pages.flatMap((p) => p.data);
    assert.ok(items.every((c) => c.status === 'failed'));
    assertEachOnce(items, await expectedIds(ws.id, `status = 'failed'`));
  });

  it('status=failed with limit=5 (an exact divisor) ends with has_more false, not an empty page', async () => {
    const pages = await walk(ws.token, 'status=failed&limit=5');
    assertPages(pages, [5, 5, 5]);
  });

  it('other statuses filter too; a status with no collections gives an empty last page', async () => {
    const created = (await walk(ws.token, 'status=created&limit=100')).flatMap((p) => p.data);
    assert.equal(created.length, 22);
    assertEachOnce(created, await expectedIds(ws.id, `status = 'created'`));
    const pending = (await walk(ws.token, 'status=pending&limit=2')).flatMap((p) => p.data);
    assertEachOnce(pending, await expectedIds(ws.id, `status = 'pending'`));
    assert.equal(pending.length, 3);
    const none = await list(ws.token, 'status=refunded');
    assert.equal(none.status, 200, none.text);
    assert.deepEqual(none.body, { data: [], has_more: false, next_cursor: null });
  });

  for (const status of ['unknown', 'FAILED', 'fail', '']) {
    it(`status=${JSON.stringify(status)} is 400 validation_failed naming status`, async () => {
      assertFieldProblem(await list(ws.token, `status=${status}`), 'validation_failed', 'status');
    });
  }
});

describe('GET /v1/collections: from and to', () => {
  let ws: { id: string; token: string };
  const groups: Record<string, string[]> = {};
  const STAMPS = {
    dec31: '2025-12-31T23:59:59.999Z',
    jan1: '2026-01-01T10:00:00.000Z',
    jan2end: '2026-01-02T23:59:59.999Z',
    jan3: '2026-01-03T00:00:00.000Z',
    feb1: '2026-02-01T00:00:00.000Z',
  } as const;
  const SIZES: Record<keyof typeof STAMPS, number> = { dec31: 4, jan1: 5, jan2end: 6, jan3: 7, feb1: 3 };

  before(async () => {
    ws = await createWorkspace(t, 'pagination-dates');
    const created = await createMany(ws.token, 25);
    let at = 0;
    for (const [name, stamp] of Object.entries(STAMPS) as [keyof typeof STAMPS, string][]) {
      const group = created.slice(at, at + SIZES[name]).map((c) => c.collection_id);
      at += SIZES[name];
      groups[name] = group;
      const upd = await t.db.query('UPDATE collections SET created_at = $3 WHERE workspace_id = $1 AND id = ANY($2)', [
        ws.id,
        group,
        stamp,
      ]);
      assert.equal(upd.rowCount, group.length);
    }
    assert.equal(at, 25);
  });

  /** The ids of the named groups, in the contract's order. */
  async function expected(...names: (keyof typeof STAMPS)[]): Promise<string[]> {
    const wanted = new Set(names.flatMap((n) => groups[n] ?? []));
    return (await expectedIds(ws.id)).filter((id) => wanted.has(id));
  }

  async function filtered(query: string): Promise<Item[]> {
    return (await walk(ws.token, `${query}&limit=100`)).flatMap((p) => p.data);
  }

  it('from is inclusive, as a date and as a date-time', async () => {
    assertEachOnce(await filtered('from=2026-01-02'), await expected('jan2end', 'jan3', 'feb1'));
    assertEachOnce(await filtered('from=2026-01-02T23:59:59.999Z'), await expected('jan2end', 'jan3', 'feb1'));
    assertEachOnce(await filtered('from=2026-01-03T00:00:00.000Z'), await expected('jan3', 'feb1'));
    assertEachOnce(await filtered('from=2026-01-03'), await expected('jan3', 'feb1'));
    assertEachOnce(await filtered('from=2026-01-01T10:00:00Z'), await expected('jan1', 'jan2end', 'jan3', 'feb1'));
    assertEachOnce(await filtered('from=2026-01-01T10:00:00.001Z'), await expected('jan2end', 'jan3', 'feb1'));
  });

  it('a date-only to includes that whole UTC day', async () => {
    assertEachOnce(await filtered('to=2026-01-02'), await expected('dec31', 'jan1', 'jan2end'));
    assertEachOnce(await filtered('to=2026-01-01'), await expected('dec31', 'jan1'));
    assertEachOnce(await filtered('to=2025-12-31'), await expected('dec31'));
    assertEachOnce(await filtered('to=2026-01-03'), await expected('dec31', 'jan1', 'jan2end', 'jan3'));
  });

  it('a date-time to includes that instant and nothing after it', async () => {
    assertEachOnce(await filtered('to=2026-01-02T23:59:59.999Z'), await expected('dec31', 'jan1', 'jan2end'));
    assertEachOnce(await filtered('to=2026-01-02T23:59:59.998Z'), await expected('dec31', 'jan1'));
    assertEachOnce(await filtered('to=2026-01-03T00:00:00Z'), await expected('dec31', 'jan1', 'jan2end', 'jan3'));
  });

  it('from and to together; the same day for both gives that day', async () => {
    assertEachOnce(await filtered('from=2026-01-01&to=2026-01-01'), await expected('jan1'));
    assertEachOnce(await filtered('from=2026-01-01&to=2026-01-03'), await expected('jan1', 'jan2end', 'jan3'));
    assertEachOnce(await filtered('from=2026-01-02T00:00:00Z&to=2026-01-02'), await expected('jan2end'));
    assertEachOnce(await filtered('from=2026-01-03T00:00:00.000Z&to=2026-01-03T00:00:00.000Z'), await expected('jan3'));
    assertEachOnce(await filtered('from=2027-01-01'), []);
  });

  it('a date-time with an offset is read at that offset', async () => {
    // 02:00 at +03:00 is 2026-01-02T23:00Z: after jan1, before jan2end.
    assertEachOnce(
      await filtered(`from=${encodeURIComponent('2026-01-03T02:00:00+03:00')}`),
      await expected('jan2end', 'jan3', 'feb1'),
    );
    // 2026-01-02T20:59:59.999-03:00 is 23:59:59.999Z.
    assertEachOnce(
      await filtered(`to=${encodeURIComponent('2026-01-02T20:59:59.999-03:00')}`),
      await expected('dec31', 'jan1', 'jan2end'),
    );
  });

  it('walking a date-filtered list with a small limit returns each match exactly once, across equal timestamps', async () => {
    for (const limit of [1, 2, 3, 4]) {
      const pages = await walk(ws.token, `from=2026-01-01&to=2026-01-03&limit=${limit}`);
      const items = pages.flatMap((p) => p.data);
      assertEachOnce(items, await expected('jan1', 'jan2end', 'jan3'));
      assertNewestFirst(items);
      assert.equal(pages.length, Math.ceil(18 / limit));
    }
    const withStatus = await walk(ws.token, 'status=created&from=2026-01-02&limit=4');
    assertEachOnce(
      withStatus.flatMap((p) => p.data),
      await expected('jan2end', 'jan3', 'feb1'),
    );
  });

  it('from after to is 400 validation_failed', async () => {
    assertFieldProblem(await list(ws.token, 'from=2026-01-03&to=2026-01-02'), 'validation_failed', 'from');
    assertFieldProblem(
      await list(ws.token, 'from=2026-01-02T00:00:00.001Z&to=2026-01-02T00:00:00Z'),
      'validation_failed',
      'from',
    );
  });

  for (const [field, value] of [
    ['to', '2026-13-45'],
    ['from', 'yesterday'],
    ['to', '2026-02-30'],
    ['from', '2026-1-2'],
    ['from', '20260102'],
    ['to', '2026-01-02T25:00:00Z'],
    ['to', ''],
  ] as const) {
    it(`${field}=${JSON.stringify(value)} is 400 validation_failed with an errors entry for ${field}`, async () => {
      assertFieldProblem(await list(ws.token, `${field}=${encodeURIComponent(value)}`), 'validation_failed', field);
    });
  }
});

describe('GET /v1/collections: cursors', () => {
  let ws: { id: string; token: string };
  let cursor: string;

  before(async () => {
    ws = await createWorkspace(t, 'pagination-cursors');
    await createMany(ws.token, 12);
    const first = await list(ws.token, 'limit=5');
    assert.equal(first.status, 200, first.text);
    cursor = first.body.next_cursor as string;
    assert.equal(typeof cursor, 'string');
    const ok = await list(ws.token, `limit=5&cursor=${encodeURIComponent(cursor)}`);
    assert.equal(ok.status, 200, ok.text);
  });

  const withCursor = (c: string) => list(ws.token, `limit=5&cursor=${encodeURIComponent(c)}`);

  it('a cursor with any one character changed is 400 invalid_cursor', async () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    const accepted: string[] = [];
    for (let i = 0; i < cursor.length; i++) {
      const original = cursor[i] as string;
      // Replace with the character 17 places on in the alphabet: a different character everywhere.
      const replacement = alphabet[(alphabet.indexOf(original) + 17) % alphabet.length] as string;
      assert.notEqual(replacement, original);
      const tampered = cursor.slice(0, i) + replacement + cursor.slice(i + 1);
      const res = await withCursor(tampered);
      if (res.status !== 400 || res.body?.code !== 'invalid_cursor')
        accepted.push(`position ${i}: ${tampered} -> ${res.status}`);
    }
    assert.deepEqual(accepted, [], 'tampered cursors were accepted');
  });

  it('a cursor that decodes to the same signature bytes but is not the string issued is 400 invalid_cursor', async () => {
    // A lenient base64url decoder ignores the 2 unused bits of the last character, '=' padding, characters outside
    // the alphabet, and reads standard base64's '+' and '/' as '-' and '_': each variant below is a one-character
    // change of a real cursor, and none is a cursor this service issued.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const dot = cursor.indexOf('.');
    const last = cursor[cursor.length - 1] as string;
    const variants = [1, 2, 3].map(
      (delta) => cursor.slice(0, -1) + (alphabet[alphabet.indexOf(last) ^ delta] as string),
    );
    variants.push(`${cursor}=`, `${cursor.slice(0, dot + 3)}*${cursor.slice(dot + 3)}`);
    const signature = cursor.slice(dot + 1);
    const swap = signature.search(/[-_]/);
    if (swap >= 0) {
      const at = dot + 1 + swap;
      variants.push(cursor.slice(0, at) + (cursor[at] === '-' ? '+' : '/') + cursor.slice(at + 1));
    }
    const accepted: string[] = [];
    for (const tampered of variants) {
      assert.notEqual(tampered, cursor);
      const res = await withCursor(tampered);
      if (res.status !== 400 || res.body?.code !== 'invalid_cursor') accepted.push(`${tampered} -> ${res.status}`);
    }
    assert.deepEqual(accepted, [], `issued cursor ${cursor}; tampered variants were accepted`);
  });

  it('a cursor with a dropped or added character is 400 invalid_cursor', async () => {
    assertProblem(await withCursor(cursor.slice(0, -1)), 400, 'invalid_cursor');
    assertProblem(await withCursor(cursor.slice(1)), 400, 'invalid_cursor');
    assertProblem(await withCursor(`${cursor}A`), 400, 'invalid_cursor');
    assertProblem(await withCursor(`A${cursor}`), 400, 'invalid_cursor');
  });

  it('garbage is 400 invalid_cursor', async () => {
    for (const garbage of [
      '.',
      '..',
      'abc',
      'a.b',
      'a.b.c',
      `${cursor}.${cursor}`,
      'not a cursor',
      '{}',
      '%%%',
      Buffer.from('[1,"x"]').toString('base64url'),
    ]) {
      const res = await withCursor(garbage);
      assertProblem(res, 400, 'invalid_cursor');
      assert.ok(
        res.body.errors?.some((e: { field: string }) => e.field === 'cursor'),
        res.text,
      );
    }
  });

  it('a forged cursor with a well-formed payload but no valid signature is 400 invalid_cursor', async () => {
    const [payload] = cursor.split('.');
    const decoded = JSON.parse(Buffer.from(payload as string, 'base64url').toString('utf8')) as [number, string];
    const forgedPayload = Buffer.from(JSON.stringify([decoded[0] + 1, decoded[1]])).toString('base64url');
    const signature = cursor.split('.')[1] as string;
    assertProblem(await withCursor(`${forgedPayload}.${signature}`), 400, 'invalid_cursor');
    assertProblem(await withCursor(`${forgedPayload}.`), 400, 'invalid_cursor');
    assertProblem(await withCursor(`.${signature}`), 400, 'invalid_cursor');
  });
});

describe('GET /v1/collections: stable under concurrent inserts', () => {
  it("pages after the first hold exactly the items older than page 1's last item, none repeated, none missing", async () => {
    const ws = await createWorkspace(t, 'pagination-concurrent');
    await createMany(ws.token, 120);
    const before = await expectedIds(ws.id);
    assert.equal(before.length, 120);

    const first = await list(ws.token, 'limit=50');
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(ids(first.body.data), before.slice(0, 50));
    const lastOfFirst = first.body.data[49] as Item;

    const added = ids(await createMany(ws.token, 20));
    let cursor = first.body.next_cursor;
    const rest: Item[] = [];
    const sizes: number[] = [];
    while (cursor !== null) {
      const res = await list(ws.token, `limit=50&cursor=${encodeURIComponent(cursor)}`);
      assert.equal(res.status, 200, res.text);
      rest.push(...res.body.data);
      sizes.push(res.body.data.length);
      cursor = res.body.next_cursor;
    }
    assert.deepEqual(sizes, [50, 20]);
    assertEachOnce(rest, before.slice(50));
    const newIds = new Set(added);
    assert.ok(
      rest.every((c) => !newIds.has(c.collection_id)),
      'an item created after page 1 appeared on a later page',
    );
    for (const c of rest) {
      assert.ok(
        c.created_at < lastOfFirst.created_at ||
          (c.created_at === lastOfFirst.created_at && c.collection_id < lastOfFirst.collection_id),
        `${c.collection_id} is not older than page 1's last item`,
      );
    }
    // A fresh walk sees the new ones first.
    const fresh = (await walk(ws.token, 'limit=100')).flatMap((p) => p.data);
    assert.equal(fresh.length, 140);
    assert.deepEqual(new Set(ids(fresh).slice(0, 20)), newIds);
    assertNewestFirst(fresh);
  });
});

// The list's items are JSON written by PostgreSQL, a GET's by the service (toApi): both must be the same object.
describe('GET /v1/collections: a list item is the collection a GET returns', () => {
  it('for every rail, status, payment instruction, failure reason and kind of metadata', async () => {
    const ws = await createWorkspace(t, 'list-equals-get');
    const metadata = [
      {
        order_id: 'A-1',
        nested: { deep: { list: [1, 2.5, -3e-7, 'x', null, true, { k: 'v' }] } },
        empty: {},
        none: [],
      },
      {
        quote: 'say "hi" \\ back\\slash',
        control: 'tab\tline\nnul-less \u0001 end',
        unicode: 'café ✓ 🇰🇪 中文',
        big: 9007199254740991,
      },
      { 'key with spaces': 'ok', '': 'empty key', zero: 0, negative: -1500, float: 0.1 },
      {},
    ];
    const created: string[] = [];
    const post = async (path: string, body: Record<string, unknown>) => {
      const res = await request(t, 'POST', path, {
        token: ws.token,
        body: { reference: `ref-${created.length}`, ...body },
        idempotencyKey: `list-get-${created.length}-${Date.now()}`,
      });
      assert.equal(res.status, 201, res.text);
      created.push(res.body.collection_id);
      return res.body.collection_id as string;
    };
    for (const [i, m] of metadata.entries()) {
      await post('/v1/collections/KE/rails/mpesa', {
        amount: 1500 + i,
        currency: 'KES',
        customer: { phone_number: '+254712345678' },
        metadata: m,
      });
    }
    await post('/v1/collections/NG/rails/bank_transfer', {
      amount: 500_000,
      currency: 'NGN',
      customer: { name: 'Ada Obi' },
      metadata: { order_id: 'bank' },
    });
    await post('/v1/collections/CI/rails/orange_money', {
      amount: 5000,
      currency: 'XOF',
      customer: { phone_number: '+2250701020304' },
      metadata: { order_id: 'ussd' },
    });
    const failed = await post('/v1/collections/KE/rails/mpesa', {
      amount: 2000,
      currency: 'KES',
      customer: { phone_number: '+254712340005' },
      metadata: {},
    });
    const succeeded = await post('/v1/collections/KE/rails/mpesa', {
      amount: 2500,
      currency: 'KES',
      customer: { phone_number: '+254712340005' },
      metadata: {},
    });
    for (const [id, outcome] of [
      [failed, 'failed'],
      [succeeded, 'successful'],
    ] as const) {
      const driven = await request(t, 'POST', `/v1/sandbox/collections/${id}/simulate`, {
        token: ws.token,
        body: { outcome },
      });
      assert.equal(driven.status, 200, driven.text);
    }

    const list = await request(t, 'GET', '/v1/collections?limit=100', { token: ws.token });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(
      list.body.data.map((c: Item) => c.collection_id),
      [...created].reverse(),
    );
    const statuses = new Set<string>();
    for (const item of list.body.data as Item[]) {
      const one = await request(t, 'GET', `/v1/collections/${item.collection_id}`, { token: ws.token });
      assert.equal(one.status, 200, one.text);
      assert.deepEqual(item, one.body);
      statuses.add(item.status);
    }
    assert.ok(statuses.has('failed') && statuses.has('successful'), `statuses: ${[...statuses].join(', ')}`);
    assert.ok(
      (list.body.data as Item[]).some((c) => c.payment_instruction !== null),
      'a payment instruction',
    );
    assert.ok(
      (list.body.data as Item[]).some((c) => c.failure_reason !== null),
      'a failure reason',
    );
  });

  it('after a change written by any statement, not only the API: the list item follows the row', async () => {
    const ws = await createWorkspace(t, 'list-follows-row');
    const created = await createCollection(t, ws.token);
    assert.equal(created.status, 201, created.text);
    const id = created.body.collection_id as string;
    // As a sweep or an operator would write it: plain SQL, no service code.
    await t.db.query(
      `UPDATE collections SET status = 'failed', failure_reason = 'provider_refused', metadata = '{"note":"set by SQL \\"quoted\\""}',
         updated_at = '2031-02-03T04:05:06.789123Z' WHERE id = $1`,
      [id],
    );
    const list = await request(t, 'GET', '/v1/collections?limit=100', { token: ws.token });
    const one = await request(t, 'GET', `/v1/collections/${id}`, { token: ws.token });
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.status, 'failed');
    assert.equal(one.body.failure_reason, 'provider_refused');
    assert.equal(one.body.updated_at, '2031-02-03T04:05:06.789Z');
    assert.deepEqual(one.body.metadata, { note: 'set by SQL "quoted"' });
    assert.deepEqual(list.body.data, [one.body]);

    // A column the item does not show, alone (as the reconciliation sweep writes checked_at): the item stays.
    await t.db.query('UPDATE collections SET checked_at = now() WHERE id = $1', [id]);
    assert.deepEqual((await request(t, 'GET', '/v1/collections?limit=100', { token: ws.token })).body.data, [one.body]);
  });
});
