// The rendered API reference at /docs: plain HTML generated from the OpenAPI document, no scripts, no CDN.
import { createHash } from 'node:crypto';
import { ERROR_CODES } from './errors.js';

type Json = Record<string, unknown>;

const esc = (s: unknown): string =>
  String(s ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

/** Inline `code` in descriptions. */
const prose = (s: unknown): string => esc(s).replace(/`([^`]+)`/g, '<code>$1</code>');

/** A reference into the document (#/components/…) resolved: shared parameters and responses are written once there. */
function resolve(doc: Json, value: Json): Json {
  if (typeof value.$ref !== 'string' || !value.$ref.startsWith('#/')) return value;
  let at: unknown = doc;
  for (const part of value.$ref.slice(2).split('/')) at = (at as Json | undefined)?.[part];
  return (at as Json | undefined) ?? value;
}

function typeOf(schema: Json): string {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Json[]).map(typeOf).join(' | ');
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((v) => JSON.stringify(v)).join(' | ');
  const t = schema.type;
  const base = Array.isArray(t) ? t.join(' | ') : String(t ?? 'any');
  if (base === 'array' && schema.items) return `array of ${typeOf(schema.items as Json)}`;
  return schema.format ? `${base} (${String(schema.format)})` : base;
}

function fieldRows(schema: Json | undefined, prefix = '', depth = 0): string {
  if (!schema || depth > 4) return '';
  const props = schema.properties as Record<string, Json> | undefined;
  if (!props) return '';
  const required = new Set((schema.required as string[] | undefined) ?? []);
  let out = '';
  for (const [name, prop] of Object.entries(props)) {
    const path = prefix + name;
    out += `<tr><td><code>${esc(path)}</code></td><td>${esc(typeOf(prop))}</td><td>${required.has(name) ? 'yes' : 'no'}</td><td>${prose(prop.description)}</td></tr>`;
    out += fieldRows(prop, `${path}.`, depth + 1);
    if (prop.type === 'array' && prop.items) out += fieldRows(prop.items as Json, `${path}[].`, depth + 1);
  }
  return out;
}

function table(rows: string): string {
  return rows
    ? `<table><thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Required</th><th scope="col">Description</th></tr></thead><tbody>${rows}</tbody></table>`
    : '';
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fff}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.75rem}h2{border-bottom:2px solid #1a1a1a;padding-top:1rem}h3{font-size:1.1rem;margin-top:2rem}
code{background:#f0f0f0;padding:0 .2em;border-radius:3px;font-size:.95em}
.method{display:inline-block;min-width:4.5rem;font-weight:700;color:#fff;background:#0b5394;padding:0 .4em;border-radius:3px;text-align:center}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem;font-size:.9rem;display:block;overflow-x:auto}
th,td{border:1px solid #767676;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#ececec}
a{color:#0b5394}a:focus,a:hover{outline:3px solid #0b5394;outline-offset:2px}
nav ul{columns:2 16rem;padding-left:1.2rem}`;

export const DOCS_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

export function renderDocs(doc: Json): string {
  const info = (doc.info ?? {}) as Json;
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  const ops: { tag: string; method: string; path: string; op: Json }[] = [];
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const tag = ((op.tags as string[] | undefined) ?? ['General'])[0] ?? 'General';
      ops.push({ tag, method: method.toUpperCase(), path, op });
    }
  }
  const tags = [...new Set(ops.map((o) => o.tag))];
  const anchor = (o: { method: string; path: string }): string =>
    `${o.method}-${o.path}`.replace(/[^A-Za-z0-9]+/g, '-');
  let body = '';
  for (const tag of tags) {
    body += `<section><h2 id="tag-${esc(tag)}">${esc(tag)}</h2>`;
    for (const o of ops.filter((x) => x.tag === tag)) {
      const params = ((o.op.parameters as Json[] | undefined) ?? [])
        .map((p) => resolve(doc, p))
        .map(
          (p) =>
            `<tr><td><code>${esc(p.name)}</code> (${esc(p.in)})</td><td>${esc(typeOf((p.schema ?? {}) as Json))}</td><td>${p.required ? 'yes' : 'no'}</td><td>${prose(p.description ?? (p.schema as Json | undefined)?.description)}</td></tr>`,
        )
        .join('');
      const reqBody = ((o.op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined)?.[
        'application/json'
      ]?.schema as Json | undefined;
      const responses = Object.entries((o.op.responses ?? {}) as Record<string, Json>).map(
        ([s, r]) => [s, resolve(doc, r)] as const,
      );
      const ok = responses.find(([s]) => s.startsWith('2'));
      const okSchema = ((ok?.[1].content as Record<string, Json> | undefined)?.['application/json']?.schema ??
        undefined) as Json | undefined;
      body += `<article><h3 id="${anchor(o)}"><span class="method">${o.method}</span> <code>${esc(o.path)}</code></h3>`;
      body += `<p><strong>${prose(o.op.summary)}</strong></p>${o.op.description ? `<p>${prose(o.op.description)}</p>` : ''}`;
      body += o.op.security
        ? '<p>Needs <code>Authorization: Bearer &lt;token&gt;</code>.</p>'
        : '<p>No token needed.</p>';
      if (params) body += `<h4>Parameters</h4>${table(params)}`;
      if (reqBody) body += `<h4>Request body</h4>${table(fieldRows(reqBody))}`;
      if (ok) body += `<h4>Response ${esc(ok[0])}</h4>${table(fieldRows(okSchema))}`;
      const errs = responses
        .filter(([s]) => !s.startsWith('2'))
        .map(([s, r]) => `<li><code>${esc(s)}</code> ${prose(r.description)}</li>`);
      if (errs.length) body += `<h4>Errors</h4><ul>${errs.join('')}</ul>`;
      body += '</article>';
    }
    body += '</section>';
  }
  const errorRows = Object.entries(ERROR_CODES)
    .map(([code, v]) => `<tr><td><code>${code}</code></td><td>${v.status}</td><td>${esc(v.title)}</td></tr>`)
    .join('');
  const nav = ops.map((o) => `<li><a href="#${anchor(o)}">${o.method} ${esc(o.path)}</a></li>`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(info.title)} reference</title><style>${STYLE}</style></head><body><main>
<h1>${esc(info.title)} <small>v${esc(info.version)}</small></h1><p>${prose(info.description)}</p>
<p>The machine-readable document is at <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1).</p>
<nav aria-label="Endpoints"><h2>Endpoints</h2><ul>${nav}</ul></nav>
<section><h2 id="errors">Errors</h2><p>Every error is an RFC 9457 <code>application/problem+json</code> document with a stable <code>code</code>.</p>
<table><thead><tr><th scope="col">code</th><th scope="col">HTTP status</th><th scope="col">Title</th></tr></thead><tbody>${errorRows}</tbody></table></section>
${body}</main></body></html>`;
}
