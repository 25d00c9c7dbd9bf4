// The operator's float page (admin token): the balance of each account operators hold for payouts, as last read,
// with its threshold and status; a read that failed says why. docs/guides/operator-float.md.
import type { components } from '../../../../packages/sdk/src/index.js';
import { dataTable, statusBadge } from '../components.js';
import { html } from '../html.js';
import type { PageContext, PageResult, Pages } from '../page-context.js';

type Account = components['schemas']['OperatorFloatAccount'];

const STATUS_WORDS = {
  ok: 'ok',
  low: 'low',
  unknown: 'unknown',
} satisfies Record<Account['status'], string>;

async function floatPage(ctx: PageContext): Promise<PageResult> {
  const { data } = await ctx.api.admin.operatorFloat.list();
  const amount = (value: number | null, currency: string | null) =>
    value === null || currency === null ? '—' : ctx.money(value, currency);
  const attention = data.filter((a) => a.status !== 'ok').length;
  const content = html`<p class="muted">
      What each operator holds for payouts, as its API last said; payouts fail when it runs out. Read every few minutes
      (OPERATOR_FLOAT_INTERVAL_MS); a balance below its threshold (OPERATOR_FLOAT_THRESHOLDS) raises
      <code>operator.float_low</code> in the operator workspace's events.
    </p>
    ${
      attention > 0
        ? html`<p class="error" role="status">
            ${attention} ${attention === 1 ? 'account needs' : 'accounts need'} attention: low, or not known.
          </p>`
        : ''
    }
    <section aria-labelledby="float-title">
      <h2 id="float-title">Balances</h2>
      ${
        data.length === 0
          ? html`<p class="card">
              No connector here reads balances: configure M-Pesa Daraja, MTN MoMo or Airtel Money.
            </p>`
          : dataTable(
              'Operator balances',
              [
                'Connector',
                'Account',
                { label: 'Balance', num: true },
                { label: 'Threshold', num: true },
                'Status',
                'Read',
                'Last error',
              ],
              data.map(
                (a) =>
                  html`<tr>
                    <td>${a.connector}</td>
                    <td>${a.account === '' ? 'all accounts' : a.account}</td>
                    <td class="num">${amount(a.balance, a.currency)}</td>
                    <td class="num">${amount(a.threshold, a.currency)}</td>
                    <td>${statusBadge(STATUS_WORDS[a.status])}</td>
                    <td>${a.read_at === null ? 'never' : ctx.time(a.read_at)}</td>
                    <td>
                      ${a.error === null ? '—' : html`${a.error}${a.error_at ? html` (${ctx.time(a.error_at)})` : ''}`}
                    </td>
                  </tr>`,
              ),
            )
      }
    </section>`;
  return { title: 'Operator float', content };
}

export function operatorFloatPages(pages: Pages): void {
  pages.get('/admin/operator-float', floatPage);
}
