// What the webhook API tests (test/webhooks.*.test.ts: endpoints, secrets, events, deliveries and
// resend, test events) share: the app with the background workers running (relay polled every 20 ms) and a local
// receiver on 127.0.0.1 that records every delivery, the shapes the API answers with, and one short function per
// route. Each group works in a workspace of its own, so the relay only ever sends to the local receiver (workspaces
// without collections have no events to deliver). `startWebhooksApp()` registers the app's and the receiver's start
// and stop on the calling file; `t`, `receiver`, `receiverBase` and `received` are then its own.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import {
  assertProblem,
  createCollection,
  FAST_LIFECYCLE,
  request,
  startTestApp,
  type ApiResponse,
  type TestApp,
  waitFor,
} from './harness.js';
import { startReceiver, type Receiver, type ReceivedRequest } from './receiver.js';

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** whsec_ and 32 random bytes in base64. */
export const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
export const ENDPOINT_FIELDS = [
  'created_at',
  'description',
  'disabled_reason',
  'enabled_events',
  'id',
  'previous_secret_expires_at',
  'status',
  'updated_at',
  'url',
];
export const DELIVERY_FIELDS = [
  'attempts',
  'created_at',
  'endpoint_id',
  'event_id',
  'id',
  'kind',
  'last_error',
  'next_attempt_at',
  'status',
  'updated_at',
];
export const WAIT_MS = 15_000;
/** A phone number the sandbox takes through pending → processing → successful. */
export const SUCCEEDS = { customer: { phone_number: '+254712340000' } };

/** The calling file's app, once `startWebhooksApp()`'s `before` has run. */
export let t: TestApp;
/** The local receiver every endpoint of these tests points at (answers 200 "ok" unless a test sets a handler). */
export let receiver: Receiver;
/** The receiver's URL (its own path, http://127.0.0.1:<port>/hook/<random>): endpoints add a path of their own under it. */
export let receiverBase = '';
/** Every request the receiver got, in order. */
export let received: ReceivedRequest[] = [];

/** Starts the receiver and the app before the calling file's tests, and closes both after them. */
export function startWebhooksApp(): void {
  before(async () => {
    receiver = await startReceiver(() => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' }));
    receiverBase = receiver.url;
    received = receiver.requests;
    t = await startTestApp({ ...FAST_LIFECYCLE, WEBHOOK_POLL_MS: '20' }, { workers: true });
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });
}

// Helpers

export const createEndpoint = (token: string, body: unknown, key?: string): Promise<ApiResponse> =>
  request(t, 'POST', '/v1/webhooks/endpoints', { token, body, ...(key === undefined ? {} : { idempotencyKey: key }) });
export const getEndpoint = (token: string, id: string): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/webhooks/endpoints/${id}`, { token });
export const listEndpoints = (token: string, query = ''): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/webhooks/endpoints${query ? `?${query}` : ''}`, { token });
export const patchEndpoint = (token: string, id: string, body: unknown): Promise<ApiResponse> =>
  request(t, 'PATCH', `/v1/webhooks/endpoints/${id}`, { token, body });
export const deleteEndpoint = (token: string, id: string): Promise<ApiResponse> =>
  request(t, 'DELETE', `/v1/webhooks/endpoints/${id}`, { token });
export const rotate = (token: string, id: string, key?: string): Promise<ApiResponse> =>
  request(t, 'POST', `/v1/webhooks/endpoints/${id}/rotate-secret`, {
    token,
    ...(key === undefined ? {} : { idempotencyKey: key }),
  });
export const listEvents = (token: string, query = ''): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/events${query ? `?${query}` : ''}`, { token });
export const getEvent = (token: string, id: string): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/events/${id}`, { token });
export const deliveries = (token: string, id: string, query = ''): Promise<ApiResponse> =>
  request(t, 'GET', `/v1/events/${id}/deliveries${query ? `?${query}` : ''}`, { token });
/** `body: undefined` sends no body at all. */
export const resend = (token: string, id: string, body?: unknown): Promise<ApiResponse> =>
  request(t, 'POST', `/v1/events/${id}/resend`, { token, ...(body === undefined ? {} : { body }) });

/** Every endpoint of the workspace (all pages). */
export async function allEndpoints(token: string): Promise<any[]> {
  const res = await listEndpoints(token, 'limit=100');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.has_more, false);
  return res.body.data;
}

export async function newEndpoint(token: string, body: Record<string, unknown>): Promise<any> {
  const res = await createEndpoint(token, body);
  assert.equal(res.status, 201, res.text);
  return res.body;
}

export async function successfulCollection(token: string): Promise<string> {
  const c = await createCollection(t, token, SUCCEEDS);
  assert.equal(c.status, 201, c.text);
  const id: string = c.body.collection_id;
  await waitFor(
    `collection ${id} to become successful`,
    async () => {
      const res = await request(t, 'GET', `/v1/collections/${id}`, { token });
      assert.equal(res.status, 200, res.text);
      return res.body.status === 'successful' ? true : undefined;
    },
    WAIT_MS,
  );
  return id;
}

/** The events of one object, newest first (every page). */
export async function eventsOf(token: string, objectId: string): Promise<any[]> {
  const res = await listEvents(token, `object_id=${objectId}&limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

/** 404 not_found, and the same problem (less the request id) as for a missing id. */
export function assertSameAsMissing(res: ApiResponse, missing: ApiResponse): void {
  assertProblem(res, 404, 'not_found');
  const strip = (r: ApiResponse): Record<string, unknown> => {
    const rest = { ...(r.body as Record<string, unknown>) };
    delete rest.request_id;
    return rest;
  };
  assert.deepEqual(strip(res), strip(missing));
}

/** The endpoint as GET shows it: the create or rotate answer less its secret. */
export function withoutSecret(e: Record<string, unknown>): Record<string, unknown> {
  const rest = { ...e };
  delete rest.secret;
  return rest;
}

export function hasFieldError(res: ApiResponse, field: string): boolean {
  return (
    Array.isArray(res.body?.errors) &&
    res.body.errors.some((e: { field: string; message: string }) => e.field === field && typeof e.message === 'string')
  );
}
