// Checkout links: the workspace's checkout sessions, a form that makes one, and a link's page (the link with a copy
// button, its QR code drawn here as SVG, and its payment attempts).
import QRCode from 'qrcode';
import type { Config } from '../../../config.js';
import type { CheckoutSession, Collection } from '../../../../packages/sdk/src/index.js';
import {
  dataTable,
  facts,
  field,
  idempotencyField,
  pager,
  selectField,
  shownOnce,
  statusBadge,
} from '../components.js';
import type { PageContext, PageResult, Pages } from '../page-context.js';
import { choice, exponentOf, minorUnits, pathId, refusal, refusalAlert } from '../forms.js';
import { html, raw, type Html } from '../html.js';

type SessionStatus = CheckoutSession['status'];
const STATUS_FILTER = {
  open: 'Open',
  processing: 'Processing',
  complete: 'Complete',
  expired: 'Expired',
} satisfies Record<SessionStatus, string>;

/** How long a new link stays payable: the API takes 300 to 86,400 seconds (default 3,600). */
const EXPIRIES = {
  '900': '15 minutes',
  '3600': '1 hour',
  '21600': '6 hours',
  '86400': '24 hours',
};

/**
 * Each market the workspace may use (its configuration, as narrowed by an admin) as its currency ("KES (Kenya)"): a
 * checkout link is in one currency, in one market.
 */
async function marketOptions(ctx: PageContext): Promise<[string, string][]> {
  const { markets } = await ctx.api.workspace.configuration();
  return markets
    .map((m): [string, string] => [m.market, `${m.currency} (${m.name})`])
    .sort((a, b) => a[1].localeCompare(b[1]));
}

async function newLinkForm(ctx: PageContext, config: Config, problem?: Html): Promise<PageResult> {
  const f = ctx.fields;
  const https = config.paymentsEnv === 'production';
  return {
    title: 'New checkout link',
    status: problem ? 400 : 200,
    content: html`${problem ?? ''}
      <form method="post" action="/dashboard/checkout-links" class="card">
        ${ctx.csrf}${idempotencyField()} ${selectField('market', 'Currency', await marketOptions(ctx), f.market ?? '')}
        ${field('amount', 'Amount', {
          value: f.amount ?? '',
          required: true,
          hint: 'In the currency’s main unit, e.g. 1500 or 1500.50.',
          attributes: 'inputmode="decimal" autocomplete="off"',
        })}
        ${field('redirect_url', 'Redirect URL', {
          type: 'url',
          value: f.redirect_url ?? '',
          required: true,
          hint: `Where the payer goes once the payment is done (${https ? 'https' : 'http or https'}).`,
        })}
        ${field('reference', 'Reference (optional)', {
          value: f.reference ?? '',
          hint: 'Your reference, carried by each payment attempt; the link’s id when left empty.',
          attributes: 'maxlength="128"',
        })}
        ${field('phone_number', 'Payer’s phone number (optional)', {
          type: 'tel',
          value: f.phone_number ?? '',
          hint: 'Filled in on the payment page, e.g. +254712345678; the payer can change it.',
        })}
        ${selectField('expires_in', 'Payable for', Object.entries(EXPIRIES), f.expires_in ?? '3600')}
        <button type="submit">Create checkout link</button>
      </form>`,
  };
}

/**
 * The link's attempts: each is a collection with its amount and reference (its id when it has none), made between
 * its creation and its expiry. The API names only the latest (`collection_id`), so the others are found by those
 * fields, among at most five pages of that period's collections.
 */
async function attemptsOf(ctx: PageContext, session: CheckoutSession): Promise<Collection[]> {
  if (session.attempts === 0) return [];
  const reference = session.reference ?? session.id;
  const found: Collection[] = [];
  const list = ctx.api.collections.list({ from: session.created_at, to: session.expires_at, limit: 100 });
  let cursor: string | undefined;
  for (let pages = 0; pages < 5 && found.length < session.attempts; pages++) {
    const page = await list.page(cursor);
    found.push(
      ...page.data.filter(
        (c) => c.reference === reference && c.amount === session.amount && c.currency === session.currency,
      ),
    );
    if (!page.has_more || page.next_cursor === null) break;
    cursor = page.next_cursor;
  }
  if (session.collection_id && !found.some((c) => c.collection_id === session.collection_id))
    found.unshift(await ctx.api.collections.get(session.collection_id));
  return found.slice(0, session.attempts);
}

/** The link as a QR code: the library's SVG, named for assistive technology. */
async function qrCode(url: string): Promise<Html> {
  const svg = await QRCode.toString(url, { type: 'svg', margin: 1 });
  return raw(svg.replace('<svg ', '<svg role="img" aria-label="QR code of the checkout link" focusable="false" '));
}

export function checkoutLinkPages(pages: Pages, config: Config): void {
  pages.get('/checkout-links', async (ctx) => {
    const status = choice(STATUS_FILTER, ctx.fields.status);
    const page = await ctx.api.checkoutSessions
      .list({ limit: 20, ...(status ? { status } : {}) })
      .page(ctx.fields.cursor || undefined);
    const rows = page.data.map(
      (s) =>
        html`<tr>
          <td><a href="/dashboard/checkout-links/${s.id}">${s.reference ?? s.id}</a></td>
          <td>${statusBadge(s.status)}</td>
          <td class="num">${ctx.money(s.amount, s.currency)}</td>
          <td>${ctx.time(s.created_at)}</td>
          <td>${ctx.time(s.expires_at)}</td>
        </tr>`,
    );
    const content = html`${
        ctx.may('collections')
          ? html`<p class="actions"><a class="button" href="/dashboard/checkout-links/new">New checkout link</a></p>`
          : ''
      }
      <form method="get" action="/dashboard/checkout-links" class="filters">
        ${selectField('status', 'Status', [['', 'Any'], ...Object.entries(STATUS_FILTER)], status ?? '')}
        <div class="field"><button type="submit" class="secondary">Show</button></div>
      </form>
      ${
        rows.length === 0
          ? html`<p class="card">No checkout links${status ? html` in status ${status}` : ''} yet.</p>`
          : dataTable(
              'Checkout links',
              ['Reference', 'Status', { label: 'Amount', num: true }, 'Created', 'Expires'],
              rows,
            )
      }
      ${pager('/dashboard/checkout-links', ctx.fields, page.next_cursor)}`;
    return { title: 'Checkout links', content };
  });

  pages.get('/checkout-links/new', async (ctx) => newLinkForm(ctx, config), 'collections');

  pages.post(
    '/checkout-links',
    async (ctx) => {
      const f = ctx.fields;
      const market = ctx.catalogue.market(f.market ?? '');
      const exponent = market ? exponentOf(ctx, market.currency) : undefined;
      const amount = exponent === undefined ? undefined : minorUnits(f.amount, exponent);
      if (!market || amount === undefined) {
        const problem = html`<p class="error" role="alert">
          ${market ? 'Enter the amount as a number, with no more decimals than the currency has.' : 'Choose a currency.'}
        </p>`;
        return newLinkForm(ctx, config, problem);
      }
      const expiresIn = choice(EXPIRIES, f.expires_in) ?? '3600';
      let session: CheckoutSession;
      try {
        session = await ctx.api.checkoutSessions.create(
          {
            amount,
            currency: market.currency,
            market: f.market,
            redirect_url: f.redirect_url ?? '',
            expires_in: Number(expiresIn),
            ...(f.reference ? { reference: f.reference } : {}),
            ...(f.phone_number ? { customer: { phone_number: f.phone_number } } : {}),
          },
          { idempotencyKey: f.idempotency_key },
        );
      } catch (error) {
        return newLinkForm(ctx, config, refusalAlert(refusal(error)));
      }
      return { redirect: `/dashboard/checkout-links/${session.id}`, notice: 'Checkout link created.' };
    },
    'collections',
  );

  pages.get('/checkout-links/:id', async (ctx) => {
    const id = pathId(ctx);
    const session = await ctx.api.checkoutSessions.get(id);
    const attempts = await attemptsOf(ctx, session);
    const payable = session.status === 'open' || session.status === 'processing';
    const content = html`${shownOnce('session-url', 'The link to send the payer', session.session_url)}
      ${payable ? html`<p><a href="${session.session_url}">Open the payment page</a></p>` : ''}
      <figure class="card qr">
        ${await qrCode(session.session_url)}
        <figcaption class="muted">Scan it with a phone’s camera to open the payment page.</figcaption>
      </figure>
      <section aria-labelledby="details-title">
        <h2 id="details-title">Details</h2>
        <div class="card">
          ${facts([
            ['Status', statusBadge(session.status)],
            ['Amount', ctx.money(session.amount, session.currency)],
            ['Reference', session.reference ?? '—'],
            ['Market', session.market],
            ['Redirect URL', session.redirect_url],
            ['Created', ctx.time(session.created_at)],
            ['Expires', ctx.time(session.expires_at)],
            ['Paid', ctx.time(session.completed_at)],
            ['Latest failure', session.failure_reason ?? '—'],
            ['Id', session.id],
          ])}
        </div>
      </section>
      <section aria-labelledby="attempts-title">
        <h2 id="attempts-title">Attempts (${session.attempts})</h2>
        ${
          attempts.length === 0
            ? html`<p class="card">No payment attempt yet.</p>`
            : dataTable(
                'Attempts',
                ['Attempt', 'Status', 'Failure reason', 'Rail', 'Started'],
                // Newest first, numbered from the first attempt.
                attempts.map(
                  (c, i) =>
                    html`<tr>
                      <td><a href="/dashboard/collections/${c.collection_id}">Attempt ${session.attempts - i}</a></td>
                      <td>${statusBadge(c.status)}</td>
                      <td>${c.failure_reason ?? '—'}</td>
                      <td>${c.market} ${c.rail}</td>
                      <td>${ctx.time(c.created_at)}</td>
                    </tr>`,
                ),
              )
        }
      </section>`;
    return { title: `Checkout link ${session.reference ?? session.id}`, content };
  });
}
