// Developers: the overview of the section, a card for each of its areas (API keys, webhooks, events) with what it is
// for and where the workspace stands. Every read is a call of the public API through the SDK.
import type { PageAnswer, PageContext, Pages } from '../page-context.js';
import { html, type Html } from '../html.js';
import { BASE, type Section } from './developer-views.js';

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

export function developerOverviewPage(pages: Pages): void {
  pages.get('/developers', overview);
}
