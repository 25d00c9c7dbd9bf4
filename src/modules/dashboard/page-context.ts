// What the dashboard's page files work with: the context each handler gets, the answers it may give, and how a page
// file adds its pages. dashboard.routes.ts serves the pages; the page files (pages/*.ts) and forms.ts need only these
// types, so they import this file and never dashboard.routes.ts (which imports them).
import type { FastifyRequest } from 'fastify';
import type { Permission } from '../../platform/access.js';
import type { AuditRoute } from '../../platform/audit.js';
import type { Payments } from '../../../packages/sdk/src/index.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import type { Html } from './html.js';
import type { Session } from './sessions.js';

/** What a page handler has to work with. */
export interface PageContext {
  request: FastifyRequest;
  session: Session;
  /** The public API with the session's token. */
  api: Payments;
  /** The hidden field every form must carry. */
  csrf: Html;
  /** A form's fields (POST), or the query string's (GET); repeated fields keep the first value. */
  fields: Record<string, string>;
  /** An amount in minor units, in its currency. */
  money: (amount: number, currency: string) => string;
  /** A time with its zone, in the browser's zone once it has told us. */
  time: (iso: string | null | undefined) => Html;
  /** The markets, rails and currencies on offer (no API lists them): what a form may offer, each currency's exponent. */
  catalogue: MarketCatalogue;
  /** Whether the signed-in member's role permits it (a token session may do all): a button it does not is not drawn. */
  may: (permission: Permission) => boolean;
}

export interface PageAnswer {
  title: string;
  content: Html;
  status?: number;
}
export interface Redirect {
  redirect: string;
  /** Shown once on the page redirected to. */
  notice?: string;
  /** The session was ended (sign-out): its cookie is cleared too. */
  signedOut?: true;
}
export interface Download {
  download: { filename: string; contentType: string; body: string };
}
export type PageResult = PageAnswer | Redirect | Download;
export type PageHandler = (ctx: PageContext) => Promise<PageResult>;

/**
 * How a page module adds its pages: paths are under /dashboard. `permission`: what the member's role must permit (the
 * matrix is src/modules/members/permissions.ts); otherwise the answer is 403 `forbidden`. A page that only shows is
 * `read`; a form, and the page that draws it, names the permission of the API call it makes.
 */
export interface Pages {
  get(path: string, handler: PageHandler, permission?: Permission): void;
  /**
   * A form's target: refused without the session's CSRF token. `audit`: a write the page makes itself (not through
   * the API, whose routes record their own): recorded under the signed-in member (or the session's credential), the
   * object being the path's only parameter unless the handler sets `request.auditNote.objectId`.
   */
  post(path: string, handler: PageHandler, permission: Permission, audit?: AuditRoute): void;
}
