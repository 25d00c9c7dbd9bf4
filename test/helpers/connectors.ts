// The service with one operator connector pointed at that operator's local fake (fakes/), its workers running, and
// PUBLIC_BASE_URL naming its real port so the fake's callbacks reach it. Plus the waits the connector tests share.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { newKey, request, startTestApp, waitFor, type ApiResponse, type TestApp } from './harness.js';

/** A port free on loopback right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

export const CALLBACK_TOKEN = 'cb_0123456789abcdef0123456789';

export interface ConnectorApp {
  t: TestApp;
  /** `{PUBLIC_BASE_URL}/v1/providers/{name}/callbacks/{token}`. */
  callbackBase: string;
  close(): Promise<void>;
}

/** Starts the service (sandbox: other rails keep the simulator) with `entry` as its one connector. */
export async function startConnectorApp(
  entry: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<ConnectorApp> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'connector-'));
  const file = path.join(dir, 'providers.json');
  await writeFile(file, JSON.stringify({ connectors: [{ callback_token: CALLBACK_TOKEN, ...entry }] }));
  const port = await freePort();
  const t = await startTestApp(
    {
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      PROVIDERS_FILE: file,
      WORKER_INTERVAL_MS: '20',
      RECONCILE_AFTER_SECONDS: '2',
      OPERATOR_TIMEOUT_MS: '1000',
      ...env,
    },
    { workers: true },
  );
  return {
    t,
    callbackBase: `http://127.0.0.1:${port}/v1/providers/${String(entry.name)}/callbacks/${CALLBACK_TOKEN}`,
    async close() {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

type Kind = 'collection' | 'refund' | 'payout';
const READ: Record<Kind, string> = {
  collection: '/v1/collections/',
  refund: '/v1/refunds/',
  payout: '/v1/api/transactions/',
};

export async function read(t: TestApp, token: string, kind: Kind, id: string): Promise<Record<string, any>> {
  const res = await request(t, 'GET', `${READ[kind]}${id}`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Waits until the object reaches `status` (fails at once if it reaches another final one first). */
export async function waitStatus(
  t: TestApp,
  token: string,
  kind: Kind,
  id: string,
  status: string,
  timeoutMs = 15_000,
): Promise<Record<string, any>> {
  const finals = ['successful', 'failed', 'expired', 'refunded', 'reversed'];
  return waitFor(
    `${kind} ${id} to be ${status}`,
    async () => {
      const body = await read(t, token, kind, id);
      if (body.status === status) return body;
      // A successful collection may still be refunded; an expired one paid late (then refunded, by policy).
      const mayMoveOn =
        (body.status === 'successful' && status === 'refunded') ||
        (body.status === 'expired' && (status === 'successful' || status === 'refunded'));
      if (finals.includes(body.status) && !mayMoveOn) {
        throw new Error(`${kind} ${id} became ${body.status} (${String(body.failure_reason)}), not ${status}`);
      }
      return undefined;
    },
    timeoutMs,
  );
}

/** The event types recorded about an object, oldest first. */
export async function eventsAbout(
  t: TestApp,
  token: string,
  id: string,
): Promise<{ type: string; data: Record<string, any> }[]> {
  const res = await request(t, 'GET', `/v1/events?object_id=${id}&limit=100`, { token });
  assert.equal(res.status, 200, res.text);
  return (res.body.data as { type: string; data: Record<string, any> }[]).reverse();
}

/** Milliseconds since `start`, for the figures the connector tests report. */
export const since = (start: number): number => Math.round(performance.now() - start);

/** What the payout tests need: an offramp route of the rail, beneficiaries on it, the balance, and commits. */
export interface PayoutDesk {
  beneficiary(phone: string): Promise<string>;
  /** The demo workspace's available balance in the route's currency. */
  balance(): Promise<number>;
  commit(beneficiaryId: string, amount: number): Promise<ApiResponse>;
}

export async function payoutDesk(t: TestApp, market: string, rail: string, currency: string): Promise<PayoutDesk> {
  const lp = await request(t, 'POST', `/v1/admin/workspaces/${t.demoWorkspaceId}/credentials`, {
    token: t.adminToken,
    body: { audience: 'liquidity_provider' },
  });
  assert.equal(lp.status, 201, lp.text);
  const route = await request(t, 'POST', '/v1/api/routes', {
    token: lp.body.token,
    body: { source: currency, market, rail, min_amount: 100, max_amount: 1_000_000 },
  });
  assert.equal(route.status, 201, route.text);
  return {
    async beneficiary(phone) {
      const res = await request(t, 'POST', '/v1/api/beneficiaries', {
        token: t.demoToken,
        body: { name: 'Test Recipient', market, rail, phone_number: phone },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.beneficiary_id as string;
    },
    async balance() {
      const res = await request(t, 'GET', '/v1/balances', { token: t.demoToken });
      return (
        (res.body.data as { currency: string; available: number }[]).find((b) => b.currency === currency)?.available ??
        0
      );
    },
    commit(beneficiaryId, amount) {
      return request(t, 'POST', '/api/transactions/commit', {
        token: t.demoToken,
        body: { route_id: route.body.route_id, beneficiary_id: beneficiaryId, amount, reference: `po-${newKey()}` },
        idempotencyKey: newKey(),
      });
    },
  };
}
