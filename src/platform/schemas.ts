// Schemas shared by every module: named components, the problem document and common headers.
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { ERROR_CODES } from './errors.js';
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

/** A problem response: `application/problem+json`, a reference to the shared schema, described with its codes. */
interface ProblemResponse {
  description: string;
  content: { 'application/problem+json': { schema: TUnsafe<Static<typeof ProblemSchema>> } };
}

/** Problem-document responses for the given statuses, each described with the codes it can carry. */
export function problemResponses<const S extends readonly number[]>(
  ...statuses: S
): { [K in S[number]]: ProblemResponse } {
  const out: Record<number, ProblemResponse> = {};
  for (const s of statuses) {
    out[s] = {
      description: describeStatus(s),
      content: {
        'application/problem+json': {
          schema: Type.Unsafe<Static<typeof ProblemSchema>>({ $ref: `${PROBLEM_SCHEMA_ID}#` }),
        },
      },
    };
  }
  return out as { [K in S[number]]: ProblemResponse };
}

export function describeStatus(status: number): string {
  const codes = Object.entries(ERROR_CODES)
    .filter(([, v]) => v.status === status)
    .map(([k]) => `\`${k}\``);
  return `Problem document; code is one of ${codes.join(', ')}.`;
}

/** A response that is an HTML page (the reference, the hosted payment page), documented as text/html. */
export function htmlResponse(description: string) {
  return { description, content: { 'text/html': { schema: Type.String({ description }) } } };
}

/** The rule of an Idempotency-Key (contract §4): 1 to 255 visible ASCII characters (0x21–0x7E), sent once. */
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
