// Deposits: the list with its filters, and a deposit's details (its chain transfer, its confirmations, what it was
// credited as) with its event timeline.
import { DEPOSIT_STATUSES } from '../../deposits/deposits.schemas.js';
import { facts, statusBadge } from '../components.js';
import type { Pages } from '../page-context.js';
import { pathId } from '../forms.js';
import { html } from '../html.js';
import { commonFields, commonFilters, listPage, orDash, section, timeline } from './payment-views.js';

export function depositPages(pages: Pages): void {
  pages.get('/deposits', async (ctx) =>
    listPage(
      ctx,
      {
        path: '/dashboard/deposits',
        title: 'Deposits',
        noun: 'deposits',
        fields: commonFields(ctx.fields, DEPOSIT_STATUSES),
        headers: [
          { label: 'Amount', num: true },
          'Network',
          'Status',
          { label: 'Credited', num: true },
          'Arrived',
          'Deposit id',
        ],
        row: (d) =>
          html`<tr>
            <th scope="row" class="num">
              <a href="/dashboard/deposits/${d.deposit_id}">${ctx.money(d.amount, d.asset)}</a>
            </th>
            <td>${d.network}</td>
            <td>${statusBadge(d.status)}</td>
            <td class="num">
              ${
                d.credited_amount === null || d.credited_currency === null
                  ? '—'
                  : ctx.money(d.credited_amount, d.credited_currency)
              }
            </td>
            <td>${ctx.time(d.created_at)}</td>
            <td><code>${d.deposit_id}</code></td>
          </tr>`,
      },
      () => ctx.api.deposits.list(commonFilters(ctx.fields, DEPOSIT_STATUSES)).page(ctx.fields.cursor || undefined),
    ),
  );

  pages.get('/deposits/:id', async (ctx) => {
    const d = await ctx.api.deposits.get(pathId(ctx));
    const events = await timeline(ctx, [d.deposit_id]);
    return {
      title: `Deposit of ${ctx.money(d.amount, d.asset)}`,
      content: html`<div class="card">
          ${facts([
            ['Amount', ctx.money(d.amount, d.asset)],
            ['Asset', `${d.asset} on ${d.network}`],
            ['Status', statusBadge(d.status)],
            [
              'Credited',
              d.credited_amount === null || d.credited_currency === null
                ? '—'
                : ctx.money(d.credited_amount, d.credited_currency),
            ],
            ['Autoconvert credit', d.credit_id === null ? '—' : html`<code>${d.credit_id}</code>`],
            ['Failure reason', orDash(d.failure_reason)],
            ['Address', html`<code>${d.address}</code>`],
            ['Transaction', html`<code>${d.tx_hash}</code> (transfer ${d.log_index})`],
            ['Confirmations', d.confirmations],
            ['Arrived', ctx.time(d.created_at)],
            ['Confirmed', ctx.time(d.confirmed_at)],
            ['Credited at', ctx.time(d.credited_at)],
            ['Deposit id', html`<code>${d.deposit_id}</code>`],
          ])}
        </div>
        <p><a href="/dashboard/deposits">All deposits</a></p>
        ${section('timeline-title', 'Timeline', events)}`,
    };
  });
}
