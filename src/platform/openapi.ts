// The OpenAPI document as @fastify/swagger generates it from the routes, completed with what every operation shares
// and the routes do not each repeat: the problem responses (defined once per status), the statuses any operation
// can answer (400 for a path id over its length, 413 and 415 for a body, on a write that takes none too, 503 while
// the service drains), and the response headers the service sends (X-Request-Id, API-Version, RateLimit-*,
// Retry-After, WWW-Authenticate, Location, Idempotent-Replayed). What many operations declare alike is named once and
// referred to: the list and Idempotency-Key parameters (components.parameters) and a success response several
// operations give identically (components.responses). The tests check the suite's real responses against the result
// (test/helpers/conformance.ts).
import { API_VERSION } from './version.js';
import type { ErrorCode } from './errors.js';
import { codesOf, describeCodes, PROBLEM_SCHEMA_ID, problemSchemaOf } from './schemas.js';

interface Response {
  $ref?: string;
  description?: string;
  content?: unknown;
  headers?: Record<string, unknown>;
}
interface Parameter {
  in: string;
  name: string;
  required?: boolean;
}
interface Reference {
  $ref: string;
}
interface Operation {
  parameters?: (Parameter | Reference)[];
  requestBody?: unknown;
  security?: unknown[];
  responses?: Record<string, Response>;
}
interface Document {
  paths?: Record<string, Record<string, Operation>>;
  components?: { responses?: Record<string, Response>; parameters?: Record<string, Parameter> } & Record<
    string,
    unknown
  >;
}
type Headers = Record<string, unknown>;
type Json = Record<string, unknown>;

const PROBLEM_REF = `#/components/schemas/${PROBLEM_SCHEMA_ID}`;

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
  WwwAuthenticate: {
    description:
      'The challenge (RFC 9110 §11.6.1). A bearer-token route: `Bearer realm="payments"` when no bearer token was sent, ' +
      '`Bearer realm="payments", error="invalid_token", error_description="…"` when the token was refused (RFC 6750 §3). ' +
      'A provider callback whose signature is refused: `Provider-Signature realm="provider-callbacks"`.',
    required: true,
    schema: { type: 'string' },
  },
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
  if (status === '401') h['WWW-Authenticate'] = header('WwwAuthenticate');
  if (status === '429' || status === '503') h['Retry-After'] = header('RetryAfter');
  if (status === '201') h.Location = header('Location');
  if (o.idempotent && (status === '200' || status === '201')) h['Idempotent-Replayed'] = header('IdempotentReplayed');
  return h;
}

/**
 * The parameters many operations declare, by `in`, name and whether required, with their name in
 * components.parameters: the list query (src/platform/pagination.ts) and the Idempotency-Key header, optional or
 * required. One is referred to where it is declared exactly like the first; a route that words it otherwise keeps
 * its own.
 */
const SHARED_PARAMETERS: Record<string, string> = {
  'query cursor optional': 'Cursor',
  'query limit optional': 'Limit',
  'query from optional': 'From',
  'query to optional': 'To',
  'header Idempotency-Key optional': 'IdempotencyKey',
  'header Idempotency-Key required': 'IdempotencyKeyRequired',
};

/** A shared success response is named after its body's schema, with the status when not 200: Collection, DepositCreated. */
const STATUS_SUFFIX: Record<string, string> = { '200': '', '201': 'Created', '202': 'Accepted' };

/** The name of the component schema that is a response's whole body, if it is one. */
function bodySchemaName(response: Response): string | undefined {
  const content = response.content as Record<string, { schema?: { $ref?: unknown } }> | undefined;
  if (Object.keys(content ?? {}).join() !== 'application/json') return undefined;
  const ref = content?.['application/json']?.schema?.$ref;
  return typeof ref === 'string' ? /^#\/components\/schemas\/(\w+)$/.exec(ref)?.[1] : undefined;
}

const WRITE_METHODS = new Set(['post', 'put', 'patch', 'delete']);

/** An operation whose answer is an HTML page (the checkout page, the reference). */
const isPage = (op: Operation): boolean =>
  Object.keys((op.responses?.['200']?.content ?? {}) as Record<string, unknown>).join() === 'text/html';

/** What an operation answers with the statuses the document adds (below) wherever they can be answered. */
const ADDED_PROBLEMS: Record<string, readonly ErrorCode[]> = {
  '400': ['validation_failed'],
  '413': ['payload_too_large'],
  '415': ['unsupported_media_type'],
  '503': codesOf(503),
};

/** The codes a problem response's schema names (problemSchemaOf), or undefined when it is no problem response. */
function problemCodes(response: Response): ErrorCode[] | undefined {
  const content = response.content as Record<string, { schema?: { allOf?: { properties?: Json }[] } }> | undefined;
  if (Object.keys(content ?? {}).join() !== 'application/problem+json') return undefined;
  const codes = content?.['application/problem+json']?.schema?.allOf?.[1]?.properties?.code as
    { enum?: ErrorCode[] } | undefined;
  return codes?.enum;
}

const pascal = (code: string): string => code.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());

export function completeDocument<D extends Document>(document: D): D {
  const responses: Record<string, Response> = { ...(document.components?.responses ?? {}) };
  const parameters: Record<string, Parameter> = { ...(document.components?.parameters ?? {}) };
  /**
   * The problem response of `status` carrying `codes`, named once in components.responses: `Problem401` when it carries
   * every code of its status, else after its codes (`Problem409IdempotencyKeyInUseRefundInProgress`).
   */
  const problem = (status: string, codes: readonly ErrorCode[]): Response => {
    const all = codesOf(Number(status));
    const name = `Problem${status}${codes.length === all.length && codes.every((c) => all.includes(c)) ? '' : codes.map(pascal).join('')}`;
    responses[name] ??= {
      description: describeCodes(codes),
      content: { 'application/problem+json': { schema: problemSchemaOf(codes, PROBLEM_REF) } },
      headers: headersOf(status, { rateLimited: false, idempotent: false }),
    };
    return { $ref: `#/components/responses/${name}` };
  };
  /** The parameter, or a reference to the shared one when it is declared exactly alike. */
  const shared = (p: Parameter | Reference): Parameter | Reference => {
    if ('$ref' in p) return p;
    const name = SHARED_PARAMETERS[`${p.in} ${p.name} ${p.required ? 'required' : 'optional'}`];
    if (name === undefined) return p;
    parameters[name] ??= p;
    return JSON.stringify(parameters[name]) === JSON.stringify(p) ? { $ref: `#/components/parameters/${name}` } : p;
  };
  const methods = Object.values(document.paths ?? {}).flatMap((path) => Object.entries(path));
  const operations = methods.map(([, op]) => op);
  for (const [method, op] of methods) {
    const opResponses = (op.responses ??= {});
    const params = (op.parameters ?? []).filter((p): p is Parameter => !('$ref' in p));
    const o = {
      rateLimited: Array.isArray(op.security) && op.security.length > 0,
      idempotent: params.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'),
    };
    // A page answers a path it cannot use with its own not-found page (the checkout page), not a problem document.
    const added = (status: string): Response => problem(status, ADDED_PROBLEMS[status] ?? []);
    if (params.some((p) => p.in === 'path') && !isPage(op)) opResponses['400'] ??= added('400');
    // A write that declares no body refuses one with 415 (src/app.ts); a body over the limit is 413 first.
    if (op.requestBody || WRITE_METHODS.has(method)) {
      opResponses['413'] ??= added('413');
      opResponses['415'] ??= added('415');
    }
    opResponses['503'] ??= added('503');
    for (const [status, response] of Object.entries(opResponses)) {
      const codes = problemCodes(response);
      if (codes !== undefined) {
        opResponses[status] = problem(status, codes);
      } else if (response.$ref === undefined) {
        response.headers = { ...headersOf(status, o), ...(response.headers ?? {}) };
      }
    }
    if (op.parameters) op.parameters = op.parameters.map(shared);
  }
  // A success response that several operations give identically (description, body and headers) is written once.
  const uses = new Map<string, number>();
  for (const op of operations) {
    for (const response of Object.values(op.responses ?? {}))
      uses.set(JSON.stringify(response), (uses.get(JSON.stringify(response)) ?? 0) + 1);
  }
  for (const op of operations) {
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      const schema = bodySchemaName(response);
      const suffix = STATUS_SUFFIX[status];
      if (schema === undefined || suffix === undefined || (uses.get(JSON.stringify(response)) ?? 0) < 2) continue;
      const name = schema + suffix;
      responses[name] ??= response;
      if (JSON.stringify(responses[name]) === JSON.stringify(response) && op.responses)
        op.responses[status] = { $ref: `#/components/responses/${name}` };
    }
  }
  // Security schemes and schemas first, whatever the options declared: the committed document keeps one order.
  const { securitySchemes, schemas, ...others } = document.components ?? {};
  return {
    ...document,
    components: { securitySchemes, schemas, ...others, parameters, responses, headers: HEADERS },
  };
}
