// Developers: API keys (create, rotate, revoke; a new token is shown once), webhook endpoints (add, edit, disable or
// enable, roll the secret, send a test event, the delivery log with each attempt's request and response, resend) and
// the event log. Every read and write is a call of the public API through the SDK; these pages only show and ask.
import type { components, operations } from '../../../../packages/sdk/src/index.js';
import { ALL_EVENTS, EVENT_TYPES, TEST_EVENT_TYPE } from '../../webhooks/event-types.js';
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
import type { PageAnswer, PageContext, Pages } from '../page-context.js';
import { pathId, refusal, refusalAlert } from '../forms.js';
import { html, raw, type Html } from '../html.js';

type Schemas = components['schemas'];
type Credential = Schemas['Credential'];
type Endpoint = Schemas['WebhookEndpoint'];
type Delivery = Schemas['Delivery'];
type Event = Schemas['Event'];
type EventType = NonNullable<NonNullable<operations['listEvents']['parameters']['query']>['type']>;

const BASE = '/dashboard/developers';
/** Deliveries per page of an endpoint's log: each is shown with its event and its attempts. */
const LOG_PAGE = 10;
const EVENTS_PAGE = 25;

const SECTIONS = [
  ['keys', 'API keys'],
  ['webhooks', 'Webhooks'],
  ['events', 'Events'],
] as const;
type Section = (typeof SECTIONS)[number][0];

/** The developer pages' own navigation, above each page's content. */
function sectionNav(current: Section): Html {
  return html`<nav class="subnav" aria-label="Developers">
    <ul>
      ${SECTIONS.map(
        ([path, label]) =>
          html`<li>
            <a href="${BASE}/${path}" ${path === current ? raw(' aria-current="page"') : ''}>${label}</a>
          </li>`,
      )}
    </ul>
  </nav>`;
}

/** The form's Idempotency-Key, so a double submit is answered from the first. */
const once = (ctx: PageContext): { idempotencyKey?: string } =>
  ctx.fields.idempotency_key ? { idempotencyKey: ctx.fields.idempotency_key } : {};

/** Every value of a repeated form field (checkboxes); `ctx.fields` keeps only the first. */
function allValues(ctx: PageContext, name: string): string[] {
  const value = (ctx.request.body as Record<string, unknown> | undefined)?.[name];
  return (Array.isArray(value) ? (value as unknown[]) : [value]).filter((v): v is string => typeof v === 'string');
}

/** Term and value pairs that stack on a narrow screen, so long URLs and ids get the whole width. */
const stacked = (pairs: readonly [string, unknown][]): Html => html`<div class="stacking">${facts(pairs)}</div>`;

const pretty = (value: unknown): Html => html`<pre class="code">${JSON.stringify(value, null, 2)}</pre>`;

function cancel(href: string): Html {
  return html`<a class="button secondary" href="${href}">Cancel</a>`;
}

// Overview

async function overview(ctx: PageContext): Promise<PageAnswer> {
  const [keys, endpoints, latest] = await Promise.all([
    ctx.api.credentials.list(),
    ctx.api.webhookEndpoints.list().firstPage(),
    ctx.api.events.list({ limit: 1 }).firstPage(),
  ]);
  const active = keys.data.filter((k) => k.status === 'active').length;
  const enabled = endpoints.data.filter((e) => e.status === 'enabled').length;
  const last = latest.data[0];
  const card = (path: Section, title: string, what: string, now: Html | string): Html =>
    html`<section class="card" aria-labelledby="overview-${path}">
      <h2 id="overview-${path}"><a href="${BASE}/${path}">${title}</a></h2>
      <p>${what}</p>
      <p class="muted">${now}</p>
    </section>`;
  return {
    title: 'Developers',
    content: html`<div class="cards overview">
      ${card(
        'keys',
        'API keys',
        'Create, rotate and revoke the tokens your servers call the API with. A new token is shown once.',
        `${active} active ${active === 1 ? 'key' : 'keys'}`,
      )}
      ${card(
        'webhooks',
        'Webhooks',
        'Endpoints that receive signed events: add and edit them, roll their secrets, send a test event, read ' +
          'the delivery log and resend.',
        `${endpoints.data.length} ${endpoints.data.length === 1 ? 'endpoint' : 'endpoints'}, ${enabled} enabled`,
      )}
      ${card(
        'events',
        'Events',
        'Everything that happened in this workspace, as webhooks carry it, with its deliveries.',
        last ? html`Latest: ${last.type}, ${ctx.time(last.timestamp)}` : 'No event yet.',
      )}
    </div>`,
  };
}

// API keys

async function keysPage(ctx: PageContext, problem?: Html, name = ''): Promise<PageAnswer> {
  const { data } = await ctx.api.credentials.list();
  const row = (k: Credential): Html =>
    html`<tr>
      <th scope="row">
        ${k.name}
        <span class="muted"
          >${k.audience}${k.id === ctx.session.credential_id ? ', you are signed in with it' : ''}</span
        >
      </th>
      <td>${statusBadge(k.status)}</td>
      <td>
        ${
          k.status === 'active'
            ? html`<span class="row-actions">
                <a href="${BASE}/keys/${k.id}/rotate">Rotate</a>
                <a href="${BASE}/keys/${k.id}/revoke">Revoke</a>
              </span>`
            : html`revoked ${ctx.time(k.revoked_at)}`
        }
      </td>
      <td>${ctx.time(k.created_at)}</td>
      <td>${ctx.time(k.rotated_at)}</td>
    </tr>`;
  return {
    title: 'API keys',
    status: problem ? 400 : 200,
    content: html`${sectionNav('keys')}
      ${
        data.length === 0
          ? html`<p class="card">No keys.</p>`
          : dataTable('API keys', ['Key', 'Status', 'Actions', 'Created', 'Rotated'], data.map(row))
      }
      <section aria-labelledby="new-key-title">
        <h2 id="new-key-title">Create a key</h2>
        ${problem ?? ''}
        <form method="post" action="${BASE}/keys" class="card">
          ${ctx.csrf}${idempotencyField()}
          ${field('name', 'Name', {
            value: name,
            required: true,
            attributes: 'maxlength="100" autocomplete="off"',
            hint: 'For people: what will use it, e.g. “checkout server”. The key acts for this workspace.',
          })}
          <button type="submit">Create key</button>
        </form>
      </section>`,
  };
}

/** The key of the page's path, from the workspace's list (there is no read of one key). */
async function keyOf(ctx: PageContext): Promise<Credential | undefined> {
  const id = pathId(ctx);
  return (await ctx.api.credentials.list()).data.find((k) => k.id === id);
}

const noKey: PageAnswer = {
  title: 'Key not found',
  status: 404,
  content: html`<p class="error" role="alert">This workspace has no such key.</p>
    <p><a href="${BASE}/keys">Back to API keys</a></p>`,
};

function tokenShown(
  ctx: PageContext,
  title: string,
  key: Credential & { token: string },
  what: string,
  own: boolean,
): PageAnswer {
  return {
    title,
    content: html`${sectionNav('keys')}
      <p>${what}</p>
      ${shownOnce('token', `Token of “${key.name}”`, key.token)}
      <p>
        Copy it now and keep it in a secrets manager: it is not shown again. Send it as
        <code>Authorization: Bearer …</code>.
      </p>
      ${
        own
          ? html`<p class="warning" role="note">
                <strong>Your dashboard session has ended</strong> with the old token. Copy the new token, then sign in
                again with it.
              </p>
              <p><a class="button" href="/dashboard/sign-in?next=${BASE}/keys">Sign in again</a></p>`
          : html`<p><a href="${BASE}/keys">Back to API keys</a></p>`
      }`,
  };
}

function keyPages(pages: Pages): void {
  pages.get('/developers/keys', (ctx) => keysPage(ctx));

  pages.post('/developers/keys', async (ctx) => {
    const name = ctx.fields.name ?? '';
    try {
      const key = await ctx.api.credentials.create({ name }, once(ctx));
      return tokenShown(ctx, 'Key created', key, `The key “${key.name}” is active.`, false);
    } catch (error) {
      return keysPage(ctx, refusalAlert(refusal(error)), name);
    }
  });

  pages.get('/developers/keys/:id/rotate', async (ctx) => {
    const key = await keyOf(ctx);
    if (!key) return noKey;
    const own = key.id === ctx.session.credential_id;
    return {
      title: `Rotate the key “${key.name}”?`,
      content: html`${sectionNav('keys')}
        ${stacked([
          ['Name', key.name],
          ['Created', ctx.time(key.created_at)],
          ['Last rotated', ctx.time(key.rotated_at)],
        ])}
        <p>
          Rotating gives the key a new token, shown once on the next page. The current token stops working at once:
          whatever still uses it gets 401 until it has the new one.
        </p>
        ${
          own
            ? html`<p class="warning" role="note">
                <strong>You are signed in with this key.</strong> Rotating it ends this dashboard session: copy the new
                token from the next page, then sign in again with it.
              </p>`
            : ''
        }
        <form method="post" action="${BASE}/keys/${key.id}/rotate">
          ${ctx.csrf}${idempotencyField()}
          <div class="actions">
            <button type="submit" class="danger">Rotate key</button>
            ${cancel(`${BASE}/keys`)}
          </div>
        </form>`,
    };
  });

  pages.post('/developers/keys/:id/rotate', async (ctx) => {
    const id = pathId(ctx);
    const key = await ctx.api.credentials.rotate(id, once(ctx));
    const own = id === ctx.session.credential_id;
    return tokenShown(
      ctx,
      'Key rotated',
      key,
      `The key “${key.name}” has a new token; the old one no longer works.`,
      own,
    );
  });

  pages.get('/developers/keys/:id/revoke', async (ctx) => {
    const key = await keyOf(ctx);
    if (!key) return noKey;
    const own = key.id === ctx.session.credential_id;
    return {
      title: `Revoke the key “${key.name}”?`,
      content: html`${sectionNav('keys')}
        ${stacked([
          ['Name', key.name],
          ['Created', ctx.time(key.created_at)],
          ['Last rotated', ctx.time(key.rotated_at)],
        ])}
        <p>Revoking stops its token at once, for good: whatever still uses it gets 401. This cannot be undone.</p>
        ${
          own
            ? html`<p class="warning" role="note">
                <strong>You are signed in with this key.</strong> Revoking it ends this dashboard session: the next page
                is sign-in, where you need another key's token.
              </p>`
            : ''
        }
        <form method="post" action="${BASE}/keys/${key.id}/revoke">
          ${ctx.csrf}
          <div class="actions">
            <button type="submit" class="danger">Revoke key</button>
            ${cancel(`${BASE}/keys`)}
          </div>
        </form>`,
    };
  });

  pages.post('/developers/keys/:id/revoke', async (ctx) => {
    const key = await ctx.api.credentials.revoke(pathId(ctx));
    // When it was this session's key, the page redirected to is sign-in (then this list, with the notice).
    return { redirect: `${BASE}/keys`, notice: `The key “${key.name}” is revoked: its token no longer works.` };
  });
}

// Webhooks

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
    <form method="post" action="${BASE}/webhooks/${endpoint.id}/resend" class="actions">
      ${ctx.csrf}${idempotencyField()}<input type="hidden" name="event_id" value="${d.event_id}" />
      <button type="submit" class="secondary">Resend</button>
    </form>
  </article>`;
}

function webhookPages(pages: Pages): void {
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
        <p class="actions"><a class="button" href="${BASE}/webhooks/new">Add an endpoint</a></p>
        ${
          data.length === 0
            ? html`<p class="card">No endpoint yet: add one to receive events as they happen.</p>`
            : dataTable('Webhook endpoints', ['URL', 'Description', 'Event types', 'Status', 'Created'], rows)
        }`,
    };
  });

  pages.get('/developers/webhooks/new', async (ctx) => ({
    title: 'Add a webhook endpoint',
    content: html`${sectionNav('webhooks')}
    ${endpointForm(ctx, `${BASE}/webhooks/new`, 'Add endpoint', { url: '', description: '', events: [ALL_EVENTS] })}`,
  }));

  pages.post('/developers/webhooks/new', async (ctx) => {
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
  });

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
        <div class="actions">
          <a class="button secondary" href="${BASE}/webhooks/${id}/edit">Edit</a>
          <form method="post" action="${BASE}/webhooks/${id}/test" class="inline">
            ${ctx.csrf}${idempotencyField()}<button type="submit">Send test event</button>
          </form>
          <form method="post" action="${BASE}/webhooks/${id}/status" class="inline">
            ${ctx.csrf}<input type="hidden" name="status" value="${enabled ? 'disabled' : 'enabled'}" />
            <button type="submit" class="secondary">${enabled ? 'Disable' : 'Enable'}</button>
          </form>
          <a class="button secondary" href="${BASE}/webhooks/${id}/roll-secret">Roll secret</a>
        </div>
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

  pages.get('/developers/webhooks/:id/edit', async (ctx) => {
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
  });

  pages.post('/developers/webhooks/:id/edit', async (ctx) => {
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
  });

  pages.post('/developers/webhooks/:id/status', async (ctx) => {
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
  });

  pages.get('/developers/webhooks/:id/roll-secret', async (ctx) => {
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
  });

  pages.post('/developers/webhooks/:id/roll-secret', async (ctx) => {
    const rolled = await ctx.api.webhookEndpoints.rotateSecret(pathId(ctx), once(ctx));
    return secretShown(
      ctx,
      'Secret rolled',
      rolled,
      html`<p>The previous secret keeps signing until ${ctx.time(rolled.previous_secret_expires_at)}.</p>`,
    );
  });

  pages.post('/developers/webhooks/:id/test', async (ctx) => {
    const id = pathId(ctx);
    await ctx.api.webhookEndpoints.test(id, once(ctx));
    return {
      redirect: `${BASE}/webhooks/${id}`,
      notice: `A ${TEST_EVENT_TYPE} event is on its way: its delivery is at the top of the log (reload to follow it).`,
    };
  });

  pages.post('/developers/webhooks/:id/resend', async (ctx) => {
    const id = pathId(ctx);
    await ctx.api.events.resend(ctx.fields.event_id ?? '', { endpoint_id: id }, once(ctx));
    return {
      redirect: `${BASE}/webhooks/${id}`,
      notice: 'Resent: a new delivery is at the top of the log (reload to follow it).',
    };
  });
}

// Events

function eventPages(pages: Pages): void {
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
        <form method="post" action="${BASE}/events/${event.id}/resend" class="actions">
          ${ctx.csrf}${idempotencyField()}<input type="hidden" name="endpoint_id" value="${d.endpoint_id}" />
          <button type="submit" class="secondary">Resend</button>
        </form>
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
          <form method="post" action="${BASE}/events/${event.id}/resend" class="actions">
            ${ctx.csrf}${idempotencyField()}
            <button type="submit" class="secondary">Resend to every subscribed endpoint</button>
          </form>
        </section>`,
    };
  });

  pages.post('/developers/events/:id/resend', async (ctx) => {
    const id = pathId(ctx);
    const endpointId = ctx.fields.endpoint_id;
    const resent = await ctx.api.events.resend(id, endpointId ? { endpoint_id: endpointId } : {}, once(ctx));
    const n = resent.data.length;
    return {
      redirect: `${BASE}/events/${id}`,
      notice: `Resent: ${n} ${n === 1 ? 'delivery' : 'deliveries'} queued, one attempt each (reload to follow).`,
    };
  });
}

export function developerPages(pages: Pages): void {
  pages.get('/developers', overview);
  keyPages(pages);
  webhookPages(pages);
  eventPages(pages);
}
