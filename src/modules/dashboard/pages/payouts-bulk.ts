// Bulk payouts from a CSV: the upload form (a file, read into the text box by the page's script, or the CSV pasted),
// and the answer row by row. Rows the page cannot read are reported and not sent; the others go to the API's bulk
// commit (POST /v1/payouts/bulk) in one call, which answers each: committed or refused with its problem.
import type { components } from '../../../../packages/sdk/src/index.js';
import { dataTable, idempotencyField, selectField, statusBadge } from '../components.js';
import { parseCsv } from '../csv.js';
import { exponentOf, minorUnits, refusal, refusalAlert } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PageAnswer, PageContext, Pages } from '../page-context.js';
import { BULK_PAYOUT_MAX_ITEMS } from '../../payouts/payouts.schemas.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../../platform/schemas.js';
import { UUID_PATTERN } from '../../../platform/ids.js';

type Route = components['schemas']['OfframpRoute'];
type BulkItem = components['schemas']['BulkPayoutRequest']['items'][number];
type BulkAnswer = components['schemas']['BulkPayoutResult']['data'][number];

/** The most a CSV may hold, in characters: 100 rows of ids, amount and reference fit several times over. */
export const BULK_CSV_MAX_CHARS = 32_000;
const COLUMNS = ['beneficiary_id', 'amount', 'reference', 'route_id', 'idempotency_key'] as const;
type Column = (typeof COLUMNS)[number];
const REQUIRED: readonly Column[] = ['beneficiary_id', 'amount', 'reference'];
const UUID_RE = new RegExp(UUID_PATTERN, 'i');
const KEY_RE = new RegExp(IDEMPOTENCY_KEY_PATTERN);

/** One data row of the upload, and what became of it. */
interface RowOutcome {
  line: number;
  reference: string;
  amount: string;
  result: { kind: 'invalid'; message: string } | { kind: 'sent'; item: number };
}

const routeLabel = (r: Route): string => `${r.source} → ${r.market} ${r.rail}`;

function uploadForm(ctx: PageContext, routes: readonly Route[], problem?: Html): PageAnswer {
  const f = ctx.fields;
  return {
    title: 'Bulk payouts',
    status: problem ? 400 : 200,
    content: html`${problem ?? ''}
      <div class="card">
        <p>
          Pay up to ${String(BULK_PAYOUT_MAX_ITEMS)} beneficiaries at once from a CSV file (at most
          ${String(BULK_CSV_MAX_CHARS / 1000)} KB). Its first line names the columns, in any order:
        </p>
        <dl class="facts">
          <dt><code>beneficiary_id</code></dt>
          <dd>Required. The beneficiary's id (the API lists them: GET /v1/api/beneficiaries).</dd>
          <dt><code>amount</code></dt>
          <dd>
            Required. In the currency the route pays from, e.g. <code>1500.00</code>; quote one written with commas.
          </dd>
          <dt><code>reference</code></dt>
          <dd>Required. Yours, 1 to 128 characters; shown to the recipient where the rail allows.</dd>
          <dt><code>route_id</code></dt>
          <dd>Optional. The route of this row; the route chosen below otherwise.</dd>
          <dt><code>idempotency_key</code></dt>
          <dd>Optional. The row's key; made from this form and the row's line otherwise.</dd>
        </dl>
        <p class="muted">
          Each row is committed on its own: a row the balance cannot cover is refused and the others are paid. Sending
          this form again pays nothing twice.
        </p>
      </div>
      <form method="post" action="/dashboard/payouts/bulk" class="card">
        ${ctx.csrf} ${idempotencyField()}
        ${selectField(
          'route_id',
          'Route for rows without route_id',
          [['', 'Choose a route'], ...routes.map((r): [string, string] => [r.route_id, routeLabel(r)])],
          f.route_id ?? '',
        )}
        <div class="field" hidden>
          <label for="f-csv-file">CSV file</label>
          <input
            id="f-csv-file"
            type="file"
            accept=".csv,text/csv"
            data-csv-into="f-csv"
            data-max-chars="${String(BULK_CSV_MAX_CHARS)}"
            aria-describedby="f-csv-file-status"
          />
          <p class="muted" id="f-csv-file-status" role="status"></p>
        </div>
        <div class="field">
          <label for="f-csv">CSV</label>
          <textarea
            id="f-csv"
            name="csv"
            required
            spellcheck="false"
            maxlength="${String(BULK_CSV_MAX_CHARS)}"
            aria-describedby="f-csv-hint"
          >
${f.csv ?? ''}</textarea>
          <p class="muted" id="f-csv-hint">
            The file's text, or pasted: <code>beneficiary_id,amount,reference</code> then one line per payout.
          </p>
        </div>
        <div class="actions">
          <button type="submit">Pay these</button>
          <a href="/dashboard/payouts">Cancel</a>
        </div>
      </form>`,
  };
}

const pageProblem = (message: string): Html => html`<p class="error" role="alert">${message}</p>`;

/** The rows of the upload as items for the API, and the rows it cannot send with why; or a problem with the whole file. */
function readUpload(
  ctx: PageContext,
  routes: ReadonlyMap<string, Route>,
): { problem: string } | { rows: RowOutcome[]; items: BulkItem[] } {
  const text = ctx.fields.csv ?? '';
  // Counted as the text box counts (a line break is one character; the browser sends it as CRLF).
  const size = text.replace(/\r\n/g, '\n').length;
  if (size > BULK_CSV_MAX_CHARS)
    return { problem: `The CSV is ${size} characters; at most ${BULK_CSV_MAX_CHARS} are taken.` };
  const { rows: records, problems } = parseCsv(text);
  const header = records[0];
  if (!header || (problems[0] && problems[0].line <= header.line))
    return {
      problem: 'The CSV has no header line: its first line names the columns (beneficiary_id,amount,reference).',
    };
  const names = header.cells.map((c) => c.trim().toLowerCase());
  const unknown = names.filter((n) => !(COLUMNS as readonly string[]).includes(n));
  if (unknown.length > 0)
    return { problem: `Unknown column: ${unknown.join(', ')}. The columns are ${COLUMNS.join(', ')}.` };
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length > 0) return { problem: `A column is named twice: ${twice.join(', ')}.` };
  const missing = REQUIRED.filter((n) => !names.includes(n));
  if (missing.length > 0) return { problem: `The header lacks ${missing.join(', ')}.` };
  const data = records.slice(1);
  if (data.length + problems.length > BULK_PAYOUT_MAX_ITEMS)
    return {
      problem: `The CSV has ${data.length + problems.length} rows; at most ${BULK_PAYOUT_MAX_ITEMS} are taken.`,
    };

  const out: RowOutcome[] = problems.map((p) => ({
    line: p.line,
    reference: '',
    amount: '',
    result: { kind: 'invalid', message: `Cannot be read: ${p.message}.` },
  }));
  const items: BulkItem[] = [];
  const keys = new Map<string, number>();
  const batch = ctx.fields.idempotency_key ?? '';
  for (const record of data) {
    const cell = (name: Column): string => {
      const at = names.indexOf(name);
      return at === -1 ? '' : (record.cells[at] ?? '').trim();
    };
    const reference = cell('reference');
    const amountText = cell('amount');
    const invalid = (message: string): void => {
      out.push({ line: record.line, reference, amount: amountText, result: { kind: 'invalid', message } });
    };
    if (record.cells.length !== names.length) {
      invalid(`Has ${record.cells.length} fields; the header names ${names.length}.`);
      continue;
    }
    const routeId = cell('route_id') || (ctx.fields.route_id ?? '');
    const route = routes.get(routeId.toLowerCase());
    const key = cell('idempotency_key') || `${batch}-${record.line}`;
    const beneficiary = cell('beneficiary_id');
    if (!UUID_RE.test(beneficiary)) {
      invalid('beneficiary_id is not a beneficiary id (a UUID).');
      continue;
    }
    if (!route) {
      invalid(routeId === '' ? 'No route: choose one above, or give route_id.' : 'route_id is not an active route.');
      continue;
    }
    const exponent = exponentOf(ctx, route.source);
    const amount = exponent === undefined ? undefined : minorUnits(amountText, exponent);
    if (amount === undefined || amount < 1) {
      invalid(`amount is not an amount of ${route.source}, like ${ctx.money(150_000, route.source)}.`);
      continue;
    }
    if (reference.length < 1 || reference.length > 128) {
      invalid('reference must be 1 to 128 characters.');
      continue;
    }
    if (!KEY_RE.test(key)) {
      invalid('idempotency_key must be 1 to 255 visible ASCII characters.');
      continue;
    }
    const earlier = keys.get(key);
    if (earlier !== undefined) {
      invalid(`idempotency_key repeats the one of line ${earlier}.`);
      continue;
    }
    keys.set(key, record.line);
    out.push({ line: record.line, reference, amount: amountText, result: { kind: 'sent', item: items.length } });
    items.push({ idempotency_key: key, route_id: route.route_id, beneficiary_id: beneficiary, amount, reference });
  }
  out.sort((a, b) => a.line - b.line);
  return { rows: out, items };
}

/** A row's result as a badge and its detail, in two cells: the badge beside the line, so a phone shows it first. */
function resultCells(ctx: PageContext, row: RowOutcome, answers: readonly BulkAnswer[]): { badge: Html; detail: Html } {
  if (row.result.kind === 'invalid')
    return { badge: html`<td>${statusBadge('invalid')}</td>`, detail: html`<td>${row.result.message}</td>` };
  const answer = answers[row.result.item];
  if (answer?.status === 'committed' && answer.payout) {
    const p = answer.payout;
    return {
      badge: html`<td>${statusBadge('committed')}</td>`,
      detail: html`<td>
        <a href="/dashboard/payouts/${p.transaction_id}">${ctx.money(p.source_amount, p.source_currency)}</a>
        ${answer.replayed ? ' (already committed by this key)' : ''}
      </td>`,
    };
  }
  const problem = answer?.problem;
  return {
    badge: html`<td>${statusBadge('refused')}</td>`,
    detail: html`<td>
      ${problem?.detail ?? 'No answer.'} <span class="muted">(${problem?.code ?? 'unknown'})</span>
    </td>`,
  };
}

export function bulkPayoutPages(pages: Pages): void {
  const activeRoutes = async (ctx: PageContext): Promise<Route[]> =>
    (await ctx.api.routes.list({ limit: 100 }).firstPage()).data;

  pages.get('/payouts/bulk', async (ctx) => uploadForm(ctx, await activeRoutes(ctx)), 'payouts');

  pages.post(
    '/payouts/bulk',
    async (ctx) => {
      const routes = await activeRoutes(ctx);
      const read = readUpload(ctx, new Map(routes.map((r) => [r.route_id.toLowerCase(), r])));
      if ('problem' in read) return uploadForm(ctx, routes, pageProblem(read.problem));
      if (read.rows.length === 0) return uploadForm(ctx, routes, pageProblem('The CSV has no rows after its header.'));
      let answers: BulkAnswer[] = [];
      if (read.items.length > 0) {
        try {
          answers = (await ctx.api.payouts.bulk(read.items)).data;
        } catch (error) {
          return uploadForm(ctx, routes, refusalAlert(refusal(error)));
        }
      }
      const committed = answers.filter((a) => a.status === 'committed').length;
      const refused = answers.length - committed;
      const invalid = read.rows.length - answers.length;
      return {
        title: 'Bulk payouts: the result',
        content: html`<p role="status" class="card">
            ${String(committed)} committed, ${String(refused)} refused by the API, ${String(invalid)} not sent (the page
            could not read them).
          </p>
          ${dataTable(
            'Result per row',
            ['Line', 'Result', 'Reference', { label: 'Amount', num: true }, 'Detail'],
            read.rows.map((row) => {
              const { badge, detail } = resultCells(ctx, row, answers);
              return html`<tr>
                <th scope="row">${String(row.line)}</th>
                ${badge}
                <td>${row.reference}</td>
                <td class="num">${row.amount}</td>
                ${detail}
              </tr>`;
            }),
          )}
          <p><a href="/dashboard/payouts/bulk">Another file</a> · <a href="/dashboard/payouts">Payouts</a></p>`,
      };
    },
    'payouts',
  );
}
