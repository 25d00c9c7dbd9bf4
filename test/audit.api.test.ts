// GET /v1/audit-events (docs/guides/audit-log.md): a workspace's integrator token reads its own log only, the admin
// token any workspace's by workspace_id; newest first, keyset pages, filters by action, actor, object and time; CSV
// with Accept: text/csv; and the retention purge deletes only what is past AUDIT_RETENTION_DAYS.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { purgeAuditEvents } from '../src/workers/retention.js';
import {
  assertProblem,
  createWorkspace,
  liquidityProviderToken,
  request,
  startTestApp,
  type TestApp,
} from './helpers/harness.js';

let t: TestApp;
let ws: { id: string; token: string; credentialId: string };
let other: { id: string; token: string };
/** The endpoints `ws` created, oldest first, with the request id of each create. */
const endpoints: { id: string; requestId: string }[] = [];
let credentialId = '';

before(async () => {
  t = await startTestApp();
  const created = await createWorkspace(t, 'audited');
  const credentials = await request(t, 'GET', '/v1/credentials', { token: created.token });
  ws = { ...created, credentialId: credentials.body.data[0].id as string };
  other = await createWorkspace(t, 'other');
  for (let i = 0; i < 5; i += 1) {
    const res = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: `http://127.0.0.1:9/hook-${i}` },
    });
    assert.equal(res.status, 201, res.text);
    endpoints.push({ id: res.body.id as string, requestId: res.headers.get('x-request-id') ?? '' });
  }
  const key = await request(t, 'POST', '/v1/credentials', { token: ws.token, body: { name: 'ci' } });
  assert.equal(key.status, 201, key.text);
  credentialId = key.body.id as string;
  const rotated = await request(t, 'POST', `/v1/credentials/${credentialId}/rotate`, { token: ws.token });
  assert.equal(rotated.status, 200, rotated.text);
});
after(async () => t?.close());

const list = (token: string, query = '', headers: Record<string, string> = {}) =>
  request(t, 'GET', `/v1/audit-events${query ? `?${query}` : ''}`, { token, headers });

describe('GET /v1/audit-events: who reads which log', () => {
  it("the integrator token reads its own workspace's events, newest first", async () => {
    const res = await list(ws.token);
    assert.equal(res.status, 200, res.text);
    const actions = (res.body.data as { action: string }[]).map((e) => e.action);
    // The admin's workspace.create first (oldest), then five endpoints, a credential made and rotated.
    assert.deepEqual(actions, [
      'credential.rotate',
      'credential.create',
      ...Array<string>(5).fill('webhook_endpoint.create'),
      'workspace.create',
    ]);
    const newest = res.body.data[0];
    assert.equal(newest.workspace_id, ws.id);
    assert.equal(newest.actor_type, 'api_key');
    assert.equal(newest.actor_id, ws.credentialId);
    assert.equal(newest.object_type, 'credential');
    assert.equal(newest.object_id, credentialId);
    assert.equal(newest.status, 200);
    assert.equal(newest.client_address, '127.0.0.1');
    assert.match(newest.occurred_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(res.body.has_more, false);
    assert.equal(res.body.next_cursor, null);
  });

  it("another workspace's token sees none of them, and naming the workspace is 404", async () => {
    const own = await list(other.token);
    assert.equal(own.status, 200, own.text);
    assert.deepEqual(
      (own.body.data as { workspace_id: string }[]).filter((e) => e.workspace_id !== other.id),
      [],
    );
    assert.ok(!(own.body.data as { action: string }[]).some((e) => e.action === 'webhook_endpoint.create'));
    assertProblem(await list(other.token, `workspace_id=${ws.id}`), 404, 'not_found');
    const byObject = await list(other.token, `object_id=${endpoints[0]?.id}`);
    assert.deepEqual(byObject.body.data, []);
  });

  it('the admin token reads a workspace by workspace_id, and must name one', async () => {
    const res = await list(t.adminToken, `workspace_id=${ws.id}&action=webhook_endpoint.create`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      (res.body.data as { object_id: string; request_id: string }[]).map((e) => [e.object_id, e.request_id]),
      endpoints.map((e) => [e.id, e.requestId]).reverse(),
    );
    assertProblem(await list(t.adminToken), 400, 'validation_failed');
  });

  it('a liquidity-provider token is refused (403), and no token is 401', async () => {
    assertProblem(await list(await liquidityProviderToken(t, ws.id)), 403, 'forbidden');
    assertProblem(await request(t, 'GET', '/v1/audit-events'), 401, 'unauthorized');
  });
});

describe('GET /v1/audit-events: pages and filters', () => {
  it('pages by cursor: every event once, in order, and a tampered cursor is 400', async () => {
    const all = (await list(ws.token)).body.data as { id: string }[];
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await list(ws.token, `limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body.data.length <= 3);
      seen.push(...(res.body.data as { id: string }[]).map((e) => e.id));
      cursor = res.body.next_cursor as string | null;
      assert.equal(res.body.has_more, cursor !== null);
    } while (cursor);
    assert.deepEqual(
      seen,
      all.map((e) => e.id),
    );
    assertProblem(await list(ws.token, 'cursor=bogus.cursor'), 400, 'invalid_cursor');
    assertProblem(await list(ws.token, 'limit=101'), 400, 'validation_failed');
  });

  it('filters by action, actor and object', async () => {
    const byAction = await list(ws.token, 'action=credential.rotate');
    assert.deepEqual(
      (byAction.body.data as { action: string }[]).map((e) => e.action),
      ['credential.rotate'],
    );
    const byObject = await list(ws.token, `object_id=${endpoints[2]?.id}`);
    assert.deepEqual(
      (byObject.body.data as { object_id: string }[]).map((e) => e.object_id),
      [endpoints[2]?.id],
    );
    const byActor = await list(ws.token, `actor_id=${ws.credentialId}`);
    assert.equal(byActor.body.data.length, 7, 'all but the admin’s workspace.create');
    const byAdmin = await list(
      t.adminToken,
      `workspace_id=${ws.id}&actor_id=${ws.credentialId}&action=workspace.create`,
    );
    assert.deepEqual(byAdmin.body.data, []);
    assertProblem(await list(ws.token, 'actor_id=not-a-uuid'), 400, 'validation_failed');
  });

  it('filters by time: from and to on occurred_at', async () => {
    const all = (await list(ws.token)).body.data as { occurred_at: string }[];
    const newest = all[0]?.occurred_at ?? '';
    const fromNewest = await list(ws.token, `from=${encodeURIComponent(newest)}`);
    assert.ok(fromNewest.body.data.length >= 1);
    assert.ok((fromNewest.body.data as { occurred_at: string }[]).every((e) => e.occurred_at >= newest));
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    assert.deepEqual((await list(ws.token, `from=${tomorrow}`)).body.data, []);
    assert.equal((await list(ws.token, `to=${tomorrow}`)).body.data.length, all.length);
    assertProblem(await list(ws.token, 'from=yesterday'), 400, 'validation_failed');
  });
});

describe('GET /v1/audit-events as CSV', () => {
  it('Accept: text/csv answers the same events, filtered, one line each with a header line', async () => {
    const res = await list(ws.token, 'action=webhook_endpoint.create', { accept: 'text/csv' });
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
    assert.match(res.headers.get('content-disposition') ?? '', /attachment; filename="audit-events\.csv"/);
    assert.equal(res.headers.get('next-cursor'), null, 'everything fitted');
    const lines = res.text.trimEnd().split('\r\n');
    assert.equal(
      lines[0],
      'id,occurred_at,workspace_id,actor_type,actor_id,action,object_type,object_id,status,client_address,request_id',
    );
    assert.equal(lines.length, 1 + endpoints.length);
    const first = lines[1]?.split(',') ?? [];
    assert.equal(first[2], ws.id);
    assert.equal(first[5], 'webhook_endpoint.create');
    assert.equal(first[7], endpoints[endpoints.length - 1]?.id);
    assert.equal(first[10], endpoints[endpoints.length - 1]?.requestId);
  });

  it('a cell a spreadsheet would take for a formula is quoted as text', async () => {
    const res = await request(t, 'POST', `/v1/credentials/${encodeURIComponent('=1+2')}/rotate`, { token: ws.token });
    assertProblem(res, 404, 'not_found');
    const csv = await list(ws.token, 'action=credential.rotate', { accept: 'text/csv' });
    assert.match(csv.text, /,'=1\+2,404,/);
  });
});

describe('audit retention', () => {
  it('the purge deletes events older than AUDIT_RETENTION_DAYS, in batches, and nothing younger', async () => {
    const insert = (days: number) =>
      t.db.query(
        `INSERT INTO audit_events (workspace_id, id, occurred_at, actor_type, actor_id, action, status, request_id)
         VALUES ($1, gen_random_uuid(), now() - make_interval(days => $2), 'api_key', NULL, 'refund.create', 201, 'old')`,
        [ws.id, days],
      );
    for (let i = 0; i < 5; i += 1) await insert(45);
    await insert(35);
    const before = (await list(ws.token, 'limit=100')).body.data.length;
    const result = await purgeAuditEvents(t.db, 40, 2);
    assert.deepEqual(result, { deleted: 5, batches: 3 });
    const left = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM audit_events WHERE workspace_id = $1 AND request_id = 'old'`,
      [ws.id],
    );
    assert.equal(left.rows[0]?.n, 1, 'the event of 35 days stays');
    assert.equal((await list(ws.token, 'limit=100')).body.data.length, before - 5);
    assert.equal(t.config.auditRetentionDays, 400, 'the default');
  });
});
