// The sandbox panel: make a test collection with one of the simulator's test numbers, and drive a collection, a
// refund or a payout to an outcome through the simulate endpoints (their rules apply: the API's refusal is shown).
// Only in the sandbox; in production the page is not there.
import type { Collection, components, Payout } from '../../../../packages/sdk/src/index.js';
import { dataTable, field, idempotencyField, selectField, statusBadge } from '../components.js';
import type { PageContext, PageResult, Pages } from '../page-context.js';
import { html, type Html } from '../html.js';
import { choice, minorUnits, refusal, refusalAlert } from '../forms.js';

type Schemas = components['schemas'];
type CollectionReason = NonNullable<Schemas['SimulateCollectionRequest']['reason']>;
type RefundReason = NonNullable<Schemas['SimulateRefundRequest']['reason']>;
type PayoutReason = NonNullable<Schemas['SimulatePayoutRequest']['reason']>;

/** What the simulate endpoints accept, as their schemas say (a new value in the API fails the type check here). */
const COLLECTION_OUTCOMES = {
  successful: 'Successful',
  failed: 'Failed',
  expired: 'Expired',
  reversed: 'Reversed (after successful)',
} satisfies Record<Schemas['SimulateCollectionRequest']['outcome'], string>;
const COLLECTION_REASONS = {
  provider_error: 'provider_error (the default)',
  payer_declined: 'payer_declined',
  insufficient_funds: 'insufficient_funds',
  wrong_pin: 'wrong_pin',
  prompt_expired: 'prompt_expired',
  payer_unreachable: 'payer_unreachable',
  payer_busy: 'payer_busy',
  payer_limit_reached: 'payer_limit_reached',
  payer_not_found: 'payer_not_found',
  provider_refused: 'provider_refused',
} satisfies Record<CollectionReason, string>;
const REFUND_OUTCOMES = { successful: 'Successful', failed: 'Failed' } satisfies Record<
  Schemas['SimulateRefundRequest']['outcome'],
  string
>;
const REFUND_REASONS = {
  provider_error: 'provider_error (the default)',
  provider_refused: 'provider_refused',
  insufficient_provider_balance: 'insufficient_provider_balance',
  collection_reversed: 'collection_reversed',
} satisfies Record<RefundReason, string>;
const PAYOUT_OUTCOMES = { successful: 'Successful', failed: 'Failed' } satisfies Record<
  Schemas['SimulatePayoutRequest']['outcome'],
  string
>;
const PAYOUT_REASONS = {
  provider_error: 'provider_error (the default)',
  recipient_declined: 'recipient_declined',
  invalid_account: 'invalid_account',
  recipient_limit_reached: 'recipient_limit_reached',
  insufficient_provider_balance: 'insufficient_provider_balance',
  provider_refused: 'provider_refused',
} satisfies Record<PayoutReason, string>;

/** The simulator's test numbers: the last four digits of the payer's phone number pick what happens. */
const TEST_NUMBERS = {
  '0000': '…0000: successful',
  '0001': '…0001: declined (failed)',
  '0002': '…0002: failed at once',
  '0003': '…0003: never paid (expires)',
  '0004': '…0004: successful, reversed',
  '0005': '…0005: stays processing',
};
type TestNumber = keyof typeof TEST_NUMBERS;

const RUNNING_COLLECTIONS = ['created', 'pending', 'processing'] as const;
const RUNNING_PAYOUTS = ['created', 'pending'] as const;

function notInSandbox(): PageResult {
  return {
    title: 'Not found',
    status: 404,
    content: html`<p class="card">The sandbox panel exists only in the sandbox: nothing can be simulated here.</p>`,
  };
}

/** The rails the workspace may use (its configuration, as narrowed by an admin), as "M-Pesa (KE, KES)". */
async function railOptions(ctx: PageContext): Promise<[string, string][]> {
  const { markets } = await ctx.api.workspace.configuration();
  return markets.flatMap((market) =>
    market.rails.map((r): [string, string] => [
      `${market.market}/${r.rail}`,
      `${r.name} (${market.market}, ${market.currency})`,
    ]),
  );
}

/** A test payer in the rail's market whose number (and reference, which bank transfers go by) ends in `digits`. */
function testCollection(ctx: PageContext, marketCode: string, railCode: string, digits: TestNumber, amount: string) {
  const market = ctx.catalogue.market(marketCode);
  const rail = market ? ctx.catalogue.rail(market, railCode) : undefined;
  const exponent = market ? ctx.catalogue.currency(market.currency)?.exponent : undefined;
  const minor = exponent === undefined ? undefined : minorUnits(amount, exponent);
  if (!market || !rail || minor === undefined) return undefined;
  const national = `7${digits.padStart(market.phone.national_digits - 1, '0')}`.slice(-market.phone.national_digits);
  const customer: { phone_number?: string; name?: string; email?: string } = {};
  if (rail.customer_fields.includes('phone_number')) customer.phone_number = `+${market.phone.country_code}${national}`;
  if (rail.customer_fields.includes('name')) customer.name = 'Sandbox Payer';
  if (rail.customer_fields.includes('email')) customer.email = 'payer@example.com';
  return {
    amount: minor,
    currency: market.currency,
    reference: `test-${Date.now()}-${digits}`,
    customer,
    metadata: { sandbox_test_number: digits },
  };
}

async function runningCollections(ctx: PageContext): Promise<Collection[]> {
  const pages = await Promise.all(
    RUNNING_COLLECTIONS.map((status) => ctx.api.collections.list({ status, limit: 10 }).firstPage()),
  );
  return pages
    .flatMap((p) => p.data)
    .sort((a, b) => b.created_at.localeCompare(a.created_at))
    .slice(0, 10);
}

async function runningPayouts(ctx: PageContext): Promise<Payout[]> {
  const pages = await Promise.all(
    RUNNING_PAYOUTS.map((status) => ctx.api.payouts.list({ status, limit: 10 }).firstPage()),
  );
  return pages
    .flatMap((p) => p.data)
    .sort((a, b) => b.created_at.localeCompare(a.created_at))
    .slice(0, 10);
}

/** The panel; `problem` (the API's refusal of the form just sent) shows at the top, and the form keeps its values. */
async function panel(ctx: PageContext, problem?: Html, status = 200): Promise<PageResult> {
  const f = ctx.fields;
  const [collections, payouts, rails] = await Promise.all([
    runningCollections(ctx),
    runningPayouts(ctx),
    ctx.may('collections') ? railOptions(ctx) : [],
  ]);
  const content = html`${problem ?? ''}
    <p>
      Everything here goes through the simulate endpoints of the API, with their rules: an outcome the lifecycle cannot
      reach from an object’s status is refused.
    </p>
    ${
      ctx.may('collections')
        ? html`<section aria-labelledby="create-title">
            <h2 id="create-title">Create a test collection</h2>
            <form method="post" action="/dashboard/sandbox/collections" class="card">
              ${ctx.csrf}${idempotencyField()} ${selectField('rail', 'Market and rail', rails, f.rail ?? '')}
              ${field('amount', 'Amount', {
                value: f.amount ?? '1000',
                required: true,
                hint: 'In the market currency’s main unit.',
                attributes: 'inputmode="decimal" autocomplete="off"',
              })}
              ${selectField('test_number', 'Payer’s number', Object.entries(TEST_NUMBERS), f.test_number ?? '0005')}
              <p class="muted">
                A test number of the rail’s country ending in these digits: the simulator does what it says (on a bank
                transfer, the reference ends in them).
              </p>
              <button type="submit">Create test collection</button>
            </form>
          </section>`
        : ''
    }
    <section aria-labelledby="drive-collection">
      <h2 id="drive-collection" tabindex="-1">Drive a collection</h2>
      ${
        collections.length === 0
          ? html`<p class="card">No collection is running now.</p>`
          : html`<p>Running now (choose one to fill in its id):</p>
              ${dataTable(
                'Running collections',
                ['Reference', 'Status', { label: 'Amount', num: true }, 'Created'],
                collections.map(
                  (c) =>
                    html`<tr>
                      <td>
                        <a href="/dashboard/sandbox?collection_id=${c.collection_id}#drive-collection"
                          >${c.reference}</a
                        >
                      </td>
                      <td>${statusBadge(c.status)}</td>
                      <td class="num">${ctx.money(c.amount, c.currency)}</td>
                      <td>${ctx.time(c.created_at)}</td>
                    </tr>`,
                ),
              )}`
      }
      <form method="post" action="/dashboard/sandbox/collections/simulate" class="card">
        ${ctx.csrf}${idempotencyField()}
        ${field('collection_id', 'Collection id', { value: f.collection_id ?? '', required: true, attributes: 'autocomplete="off"' })}
        ${selectField('collection_outcome', 'Collection outcome', Object.entries(COLLECTION_OUTCOMES), f.collection_outcome ?? '')}
        ${selectField('collection_reason', 'Collection failure reason (when failed)', Object.entries(COLLECTION_REASONS), f.collection_reason ?? '')}
        <button type="submit">Drive collection</button>
      </form>
    </section>
    <section aria-labelledby="drive-refund">
      <h2 id="drive-refund" tabindex="-1">Drive a refund</h2>
      <form method="post" action="/dashboard/sandbox/refunds/simulate" class="card">
        ${ctx.csrf}${idempotencyField()}
        ${field('refund_id', 'Refund id', {
          value: f.refund_id ?? '',
          required: true,
          hint: 'A refund’s id is on its collection’s page.',
          attributes: 'autocomplete="off"',
        })}
        ${selectField('refund_outcome', 'Refund outcome', Object.entries(REFUND_OUTCOMES), f.refund_outcome ?? '')}
        ${selectField('refund_reason', 'Refund failure reason (when failed)', Object.entries(REFUND_REASONS), f.refund_reason ?? '')}
        <button type="submit">Drive refund</button>
      </form>
    </section>
    <section aria-labelledby="drive-payout">
      <h2 id="drive-payout" tabindex="-1">Drive a payout</h2>
      ${
        payouts.length === 0
          ? html`<p class="card">No payout is running now.</p>`
          : html`<p>Running now (choose one to fill in its id):</p>
              ${dataTable(
                'Running payouts',
                ['Reference', 'Status', { label: 'Amount', num: true }, 'Created'],
                payouts.map(
                  (p) =>
                    html`<tr>
                      <td>
                        <a href="/dashboard/sandbox?payout_id=${p.transaction_id}#drive-payout">${p.reference}</a>
                      </td>
                      <td>${statusBadge(p.status)}</td>
                      <td class="num">${ctx.money(p.amount, p.currency)}</td>
                      <td>${ctx.time(p.created_at)}</td>
                    </tr>`,
                ),
              )}`
      }
      <form method="post" action="/dashboard/sandbox/payouts/simulate" class="card">
        ${ctx.csrf}${idempotencyField()}
        ${field('payout_id', 'Payout id', { value: f.payout_id ?? '', required: true, attributes: 'autocomplete="off"' })}
        ${selectField('payout_outcome', 'Payout outcome', Object.entries(PAYOUT_OUTCOMES), f.payout_outcome ?? '')}
        ${selectField('payout_reason', 'Payout failure reason (when failed)', Object.entries(PAYOUT_REASONS), f.payout_reason ?? '')}
        <button type="submit">Drive payout</button>
      </form>
    </section>`;
  return { title: 'Sandbox', content, status };
}

/** The form again with what the dashboard or the API refused. */
const refused = (ctx: PageContext, error: unknown): Promise<PageResult> => {
  const problem = refusal(error);
  return panel(ctx, refusalAlert(problem), problem.status);
};
const incomplete = (ctx: PageContext, what: string): Promise<PageResult> =>
  panel(ctx, html`<p class="error" role="alert">${what}</p>`, 400);

export function sandboxPages(pages: Pages): void {
  pages.get(
    '/sandbox',
    async (ctx) => (ctx.session.environment === 'sandbox' ? panel(ctx) : notInSandbox()),
    'sandbox',
  );

  pages.post(
    '/sandbox/collections',
    async (ctx) => {
      if (ctx.session.environment !== 'sandbox') return notInSandbox();
      const f = ctx.fields;
      const [market = '', rail = ''] = (f.rail ?? '').split('/');
      const digits = choice(TEST_NUMBERS, f.test_number);
      const body = digits && testCollection(ctx, market, rail, digits, f.amount ?? '');
      if (!body) return incomplete(ctx, 'Choose a rail and a test number, and enter the amount as a number.');
      try {
        const made = await ctx.api.collections.create(market, rail, body, { idempotencyKey: f.idempotency_key });
        return {
          redirect: `/dashboard/sandbox?collection_id=${made.collection_id}#drive-collection`,
          notice: `Test collection ${made.reference} created: ${made.status}.`,
        };
      } catch (error) {
        return refused(ctx, error);
      }
    },
    'collections',
  );

  pages.post(
    '/sandbox/collections/simulate',
    async (ctx) => {
      if (ctx.session.environment !== 'sandbox') return notInSandbox();
      const f = ctx.fields;
      const outcome = choice(COLLECTION_OUTCOMES, f.collection_outcome);
      const reason = choice(COLLECTION_REASONS, f.collection_reason);
      if (!f.collection_id || !outcome) return incomplete(ctx, 'Give the collection’s id and choose an outcome.');
      try {
        const moved = await ctx.api.sandbox.simulateCollection(
          f.collection_id,
          { outcome, ...(outcome === 'failed' && reason ? { reason } : {}) },
          { idempotencyKey: f.idempotency_key },
        );
        return {
          redirect: '/dashboard/sandbox',
          notice: `Collection ${moved.reference} (${moved.collection_id}) is now ${moved.status}.`,
        };
      } catch (error) {
        return refused(ctx, error);
      }
    },
    'sandbox',
  );

  pages.post(
    '/sandbox/refunds/simulate',
    async (ctx) => {
      if (ctx.session.environment !== 'sandbox') return notInSandbox();
      const f = ctx.fields;
      const outcome = choice(REFUND_OUTCOMES, f.refund_outcome);
      const reason = choice(REFUND_REASONS, f.refund_reason);
      if (!f.refund_id || !outcome) return incomplete(ctx, 'Give the refund’s id and choose an outcome.');
      try {
        const moved = await ctx.api.sandbox.simulateRefund(
          f.refund_id,
          { outcome, ...(outcome === 'failed' && reason ? { reason } : {}) },
          { idempotencyKey: f.idempotency_key },
        );
        return { redirect: '/dashboard/sandbox', notice: `Refund ${moved.refund_id} is now ${moved.status}.` };
      } catch (error) {
        return refused(ctx, error);
      }
    },
    'sandbox',
  );

  pages.post(
    '/sandbox/payouts/simulate',
    async (ctx) => {
      if (ctx.session.environment !== 'sandbox') return notInSandbox();
      const f = ctx.fields;
      const outcome = choice(PAYOUT_OUTCOMES, f.payout_outcome);
      const reason = choice(PAYOUT_REASONS, f.payout_reason);
      if (!f.payout_id || !outcome) return incomplete(ctx, 'Give the payout’s id and choose an outcome.');
      try {
        const moved = await ctx.api.sandbox.simulatePayout(
          f.payout_id,
          { outcome, ...(outcome === 'failed' && reason ? { reason } : {}) },
          { idempotencyKey: f.idempotency_key },
        );
        return {
          redirect: '/dashboard/sandbox',
          notice: `Payout ${moved.reference} (${moved.transaction_id}) is now ${moved.status}.`,
        };
      } catch (error) {
        return refused(ctx, error);
      }
    },
    'sandbox',
  );
}
