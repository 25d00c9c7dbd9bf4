// Payouts: the list with its filters, a payout's details with its event timeline, and a new payout (beneficiary,
// route, amount, reference), confirmed first. Every read and write is a public API call through the SDK, so the API
// decides what may be done; a problem it answers to the payout is shown on the page that asked.
import { PaymentsError, type components } from '../../../../packages/sdk/src/index.js';
import { PAYOUT_STATUSES } from '../../payouts/payouts.schemas.js';
import { facts, field, idempotencyField, selectField, statusBadge } from '../components.js';
import type { PageAnswer, PageContext, Pages } from '../page-context.js';
import { exponentOf, minorUnits, pathId } from '../forms.js';
import { html } from '../html.js';
import { commonFields, commonFilters, listPage, orDash, query, section, timeline } from './payment-views.js';
import { bulkPayoutPages } from './payouts-bulk.js';

type Route = components['schemas']['OfframpRoute'];
type Beneficiary = components['schemas']['Beneficiary'];

const destination = (b: Beneficiary): string =>
  `${b.name} (${b.phone_number ?? `${orDash(b.bank_code)} ${orDash(b.account_number)}`}, ${b.market} ${b.rail})`;

function routeLabel(ctx: PageContext, r: Route): string {
  const from = r.source_type === 'balance' ? `${r.source} balance` : r.source;
  const fee = [
    ...(r.fee_fixed > 0 ? [ctx.money(r.fee_fixed, r.currency)] : []),
    ...(r.fee_bps > 0 ? [`${r.fee_bps / 100}%`] : []),
  ];
  return `${from} → ${r.market} ${r.rail}, ${fee.length === 0 ? 'no fee' : `fee ${fee.join(' + ')}`}`;
}

/** The new payout form, with what was entered (after Cancel, or a problem to fix). */
async function payoutForm(ctx: PageContext, problem?: string): Promise<PageAnswer> {
  const f = ctx.fields;
  const [beneficiaries, routes] = await Promise.all([
    ctx.api.beneficiaries.list({ status: 'active', limit: 100 }).firstPage(),
    ctx.api.routes.list({ limit: 100 }).firstPage(),
  ]);
  const missing =
    beneficiaries.data.length === 0
      ? 'No active beneficiary yet: add one through the API (POST /v1/api/beneficiaries).'
      : routes.data.length === 0
        ? 'No payout route is active: a liquidity provider adds them (POST /v1/api/routes).'
        : undefined;
  return {
    title: 'New payout',
    status: problem ? 400 : 200,
    content: html`${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
    ${
      missing
        ? html`<p class="card">${missing}</p>`
        : html`<form method="get" action="/dashboard/payouts/new/confirm" class="card">
            ${selectField(
              'beneficiary_id',
              'Beneficiary',
              [
                ['', 'Choose a beneficiary'],
                ...beneficiaries.data.map((b): [string, string] => [b.beneficiary_id, destination(b)]),
              ],
              f.beneficiary_id ?? '',
            )}
            ${selectField(
              'route_id',
              'Route',
              [['', 'Choose a route'], ...routes.data.map((r): [string, string] => [r.route_id, routeLabel(ctx, r)])],
              f.route_id ?? '',
            )}
            ${field('amount', 'Amount', {
              value: f.amount ?? '',
              required: true,
              hint: 'In the currency the route pays from, e.g. 1500.00. You confirm it on the next page.',
              attributes: 'inputmode="decimal" autocomplete="off"',
            })}
            ${field('reference', 'Reference', {
              value: f.reference ?? '',
              required: true,
              hint: 'Yours; shown to the recipient where the rail allows.',
              attributes: 'maxlength="128"',
            })}
            <div class="actions">
              <button type="submit">Continue</button>
              <a href="/dashboard/payouts">Cancel</a>
            </div>
          </form>`
    }`,
  };
}

export function payoutPages(pages: Pages): void {
  pages.get('/payouts', async (ctx) =>
    listPage(
      ctx,
      {
        path: '/dashboard/payouts',
        title: 'Payouts',
        noun: 'payouts',
        actions: ctx.may('payouts')
          ? html`<a class="button" href="/dashboard/payouts/new">New payout</a>
              <a class="button secondary" href="/dashboard/payouts/bulk">Bulk payouts (CSV)</a>`
          : html``,
        fields: commonFields(ctx.fields, PAYOUT_STATUSES),
        headers: ['Reference', { label: 'Amount', num: true }, 'Status', 'Rail', 'Created'],
        row: (p) =>
          html`<tr>
            <th scope="row"><a href="/dashboard/payouts/${p.transaction_id}">${p.reference}</a></th>
            <td class="num">${ctx.money(p.amount, p.currency)}</td>
            <td>${statusBadge(p.status)}</td>
            <td>${p.market} ${p.rail}</td>
            <td>${ctx.time(p.created_at)}</td>
          </tr>`,
      },
      () => ctx.api.payouts.list(commonFilters(ctx.fields, PAYOUT_STATUSES)).page(ctx.fields.cursor || undefined),
    ),
  );

  pages.get('/payouts/new', async (ctx) => payoutForm(ctx), 'payouts');
  bulkPayoutPages(pages);

  pages.get(
    '/payouts/new/confirm',
    async (ctx) => {
      const f = ctx.fields;
      if (!f.beneficiary_id) return payoutForm(ctx, 'Choose a beneficiary.');
      if (!f.route_id) return payoutForm(ctx, 'Choose a route.');
      if (!f.reference?.trim()) return payoutForm(ctx, 'Enter a reference.');
      const [beneficiary, route] = await Promise.all([
        ctx.api.beneficiaries.get(f.beneficiary_id),
        ctx.api.routes.get(f.route_id),
      ]);
      const exponent = exponentOf(ctx, route.source);
      const amount = exponent === undefined ? undefined : minorUnits(f.amount, exponent);
      if (amount === undefined)
        return payoutForm(
          ctx,
          `Enter the amount as a number in ${route.source}, like ${ctx.money(150_000, route.source)}.`,
        );
      const back = `/dashboard/payouts/new?${query({ ...f })}`;
      return {
        title: 'Confirm the payout',
        content: html`<div class="card">
          <p class="question">Pay ${ctx.money(amount, route.source)} to ${destination(beneficiary)}?</p>
          ${facts([
            ['Route', routeLabel(ctx, route)],
            ['Reference', f.reference],
          ])}
          <p class="muted">
            The amount is reserved from your ${route.source} balance at once; the payout then shows the fee and what the
            recipient receives.
          </p>
          <form method="post" action="/dashboard/payouts">
            ${ctx.csrf} ${idempotencyField()}
            <input type="hidden" name="beneficiary_id" value="${beneficiary.beneficiary_id}" />
            <input type="hidden" name="route_id" value="${route.route_id}" />
            <input type="hidden" name="amount" value="${String(amount)}" />
            <input type="hidden" name="amount_entered" value="${f.amount ?? ''}" />
            <input type="hidden" name="reference" value="${f.reference}" />
            <div class="actions">
              <button type="submit">Confirm</button>
              <a class="button secondary" href="${back}">Cancel</a>
            </div>
          </form>
        </div>`,
      };
    },
    'payouts',
  );

  pages.post(
    '/payouts',
    async (ctx) => {
      const f = ctx.fields;
      try {
        const payout = await ctx.api.payouts.create(
          {
            beneficiary_id: f.beneficiary_id ?? '',
            route_id: f.route_id ?? '',
            amount: Number(f.amount),
            reference: f.reference ?? '',
          },
          { idempotencyKey: f.idempotency_key },
        );
        return {
          redirect: `/dashboard/payouts/${payout.transaction_id}`,
          notice: `Payout of ${ctx.money(payout.source_amount, payout.source_currency)} committed: it is ${payout.status}.`,
        };
      } catch (error) {
        if (!(error instanceof PaymentsError) || (error.status !== 409 && error.status !== 422)) throw error;
        const back = query({
          beneficiary_id: f.beneficiary_id ?? '',
          route_id: f.route_id ?? '',
          amount: f.amount_entered ?? '',
          reference: f.reference ?? '',
        });
        return {
          title: 'Payout not made',
          status: error.status,
          content: html`<p class="error" role="alert">
              ${error.problem.detail} <span class="muted">(${error.code})</span>
            </p>
            <p>
              <a href="/dashboard/payouts/new?${back}">Back to the form</a> · <a href="/dashboard/payouts">Payouts</a>
            </p>`,
        };
      }
    },
    'payouts',
  );

  pages.get('/payouts/:id', async (ctx) => {
    const p = await ctx.api.payouts.get(pathId(ctx));
    const [beneficiary, events] = await Promise.all([
      ctx.api.beneficiaries.get(p.beneficiary_id),
      timeline(ctx, [p.transaction_id]),
    ]);
    const converted =
      p.rate === null ? [] : [['Rate', `${p.rate} (${orDash(p.rate_source_name)})`] as [string, unknown]];
    return {
      title: `Payout ${p.reference}`,
      content: html`<div class="card">
          ${facts([
            ['Recipient receives', ctx.money(p.amount, p.currency)],
            ['Paid from', ctx.money(p.source_amount, p.source_currency)],
            ...converted,
            ['Fee', ctx.money(p.fee, p.currency)],
            ['Status', statusBadge(p.status)],
            ['Beneficiary', destination(beneficiary)],
            ['Rail', `${p.market} ${p.rail}`],
            ['Reference', p.reference],
            ['Failure reason', orDash(p.failure_reason)],
            ['Provider receipt', orDash(p.provider_receipt)],
            ['Committed', ctx.time(p.created_at)],
            ['Last change', ctx.time(p.updated_at)],
            ['Completed', ctx.time(p.completed_at)],
            ['Transaction id', html`<code>${p.transaction_id}</code>`],
          ])}
        </div>
        <p><a href="/dashboard/payouts">All payouts</a></p>
        ${section('timeline-title', 'Timeline', events)}`,
    };
  });
}
