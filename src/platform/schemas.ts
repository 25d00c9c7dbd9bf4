// Schemas shared by every module: named components, the problem document and common headers.
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { ERROR_CODES, type ErrorCode } from './errors.js';
import { UUID_PATTERN } from './ids.js';

const components: TSchema[] = [];

/**
 * A resource or request schema as a named component: registered once (`componentSchemas`, added with
 * `app.addSchema` and `shareSchemas`), and referred to by `$ref` wherever it is used, so the OpenAPI document has it
 * once, under `id`, in #/components/schemas, and a generated client gets a named type. Not for a schema compiled
 * on its own before the app is built (a provider callback's body, PROVIDERS_FILE).
 */
export function component<T extends TSchema>(id: string, schema: T): TUnsafe<Static<T>> {
  components.push({ ...schema, $id: id });
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}

/** Every named component, for `app.addSchema`, by name (so the document's order does not follow import order). */
export function componentSchemas(): readonly TSchema[] {
  const id = (schema: TSchema): string => String((schema as { $id?: string }).$id);
  return [...components].sort((a, b) => id(a).localeCompare(id(b)));
}

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'A URI naming the kind of problem; ends with the stable `code`.' }),
    title: Type.String({ description: 'Short human-readable summary of the kind of problem.' }),
    status: Type.Integer({ description: 'The HTTP status code.' }),
    detail: Type.String({ description: 'What went wrong with this request, for a person to read.' }),
    code: Type.String({
      enum: Object.keys(ERROR_CODES),
      description: 'Stable machine-readable error code; branch on this.',
    }),
    request_id: Type.String({ description: 'The X-Request-Id of the request; quote it to support.' }),
    errors: Type.Optional(
      Type.Array(
        Type.Object(
          {
            field: Type.String({ description: 'Dotted path of the offending field, e.g. `customer.phone_number`.' }),
            message: Type.String({ description: 'What is wrong with that field.' }),
          },
          { additionalProperties: false },
        ),
        { description: 'Field-level problems, when there are any.' },
      ),
    ),
  },
  { additionalProperties: false, description: 'An RFC 9457 problem document.' },
);

/** The $id under which ProblemSchema is registered once (app.addSchema); the OpenAPI document has it as #/components/schemas/Problem. */
export const PROBLEM_SCHEMA_ID = 'Problem';

/** ProblemSchema as a shared schema, for app.addSchema: every problem response refers to it instead of repeating it. */
export const SharedProblemSchema = { ...ProblemSchema, $id: PROBLEM_SCHEMA_ID };

/** A problem response: `application/problem+json`, the shared schema narrowed to the codes it can carry. */
interface ProblemResponse {
  description: string;
  content: { 'application/problem+json': { schema: TUnsafe<Static<typeof ProblemSchema>> } };
}

/** A status some error code has (src/platform/errors.ts). */
export type ProblemStatus = (typeof ERROR_CODES)[ErrorCode]['status'];

/** The codes of one status: what a response of that status can carry. */
export type CodeOf<S extends ProblemStatus> = {
  [C in ErrorCode]: (typeof ERROR_CODES)[C]['status'] extends S ? C : never;
}[ErrorCode];

/** An operation's problems: per status, the codes it really answers with. */
export type ProblemCodes = { readonly [S in ProblemStatus]?: readonly CodeOf<S>[] };

/** Every code of a status, in the table's order. */
export const codesOf = (status: number): ErrorCode[] =>
  (Object.keys(ERROR_CODES) as ErrorCode[]).filter((c) => ERROR_CODES[c].status === status);

/**
 * The schema of a problem that carries one of `codes`: the shared Problem (which stays the base), its `code` narrowed
 * to an enum, so a generated client types a 401 as `unauthorized` and not as any of the table's codes.
 */
export function problemSchemaOf(codes: readonly ErrorCode[], problemRef: string) {
  return {
    allOf: [
      { $ref: problemRef },
      {
        type: 'object',
        required: ['code'],
        properties: { code: { type: 'string', enum: [...codes], description: 'The codes this answer can carry.' } },
      },
    ],
  };
}

function problemResponse(status: number, codes: readonly ErrorCode[]): ProblemResponse {
  return {
    description: describeCodes(codes),
    content: {
      'application/problem+json': {
        schema: Type.Unsafe<Static<typeof ProblemSchema>>(problemSchemaOf(codes, `${PROBLEM_SCHEMA_ID}#`)),
      },
    },
  };
}

/**
 * An operation's problem responses, each narrowed to the codes it really answers with: `problemResponses({ 401:
 * ['unauthorized'], 404: ['not_found'] })`, a code of another status refused by the compiler. With bare statuses
 * (`problemResponses(400, 404)`), every code of each status. 413, 415 and 503 need not be listed: the document adds
 * them wherever they can be answered (src/platform/openapi.ts).
 */
export function problemResponses<const C extends ProblemCodes>(codes: C): { [K in keyof C]: ProblemResponse };
export function problemResponses<const S extends readonly number[]>(
  ...statuses: S
): { [K in S[number]]: ProblemResponse };
export function problemResponses(...args: [ProblemCodes] | number[]): Record<number, ProblemResponse> {
  const out: Record<number, ProblemResponse> = {};
  if (typeof args[0] === 'object') {
    for (const [status, codes] of Object.entries(args[0])) out[Number(status)] = problemResponse(Number(status), codes);
  } else {
    for (const s of args as number[]) out[s] = problemResponse(s, codesOf(s));
  }
  return out;
}

/** What bearer-token routes can all answer: a refused token, another audience, the rate limit. */
export const BEARER_PROBLEMS = {
  401: ['unauthorized'],
  403: ['forbidden'],
  429: ['rate_limited'],
} as const satisfies ProblemCodes;

/** A list's query: a field out of its rule, or a cursor that is not one of ours. */
export const LIST_QUERY_PROBLEMS = ['validation_failed', 'invalid_cursor'] as const satisfies CodeOf<400>[];
/** A JSON body: out of its schema, or not JSON at all. */
export const BODY_PROBLEMS = ['validation_failed', 'invalid_json'] as const satisfies CodeOf<400>[];
/** An Idempotency-Key honoured (optional): not of its form, reused with another body; in use by a running request. */
export const IDEMPOTENCY_PROBLEMS = {
  409: ['idempotency_key_in_use'],
  422: ['idempotency_key_invalid', 'idempotency_key_reused'],
} as const satisfies ProblemCodes;
/** An Idempotency-Key required: the same, and its absence. */
export const REQUIRED_IDEMPOTENCY_PROBLEMS = {
  409: ['idempotency_key_in_use'],
  422: ['idempotency_key_missing', 'idempotency_key_invalid', 'idempotency_key_reused'],
} as const satisfies ProblemCodes;

export function describeStatus(status: number): string {
  return describeCodes(codesOf(status));
}

/** A problem response's description: the codes it can carry. */
export function describeCodes(codes: readonly string[]): string {
  return `Problem document; code is ${codes.length === 1 ? '' : 'one of '}${codes.map((c) => `\`${c}\``).join(', ')}.`;
}

/** A response that is an HTML page (the reference, the hosted payment page), documented as text/html. */
export function htmlResponse(description: string) {
  return { description, content: { 'text/html': { schema: Type.String({ description }) } } };
}

/** The rule of an Idempotency-Key: 1 to 255 visible ASCII characters (0x21–0x7E), sent once. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7e]{1,255}$';

export const IdempotencyKeyHeader = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: IDEMPOTENCY_KEY_PATTERN,
  description:
    'Unique per logical operation (a UUID v4 is a good choice), 1–255 visible ASCII characters. Outcomes are kept 24 hours. ' +
    'Absent where required: 422 `idempotency_key_missing`; present but not of this form (or sent twice): 422 `idempotency_key_invalid`.',
});

/**
 * The Idempotency-Key header of a route that honours one (calls `idempotencyOf`), declared under its own name: Fastify
 * validates header names lower-cased, and the document shows them as written here.
 */
export const IDEMPOTENCY_KEY = 'Idempotency-Key';
export const OptionalIdempotencyKey = Type.Object({ [IDEMPOTENCY_KEY]: Type.Optional(IdempotencyKeyHeader) });
export const RequiredIdempotencyKey = Type.Object({ [IDEMPOTENCY_KEY]: IdempotencyKeyHeader });

/**
 * A named component used with a description of its own: inside `allOf`, because the document generator drops the
 * siblings of a bare `$ref`.
 */
export function describedAs<T>(ref: TUnsafe<T>, description: string): TUnsafe<T> {
  return Type.Unsafe<T>({ allOf: [ref], description });
}

// The pattern as well as the format: ajv's uuid format also accepts a `urn:uuid:` prefix, which PostgreSQL refuses.
const UuidSchema = component(
  'Uuid',
  Type.String({
    format: 'uuid',
    pattern: UUID_PATTERN,
    description: 'A UUID in its hyphenated form of 36 characters.',
  }),
);
export const Uuid = (description: string) => describedAs(UuidSchema, description);
export const DateTime = (description: string) => Type.String({ format: 'date-time', description });

/**
 * The empty object `{}`, named: a generator renders a named empty object as an empty type (`{}`,
 * `{ [key: string]: never }`), where an inline one became a free-form map in one and was dropped from its union in
 * another (`resolved_at: string`).
 */
export const EmptyObject = component(
  'EmptyObject',
  Type.Object({}, { additionalProperties: false, description: 'An empty object `{}`: a value not there yet.' }),
);
