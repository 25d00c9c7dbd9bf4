// The JSON Schema validators: bodies are never coerced (a string amount is an error), query strings are.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FieldError } from './errors.js';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped in the namespace.
type FormatsPlugin = (ajv: Ajv) => Ajv;
const formatsModule = addFormatsModule as unknown as FormatsPlugin | { default: FormatsPlugin };
const addFormats: FormatsPlugin = typeof formatsModule === 'function' ? formatsModule : formatsModule.default;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: true,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

export const bodyAjv = makeAjv(false);
export const queryAjv = makeAjv(true);

/** Makes named components (request bodies among them) resolvable by `$ref` in the validators. Idempotent. */
export function shareSchemas(schemas: readonly { $id?: string }[]): void {
  for (const ajv of [bodyAjv, queryAjv]) {
    for (const schema of schemas)
      if (schema.$id !== undefined && ajv.getSchema(schema.$id) === undefined) ajv.addSchema(schema);
  }
}

/**
 * A headers schema with its header names lower-cased, as Node gives them (RFC 9110 §5.1: names are case-insensitive).
 * Fastify does this itself only under its own validator compiler; the document keeps them as declared (Idempotency-Key).
 */
export function lowerCaseHeaderNames(schema: object): object {
  const { properties, required } = schema as { properties?: Record<string, unknown>; required?: unknown };
  return {
    ...schema,
    ...(properties && {
      properties: Object.fromEntries(Object.entries(properties).map(([name, value]) => [name.toLowerCase(), value])),
    }),
    ...(Array.isArray(required) && { required: required.map((name) => String(name).toLowerCase()) }),
  };
}

export function compileBody(schema: object): ValidateFunction {
  return bodyAjv.compile(schema);
}

/** Turns ajv errors into the contract's field errors: dotted paths, one message each. */
export function fieldErrors(errors: ErrorObject[] | null | undefined, prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors ?? []) {
    let field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      field = field ? `${field}.${missing}` : missing;
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      const extra = (e.params as { additionalProperty: string }).additionalProperty;
      field = field ? `${field}.${extra}` : extra;
      message = 'is not a known field';
    } else if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      continue; // the branch errors beside it say what is wrong
    }
    if (prefix) field = field ? `${prefix}.${field}` : prefix;
    if (!out.some((o) => o.field === field && o.message === message)) out.push({ field: field || '(body)', message });
  }
  return out;
}

export const MAX_JSON_DEPTH = 32;

// NUL cannot be stored in PostgreSQL text or jsonb; a lone surrogate cannot be stored in jsonb.
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The first place in a parsed JSON body that could not be stored or fingerprinted safely: nesting deeper
 * than MAX_JSON_DEPTH, or a string (or key) holding NUL or a lone surrogate. Iterative, so depth cannot
 * exhaust the stack.
 */
export function unsafeJson(body: unknown): FieldError | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: body, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop() as { value: unknown; path: string; depth: number };
    const field = path || '(body)';
    if (typeof value === 'string') {
      if (UNSTORABLE.test(value)) return { field, message: 'contains a NUL character or an unpaired surrogate' };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return { field, message: `nests deeper than ${MAX_JSON_DEPTH} levels` };
    for (const [key, child] of Object.entries(value)) {
      const childPath = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      if (UNSTORABLE.test(key))
        return { field: childPath, message: 'has a key with a NUL character or an unpaired surrogate' };
      stack.push({ value: child, path: childPath, depth: depth + 1 });
    }
  }
  return undefined;
}
