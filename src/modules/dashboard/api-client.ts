// The dashboard is a client of the public API, through the TypeScript SDK: every read and every action goes through
// the same routes, validation, idempotency and access checks as an integrator's call, so no business rule is written
// twice. The calls stay in the process (fastify's inject): no socket, no second authentication scheme.
import type { FastifyInstance } from 'fastify';
import { actingThrough } from '../../platform/audit.js';
import { Payments } from '../../../packages/sdk/src/index.js';

/**
 * A fetch that answers from `app` in-process. What the calls write is recorded in the audit log as done through the
 * dashboard, from the browser's address (`actingThrough`: async context, which no outside request can claim).
 */
function injectFetch(app: FastifyInstance, requestId: string, clientAddress: string, memberId?: string): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const headers: Record<string, string> = { 'x-request-id': requestId };
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const via = memberId
      ? { actorType: 'member' as const, actorId: memberId, clientAddress }
      : { actorType: 'dashboard' as const, clientAddress };
    const answer = await actingThrough(via, () =>
      app.inject({
        method: request.method as 'GET',
        url: url.pathname + url.search,
        headers,
        ...(body ? { payload: body } : {}),
      }),
    );
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) responseHeaders.append(name, String(v));
    }
    const empty = answer.statusCode === 204 || answer.statusCode === 304;
    return new Response(empty ? null : new Uint8Array(answer.rawPayload), {
      status: answer.statusCode,
      headers: responseHeaders,
    });
  };
}

/**
 * An SDK client acting with `token`; the dashboard's request id travels to the API calls it makes (one log trail, and
 * the audit log's request id), and the browser's address is what the audit log records, with the member as the actor
 * when a member is signed in.
 */
export function apiClient(
  app: FastifyInstance,
  token: string,
  requestId: string,
  clientAddress: string,
  memberId?: string,
): Payments {
  // No retries: a person is waiting and sees any problem on the page.
  return new Payments({
    token,
    baseUrl: 'http://dashboard.internal',
    fetch: injectFetch(app, requestId, clientAddress, memberId),
    maxRetries: 0,
  });
}
