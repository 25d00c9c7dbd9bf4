// The audit log's recording (src/platform/audit.ts, docs/guides/audit-log.md): a refund, a credential rotation, a
// webhook endpoint change, an admin workspace write, a dashboard write and the dashboard's sign-ins each leave exactly
// one row with the actor, action, object, client address and request id of the request; a write refused with a 4xx
// is recorded with its status; a refused token, an idempotent replay and a collection create are not; a failure to
// record never fails the write; and the table refuses UPDATE.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditEventRow } from '../src/modules/audit/audit.repository.js';
import { NO_WORKSPACE } from '../src/platform/audit.js';
import {
  createCollection,
  createWorkspace,
  newKey,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
} from './helpers/harness.js';

/** A row as the table holds it, less what each test cannot know in advance. */
type Row = Omit<AuditEventRow, 'id' | 'occurred_at'>;

let t: TestApp;
let ws: { id: string; token: string; credentialId: string };
/** Every request names its client as this address (TRUST_PROXY is on): the log must show it, not the socket's. */
const CLIENT = '203.0.113.7';

before(async () => {
  t = await startTestApp({ TRUST_PROXY: 'true' });
  const created = await createWorkspace(t, 'audited');
  const credentials = await request(t, 'GET', '/v1/credentials', { token: created.token });
  ws = { ...created, credentialId: credentials.body.data[0].id as string };
});
after(async () => t?.close());

const from = { 'x-forwarded-for': CLIENT };

/** The audit rows of one request, by its answered X-Request-Id. */
async function rowsOf(res: ApiResponse | Response): Promise<Row[]> {
  const id = res.headers.get('x-request-id');
  assert.ok(id, 'the answer has a request id');
  return (
    await t.db.query<Row>(
      `SELECT workspace_id, actor_type, actor_id::text, action, object_type, object_id, status,
              host(client_address) AS client_address, request_id
         FROM audit_events WHERE request_id = $1`,
      [id],
    )
  ).rows;
}

async function onlyRowOf(res: ApiResponse | Response): Promise<Row> {
  const rows = await rowsOf(res);
  assert.equal(rows.length, 1, `exactly one audit row for the request: ${JSON.stringify(rows)}`);
  return rows[0] as Row;
}

/** A successful collection of `ws`, by the sandbox's simulate route. */
async function successfulCollection(): Promise<string> {
  const created = await createCollection(t, ws.token);
  assert.equal(created.status, 201, created.text);
  const id = created.body.collection_id as string;
  const simulated = await request(t, 'POST', `/v1/sandbox/collections/${id}/simulate`, {
    token: ws.token,
    body: { outcome: 'successful' },
  });
  assert.equal(simulated.status, 200, simulated.text);
  return id;
}

describe('audit log: what an API write records', () => {
  it('a refund: one refund.create row with the token, the refund, the address and the request id', async () => {
    const collectionId = await successfulCollection();
    const res = await request(t, 'POST', `/v1/collections/${collectionId}/refund`, {
      token: ws.token,
      body: { amount: 1500 },
      idempotencyKey: newKey(),
      headers: from,
    });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(await onlyRowOf(res), {
      workspace_id: ws.id,
      actor_type: 'api_key',
      actor_id: ws.credentialId,
      action: 'refund.create',
      object_type: 'refund',
      object_id: res.body.refund_id,
      status: 201,
      client_address: CLIENT,
      request_id: res.headers.get('x-request-id'),
    });
  });

  it('a collection create is not recorded (the money-in path has its own event trail)', async () => {
    const res = await createCollection(t, ws.token);
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(await rowsOf(res), []);
  });

  it('a credential rotation: one credential.rotate row naming the rotated credential', async () => {
    const created = await request(t, 'POST', '/v1/credentials', { token: ws.token, body: { name: 'ci' } });
    assert.equal(created.status, 201, created.text);
    assert.equal((await onlyRowOf(created)).object_id, created.body.id, 'credential.create names the new one');
    const res = await request(t, 'POST', `/v1/credentials/${created.body.id}/rotate`, {
      token: ws.token,
      headers: { ...from, 'x-request-id': 'rotate-request-1' },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('x-request-id'), 'rotate-request-1');
    assert.deepEqual(await onlyRowOf(res), {
      workspace_id: ws.id,
      actor_type: 'api_key',
      actor_id: ws.credentialId,
      action: 'credential.rotate',
      object_type: 'credential',
      object_id: created.body.id,
      status: 200,
      client_address: CLIENT,
      request_id: 'rotate-request-1',
    });
  });

  it('webhook endpoint create, update, rotate-secret and delete: one row each, about the endpoint', async () => {
    const created = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: 'http://127.0.0.1:9/hook' },
      headers: from,
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const updated = await request(t, 'PATCH', `/v1/webhooks/endpoints/${id}`, {
      token: ws.token,
      body: { description: 'orders' },
      headers: from,
    });
    assert.equal(updated.status, 200, updated.text);
    const rotated = await request(t, 'POST', `/v1/webhooks/endpoints/${id}/rotate-secret`, { token: ws.token });
    assert.equal(rotated.status, 200, rotated.text);
    const deleted = await request(t, 'DELETE', `/v1/webhooks/endpoints/${id}`, { token: ws.token });
    assert.ok(deleted.status < 300, deleted.text);
    const actions = [];
    for (const res of [created, updated, rotated, deleted]) {
      const row = await onlyRowOf(res);
      assert.equal(row.object_type, 'webhook_endpoint');
      assert.equal(row.object_id, id);
      assert.equal(row.actor_id, ws.credentialId);
      assert.equal(row.status, res.status);
      actions.push(row.action);
    }
    assert.deepEqual(actions, [
      'webhook_endpoint.create',
      'webhook_endpoint.update',
      'webhook_endpoint.rotate_secret',
      'webhook_endpoint.delete',
    ]);
    assert.equal((await onlyRowOf(updated)).client_address, CLIENT);
  });

  it('a write refused with a 4xx is recorded with its status: a refund of an unknown collection (404)', async () => {
    const missing = '019ac000-0000-7000-8000-000000000000';
    const res = await request(t, 'POST', `/v1/collections/${missing}/refund`, {
      token: ws.token,
      body: { amount: 1500 },
      idempotencyKey: newKey(),
    });
    assert.equal(res.status, 404, res.text);
    const row = await onlyRowOf(res);
    assert.equal(row.action, 'refund.create');
    assert.equal(row.status, 404);
    assert.equal(row.object_id, null, 'no refund was made, and the answer names none');
  });

  it('a write that fails validation (400) is recorded too, with its status', async () => {
    const res = await request(t, 'PATCH', `/v1/webhooks/endpoints/019ac000-0000-7000-8000-000000000001`, {
      token: ws.token,
      body: { url: 42 },
    });
    assert.equal(res.status, 400, res.text);
    const row = await onlyRowOf(res);
    assert.equal(row.action, 'webhook_endpoint.update');
    assert.equal(row.status, 400);
    assert.equal(row.object_id, '019ac000-0000-7000-8000-000000000001', 'the id from the path');
  });

  it('a refused token (401) and an idempotent replay are not recorded', async () => {
    const refused = await request(t, 'POST', '/v1/credentials', { token: 'not-a-token', body: {} });
    assert.equal(refused.status, 401);
    assert.deepEqual(await rowsOf(refused), []);
    const key = newKey();
    const first = await request(t, 'POST', '/v1/credentials', { token: ws.token, body: {}, idempotencyKey: key });
    const replay = await request(t, 'POST', '/v1/credentials', { token: ws.token, body: {}, idempotencyKey: key });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal((await rowsOf(first)).length, 1);
    assert.deepEqual(await rowsOf(replay), []);
  });

  it('the admin workspace API: recorded in the workspace it acted on, as the admin', async () => {
    const created = await request(t, 'POST', '/v1/admin/workspaces', { token: t.adminToken, body: { name: 'second' } });
    assert.equal(created.status, 201, created.text);
    const row = await onlyRowOf(created);
    assert.equal(row.workspace_id, created.body.workspace.id);
    assert.equal(row.actor_type, 'admin');
    assert.equal(row.action, 'workspace.create');
    assert.equal(row.object_id, created.body.workspace.id);
    const minted = await request(t, 'POST', `/v1/admin/workspaces/${ws.id}/credentials`, {
      token: t.adminToken,
      body: { audience: 'integrator' },
    });
    assert.equal(minted.status, 201, minted.text);
    const mintedRow = await onlyRowOf(minted);
    assert.equal(mintedRow.workspace_id, ws.id, "in the target workspace's log, not the operator's");
    assert.equal(mintedRow.actor_type, 'admin');
    assert.equal(mintedRow.action, 'credential.create');
    assert.equal(mintedRow.object_id, minted.body.id);
  });

  it('a failure to record is logged, never a failure of the write', async () => {
    const original = t.services.audit.record.bind(t.services.audit);
    t.services.audit.record = async () => {
      throw new Error('the audit table is away');
    };
    try {
      const res = await request(t, 'POST', '/v1/webhooks/endpoints', {
        token: ws.token,
        body: { url: 'http://127.0.0.1:9/unrecorded' },
      });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(await rowsOf(res), []);
    } finally {
      t.services.audit.record = original;
    }
  });
});

describe('audit log: the dashboard', () => {
  async function drawForm(): Promise<{ csrf: string; cookie: string }> {
    const res = await fetch(`${t.baseUrl}/dashboard/sign-in`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await res.text())?.[1];
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('dashboard_signin='));
    assert.ok(csrf && cookie);
    return { csrf, cookie: cookie.split(';')[0] ?? '' };
  }

  async function signIn(token: string): Promise<Response> {
    const form = await drawForm();
    return fetch(`${t.baseUrl}/dashboard/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: form.cookie, ...from },
      body: new URLSearchParams({ csrf: form.csrf, token, next: '/dashboard' }).toString(),
    });
  }

  it('a failed sign-in with a token that names nobody: one row under no workspace, with the address', async () => {
    const res = await signIn('not a token at all');
    assert.equal(res.status, 401);
    const page = await res.text();
    assert.doesNotMatch(page, /audit/i, 'the answer says nothing of the log');
    assert.deepEqual(await onlyRowOf(res), {
      workspace_id: NO_WORKSPACE,
      actor_type: 'anonymous',
      actor_id: null,
      action: 'dashboard.sign_in_failed',
      object_type: 'credential',
      object_id: null,
      status: 401,
      client_address: CLIENT,
      request_id: res.headers.get('x-request-id'),
    });
  });

  it('a failed sign-in with a revoked token of the workspace: recorded in that workspace, same answer', async () => {
    const created = await request(t, 'POST', '/v1/credentials', { token: ws.token, body: { name: 'gone' } });
    const revoked = await request(t, 'DELETE', `/v1/credentials/${created.body.id}`, { token: ws.token });
    assert.equal(revoked.status, 200, revoked.text);
    const res = await signIn(created.body.token as string);
    assert.equal(res.status, 401);
    const row = await onlyRowOf(res);
    assert.equal(row.workspace_id, ws.id);
    assert.equal(row.action, 'dashboard.sign_in_failed');
    assert.equal(row.actor_id, created.body.id);
  });

  it('a sign-in, then a write through the dashboard: recorded as the dashboard, from the browser', async () => {
    const res = await signIn(ws.token);
    assert.equal(res.status, 303);
    const signInRow = await onlyRowOf(res);
    assert.equal(signInRow.action, 'dashboard.sign_in');
    assert.equal(signInRow.actor_type, 'dashboard');
    assert.equal(signInRow.actor_id, ws.credentialId);
    assert.equal(signInRow.workspace_id, ws.id);
    assert.equal(signInRow.client_address, CLIENT);
    const session = res.headers
      .getSetCookie()
      .find((c) => c.startsWith('dashboard_session='))
      ?.split(';')[0];
    assert.ok(session);

    const endpoint = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: 'http://127.0.0.1:9/from-dashboard' },
    });
    const page = await fetch(`${t.baseUrl}/dashboard/developers/webhooks/${endpoint.body.id}`, {
      headers: { cookie: session },
    });
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1];
    assert.ok(csrf);
    const disabled = await fetch(`${t.baseUrl}/dashboard/developers/webhooks/${endpoint.body.id}/status`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session, ...from },
      body: new URLSearchParams({ csrf, status: 'disabled' }).toString(),
    });
    assert.equal(disabled.status, 303);
    // The page's request id travels to the API call it makes: one row, under the browser request's id.
    assert.deepEqual(await onlyRowOf(disabled), {
      workspace_id: ws.id,
      actor_type: 'dashboard',
      actor_id: ws.credentialId,
      action: 'webhook_endpoint.update',
      object_type: 'webhook_endpoint',
      object_id: endpoint.body.id,
      status: 200,
      client_address: CLIENT,
      request_id: disabled.headers.get('x-request-id'),
    });
  });

  it('a request from outside cannot claim to be the dashboard', async () => {
    const res = await request(t, 'POST', '/v1/webhooks/endpoints', {
      token: ws.token,
      body: { url: 'http://127.0.0.1:9/claims' },
      headers: { 'x-dashboard': '1', cookie: 'dashboard_session=x' },
    });
    assert.equal((await onlyRowOf(res)).actor_type, 'api_key');
  });
});

describe('audit log: append-only in the database', () => {
  it('refuses UPDATE, TRUNCATE and the DELETE of a recent row; deletes a row past 30 days', async () => {
    await assert.rejects(t.db.query(`UPDATE audit_events SET action = 'refund.nothing'`), /append-only/);
    await assert.rejects(t.db.query('DELETE FROM audit_events'), /append-only/);
    await assert.rejects(t.db.query('TRUNCATE audit_events'), /append-only/);
    const old = await t.db.query(
      `INSERT INTO audit_events (workspace_id, id, occurred_at, actor_type, actor_id, action, status, request_id)
       VALUES ($1, gen_random_uuid(), now() - interval '31 days', 'api_key', NULL, 'refund.create', 201, 'old')
       RETURNING id`,
      [ws.id],
    );
    const gone = await t.db.query('DELETE FROM audit_events WHERE id = $1', [old.rows[0].id]);
    assert.equal(gone.rowCount, 1);
  });
});
