// The operator's pages (admin token): the workspaces, a new workspace with its first integrator key, and a key
// minted in a workspace. A new token is shown once, on the page that answers the form.
import type { components } from '../../../../packages/sdk/src/index.js';
import { dataTable, facts, field, idempotencyField, selectField, shownOnce } from '../components.js';
import type { PageContext, PageResult, Pages } from '../page-context.js';
import { html, type Html } from '../html.js';
import { choice, pathId, refusal, refusalAlert } from '../forms.js';

type Schemas = components['schemas'];
type Workspace = Schemas['Workspace'];

/** The audiences a key may have, as the API's schema lists them. */
const AUDIENCES = {
  integrator: 'integrator',
  liquidity_provider: 'liquidity_provider',
  admin: 'admin',
} satisfies Record<Schemas['Audience'], string>;

const LATE_PAYMENTS = {
  refund: 'Refund them (the default)',
  accept: 'Accept them',
} satisfies Record<Schemas['LatePaymentPolicy'], string>;

function workspaceFacts(ctx: PageContext, w: Workspace): Html {
  return html`<div class="card">
    ${facts([
      ['Name', w.name],
      ['Display name', w.display_name],
      ['Environment', w.environment],
      ['Late payments', w.late_payment],
      ['Created', ctx.time(w.created_at)],
      ['Id', w.id],
    ])}
  </div>`;
}

async function workspaceList(ctx: PageContext, problem?: Html, status = 200): Promise<PageResult> {
  const f = ctx.fields;
  const { data } = await ctx.api.admin.workspaces.list();
  const content = html`${problem ?? ''}
    <section aria-labelledby="list-title">
      <h2 id="list-title">All workspaces</h2>
      ${
        data.length === 0
          ? html`<p class="card">No workspace yet.</p>`
          : dataTable(
              'Workspaces',
              ['Name', 'Environment', 'Created'],
              data.map(
                (w) =>
                  html`<tr>
                    <td><a href="/dashboard/admin/workspaces/${w.id}">${w.name}</a></td>
                    <td>${w.environment}</td>
                    <td>${ctx.time(w.created_at)}</td>
                  </tr>`,
              ),
            )
      }
    </section>
    ${
      ctx.may('operator')
        ? html`<section aria-labelledby="create-title">
            <h2 id="create-title">Create workspace</h2>
            <form method="post" action="/dashboard/admin/workspaces" class="card">
              ${ctx.csrf}${idempotencyField()}
              ${field('name', 'Name', { value: f.name ?? '', required: true, attributes: 'maxlength="100"' })}
              ${field('display_name', 'Display name (optional)', {
                value: f.display_name ?? '',
                hint: 'Shown to payers on the checkout page; the name when left empty.',
                attributes: 'maxlength="100"',
              })}
              ${selectField('late_payment', 'Late payments', Object.entries(LATE_PAYMENTS), f.late_payment ?? 'refund')}
              <p class="muted">
                A payment the operator confirms after its collection expired: sent back to the payer, or kept as
                successful.
              </p>
              <button type="submit">Create workspace</button>
            </form>
          </section>`
        : ''
    }
    <section aria-labelledby="reconcile-title">
      <h2 id="reconcile-title">Reconciliation</h2>
      <p class="card">
        The settlement report’s API takes a workspace’s own key, so the operator’s reconciliation is not shown here: run
        <code>npm run reconcile</code> against an operator’s statement (docs/guides/reports-and-reconciliation.md).
      </p>
    </section>`;
  return { title: 'Workspaces', content, status };
}

/** A workspace's page (the API lists workspaces; it has no call for one) with the form that mints a key in it. */
async function workspacePage(ctx: PageContext, id: string, problem?: Html, status = 200): Promise<PageResult> {
  const { data } = await ctx.api.admin.workspaces.list();
  const workspace = data.find((w) => w.id === id);
  if (!workspace)
    return { title: 'Not found', status: 404, content: html`<p class="card">There is no workspace ${id}.</p>` };
  const f = ctx.fields;
  const content = html`${problem ?? ''}${workspaceFacts(ctx, workspace)}
    ${
      ctx.may('operator')
        ? html`<section aria-labelledby="mint-title">
            <h2 id="mint-title">Mint a key</h2>
            <form method="post" action="/dashboard/admin/workspaces/${workspace.id}/keys" class="card">
              ${ctx.csrf}${idempotencyField()}
              ${selectField('audience', 'Audience', Object.entries(AUDIENCES), f.audience ?? 'integrator')}
              <p class="muted">
                integrator: the workspace’s own API; liquidity_provider: reports its deposits and rates; admin: the
                operator’s API.
              </p>
              ${field('key_name', 'Key name (optional)', {
                value: f.key_name ?? '',
                hint: 'A label for people; the audience when left empty.',
                attributes: 'maxlength="100"',
              })}
              <button type="submit">Mint key</button>
            </form>
          </section>`
        : ''
    }
    <p><a href="/dashboard/admin/workspaces">All workspaces</a></p>`;
  return { title: `Workspace ${workspace.name}`, content, status };
}

export function adminPages(pages: Pages): void {
  pages.get('/admin/workspaces', async (ctx) => workspaceList(ctx));

  pages.post(
    '/admin/workspaces',
    async (ctx) => {
      const f = ctx.fields;
      const latePayment = choice(LATE_PAYMENTS, f.late_payment);
      try {
        const { workspace, credential } = await ctx.api.admin.workspaces.create(
          {
            name: f.name ?? '',
            ...(f.display_name ? { display_name: f.display_name } : {}),
            ...(latePayment ? { late_payment: latePayment } : {}),
          },
          { idempotencyKey: f.idempotency_key },
        );
        const content = html`<p class="notice" role="status">Workspace ${workspace.name} created.</p>
          ${shownOnce(
            'new-token',
            'Its first integrator key, shown once: copy it now and keep it in a secrets manager.',
            credential.token,
          )}
          ${workspaceFacts(ctx, workspace)}
          <p class="actions">
            <a href="/dashboard/admin/workspaces/${workspace.id}">Mint another key</a>
            <a href="/dashboard/admin/workspaces">All workspaces</a>
          </p>`;
        return { title: `Workspace ${workspace.name}`, content };
      } catch (error) {
        const problem = refusal(error);
        return workspaceList(ctx, refusalAlert(problem), problem.status);
      }
    },
    'operator',
  );

  pages.get('/admin/workspaces/:id', async (ctx) => workspacePage(ctx, pathId(ctx)));

  pages.post(
    '/admin/workspaces/:id/keys',
    async (ctx) => {
      const id = pathId(ctx);
      const f = ctx.fields;
      const audience = choice(AUDIENCES, f.audience);
      if (!audience) return workspacePage(ctx, id, html`<p class="error" role="alert">Choose an audience.</p>`, 400);
      try {
        const credential = await ctx.api.admin.workspaces.createCredential(
          id,
          { audience, ...(f.key_name ? { name: f.key_name } : {}) },
          { idempotencyKey: f.idempotency_key },
        );
        const content = html`${shownOnce(
            'new-token',
            `The new ${credential.audience} key, shown once: copy it now and keep it in a secrets manager.`,
            credential.token,
          )}
          <div class="card">
            ${facts([
              ['Name', credential.name],
              ['Audience', credential.audience],
              ['Environment', credential.environment],
              ['Created', ctx.time(credential.created_at)],
              ['Id', credential.id],
            ])}
          </div>
          <p class="actions">
            <a href="/dashboard/admin/workspaces/${id}">Back to the workspace</a>
            <a href="/dashboard/admin/workspaces">All workspaces</a>
          </p>`;
        return { title: 'Key minted', content };
      } catch (error) {
        const problem = refusal(error);
        return workspacePage(ctx, id, refusalAlert(problem), problem.status);
      }
    },
    'operator',
  );
}
