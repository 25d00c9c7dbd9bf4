// What the payment pages (collections.ts, refunds.ts, payouts.ts, deposits.ts) share: a list page with its filters
// (status, creation dates, page size) and pager, and an object's event timeline with each event's webhook deliveries.
import { PaymentsError, type components, type Page } from '../../../../packages/sdk/src/index.js';
import { dataTable, field, pager, selectField, statusBadge } from '../components.js';
import type { PageAnswer, PageContext } from '../page-context.js';
import { html, type Html } from '../html.js';

type Delivery = components['schemas']['Delivery'];

export const query = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();
export const orDash = (value: string | null | undefined): string =>
  value === null || value === undefined ? '—' : value;

/** The value of a status field when it is one of `statuses` (anything else is no filter). */
const oneOf = <S extends string>(statuses: readonly S[], value: string | undefined): S | undefined =>
  statuses.find((s) => s === value);

/** The filters every list has: status, the creation dates (UTC days, as the API reads a date) and the page size. */
export function commonFilters<S extends string>(fields: Record<string, string>, statuses: readonly S[]) {
  return {
    status: oneOf(statuses, fields.status),
    from: fields.from || undefined,
    to: fields.to || undefined,
    limit: /^\d{1,3}$/.test(fields.limit ?? '') ? Number(fields.limit) : undefined,
  };
}

/** The fields of those filters: the dates first, side by side on a phone. */
export function commonFields(fields: Record<string, string>, statuses: readonly string[]): Html[] {
  return [
    field('from', 'From (UTC)', { type: 'date', value: fields.from ?? '' }),
    field('to', 'To (UTC)', { type: 'date', value: fields.to ?? '' }),
    selectField(
      'status',
      'Status',
      [['', 'Any status'], ...statuses.map((s): [string, string] => [s, s])],
      fields.status ?? '',
    ),
  ];
}

export interface ListView<T> {
  path: string;
  title: string;
  /** "collections": the form's and the table's names. */
  noun: string;
  fields: Html[];
  headers: readonly (string | { label: string; num: true })[];
  row: (item: T) => Html;
  /** Links above the filters (New payout, Export CSV). */
  actions?: Html;
}

/**
 * A list page: the filter form (GET, so a filtered list is a link), one page of the API's list, and the pager. A
 * filter the API refuses (400) is shown above the form.
 */
export async function listPage<T>(
  ctx: PageContext,
  view: ListView<T>,
  load: () => Promise<Page<T>>,
): Promise<PageAnswer> {
  let page: Page<T> | undefined;
  let problem: PaymentsError | undefined;
  try {
    page = await load();
  } catch (error) {
    if (!(error instanceof PaymentsError) || error.status !== 400) throw error;
    problem = error;
  }
  const form = html`<form method="get" action="${view.path}" class="filters-grid card" aria-label="Filter ${view.noun}">
    ${view.fields}
    <div class="actions">
      <button type="submit">Filter</button>
      <a href="${view.path}">Clear filters</a>
    </div>
  </form>`;
  const results = !page
    ? ''
    : page.data.length === 0
      ? html`<p class="card">No ${view.noun} match these filters.</p>`
      : html`<div class="one-line">${dataTable(view.title, view.headers, page.data.map(view.row))}</div>
          ${pager(view.path, ctx.fields, page.next_cursor)}`;
  return {
    title: view.title,
    status: problem ? 400 : 200,
    content: html`${view.actions ? html`<div class="actions">${view.actions}</div>` : ''}
    ${problem ? html`<p class="error" role="alert">${problem.problem.detail}</p>` : ''} ${form} ${results}`,
  };
}

/**
 * The events of `objectIds` (a collection and its refunds…), oldest first, each with its webhook deliveries: what
 * happened, and whether the workspace's endpoints heard of it.
 */
export async function timeline(ctx: PageContext, objectIds: string[]): Promise<Html> {
  const pages = await Promise.all(
    objectIds.map((id) => ctx.api.events.list({ object_id: id, limit: 100 }).firstPage()),
  );
  const events = pages
    .flatMap((p) => p.data)
    .sort((a, b) => a.timestamp.localeCompare(b.timestamp) || a.id.localeCompare(b.id));
  if (events.length === 0) return html`<p class="card">No events yet.</p>`;
  const deliveries = await Promise.all(events.map((e) => ctx.api.events.deliveries(e.id).firstPage()));
  return html`<ol class="timeline">
    ${events.map(
      (event, i) =>
        html`<li>
          <p><strong>${event.type}</strong> · ${ctx.time(event.timestamp)}</p>
          ${deliveryList(ctx, deliveries[i]?.data ?? [])}
        </li>`,
    )}
  </ol>`;
}

function deliveryList(ctx: PageContext, deliveries: Delivery[]): Html {
  if (deliveries.length === 0) return html`<p class="muted">No webhook delivery.</p>`;
  return html`<ul class="deliveries">
    ${deliveries.map((d) => {
      const last = d.attempts[d.attempts.length - 1];
      const answer = last ? (last.status_code === null ? orDash(last.error) : `HTTP ${last.status_code}`) : '';
      const attempts = `${d.attempts.length} ${d.attempts.length === 1 ? 'attempt' : 'attempts'}`;
      return html`<li>
        ${statusBadge(d.status)} Webhook to ${last?.url ?? d.endpoint_id} ·
        ${attempts}${answer ? `, last answer ${answer}` : ''}
        ${d.status === 'pending' && d.next_attempt_at ? html` · next attempt ${ctx.time(d.next_attempt_at)}` : ''}
      </li>`;
    })}
  </ul>`;
}

/** A section with its heading (the heading names the section for assistive technology). */
export const section = (id: string, heading: string, content: Html | string): Html =>
  html`<section aria-labelledby="${id}">
    <h2 id="${id}">${heading}</h2>
    ${content}
  </section>`;
