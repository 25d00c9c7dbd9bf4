// Collections: the list with its filters (reference or phone number, status, dates, market, rail) and its CSV export,
// a collection's details with its refunds and event timeline, and the refund of a collection, confirmed first. Every
// read and write is a public API call through the SDK, so the API decides what may be done; a problem it answers to
// the refund is shown on the page that asked.
import { PaymentsError, type Collection, type Payments } from '../../../../packages/sdk/src/index.js';
import { COLLECTION_STATUSES } from '../../collections/collections.schemas.js';
import { dataTable, facts, field, idempotencyField, statusBadge } from '../components.js';
import type { PageAnswer, PageContext, Pages } from '../page-context.js';
import { pathId } from '../forms.js';
import { html } from '../html.js';
import { commonFields, commonFilters, listPage, orDash, query, section, timeline } from './payment-views.js';

type CollectionFilters = NonNullable<Parameters<Payments['collections']['list']>[0]>;

/** A CSV export reads at most this many collections (pages of 100 through the API); more asks for narrower filters. */
const MAX_EXPORT_ROWS = 10_000;
/** What the search box takes as a phone number rather than a reference: E.164, spaces and dashes allowed. */
const PHONE_SEARCH = /^\+[\d\s-]{7,20}$/;

function collectionFilters(fields: Record<string, string>): CollectionFilters {
  const search = (fields.q ?? '').trim();
  const byPhone = PHONE_SEARCH.test(search);
  return {
    ...commonFilters(fields, COLLECTION_STATUSES),
    market: fields.market?.trim().toUpperCase() || undefined,
    rail: fields.rail?.trim().toLowerCase() || undefined,
    phone_number: byPhone ? search.replace(/[\s-]/g, '') : undefined,
    reference: search !== '' && !byPhone ? search : undefined,
  };
}

/** A CSV cell: quoted when it must be, and never read as a formula by a spreadsheet (a phone number stays as it is). */
function csvCell(value: string | number | null | undefined): string {
  let text = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text) && !/^[+-]?\d+$/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const CSV_HEADER = [
  'collection_id',
  'created_at',
  'status',
  'market',
  'rail',
  'amount_minor_units',
  'currency',
  'amount',
  'reference',
  'phone_number',
  'provider_receipt',
  'failure_reason',
  'updated_at',
];

function refundConfirmation(ctx: PageContext, c: Collection, problem?: PaymentsError): PageAnswer {
  const to = c.customer.phone_number ?? c.customer.name ?? 'the payer';
  const back = `/dashboard/collections/${c.collection_id}`;
  if (problem) {
    return {
      title: 'Refund not made',
      status: problem.status,
      content: html`<p class="error" role="alert">
          ${problem.problem.detail} <span class="muted">(${problem.code})</span>
        </p>
        <p><a href="${back}">Back to the collection</a></p>`,
    };
  }
  return {
    title: 'Refund a collection',
    content: html`<div class="card">
      <p class="question">Refund ${ctx.money(c.amount, c.currency)} to ${to}?</p>
      <p class="muted">
        Collection ${c.reference} on ${c.market} ${c.rail}, made ${ctx.time(c.created_at)}. The whole amount is sent
        back to the payer, from your ${c.currency} balance.
      </p>
      <form method="post" action="${back}/refund">
        ${ctx.csrf} ${idempotencyField()}
        <input type="hidden" name="amount" value="${String(c.amount)}" />
        <div class="actions">
          <button type="submit" class="danger">Confirm</button>
          <a class="button secondary" href="${back}">Cancel</a>
        </div>
      </form>
    </div>`,
  };
}

export function collectionPages(pages: Pages): void {
  pages.get('/collections', async (ctx) => {
    const f = ctx.fields;
    const exportQuery = query(
      Object.fromEntries(Object.entries(f).filter(([k, v]) => v !== '' && k !== 'cursor' && k !== 'limit')),
    );
    return listPage(
      ctx,
      {
        path: '/dashboard/collections',
        title: 'Collections',
        noun: 'collections',
        actions: ctx.may('exports')
          ? html`<a class="button secondary" href="/dashboard/collections/export.csv?${exportQuery}">Export CSV</a>`
          : html``,
        fields: [
          html`<div class="wide">
            ${field('q', 'Reference or phone number', {
              type: 'search',
              value: f.q ?? '',
              hint: 'Exact match; a phone number in E.164 (+254712345678).',
            })}
          </div>`,
          ...commonFields(f, COLLECTION_STATUSES),
          field('market', 'Market', { value: f.market ?? '', attributes: 'maxlength="2" placeholder="KE"' }),
          field('rail', 'Rail', { value: f.rail ?? '', attributes: 'maxlength="40" placeholder="mpesa"' }),
        ],
        headers: ['Reference', { label: 'Amount', num: true }, 'Status', 'Rail', 'Phone number', 'Created'],
        row: (c: Collection) =>
          html`<tr>
            <th scope="row"><a href="/dashboard/collections/${c.collection_id}">${c.reference}</a></th>
            <td class="num">${ctx.money(c.amount, c.currency)}</td>
            <td>${statusBadge(c.status)}</td>
            <td>${c.market} ${c.rail}</td>
            <td>${orDash(c.customer.phone_number)}</td>
            <td>${ctx.time(c.created_at)}</td>
          </tr>`,
      },
      () => ctx.api.collections.list(collectionFilters(f)).page(f.cursor || undefined),
    );
  });

  // Every page of the filtered list, through the API, as one CSV file.
  pages.get(
    '/collections/export.csv',
    async (ctx) => {
      const rows: string[] = [CSV_HEADER.join(',')];
      for await (const c of ctx.api.collections.list({ ...collectionFilters(ctx.fields), limit: 100 })) {
        if (rows.length > MAX_EXPORT_ROWS) {
          return {
            title: 'Export too large',
            status: 422,
            content: html`<p class="error" role="alert">
                More than ${MAX_EXPORT_ROWS.toLocaleString('en')} collections match. Narrow the filters (a shorter date
                range) and export again.
              </p>
              <p><a href="/dashboard/collections?${query(ctx.fields)}">Back to the list</a></p>`,
          };
        }
        rows.push(
          [
            c.collection_id,
            c.created_at,
            c.status,
            c.market,
            c.rail,
            c.amount,
            c.currency,
            ctx.money(c.amount, c.currency),
            c.reference,
            c.customer.phone_number,
            c.provider_receipt,
            c.failure_reason,
            c.updated_at,
          ]
            .map(csvCell)
            .join(','),
        );
      }
      const day = new Date().toISOString().slice(0, 10);
      return {
        download: {
          filename: `collections-${day}.csv`,
          contentType: 'text/csv; charset=utf-8',
          body: `${rows.join('\r\n')}\r\n`,
        },
      };
    },
    'exports',
  );

  pages.get('/collections/:id', async (ctx) => {
    const id = pathId(ctx);
    const [c, refunds] = await Promise.all([
      ctx.api.collections.get(id),
      ctx.api.collections.refunds(id, { limit: 100 }).firstPage(),
    ]);
    const events = await timeline(ctx, [id, ...refunds.data.map((r) => r.refund_id)]);
    const details = facts([
      ['Amount', ctx.money(c.amount, c.currency)],
      ['Status', statusBadge(c.status)],
      ['Rail', `${c.market} ${c.rail}`],
      ['Reference', c.reference],
      ['Customer phone', orDash(c.customer.phone_number)],
      ...(c.customer.name ? [['Customer name', c.customer.name] as [string, unknown]] : []),
      ['Provider receipt', orDash(c.provider_receipt)],
      ['Failure reason', orDash(c.failure_reason)],
      ['Created', ctx.time(c.created_at)],
      ['Last change', ctx.time(c.updated_at)],
      ['Expires', ctx.time(c.expires_at)],
      ['Collection id', html`<code>${c.collection_id}</code>`],
      ['Metadata', html`<code>${JSON.stringify(c.metadata)}</code>`],
    ]);
    const refundTable =
      refunds.data.length === 0
        ? html`<p class="card">No refunds.</p>`
        : html`<div class="one-line">
            ${dataTable(
              'Refunds of this collection',
              [{ label: 'Amount', num: true }, 'Status', 'Requested', 'Resolved', 'Refund id'],
              refunds.data.map(
                (r) =>
                  html`<tr>
                    <th scope="row" class="num">
                      <a href="/dashboard/refunds/${r.refund_id}">${ctx.money(r.amount, r.currency)}</a>
                    </th>
                    <td>${statusBadge(r.status)}</td>
                    <td>${ctx.time(r.requested_at)}</td>
                    <td>${typeof r.resolved_at === 'string' ? ctx.time(r.resolved_at) : '—'}</td>
                    <td><code>${r.refund_id}</code></td>
                  </tr>`,
              ),
            )}
          </div>`;
    return {
      title: `Collection ${c.reference}`,
      content: html`<div class="card">${details}</div>
        <div class="actions">
          ${ctx.may('refunds') ? html`<a class="button" href="/dashboard/collections/${c.collection_id}/refund">Refund</a>` : ''}
          <a href="/dashboard/collections">All collections</a>
        </div>
        ${section('refunds-title', 'Refunds', refundTable)} ${section('timeline-title', 'Timeline', events)}`,
    };
  });

  pages.get(
    '/collections/:id/refund',
    async (ctx) => refundConfirmation(ctx, await ctx.api.collections.get(pathId(ctx))),
    'refunds',
  );

  pages.post(
    '/collections/:id/refund',
    async (ctx) => {
      const id = pathId(ctx);
      try {
        const refund = await ctx.api.collections.refund(
          id,
          { amount: Number(ctx.fields.amount) },
          { idempotencyKey: ctx.fields.idempotency_key },
        );
        return {
          redirect: `/dashboard/collections/${id}`,
          notice: `Refund of ${ctx.money(refund.amount, refund.currency)} requested: it is ${refund.status}.`,
        };
      } catch (error) {
        if (!(error instanceof PaymentsError) || (error.status !== 409 && error.status !== 422)) throw error;
        return refundConfirmation(ctx, await ctx.api.collections.get(id), error);
      }
    },
    'refunds',
  );
}
