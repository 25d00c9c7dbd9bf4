// The audit log: who did what, to which object, when and from where, newest first, filtered by action, actor, object
// and time, and the same selection as CSV. Read through the public API (GET /v1/audit-events) with the session's
// token: a workspace's team reads its own log; an operator's session reads the operator workspace's, or the workspace
// whose id it names.
import type { operations } from '../../../../packages/sdk/src/index.js';
import { dataTable, field, pager } from '../components.js';
import { html, type Html } from '../html.js';
import type { PageContext, Pages } from '../page-context.js';

const PATH = '/dashboard/audit-log';
const PAGE_SIZE = 50;

type Filters = Omit<NonNullable<operations['listAuditEvents']['parameters']['query']>, 'cursor' | 'limit'>;

/** A `datetime-local` value (no zone: read as UTC, as the page says) as an RFC 3339 time; undefined when empty. */
function instant(value: string | undefined): string | undefined {
  if (!value) return undefined;
  return /Z|[+-]\d\d:\d\d$/.test(value) ? value : `${value.length === 16 ? `${value}:00` : value}Z`;
}

/** The API's filters from the form's fields; unknown or empty fields are left out, bad ones left to the API to refuse. */
function filtersOf(ctx: PageContext): Filters {
  const f = ctx.fields;
  const filters: Filters = {};
  if (ctx.session.audience === 'admin') filters.workspace_id = f.workspace_id || ctx.session.workspace_id;
  if (f.action) filters.action = f.action;
  if (f.actor_id) filters.actor_id = f.actor_id;
  if (f.object_id) filters.object_id = f.object_id;
  const from = instant(f.from);
  const to = instant(f.to);
  if (from) filters.from = from;
  if (to) filters.to = to;
  return filters;
}

function filterForm(ctx: PageContext): Html {
  const f = ctx.fields;
  return html`<form method="get" action="${PATH}" class="filters" aria-label="Filter the audit log">
    ${
      ctx.session.audience === 'admin'
        ? field('workspace_id', 'Workspace ID', {
            value: f.workspace_id ?? '',
            hint: 'Empty: the operator workspace.',
          })
        : ''
    }
    ${field('action', 'Action', { value: f.action ?? '', hint: 'For example refund.create or dashboard.sign_in_failed.' })}
    ${field('actor_id', 'Actor ID', { value: f.actor_id ?? '', hint: 'A key or a member.' })}
    ${field('object_id', 'Object ID', { value: f.object_id ?? '', hint: 'A collection, refund, key or member.' })}
    ${field('from', 'From (UTC)', { type: 'datetime-local', value: f.from ?? '' })}
    ${field('to', 'Until (UTC)', { type: 'datetime-local', value: f.to ?? '' })}
    <div class="field"><button type="submit" class="secondary">Filter</button></div>
  </form>`;
}

/** The page's query string without the cursor: the CSV export takes the same selection. */
function selection(fields: Record<string, string>): string {
  const kept = Object.entries(fields).filter(([k, v]) => k !== 'cursor' && v !== '');
  return new URLSearchParams(kept).toString();
}

export function auditLogPages(pages: Pages): void {
  pages.get('/audit-log', async (ctx) => {
    const page = await ctx.api.auditEvents
      .list({ ...filtersOf(ctx), limit: PAGE_SIZE })
      .page(ctx.fields.cursor || undefined);
    const rows = page.data.map(
      (e) =>
        html`<tr>
          <td>${ctx.time(e.occurred_at)}</td>
          <th scope="row">${e.action}</th>
          <td>${e.actor_type}${e.actor_id ? html` <code>${e.actor_id}</code>` : ''}</td>
          <td>${e.object_type ?? ''}${e.object_id ? html` <code>${e.object_id}</code>` : ''}</td>
          <td class="num">${e.status}</td>
          <td>${e.client_address ?? '—'}</td>
          <td><code>${e.request_id}</code></td>
        </tr>`,
    );
    const query = selection(ctx.fields);
    return {
      title: 'Audit log',
      content: html`<p>
          Every write by a member in the dashboard or by an API key, every sign-in and failed sign-in: newest first.
        </p>
        ${filterForm(ctx)}
        ${
          ctx.may('exports')
            ? html`<p><a class="button secondary" href="${PATH}.csv${query ? `?${query}` : ''}">Download CSV</a></p>`
            : ''
        }
        ${
          rows.length === 0
            ? html`<p class="card">No audit event matches.</p>`
            : dataTable(
                'Audit events',
                ['Time', 'Action', 'Actor', 'Object', { label: 'Status', num: true }, 'Address', 'Request'],
                rows,
              )
        }
        ${pager(PATH, ctx.fields, page.next_cursor)}`,
    };
  });

  pages.get(
    '/audit-log.csv',
    async (ctx) => {
      const body = await ctx.api.auditEvents.csv(filtersOf(ctx));
      return { download: { filename: 'audit-events.csv', contentType: 'text/csv', body } };
    },
    'exports',
  );
}
