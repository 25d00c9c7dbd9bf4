// What the developer pages (developers.ts, developers-keys.ts, developers-webhooks.ts, developers-events.ts) share:
// their base path and their own navigation, the form's Idempotency-Key for the API call, facts that stack on a narrow
// screen, JSON shown as it is, and a Cancel link.
import { facts } from '../components.js';
import type { PageContext } from '../page-context.js';
import { html, raw, type Html } from '../html.js';

export const BASE = '/dashboard/developers';

const SECTIONS = [
  ['keys', 'API keys'],
  ['webhooks', 'Webhooks'],
  ['events', 'Events'],
] as const;
export type Section = (typeof SECTIONS)[number][0];

/** The developer pages' own navigation, above each page's content. */
export function sectionNav(current: Section): Html {
  return html`<nav class="subnav" aria-label="Developers">
    <ul>
      ${SECTIONS.map(
        ([path, label]) =>
          html`<li>
            <a href="${BASE}/${path}" ${path === current ? raw(' aria-current="page"') : ''}>${label}</a>
          </li>`,
      )}
    </ul>
  </nav>`;
}

/** The form's Idempotency-Key, so a double submit is answered from the first. */
export const once = (ctx: PageContext): { idempotencyKey?: string } =>
  ctx.fields.idempotency_key ? { idempotencyKey: ctx.fields.idempotency_key } : {};

/** Term and value pairs that stack on a narrow screen, so long URLs and ids get the whole width. */
export const stacked = (pairs: readonly [string, unknown][]): Html => html`<div class="stacking">${facts(pairs)}</div>`;

export const pretty = (value: unknown): Html => html`<pre class="code">${JSON.stringify(value, null, 2)}</pre>`;

export function cancel(href: string): Html {
  return html`<a class="button secondary" href="${href}">Cancel</a>`;
}
