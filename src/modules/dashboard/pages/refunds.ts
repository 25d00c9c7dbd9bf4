// Refunds: the list with its filters, and a refund's details with its event timeline. A refund is asked for on its
// collection's page (collections.ts).
import { REFUND_STATUSES } from '../../refunds/refunds.states.js';
import { facts, statusBadge } from '../components.js';
import type { Pages } from '../page-context.js';
import { pathId } from '../forms.js';
import { html } from '../html.js';
import { commonFields, commonFilters, listPage, orDash, section, timeline } from './payment-views.js';

export function refundPages(pages: Pages): void {
  pages.get('/refunds', async (ctx) =>
    listPage(
      ctx,
      {
        path: '/dashboard/refunds',
        title: 'Refunds',
        noun: 'refunds',
        fields: commonFields(ctx.fields, REFUND_STATUSES),
        headers: [{ label: 'Amount', num: true }, 'Status', 'Reason', 'Requested', 'Collection', 'Refund id'],
        row: (r) =>
          html`<tr>
            <th scope="row" class="num">
              <a href="/dashboard/refunds/${r.refund_id}">${ctx.money(r.amount, r.currency)}</a>
            </th>
            <td>${statusBadge(r.status)}</td>
            <td>${r.reason}</td>
            <td>${ctx.time(r.requested_at)}</td>
            <td>
              <a href="/dashboard/collections/${r.collection_id}"><code>${r.collection_id}</code></a>
            </td>
            <td><code>${r.refund_id}</code></td>
          </tr>`,
      },
      () => ctx.api.refunds.list(commonFilters(ctx.fields, REFUND_STATUSES)).page(ctx.fields.cursor || undefined),
    ),
  );

  pages.get('/refunds/:id', async (ctx) => {
    const r = await ctx.api.refunds.get(pathId(ctx));
    const events = await timeline(ctx, [r.refund_id]);
    return {
      title: `Refund of ${ctx.money(r.amount, r.currency)}`,
      content: html`<div class="card">
          ${facts([
            ['Amount', ctx.money(r.amount, r.currency)],
            ['Status', statusBadge(r.status)],
            ['Reason', r.reason],
            ['Failure reason', orDash(r.failure_reason)],
            ['Provider receipt', orDash(r.provider_receipt)],
            [
              'Collection',
              html`<a href="/dashboard/collections/${r.collection_id}"><code>${r.collection_id}</code></a>`,
            ],
            ['Requested', ctx.time(r.requested_at)],
            ['Resolved', typeof r.resolved_at === 'string' ? ctx.time(r.resolved_at) : '—'],
            ['Refund id', html`<code>${r.refund_id}</code>`],
          ])}
        </div>
        <p><a href="/dashboard/refunds">All refunds</a></p>
        ${section('timeline-title', 'Timeline', events)}`,
    };
  });
}
