// The OpenAPI document as @fastify/swagger generates it from the routes, completed with what every operation shares
// and the routes do not each repeat: the problem responses (defined once per status), the statuses any operation
// can answer (400 for a path id over its length, 413 and 415 for a body, 503 while the service drains), and the
// response headers the service sends (X-Request-Id, API-Version, RateLimit-*, Retry-After, Location,
// Idempotent-Replayed). The tests check the suite's real responses against the result (test/helpers/conformance.ts).
import { API_VERSION } from './version.js';
import { describeStatus, PROBLEM_SCHEMA_ID } from './schemas.js';

interface Response {
  $ref?: string;
  description?: string;
  content?: unknown;
  headers?: Record<string, unknown>;
}
interface Operation {
  parameters?: { in: string; name: string }[];
  requestBody?: unknown;
  security?: unknown[];
  responses?: Record<string, Response>;
}
interface Document {
  paths?: Record<string, Record<string, Operation>>;
  components?: { responses?: Record<string, Response> } & Record<string, unknown>;
}
type Headers = Record<string, unknown>;

const HEADERS: Headers = {
  RequestId: {
    description:
      'The request id: a valid inbound `X-Request-Id` is echoed, else one is generated. Quote it to support.',
    required: true,
    schema: { type: 'string' },
  },
  ApiVersion: { description: 'The interface version.', required: true, schema: { type: 'string', const: API_VERSION } },
  RetryAfter: { description: 'Seconds to wait before trying again.', required: true, schema: { type: 'string' } },
  RateLimitLimit: { description: "The credential's bucket size (requests).", schema: { type: 'string' } },
  RateLimitRemaining: { description: 'Requests left in the bucket now.', schema: { type: 'string' } },
  RateLimitReset: { description: 'Seconds until the bucket is full again.', schema: { type: 'string' } },
  Location: { description: 'Where the created object is read.', schema: { type: 'string' } },
  IdempotentReplayed: {
    description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
};
const header = (name: string): Response => ({ $ref: `#/components/headers/${name}` });

/** The headers a response of `status` carries; rate-limited (authenticated) operations add the RateLimit ones. */
function headersOf(status: string, o: { rateLimited: boolean; idempotent: boolean }): Headers {
  const h: Headers = { 'X-Request-Id': header('RequestId'), 'API-Version': header('ApiVersion') };
  if (o.rateLimited) {
    h['RateLimit-Limit'] = header('RateLimitLimit');
    h['RateLimit-Remaining'] = header('RateLimitRemaining');
    h['RateLimit-Reset'] = header('RateLimitReset');
  }
  if (status === '429' || status === '503') h['Retry-After'] = header('RetryAfter');
  if (status === '201') h.Location = header('Location');
  if (o.idempotent && (status === '200' || status === '201')) h['Idempotent-Replayed'] = header('IdempotentReplayed');
  return h;
}

const PROBLEM_CONTENT = JSON.stringify({
  'application/problem+json': { schema: { $ref: `#/components/schemas/${PROBLEM_SCHEMA_ID}` } },
});

export function completeDocument<D extends Document>(document: D): D {
  const responses: Record<string, Response> = { ...(document.components?.responses ?? {}) };
  const problem = (status: string): Response => {
    const name = `Problem${status}`;
    responses[name] ??= {
      description: describeStatus(Number(status)),
      content: JSON.parse(PROBLEM_CONTENT) as unknown,
      headers: headersOf(status, { rateLimited: false, idempotent: false }),
    };
    return { $ref: `#/components/responses/${name}` };
  };
  for (const operations of Object.values(document.paths ?? {})) {
    for (const op of Object.values(operations)) {
      const opResponses = (op.responses ??= {});
      const params = op.parameters ?? [];
      const o = {
        rateLimited: Array.isArray(op.security) && op.security.length > 0,
        idempotent: params.some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key'),
      };
      if (params.some((p) => p.in === 'path')) opResponses['400'] ??= problem('400');
      if (op.requestBody) {
        opResponses['413'] ??= problem('413');
        opResponses['415'] ??= problem('415');
      }
      opResponses['503'] ??= problem('503');
      for (const [status, response] of Object.entries(opResponses)) {
        if (JSON.stringify(response.content) === PROBLEM_CONTENT) {
          opResponses[status] = problem(status);
        } else if (response.$ref === undefined) {
          response.headers = { ...headersOf(status, o), ...(response.headers ?? {}) };
        }
      }
    }
  }
  return { ...document, components: { ...document.components, responses, headers: HEADERS } };
}
