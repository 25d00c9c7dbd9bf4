// Developers, webhooks: the workspace's endpoints (add, edit, disable or enable, roll the secret, send a test event)
// and an endpoint's delivery log with each attempt's request and response, and Resend. Every read and write is a call
// of the public API through the SDK; these pages only show and ask.
import type { components } from '../../../../packages/sdk/src/index.js';
import { ALL_EVENTS, EVENT_TYPES, TEST_EVENT_TYPE } from '../../webhooks/event-types.js';
import { dataTable, field, idempotencyField, pager, selectField, shownOnce, statusBadge } from '../components.js';
import type { PageAnswer, PageContext, Pages } from '../page-context.js';
import { pathId, refusal, refusalAlert } from '../forms.js';
import { html, raw, type Html } from '../html.js';
import { BASE, cancel, once, pretty, sectionNav, stacked } from './developer-views.js';

type Schemas = components['schemas'];
type Endpoint = Schemas['WebhookEndpoint'];
type Delivery = Schemas['Delivery'];
type Event = Schemas['Event'];

/** Deliveries per page of an endpoint's log: each is shown with its event and its attempts. */
const LOG_PAGE = 10;

/** Every value of a repeated form field (checkboxes); `ctx.fields` keeps only the first. */
function allValues(ctx: PageContext, name: string): string[] {
  const value = (ctx.request.body as Record<string, unknown> | undefined)?.[name];
  return (Array.isArray(value) ? (value as unknown[]) : [value]).filter((v): v is string => typeof v === 'string');
}

interface EndpointValues {
  url: string;
  description: string;
  events: string[];
}

/** The add and edit form: URL, description, and the event types as checkboxes. */
function endpointForm(ctx: PageContext, action: string, submit: string, values: EndpointValues, problem?: Html): Html {
  const box = (value: string, label: string, id: string): Html =>
    html`<li>
      <input
        type="checkbox"
        id="${id}"
        name="enabled_events"
        value="${value}"
        ${values.events.includes(value) ? raw(' checked') : ''}
      />
      <label for="${id}">${label}</label>
    </li>`;
  return html`${problem ?? ''}
    <form method="post" action="${action}" class="card">
      ${ctx.csrf}${idempotencyField()}
      ${field('url', 'URL', {
        type: 'url',
        value: values.url,
        required: true,
        attributes: 'autocomplete="off" spellcheck="false"',
        hint: 'Where deliveries are POSTed. In production: https, on a public address. The sandbox also takes http and local addresses.',
      })}
      ${field('description', 'Description (optional)', {
        value: values.description,
        attributes: 'maxlength="500"',
        hint: 'Your own note about this endpoint.',
      })}
      <fieldset>
        <legend>Event types</legend>
        <ul class="checks">
          ${box(ALL_EVENTS, 'Every event type, including types added later', 'events-all')}
          ${EVENT_TYPES.map((type) => box(type, type, `events-${type.replace(/\W/g, '-')}`))}
        </ul>
      </fieldset>
      <button type="submit">${submit}</button>
    </form>`;
}

/** The form's endpoint values, as sent. */
const sentValues = (ctx: PageContext): EndpointValues => ({
  url: ctx.fields.url ?? '',
  description: ctx.fields.description ?? '',
  events: allValues(ctx, 'enabled_events'),
});

type EnabledEvents = NonNullable<Schemas['CreateWebhookEndpointRequest']['enabled_events']>;

function endpointFacts(ctx: PageContext, e: Endpoint): Html {
  return stacked([
    ['URL', html`<code>${e.url}</code>`],
    ['Description', e.description ?? '—'],
    ['Event types', e.enabled_events.map((t) => (t === ALL_EVENTS ? 'every type' : t)).join(', ')],
    ['Status', html`${statusBadge(e.status)}${e.disabled_reason ? html` (${e.disabled_reason})` : ''}`],
    ['Previous secret signs until', ctx.time(e.previous_secret_expires_at)],
    ['Created', ctx.time(e.created_at)],
    ['Changed', ctx.time(e.updated_at)],
  ]);
}

function secretShown(ctx: PageContext, title: string, e: Endpoint & { secret: string }, what: Html): PageAnswer {
  return {
    title,
    content: html`${sectionNav('webhooks')} ${what} ${shownOnce('secret', 'Signing secret', e.secret)}
      <p>
        Copy it now: it is not shown again. Your receiver verifies each delivery's <code>webhook-signature</code> with
        it (Standard Webhooks).
      </p>
      <p><a href="${BASE}/webhooks/${e.id}">Go to the endpoint</a></p>`,
  };
}

/** One delivery of an endpoint's log: its event, the request each attempt sent and the answer it got, and Resend. */
function deliveryCard(ctx: PageContext, endpoint: Endpoint, d: Delivery, event: Event | undefined): Html {
  const heading = `delivery-${d.id}`;
  const attempts = d.attempts.map(
    (a) =>
      html`<tr>
        <th scope="row">${a.attempt}</th>
        <td class="num">${a.status_code ?? '—'}</td>
        <td class="num">${a.duration_ms} ms</td>
        <td><code class="wrap">${a.response_body ?? ''}</code></td>
        <td>${a.error ?? '—'}</td>
        <td>${ctx.time(a.created_at)}</td>
        <td><code>${Math.floor(Date.parse(a.created_at) / 1000)}</code></td>
      </tr>`,
  );
  return html`<article class="card delivery" aria-labelledby="${heading}">
    <h3 id="${heading}">${event?.type ?? 'Event'} ${statusBadge(d.status)}</h3>
    ${stacked([
      ['Event', html`<a href="${BASE}/events/${d.event_id}">${d.event_id}</a>`],
      ['Kind', d.kind],
      ['Queued', ctx.time(d.created_at)],
      ['Next attempt', ctx.time(d.next_attempt_at)],
      ['Last error', d.last_error ?? '—'],
    ])}
    <h4>Request</h4>
    <pre class="code">
POST ${d.attempts[0]?.url ?? endpoint.url}
content-type: application/json
webhook-id: ${d.event_id}
webhook-timestamp: (each attempt's, below)
webhook-signature: v1,… (one per signing secret in use)</pre>
    <details>
      <summary>Request body</summary>
      ${event ? pretty(event) : html`<p class="muted">The event could not be read.</p>`}
    </details>
    <h4>Attempts and responses</h4>
    ${
      attempts.length === 0
        ? html`<p class="muted">No attempt yet.</p>`
        : dataTable(
            `Attempts of delivery ${d.id}`,
            [
              'Attempt',
              { label: 'Status code', num: true },
              { label: 'Duration', num: true },
              'Response body',
              'Error',
              'Sent',
              'webhook-timestamp',
            ],
            attempts,
          )
    }
    ${
      ctx.may('events')
        ? html`<form method="post" action="${BASE}/webhooks/${endpoint.id}/resend" class="actions">
            ${ctx.csrf}${idempotencyField()}<input type="hidden" name="event_id" value="${d.event_id}" />
            <button type="submit" class="secondary">Resend</button>
          </form>`
        : ''
    }
  </article>`;
}

export function webhookPages(pages: Pages): void {
  pages.get('/developers/webhooks', async (ctx) => {
    const { data } = await ctx.api.webhookEndpoints.list().firstPage();
    const rows = data.map(
      (e) =>
        html`<tr>
          <th scope="row"><a href="${BASE}/webhooks/${e.id}">${e.url}</a></th>
          <td>${e.description ?? '—'}</td>
          <td>${e.enabled_events.map((t) => (t === ALL_EVENTS ? 'every type' : t)).join(', ')}</td>
          <td>${statusBadge(e.status)}</td>
          <td>${ctx.time(e.created_at)}</td>
        </tr>`,
    );
    return {
      title: 'Webhooks',
      content: html`${sectionNav('webhooks')}
      ${
        ctx.may('webhooks')
          ? html`<p class="actions"><a class="button" href="${BASE}/webhooks/new">Add an endpoint</a></p>`
          : ''
      }
      ${
        data.length === 0
          ? html`<p class="card">No endpoint yet: add one to receive events as they happen.</p>`
          : dataTable('Webhook endpoints', ['URL', 'Description', 'Event types', 'Status', 'Created'], rows)
      }`,
    };
  });

  pages.get(
    '/developers/webhooks/new',
    async (ctx) => ({
      title: 'Add a webhook endpoint',
      content: html`${sectionNav('webhooks')}
      ${endpointForm(ctx, `${BASE}/webhooks/new`, 'Add endpoint', { url: '', description: '', events: [ALL_EVENTS] })}`,
    }),
    'webhooks',
  );

  pages.post(
    '/developers/webhooks/new',
    async (ctx) => {
      const values = sentValues(ctx);
      try {
        const created = await ctx.api.webhookEndpoints.create(
          {
            url: values.url,
            enabled_events: values.events as EnabledEvents,
            ...(values.description === '' ? {} : { description: values.description }),
          },
          once(ctx),
        );
        return secretShown(
          ctx,
          'Endpoint added',
          created,
          html`<p>Deliveries to <code>${created.url}</code> start now.</p>`,
        );
      } catch (error) {
        const problem = refusalAlert(refusal(error));
        return {
          title: 'Add a webhook endpoint',
          status: 400,
          content: html`${sectionNav('webhooks')}
          ${endpointForm(ctx, `${BASE}/webhooks/new`, 'Add endpoint', values, problem)}`,
        };
      }
    },
    'webhooks',
  );

  pages.get('/developers/webhooks/:id', async (ctx) => {
    const id = pathId(ctx);
    const status = ctx.fields.status as Delivery['status'] | undefined;
    const [endpoint, log] = await Promise.all([
      ctx.api.webhookEndpoints.get(id),
      ctx.api.webhookEndpoints
        .deliveries(id, { limit: LOG_PAGE, ...(status ? { status } : {}) })
        .page(ctx.fields.cursor || undefined),
    ]);
    const eventIds = [...new Set(log.data.map((d) => d.event_id))];
    const events = new Map((await Promise.all(eventIds.map((e) => ctx.api.events.get(e)))).map((e) => [e.id, e]));
    const enabled = endpoint.status === 'enabled';
    return {
      title: 'Webhook endpoint',
      content: html`${sectionNav('webhooks')} ${endpointFacts(ctx, endpoint)}
        ${
          ctx.may('webhooks')
            ? html`<div class="actions">
                <a class="button secondary" href="${BASE}/webhooks/${id}/edit">Edit</a>
                <form method="post" action="${BASE}/webhooks/${id}/test" class="inline">
                  ${ctx.csrf}${idempotencyField()}<button type="submit">Send test event</button>
                </form>
                <form method="post" action="${BASE}/webhooks/${id}/status" class="inline">
                  ${ctx.csrf}<input type="hidden" name="status" value="${enabled ? 'disabled' : 'enabled'}" />
                  <button type="submit" class="secondary">${enabled ? 'Disable' : 'Enable'}</button>
                </form>
                <a class="button secondary" href="${BASE}/webhooks/${id}/roll-secret">Roll secret</a>
              </div>`
            : ''
        }
        <section aria-labelledby="log-title">
          <h2 id="log-title">Delivery log</h2>
          <form method="get" action="${BASE}/webhooks/${id}" class="filters">
            ${selectField(
              'status',
              'Status',
              [
                ['', 'Any status'],
                ['pending', 'pending'],
                ['succeeded', 'succeeded'],
                ['failed', 'failed'],
              ],
              status ?? '',
            )}
            <div class="field"><button type="submit" class="secondary">Filter</button></div>
          </form>
          ${
            log.data.length === 0
              ? html`<p class="card">No delivery${status ? ` ${status}` : ''} yet.</p>`
              : log.data.map((d) => deliveryCard(ctx, endpoint, d, events.get(d.event_id)))
          }
          ${pager(`${BASE}/webhooks/${id}`, ctx.fields, log.next_cursor)}
        </section>`,
    };
  });

  pages.get(
    '/developers/webhooks/:id/edit',
    async (ctx) => {
      const e = await ctx.api.webhookEndpoints.get(pathId(ctx));
      return {
        title: 'Edit the webhook endpoint',
        content: html`${sectionNav('webhooks')}
          ${endpointForm(ctx, `${BASE}/webhooks/${e.id}/edit`, 'Save changes', {
            url: e.url,
            description: e.description ?? '',
            events: e.enabled_events,
          })}
          <p><a href="${BASE}/webhooks/${e.id}">Back to the endpoint</a></p>`,
      };
    },
    'webhooks',
  );

  pages.post(
    '/developers/webhooks/:id/edit',
    async (ctx) => {
      const id = pathId(ctx);
      const values = sentValues(ctx);
      try {
        await ctx.api.webhookEndpoints.update(id, {
          url: values.url,
          enabled_events: values.events as EnabledEvents,
          description: values.description === '' ? null : values.description,
        });
      } catch (error) {
        const problem = refusalAlert(refusal(error));
        return {
          title: 'Edit the webhook endpoint',
          status: 400,
          content: html`${sectionNav('webhooks')}
          ${endpointForm(ctx, `${BASE}/webhooks/${id}/edit`, 'Save changes', values, problem)}`,
        };
      }
      return { redirect: `${BASE}/webhooks/${id}`, notice: 'Endpoint saved.' };
    },
    'webhooks',
  );

  pages.post(
    '/developers/webhooks/:id/status',
    async (ctx) => {
      const id = pathId(ctx);
      const status = ctx.fields.status === 'enabled' ? 'enabled' : 'disabled';
      await ctx.api.webhookEndpoints.update(id, { status });
      return {
        redirect: `${BASE}/webhooks/${id}`,
        notice:
          status === 'enabled'
            ? 'Endpoint enabled: it receives deliveries again.'
            : 'Endpoint disabled: it receives no deliveries until it is enabled.',
      };
    },
    'webhooks',
  );

  pages.get(
    '/developers/webhooks/:id/roll-secret',
    async (ctx) => {
      const e = await ctx.api.webhookEndpoints.get(pathId(ctx));
      return {
        title: 'Roll the signing secret?',
        content: html`${sectionNav('webhooks')} ${endpointFacts(ctx, e)}
          <p>
            The endpoint gets a new signing secret, shown once on the next page. For the next 24 hours every delivery is
            signed with both the new and the current secret, so your receiver can switch without rejecting an event.
          </p>
          <form method="post" action="${BASE}/webhooks/${e.id}/roll-secret">
            ${ctx.csrf}${idempotencyField()}
            <div class="actions">
              <button type="submit" class="danger">Roll secret</button>
              ${cancel(`${BASE}/webhooks/${e.id}`)}
            </div>
          </form>`,
      };
    },
    'webhooks',
  );

  pages.post(
    '/developers/webhooks/:id/roll-secret',
    async (ctx) => {
      const rolled = await ctx.api.webhookEndpoints.rotateSecret(pathId(ctx), once(ctx));
      return secretShown(
        ctx,
        'Secret rolled',
        rolled,
        html`<p>The previous secret keeps signing until ${ctx.time(rolled.previous_secret_expires_at)}.</p>`,
      );
    },
    'webhooks',
  );

  pages.post(
    '/developers/webhooks/:id/test',
    async (ctx) => {
      const id = pathId(ctx);
      await ctx.api.webhookEndpoints.test(id, once(ctx));
      return {
        redirect: `${BASE}/webhooks/${id}`,
        notice: `A ${TEST_EVENT_TYPE} event is on its way: its delivery is at the top of the log (reload to follow it).`,
      };
    },
    'webhooks',
  );

  pages.post(
    '/developers/webhooks/:id/resend',
    async (ctx) => {
      const id = pathId(ctx);
      await ctx.api.events.resend(ctx.fields.event_id ?? '', { endpoint_id: id }, once(ctx));
      return {
        redirect: `${BASE}/webhooks/${id}`,
        notice: 'Resent: a new delivery is at the top of the log (reload to follow it).',
      };
    },
    'events',
  );
}
