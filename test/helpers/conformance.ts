// Every response the tests receive through `request()` is checked against the committed OpenAPI document: its
// status is declared for its operation, its content type is the declared one, its body matches the declared schema,
// and the headers the document declares as required are there. The suite's own traffic is the conformance test.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';

type Json = Record<string, any>;

const DOCUMENT_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'openapi.json');

interface Operation {
  pattern: RegExp;
  method: string;
  path: string;
  responses: Json;
}

const formatsModule = addFormatsModule as unknown as
  ((ajv: Ajv2020) => Ajv2020) | { default: (ajv: Ajv2020) => Ajv2020 };
const addFormats = typeof formatsModule === 'function' ? formatsModule : formatsModule.default;

let loaded: { document: Json; operations: Operation[]; ajv: Ajv2020 } | undefined;
const validators = new Map<string, ValidateFunction>();

function load(): { document: Json; operations: Operation[]; ajv: Ajv2020 } {
  if (loaded) return loaded;
  const document = JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8')) as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  // Components are resolved by their document path.
  ajv.addSchema({ $id: 'openapi', components: document.components }, 'openapi');
  const operations: Operation[] = [];
  for (const [p, methods] of Object.entries(document.paths as Json)) {
    const pattern = new RegExp(
      `^${p
        .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
        .replace(/\\?\{[^}]+\\?\}/g, '[^/]+')
        .replace(/\{[^}]+\}/g, '[^/]+')}$`,
    );
    for (const [method, op] of Object.entries(methods as Json)) {
      operations.push({ pattern, method: method.toUpperCase(), path: p, responses: (op as Json).responses ?? {} });
    }
  }
  // Literal paths before templated ones (/v1/api/risk/signals/open before /v1/api/risk/signals/{signalId}).
  operations.sort((a, b) => (a.path.match(/\{/g)?.length ?? 0) - (b.path.match(/\{/g)?.length ?? 0));
  loaded = { document, operations, ajv };
  return loaded;
}

/** A `$ref` of the document resolved (components.responses, components.headers). */
function resolve(document: Json, value: Json): Json {
  if (typeof value.$ref !== 'string') return value;
  let at: any = document;
  for (const part of value.$ref.slice(2).split('/')) at = at?.[part];
  return at as Json;
}

function validatorFor(schema: Json): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = validators.get(key);
  if (!v) {
    const { ajv } = load();
    // Local component references are written relative to the document: make them point into the added one.
    const rewritten = JSON.parse(key.replace(/"#\/components\//g, '"openapi#/components/'));
    v = ajv.compile(rewritten);
    validators.set(key, v);
  }
  return v;
}

/**
 * What is wrong with a response against the document, or undefined when it conforms (or the document has no
 * operation for it: an unknown route's 404).
 */
export function nonConformance(
  method: string,
  url: string,
  status: number,
  headers: Headers,
  text: string,
): string | undefined {
  const { document, operations } = load();
  const pathname = new URL(url, 'http://x').pathname;
  const m = method === 'HEAD' ? 'GET' : method;
  const op = operations.find((o) => o.method === m && o.pattern.test(pathname));
  if (!op) return undefined;
  const declared = op.responses[String(status)] ?? op.responses.default;
  const where = `${method} ${op.path} → ${status}`;
  if (!declared) return `${where}: status not declared`;
  const response = resolve(document, declared);
  const content = (response.content ?? {}) as Json;
  const mediaTypes = Object.keys(content);
  const type = (headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (mediaTypes.length === 0) {
    if (text !== '' && method !== 'HEAD') return `${where}: a body where none is declared`;
  } else if (method !== 'HEAD') {
    if (!mediaTypes.includes(type))
      return `${where}: content type ${type || '(none)'} is not one of ${mediaTypes.join(', ')}`;
    const schema = content[type].schema as Json | undefined;
    if (schema && type.endsWith('json')) {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return `${where}: the body is not JSON`;
      }
      const validate = validatorFor(schema);
      if (!validate(body))
        return `${where}: the body does not match its schema: ${JSON.stringify(validate.errors?.slice(0, 3))}`;
    }
  }
  for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
    const h = resolve(document, header);
    if (h.required && headers.get(name) === null) return `${where}: header ${name} is declared required and missing`;
  }
  return undefined;
}
