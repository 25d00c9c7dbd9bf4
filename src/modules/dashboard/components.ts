// Pieces most dashboard pages use: a table in a scrollable region, a list of facts, a status badge, a pager that
// keeps the filters, form fields with their labels, and the hidden Idempotency-Key a write's form carries (a double
// submit is then answered from the first).
import { randomUUID } from 'node:crypto';
import { html, raw, type Html } from './html.js';

/** A table that scrolls inside its own labelled, focusable region on a narrow screen. */
export function dataTable(
  label: string,
  headers: readonly (string | { label: string; num: true })[],
  rows: Html[],
): Html {
  const head = headers.map((h) =>
    typeof h === 'string' ? html`<th scope="col">${h}</th>` : html`<th scope="col" class="num">${h.label}</th>`,
  );
  return html`<div class="table-wrap" role="region" aria-label="${label}" tabindex="0">
    <table>
      <thead>
        <tr>
          ${head}
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}

/** Term and value pairs (an object's details). */
export function facts(pairs: readonly [string, unknown][]): Html {
  return html`<dl class="facts">
    ${pairs.map(
      ([term, value]) =>
        html`<dt>${term}</dt>
          <dd>${value}</dd>`,
    )}
  </dl>`;
}

export const statusBadge = (status: string): Html => html`<span class="status ${status}">${status}</span>`;

/**
 * "Newer"/"Older" links of a cursor-paged list: the first page, and the page after this one, each with the page's
 * other query parameters kept.
 */
export function pager(basePath: string, fields: Record<string, string>, nextCursor: string | null): Html {
  const rest = Object.entries(fields).filter(([k, v]) => k !== 'cursor' && v !== '');
  const query = (extra: [string, string][]): string => {
    const q = new URLSearchParams([...rest, ...extra]).toString();
    return q === '' ? basePath : `${basePath}?${q}`;
  };
  const first = fields.cursor ? html`<a href="${query([])}">First page</a>` : '';
  const next = nextCursor ? html`<a href="${query([['cursor', nextCursor]])}">Next page</a>` : '';
  return first || next ? html`<nav class="pager" aria-label="Pages">${first}${next}</nav>` : html``;
}

/** A fresh Idempotency-Key for one rendering of a form that writes. */
export const idempotencyField = (): Html =>
  html`<input type="hidden" name="idempotency_key" value="${randomUUID()}" />`;

export interface FieldOptions {
  type?: string;
  value?: string;
  required?: boolean;
  hint?: string;
  /** Extra attributes, constant markup only (e.g. `min="1"`). */
  attributes?: string;
}

/** A labelled input, with its hint tied to it. */
export function field(name: string, label: string, o: FieldOptions = {}): Html {
  const id = `f-${name}`;
  return html`<div class="field">
    <label for="${id}">${label}</label>
    <input
      id="${id}"
      name="${name}"
      type="${o.type ?? 'text'}"
      value="${o.value ?? ''}"
      ${o.required ? raw(' required') : ''}${o.attributes ? raw(` ${o.attributes}`) : ''}${o.hint ? html` aria-describedby="${id}-hint"` : ''}
    />
    ${o.hint ? html`<p class="muted" id="${id}-hint">${o.hint}</p>` : ''}
  </div>`;
}

/** A labelled select; `options` are [value, label] pairs. */
export function selectField(name: string, label: string, options: readonly [string, string][], selected = ''): Html {
  const id = `f-${name}`;
  return html`<div class="field">
    <label for="${id}">${label}</label>
    <select id="${id}" name="${name}">
      ${options.map(
        ([value, text]) =>
          html`<option value="${value}" ${value === selected ? raw(' selected') : ''}>${text}</option>`,
      )}
    </select>
  </div>`;
}

/** A secret shown once (a token, a signing secret, a link), with a copy button the page's script reveals. */
export function shownOnce(id: string, label: string, value: string): Html {
  return html`<div class="card">
    <p><strong>${label}</strong></p>
    <p class="secret" id="${id}">${value}</p>
    <button type="button" class="secondary" data-copy="${id}" hidden>Copy</button>
    <span id="${id}-copied" role="status"></span>
  </div>`;
}
