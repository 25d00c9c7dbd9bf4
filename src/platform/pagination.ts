// Keyset pagination: newest first, opaque signed cursors, the same query params on every list.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type, type Static } from 'typebox';
import { ApiError } from './errors.js';
import { component } from './schemas.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export const ListQuery = Type.Object(
  {
    cursor: Type.Optional(
      Type.String({
        maxLength: 512,
        description: 'The `next_cursor` of the previous page. Opaque; do not build it yourself.',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_LIMIT,
        default: DEFAULT_LIMIT,
        description: `Page size, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT}).`,
      }),
    ),
    from: Type.Optional(
      Type.String({
        description: 'Only objects created at or after this ISO 8601 date or date-time (UTC when no offset is given).',
      }),
    ),
    to: Type.Optional(
      Type.String({
        description:
          'Only objects created at or before this ISO 8601 date-time; a date alone includes that whole UTC day.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface Position {
  createdAt: Date;
  id: string;
}

export interface CreatedRange {
  from: Date | undefined;
  /** Exclusive upper bound. */
  toExclusive: Date | undefined;
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;

function parseDate(field: 'from' | 'to', value: string): { date: Date; dateOnly: boolean } {
  const dateOnly = DATE_ONLY.test(value);
  if (!dateOnly && !DATE_TIME.test(value)) {
    throw new ApiError(
      'validation_failed',
      `'${field}' must be an ISO 8601 date (2026-11-21) or date-time (2026-11-21T12:00:00Z).`,
      {
        errors: [{ field, message: 'must be an ISO 8601 date or date-time' }],
      },
    );
  }
  // A date-time without an offset is read as UTC, like a date alone.
  const normalised = dateOnly ? `${value}T00:00:00.000Z` : /(Z|[+-]\d{2}:?\d{2})$/.test(value) ? value : `${value}Z`;
  const date = new Date(normalised);
  if (Number.isNaN(date.getTime()) || (dateOnly && date.toISOString().slice(0, 10) !== value)) {
    throw new ApiError('validation_failed', `'${field}' is not a real calendar date.`, {
      errors: [{ field, message: 'is not a valid date' }],
    });
  }
  return { date, dateOnly };
}

export function createdRange(query: { from?: string | undefined; to?: string | undefined }): CreatedRange {
  const from = query.from === undefined ? undefined : parseDate('from', query.from).date;
  let toExclusive: Date | undefined;
  if (query.to !== undefined) {
    const { date, dateOnly } = parseDate('to', query.to);
    toExclusive = new Date(date.getTime() + (dateOnly ? 86_400_000 : 1));
  }
  if (from && toExclusive && from >= toExclusive) {
    throw new ApiError('validation_failed', "'from' must be before 'to'.", {
      errors: [{ field: 'from', message: "must be before 'to'" }],
    });
  }
  return { from, toExclusive };
}

export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  private sign(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest().subarray(0, 16);
  }

  encode(position: Position): string {
    const payload = Buffer.from(JSON.stringify([position.createdAt.getTime(), position.id])).toString('base64url');
    return `${payload}.${this.sign(payload).toString('base64url')}`;
  }

  decode(cursor: string): Position {
    const invalid = new ApiError(
      'invalid_cursor',
      'The cursor is not one this service issued; start again without it.',
      {
        errors: [{ field: 'cursor', message: 'is not a valid cursor' }],
      },
    );
    const [payload, signature, extra] = cursor.split('.');
    if (!payload || !signature || extra !== undefined) throw invalid;
    // Compare the text, not decoded bytes: base64url decoding forgives stray characters and padding,
    // and only the exact string this service issued is a cursor.
    const expected = Buffer.from(this.sign(payload).toString('base64url'));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalid;
    }
    if (!Array.isArray(parsed) || typeof parsed[0] !== 'number' || typeof parsed[1] !== 'string') throw invalid;
    return { createdAt: new Date(parsed[0]), id: parsed[1] };
  }

  /** A list request's page size and keyset filter: its status, creation range, cursor position, rows to fetch. */
  filterOf<S extends string>(query: ListQuery & { status?: S | undefined }): { limit: number; filter: ListFilter<S> } {
    const limit = query.limit ?? DEFAULT_LIMIT;
    return {
      limit,
      filter: {
        status: query.status,
        range: createdRange(query),
        after: query.cursor === undefined ? undefined : this.decode(query.cursor),
        fetch: limit + 1,
      },
    };
  }

  /** Builds a page from `limit + 1` rows fetched newest first. */
  page<R extends { created_at: Date; id: string }, T>(rows: R[], limit: number, toApi: (row: R) => T): Page<T> {
    const hasMore = rows.length > limit;
    const shown = hasMore ? rows.slice(0, limit) : rows;
    const last = shown[shown.length - 1];
    return {
      data: shown.map(toApi),
      has_more: hasMore,
      next_cursor: hasMore && last ? this.encode({ createdAt: last.created_at, id: last.id }) : null,
    };
  }
}

const NextCursor = component(
  'NextCursor',
  Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `cursor` to fetch the next page; null on the last page.',
  }),
);

export function pageSchema<T extends import('typebox').TSchema>(item: T, description: string) {
  return Type.Object(
    {
      data: Type.Array(item, { description }),
      has_more: Type.Boolean({ description: 'True when another page follows this one.' }),
      next_cursor: NextCursor,
    },
    { additionalProperties: false, description: `${description} One page of them.` },
  );
}

export interface ListFilter<S extends string = string> {
  status: S | undefined;
  range: CreatedRange;
  after: Position | undefined;
  /** Rows to fetch: the page size plus one, to learn whether more follow. */
  fetch: number;
}

/**
 * The SQL of one keyset page, newest first: `scope` columns equal (the workspace first; null means IS NULL), then the status,
 * the creation range and the cursor position. `created` names the creation-time column; it is selected as
 * `created_at` too, which the pager reads.
 */
export function listQuery(
  table: string,
  columns: string,
  scope: Record<string, unknown>,
  f: ListFilter,
  created = 'created_at',
): { text: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (sql: (n: string) => string, value: unknown): void => {
    values.push(value);
    where.push(sql(`$${values.length}`));
  };
  for (const [column, value] of Object.entries(scope)) {
    if (value === null) where.push(`${column} IS NULL`);
    else add((p) => `${column} = ${p}`, value);
  }
  if (f.status) add((p) => `status = ${p}`, f.status);
  if (f.range.from) add((p) => `${created} >= ${p}`, f.range.from);
  if (f.range.toExclusive) add((p) => `${created} < ${p}`, f.range.toExclusive);
  if (f.after) {
    values.push(f.after.createdAt, f.after.id);
    where.push(`(${created}, id) < ($${values.length - 1}, $${values.length})`);
  }
  values.push(f.fetch);
  const alias = created === 'created_at' ? '' : `, ${created} AS created_at`;
  return {
    text: `SELECT ${columns}${alias} FROM ${table} ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${created} DESC, id DESC LIMIT $${values.length}`,
    values,
  };
}
