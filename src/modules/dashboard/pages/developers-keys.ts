// Developers, API keys: the workspace's keys, and create, rotate and revoke, each confirmed first; a new token is shown
// once. Every read and write is a call of the public API through the SDK; these pages only show and ask.
import type { components } from '../../../../packages/sdk/src/index.js';
import { dataTable, field, idempotencyField, shownOnce, statusBadge } from '../components.js';
import type { PageAnswer, PageContext, Pages } from '../page-context.js';
import { pathId, refusal, refusalAlert } from '../forms.js';
import { html, type Html } from '../html.js';
import { BASE, cancel, once, sectionNav, stacked } from './developer-views.js';

type Credential = components['schemas']['Credential'];

async function keysPage(ctx: PageContext, problem?: Html, name = ''): Promise<PageAnswer> {
  const { data } = await ctx.api.credentials.list();
  // A member's credential is that member's access: changing it needs what managing the member needs.
  const mayChange = (k: Credential): boolean =>
    ctx.may('keys') && (k.member_role === null || ctx.may(k.member_role === 'owner' ? 'ownership' : 'members'));
  const row = (k: Credential): Html =>
    html`<tr>
      <th scope="row">
        ${k.name}
        <span class="muted"
          >${k.audience}${k.member_role === null ? '' : `, a member's (${k.member_role})`}${
            k.id === ctx.session.credential_id ? ', you are signed in with it' : ''
          }</span
        >
      </th>
      <td>${statusBadge(k.status)}</td>
      <td>
        ${
          k.status === 'active' && mayChange(k)
            ? html`<span class="row-actions">
                <a href="${BASE}/keys/${k.id}/rotate">Rotate</a>
                <a href="${BASE}/keys/${k.id}/revoke">Revoke</a>
              </span>`
            : k.status === 'active'
              ? ''
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
    ${
      ctx.may('keys')
        ? html`<section aria-labelledby="new-key-title">
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
          </section>`
        : ''
    }`,
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

export function keyPages(pages: Pages): void {
  pages.get('/developers/keys', (ctx) => keysPage(ctx));

  pages.post(
    '/developers/keys',
    async (ctx) => {
      const name = ctx.fields.name ?? '';
      try {
        const key = await ctx.api.credentials.create({ name }, once(ctx));
        return tokenShown(ctx, 'Key created', key, `The key “${key.name}” is active.`, false);
      } catch (error) {
        return keysPage(ctx, refusalAlert(refusal(error)), name);
      }
    },
    'keys',
  );

  pages.get(
    '/developers/keys/:id/rotate',
    async (ctx) => {
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
                  <strong>You are signed in with this key.</strong> Rotating it ends this dashboard session: copy the
                  new token from the next page, then sign in again with it.
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
    },
    'keys',
  );

  pages.post(
    '/developers/keys/:id/rotate',
    async (ctx) => {
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
    },
    'keys',
  );

  pages.get(
    '/developers/keys/:id/revoke',
    async (ctx) => {
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
                  <strong>You are signed in with this key.</strong> Revoking it ends this dashboard session: the next
                  page is sign-in, where you need another key's token.
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
    },
    'keys',
  );

  pages.post(
    '/developers/keys/:id/revoke',
    async (ctx) => {
      const key = await ctx.api.credentials.revoke(pathId(ctx));
      // When it was this session's key, the page redirected to is sign-in (then this list, with the notice).
      return { redirect: `${BASE}/keys`, notice: `The key “${key.name}” is revoked: its token no longer works.` };
    },
    'keys',
  );
}
