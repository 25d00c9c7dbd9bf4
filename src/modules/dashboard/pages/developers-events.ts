// Developers, events: everything that happened in the workspace, filtered by type, and an event's JSON as deliveries
// carry it with its deliveries and Resend. Every read and write is a call of the public API through the SDK.
import type { operations } from '../../../../packages/sdk/src/index.js';
import { EVENT_TYPES, TEST_EVENT_TYPE } from '../../webhooks/event-types.js';
import { dataTable, idempotencyField, pager, selectField, statusBadge } from '../components.js';
import type { Pages } from '../page-context.js';
import { pathId } from '../forms.js';
import { html } from '../html.js';
import { BASE, once, pretty, sectionNav, stacked } from './developer-views.js';

type EventType = NonNullable<NonNullable<operations['listEvents']['parameters']['query']>['type']>;

const EVENTS_PAGE = 25;

export function eventPages(pages: Pages): void {
  pages.get('/developers/events', async (ctx) => {
    const type = ctx.fields.type || undefined;
    const page = await ctx.api.events
      .list({ limit: EVENTS_PAGE, ...(type ? { type: type as EventType } : {}) })
      .page(ctx.fields.cursor || undefined);
    const rows = page.data.map(
      (e) =>
        html`<tr>
          <th scope="row"><a href="${BASE}/events/${e.id}">${e.type}</a></th>
          <td>${ctx.time(e.timestamp)}</td>
        </tr>`,
    );
    return {
      title: 'Events',
      content: html`${sectionNav('events')}
        <form method="get" action="${BASE}/events" class="filters">
          ${selectField(
            'type',
            'Type',
            [['', 'Every type'], ...[...EVENT_TYPES, TEST_EVENT_TYPE].map((t): [string, string] => [t, t])],
            type ?? '',
          )}
          <div class="field"><button type="submit" class="secondary">Filter</button></div>
        </form>
        ${
          rows.length === 0
            ? html`<p class="card">No event${type ? ` of type ${type}` : ''}.</p>`
            : dataTable('Events', ['Type', 'Time'], rows)
        }
        ${pager(`${BASE}/events`, ctx.fields, page.next_cursor)}`,
    };
  });

  pages.get('/developers/events/:id', async (ctx) => {
    const id = pathId(ctx);
    const [event, deliveries] = await Promise.all([ctx.api.events.get(id), ctx.api.events.deliveries(id).firstPage()]);
    const cards = deliveries.data.map((d) => {
      const last = d.attempts[d.attempts.length - 1];
      const heading = `delivery-${d.id}`;
      return html`<article class="card" aria-labelledby="${heading}">
        <h3 id="${heading}">
          <a href="${BASE}/webhooks/${d.endpoint_id}">${last?.url ?? `Endpoint ${d.endpoint_id}`}</a>
        </h3>
        ${stacked([
          ['Status', statusBadge(d.status)],
          ['Kind', d.kind],
          ['Attempts', d.attempts.length],
          ['Last status code', last?.status_code ?? '—'],
          ['Last error', d.last_error ?? '—'],
          ['Queued', ctx.time(d.created_at)],
        ])}
        ${
          ctx.may('events')
            ? html`<form method="post" action="${BASE}/events/${event.id}/resend" class="actions">
                ${ctx.csrf}${idempotencyField()}<input type="hidden" name="endpoint_id" value="${d.endpoint_id}" />
                <button type="submit" class="secondary">Resend</button>
              </form>`
            : ''
        }
      </article>`;
    });
    return {
      title: `Event ${event.type}`,
      content: html`${sectionNav('events')}
        ${stacked([
          ['Type', event.type],
          ['Time', ctx.time(event.timestamp)],
          ['Event ID (webhook-id)', html`<code>${event.id}</code>`],
        ])}
        <section aria-labelledby="json-title">
          <h2 id="json-title">JSON, as deliveries carry it</h2>
          ${pretty(event)}
        </section>
        <section aria-labelledby="deliveries-title">
          <h2 id="deliveries-title">Deliveries</h2>
          ${
            cards.length === 0
              ? html`<p class="card">No delivery: no endpoint subscribed to this type when it happened.</p>`
              : cards
          }
          ${
            ctx.may('events')
              ? html`<form method="post" action="${BASE}/events/${event.id}/resend" class="actions">
                  ${ctx.csrf}${idempotencyField()}
                  <button type="submit" class="secondary">Resend to every subscribed endpoint</button>
                </form>`
              : ''
          }
        </section>`,
    };
  });

  pages.post(
    '/developers/events/:id/resend',
    async (ctx) => {
      const id = pathId(ctx);
      const endpointId = ctx.fields.endpoint_id;
      const resent = await ctx.api.events.resend(id, endpointId ? { endpoint_id: endpointId } : {}, once(ctx));
      const n = resent.data.length;
      return {
        redirect: `${BASE}/events/${id}`,
        notice: `Resent: ${n} ${n === 1 ? 'delivery' : 'deliveries'} queued, one attempt each (reload to follow).`,
      };
    },
    'events',
  );
}
