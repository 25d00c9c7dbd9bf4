// The dashboard's page shell: the environment banner (sandbox is unmistakable), who is signed in, the navigation,
// and the page's own content in <main>. Its style and script are inlined and pinned by hash in the CSP.
import path from 'node:path';
import { bundlePageAssets, cspHash } from '../../platform/page-assets.js';
import { PROJECT_ROOT } from '../../platform/project-root.js';
import { html, raw, type Html } from './html.js';
import type { Permission } from '../../platform/access.js';
import type { Session } from './sessions.js';

const PAGE_DIR = path.join(PROJECT_ROOT, 'src', 'modules', 'dashboard', 'page');
const { script: SCRIPT, style: STYLE } = bundlePageAssets(
  path.join(PAGE_DIR, 'dashboard.client.ts'),
  path.join(PAGE_DIR, 'dashboard.css'),
  'es2020',
);

/**
 * Only the dashboard's own style and script run (by hash); forms post only to this origin; images are the page's
 * own (inline SVG charts and QR codes need none); nothing is fetched, framed or loaded from elsewhere.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${cspHash(SCRIPT)}`,
  `style-src ${cspHash(STYLE)}`,
  "img-src 'self' data:",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
].join('; ');

export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': DASHBOARD_CSP,
  'cache-control': 'no-store',
  'referrer-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** One entry of the navigation: its path under /dashboard and who sees it (the audience, and the role's permission). */
interface NavItem {
  href: string;
  label: string;
  for: 'integrator' | 'admin';
  sandboxOnly?: boolean;
  /** The permission its page needs, when more than `read` (the page itself refuses the others: dashboard.routes.ts). */
  needs?: Permission;
}

const NAV: readonly NavItem[] = [
  { href: '/dashboard', label: 'Home', for: 'integrator' },
  { href: '/dashboard/collections', label: 'Collections', for: 'integrator' },
  { href: '/dashboard/refunds', label: 'Refunds', for: 'integrator' },
  { href: '/dashboard/payouts', label: 'Payouts', for: 'integrator' },
  { href: '/dashboard/deposits', label: 'Deposits', for: 'integrator' },
  { href: '/dashboard/checkout-links', label: 'Checkout links', for: 'integrator' },
  { href: '/dashboard/reports', label: 'Reports', for: 'integrator', needs: 'reports' },
  { href: '/dashboard/developers', label: 'Developers', for: 'integrator' },
  { href: '/dashboard/sandbox', label: 'Sandbox', for: 'integrator', sandboxOnly: true, needs: 'sandbox' },
  { href: '/dashboard/members', label: 'Members', for: 'integrator' },
  { href: '/dashboard/audit-log', label: 'Audit log', for: 'integrator' },
  { href: '/dashboard/admin/workspaces', label: 'Workspaces', for: 'admin' },
  { href: '/dashboard/admin/operator-float', label: 'Operator float', for: 'admin' },
  { href: '/dashboard/members', label: 'Members', for: 'admin' },
  { href: '/dashboard/audit-log', label: 'Audit log', for: 'admin' },
];

/** The navigation entry a path belongs to: the longest href it starts with. */
function currentHref(pathname: string): string | undefined {
  return NAV.filter((n) => pathname === n.href || pathname.startsWith(`${n.href}/`)).sort(
    (a, b) => b.href.length - a.href.length,
  )[0]?.href;
}

function envBanner(environment: 'sandbox' | 'production'): Html {
  return environment === 'sandbox'
    ? html`<p class="env-banner" role="note">Sandbox: test data, no real money moves.</p>`
    : html`<p class="env-banner production" role="note">Production: real money.</p>`;
}

// The inline style and script exactly as hashed for the CSP: built outside the `html` template, which the formatter
// lays out (any whitespace it added inside the elements would change their hashes).
const STYLE_ELEMENT = raw(`<style>${STYLE}</style>`);
const SCRIPT_ELEMENT = raw(`<script>${SCRIPT}</script>`);

function document(title: string, body: Html): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width,initial-scale=1" />
        <link rel="icon" href="data:," />
        <title>${title} · Payments dashboard</title>
        ${STYLE_ELEMENT}
      </head>
      <body>
        ${body} ${SCRIPT_ELEMENT}
      </body>
    </html>`.value;
}

export interface LayoutOptions {
  title: string;
  session: Session;
  /** The request's path, to mark the current navigation entry. */
  pathname: string;
  /** The hidden CSRF field every form of the page carries (the sign-out form too). */
  csrf: Html;
  notice?: string;
}

/** A signed-in page. */
export function layout(o: LayoutOptions, content: Html): string {
  const audience = o.session.audience === 'admin' ? 'admin' : 'integrator';
  const current = currentHref(o.pathname);
  const permitted = o.session.permissions;
  const items = NAV.filter(
    (n) =>
      n.for === audience &&
      (!n.sandboxOnly || o.session.environment === 'sandbox') &&
      (n.needs === undefined || permitted === undefined || permitted.includes(n.needs)),
  );
  const body = html`<a class="skip" href="#main">Skip to content</a>
    ${envBanner(o.session.environment)}
    <header class="top">
      <p class="brand">Payments dashboard</p>
      <p class="who">
        ${o.session.workspace_name} · ${o.session.environment} ·
        ${
          o.session.member_email
            ? html`${o.session.member_email} (${o.session.member_role})`
            : html`${audience === 'admin' ? 'operator' : 'workspace'} key “${o.session.credential_name}”`
        }
      </p>
      <form method="post" action="/dashboard/sign-out" class="inline">
        ${o.csrf}<button type="submit" class="secondary">Sign out</button>
      </form>
    </header>
    <nav class="main" aria-label="Main">
      <ul>
        ${items.map(
          (n) =>
            html`<li><a href="${n.href}" ${n.href === current ? raw(' aria-current="page"') : ''}>${n.label}</a></li>`,
        )}
      </ul>
    </nav>
    <main id="main" tabindex="-1">
      <h1>${o.title}</h1>
      ${o.notice ? html`<p class="notice" role="status">${o.notice}</p>` : ''} ${content}
    </main>`;
  return document(o.title, body);
}

/** A page outside a session: sign-in, and errors before one is open. */
export function plainLayout(environment: 'sandbox' | 'production', title: string, content: Html): string {
  return document(
    title,
    html`${envBanner(environment)}
      <main id="main" class="signin">
        <h1>${title}</h1>
        ${content}
      </main>`,
  );
}
