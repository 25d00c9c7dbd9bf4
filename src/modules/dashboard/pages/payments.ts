// Collections, refunds, payouts and deposits: lists with filters and paging, details with their event timeline and
// webhook deliveries, and the two actions (refund a collection, make a payout), each confirmed first. Every read and
// write is a public API call through the SDK, so the API decides what may be done; a problem it answers to an action
// is shown on the page that asked.
import {
  PaymentsError,
  type Collection,
  type components,
  type Page,
  type Payments,
} from '../../../../packages/sdk/src/index.js';
import { COLLECTION_STATUSES } from '../../collections/collections.schemas.js';
import { DEPOSIT_STATUSES } from '../../deposits/deposits.schemas.js';
import { PAYOUT_STATUSES } from '../../payouts/payouts.schemas.js';
import { REFUND_STATUSES } from '../../refunds/refunds.states.js';
import { dataTable, facts, field, idempotencyField, pager, selectField, statusBadge } from '../components.js';
import type { PageAnswer, PageContext, Pages } from '../page-context.js';
import { exponentOf, minorUnits, pathId } from '../forms.js';
import { html, type Html } from '../html.js';

type Delivery = components['schemas']['Delivery'];
type CollectionFilters = NonNullable<Parameters<Payments['collections']['list']>[0]>;

/** A CSV export reads at most this many collections (pages of 100 through the API); more asks for narrower filters. */
const MAX_EXPORT_ROWS = 10_000;
/** What the search box takes as a phone number rather than a reference: E.164, spaces and dashes allowed. */
const PHONE_SEARCH = /^\+[\d\s-]{7,20}$/;

const query = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();
const orDash = (value: string | null | undefined): string => (value === null || value === undefined ? '—' : value);

/** The value of a status field when it is one of `statuses` (anything else is no filter). */
const oneOf = <S extends string>(statuses: readonly S[], value: string | undefined): S | undefined =>
  statuses.find((s) => s === value);

/** The filters every list has: status, the creation dates (UTC days, as the API reads a date) and the page size. */
function commonFilters<S extends string>(fields: Record<string, string>, statuses: readonly S[]) {
  return {
    status: oneOf(statuses, fields.status),
    from: fields.from || undefined,
    to: fields.to || undefined,
    limit: /^\d{1,3}$/.test(fields.limit ?? '') ? Number(fields.limit) : undefined,
  };
}

/** The fields of those filters: the dates first, side by side on a phone. */
function commonFields(fields: Record<string, string>, statuses: readonly string[]): Html[] {
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

interface ListView<T> {
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
async function listPage<T>(ctx: PageContext, view: ListView<T>, load: () => Promise<Page<T>>): Promise<PageAnswer> {
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
async function timeline(ctx: PageContext, objectIds: string[]): Promise<Html> {
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
const section = (id: string, heading: string, content: Html | string): Html =>
  html`<section aria-labelledby="${id}">
    <h2 id="${id}">${heading}</h2>
    ${content}
  </section>`;

// Collections

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

function collectionPages(pages: Pages): void {
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
        actions: html`<a class="button secondary" href="/dashboard/collections/export.csv?${exportQuery}"
          >Export CSV</a
        >`,
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
  pages.get('/collections/export.csv', async (ctx) => {
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
  });

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
          <a class="button" href="/dashboard/collections/${c.collection_id}/refund">Refund</a>
          <a href="/dashboard/collections">All collections</a>
        </div>
        ${section('refunds-title', 'Refunds', refundTable)} ${section('timeline-title', 'Timeline', events)}`,
    };
  });

  pages.get('/collections/:id/refund', async (ctx) =>
    refundConfirmation(ctx, await ctx.api.collections.get(pathId(ctx))),
  );

  pages.post('/collections/:id/refund', async (ctx) => {
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
  });
}

// Refunds

function refundPages(pages: Pages): void {
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

// Payouts

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

function payoutPages(pages: Pages): void {
  pages.get('/payouts', async (ctx) =>
    listPage(
      ctx,
      {
        path: '/dashboard/payouts',
        title: 'Payouts',
        noun: 'payouts',
        actions: html`<a class="button" href="/dashboard/payouts/new">New payout</a>`,
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

  pages.get('/payouts/new', async (ctx) => payoutForm(ctx));

  pages.get('/payouts/new/confirm', async (ctx) => {
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
  });

  pages.post('/payouts', async (ctx) => {
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
  });

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

// Deposits

function depositPages(pages: Pages): void {
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

export function paymentPages(pages: Pages): void {
  collectionPages(pages);
  refundPages(pages);
  payoutPages(pages);
  depositPages(pages);
}
