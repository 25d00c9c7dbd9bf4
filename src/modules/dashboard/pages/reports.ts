// Reports: a day's settlement report in one currency (what reached each status per rail, fees, the balance's
// movements) with the reconciliation mismatches found that day, and its CSV.
import type { SettlementReport } from '../../../../packages/sdk/src/index.js';
import { dataTable, field, selectField } from '../components.js';
import type { PageContext, Pages } from '../page-context.js';
import { html, type Html } from '../html.js';
import { refusal, refusalAlert } from '../forms.js';

type RailReport = SettlementReport['rails'][number];
type Tally = RailReport['collections']['successful'];

/** The day and currency asked for: today (UTC) and the workspace's first balance by default. */
async function reportQuery(ctx: PageContext): Promise<{ date: string; currency: string; currencies: string[] }> {
  const balances = await ctx.api.balances.list();
  const held = balances.data.map((b) => b.currency);
  const offered = Object.keys(ctx.catalogue.data.currencies);
  const currencies = [...new Set([...held, ...offered])].sort();
  const date = ctx.fields.date || new Date().toISOString().slice(0, 10);
  const currency = ctx.fields.currency || held[0] || currencies[0] || 'KES';
  return { date, currency, currencies };
}

function railTable(rail: RailReport, report: SettlementReport, ctx: PageContext): Html {
  const row = (label: string, tally: Tally) =>
    html`<tr>
      <th scope="row">${label}</th>
      <td class="num">${tally.count}</td>
      <td class="num">${ctx.money(tally.amount, report.currency)}</td>
    </tr>`;
  const { collections, refunds, payouts } = rail;
  const name = `${rail.market} ${rail.rail}`;
  return html`<h3>${name}</h3>
    ${dataTable(
      name,
      ['What', { label: 'Count', num: true }, { label: 'Amount', num: true }],
      [
        row('Collections successful', collections.successful),
        row('Collections failed', collections.failed),
        row('Collections expired', collections.expired),
        row('Collections refunded', collections.refunded),
        row('Collections reversed', collections.reversed),
        row('Refunds successful', refunds.successful),
        row('Refunds failed', refunds.failed),
        row('Payouts successful', payouts.successful),
        row('Payouts failed', payouts.failed),
        html`<tr>
          <th scope="row">Payout fees</th>
          <td class="num"></td>
          <td class="num">${ctx.money(payouts.fees, report.currency)}</td>
        </tr>`,
      ],
    )}`;
}

function reportContent(report: SettlementReport, ctx: PageContext): Html {
  const money = (amount: number) => ctx.money(amount, report.currency);
  const mismatches = report.reconciliation_mismatches;
  const figures: [string, number][] = [
    ['Opening available (00:00 UTC)', report.ledger.opening_available],
    ['Closing available', report.ledger.closing_available],
    ['Fees earned', report.fees],
  ];
  return html`<section aria-labelledby="balance-title">
      <h2 id="balance-title">Balance and fees</h2>
      <div class="cards">
        ${figures.map(
          ([label, amount]) =>
            html`<div class="card">
              <p class="muted">${label}</p>
              <p class="figure">${money(amount)}</p>
            </div>`,
        )}
      </div>
      ${
        report.ledger.movements.length === 0
          ? html`<p class="card">Nothing moved the available balance that day.</p>`
          : dataTable(
              'Balance movements',
              ['Kind', { label: 'Count', num: true }, { label: 'Amount', num: true }],
              report.ledger.movements.map(
                (m) =>
                  html`<tr>
                    <th scope="row">${m.kind.replaceAll('_', ' ')}</th>
                    <td class="num">${m.count}</td>
                    <td class="num">${money(m.amount)}</td>
                  </tr>`,
              ),
            )
      }
    </section>
    <section aria-labelledby="rails-title">
      <h2 id="rails-title">By rail</h2>
      ${
        report.rails.length === 0
          ? html`<p class="card">No ${report.currency} payment reached a final status that day.</p>`
          : report.rails.map((rail) => railTable(rail, report, ctx))
      }
    </section>
    <section aria-labelledby="mismatches-title">
      <h2 id="mismatches-title">Reconciliation mismatches</h2>
      ${
        mismatches.length === 0
          ? html`<p class="card">None found that day.</p>`
          : dataTable(
              'Reconciliation mismatches',
              ['Object', 'Ours', 'Provider’s', 'Provider', 'Found'],
              mismatches.map(
                (m) =>
                  html`<tr>
                    <td>
                      ${
                        m.object_type === 'collection'
                          ? html`<a href="/dashboard/collections/${m.object_id}">collection ${m.object_id}</a>`
                          : html`${m.object_type} ${m.object_id}`
                      }
                    </td>
                    <td>${m.our_status}</td>
                    <td>${m.provider_status}</td>
                    <td>${m.provider}</td>
                    <td>${ctx.time(m.detected_at)}</td>
                  </tr>`,
              ),
            )
      }
    </section>`;
}

export function reportPages(pages: Pages): void {
  pages.get(
    '/reports',
    async (ctx) => {
      const { date, currency, currencies } = await reportQuery(ctx);
      const form = html`<form method="get" action="/dashboard/reports" class="filters">
        ${field('date', 'Day (UTC)', { type: 'date', value: date, required: true })}
        ${selectField(
          'currency',
          'Currency',
          currencies.map((c): [string, string] => [c, c]),
          currency,
        )}
        <div class="field"><button type="submit">Show report</button></div>
      </form>`;
      let report: SettlementReport;
      try {
        report = await ctx.api.reports.settlement({ date, currency });
      } catch (error) {
        const problem = refusal(error);
        return { title: 'Settlement report', status: problem.status, content: html`${form}${refusalAlert(problem)}` };
      }
      const csv = `/dashboard/reports/settlement.csv?${new URLSearchParams({ date, currency }).toString()}`;
      const content = html`${form}
        <p class="actions">
          <span>${report.currency} on ${report.date} (UTC)</span>
          ${ctx.may('exports') ? html`<a class="button secondary" href="${csv}">Download CSV</a>` : ''}
        </p>
        ${reportContent(report, ctx)}`;
      return { title: 'Settlement report', content };
    },
    'reports',
  );

  pages.get(
    '/reports/settlement.csv',
    async (ctx) => {
      const date = ctx.fields.date ?? '';
      const currency = ctx.fields.currency ?? '';
      const body = await ctx.api.reports.settlementCsv({ date, currency });
      return { download: { filename: `settlement-${date}-${currency}.csv`, contentType: 'text/csv', body } };
    },
    'exports',
  );
}
