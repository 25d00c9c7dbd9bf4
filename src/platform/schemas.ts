// Schemas shared by every module: the problem document and common headers.
import { Type, type Static, type TUnsafe } from 'typebox';
import { ERROR_CODES } from './errors.js';
import { UUID_PATTERN } from './ids.js';

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'A URI naming the kind of problem; ends with the stable `code`.' }),
    title: Type.String({ description: 'Short human-readable summary of the kind of problem.' }),
    status: Type.Integer({ description: 'The HTTP status code.' }),
    detail: Type.String({ description: 'What went wrong with this request, for a person to read.' }),
    code: Type.String({ enum: Object.keys(ERROR_CODES), description: 'Stable machine-readable error code; branch on this.' }),
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

/** A problem response: a reference to the shared schema, with the response's own description next to it. */
type ProblemResponse = TUnsafe<Static<typeof ProblemSchema>>;

/** Problem-document responses for the given statuses, each described with the codes it can carry. */
export function problemResponses<const S extends readonly number[]>(...statuses: S): { [K in S[number]]: ProblemResponse } {
  const out: Record<number, ProblemResponse> = {};
  for (const s of statuses) out[s] = Type.Unsafe<Static<typeof ProblemSchema>>({ $ref: `${PROBLEM_SCHEMA_ID}#`, description: describeStatus(s) });
  return out as { [K in S[number]]: ProblemResponse };
}

function describeStatus(status: number): string {
  const codes = Object.entries(ERROR_CODES)
    .filter(([, v]) => v.status === status)
    .map(([k]) => `\`${k}\``);
  return `Problem document; code is one of ${codes.join(', ')}.`;
}

export const IdempotencyKeyHeader = Type.String({
  description: 'Unique per logical operation (a UUID v4 is a good choice), 1–255 visible ASCII characters. Outcomes are kept 24 hours.',
});

// The pattern as well as the format: ajv's uuid format also accepts a `urn:uuid:` prefix, which PostgreSQL refuses.
export const Uuid = (description: string) => Type.String({ format: 'uuid', pattern: UUID_PATTERN, description });
export const DateTime = (description: string) => Type.String({ format: 'date-time', description });
