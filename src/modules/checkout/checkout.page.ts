// The hosted payment page at /checkout/{token}: one HTML document served by the service itself, with its
// style and script (page/) inline and pinned by hash in a strict Content-Security-Policy. No CDN, no third-party
// asset, nothing secret: the page knows what the by-token payer view shows and talks only to those endpoints.
import path from 'node:path';
import { bundlePageAssets, cspHash as hash } from '../../platform/page-assets.js';
import { PROJECT_ROOT } from '../../platform/project-root.js';
import type { PayerView } from './checkout.schemas.js';
import { STRINGS, type Lang, type Strings } from './page/checkout.strings.js';

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** Fills the placeholders `vars` names; others stay for the script to fill (`{digits}`, `{rail}`…). */
const fill = (template: string, vars: Record<string, string | number>): string =>
  template.replace(/\{(\w+)\}/g, (whole, k: string) => (vars[k] === undefined ? whole : String(vars[k])));

// The page's script and styles (page/checkout.client.ts and page/checkout.css), bundled once when this module loads.
// ES2016: what KaiOS 2.5 feature phones (Gecko 48) run; optional chaining and `??` are rewritten for them.
const PAGE_DIR = path.join(PROJECT_ROOT, 'src', 'modules', 'checkout', 'page');
const { script: SCRIPT, style: STYLE } = bundlePageAssets(
  path.join(PAGE_DIR, 'checkout.client.ts'),
  path.join(PAGE_DIR, 'checkout.css'),
  'es2016',
);

/**
 * Only this page's own style and script run (by hash); it may fetch only from this origin, submits no form anywhere,
 * loads nothing else, cannot be framed (clickjacking) and has no DOM sinks for injected markup.
 */
export const CHECKOUT_CSP = [
  "default-src 'none'",
  `script-src ${hash(SCRIPT)}`,
  `style-src ${hash(STYLE)}`,
  "connect-src 'self'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
].join('; ');

/** Headers of every page and by-token answer: nothing cached, no token leaked in a Referer, no framing, no sniffing. */
export const CHECKOUT_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** JSON inside a <script type="application/json"> block: `<` escaped so no value can close the element. */
const scriptJson = (value: unknown): string => JSON.stringify(value).replace(/</g, '\\u003c');

function shell(lang: Lang, title: string, body: string): string {
  return `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><link rel="icon" href="data:,"><title>${esc(title)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}

export function renderCheckoutPage(token: string, view: PayerView): string {
  const lang: Lang = view.language;
  const t: Strings = STRINGS[lang];
  const merchant = esc(view.merchant_name);
  const rails = view.rails
    .map(
      (r, i) =>
        `<label class="rail"><input type="radio" name="rail" value="${esc(r.rail)}"${i === 0 ? ' checked' : ''}> <span>${esc(r.name)}</span></label>`,
    )
    .join('');
  const strings = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, fill(v, { merchant: view.merchant_name })]));
  const prefill = (field: 'phone_number' | 'name' | 'email'): string => esc(view.customer[field] ?? '');
  const phonePrefill = view.customer.phone_number?.startsWith(`+${view.phone.country_code}`)
    ? esc(view.customer.phone_number.slice(view.phone.country_code.length + 1))
    : '';
  const body = `<div class="card">
<p class="merchant">${esc(t.paymentTo)} <strong>${merchant}</strong></p>
<p class="amount" id="amount">${esc(view.amount_display)}</p>
${view.sandbox ? `<p class="sandbox">${esc(t.sandbox)}</p>` : ''}
<noscript><p class="error">${esc(t.noScript)}</p></noscript>
<section id="screen-pay" aria-labelledby="pay-title">
<h2 id="pay-title" tabindex="-1">${esc(fill(t.title, { merchant: view.merchant_name }))}</h2>
<form id="pay-form" novalidate>
<fieldset><legend>${esc(t.payWith)}</legend>${rails}</fieldset>
<div class="field" id="field-phone_number"><label class="text" for="phone">${esc(t.phoneLabel)}</label>
<div class="phone"><span class="prefix" id="phone-prefix">+${esc(view.phone.country_code)}</span><input id="phone" name="phone" type="tel" inputmode="tel" autocomplete="tel-national" maxlength="20" value="${phonePrefill}" aria-describedby="phone-prefix phone-hint phone-error"></div>
<p class="hint" id="phone-hint">${esc(fill(t.phoneHint, { digits: view.phone.national_digits, cc: view.phone.country_code }))}</p>
<p class="error" id="phone-error" aria-live="polite"></p><p class="hint" id="rail-hint" aria-live="polite"></p></div>
<div class="field" id="field-name"><label class="text" for="name">${esc(t.nameLabel)}</label>
<input id="name" name="name" type="text" autocomplete="name" maxlength="200" value="${prefill('name')}" aria-describedby="name-error">
<p class="error" id="name-error" aria-live="polite"></p></div>
<div class="field" id="field-email"><label class="text" for="email">${esc(t.emailLabel)}</label>
<input id="email" name="email" type="email" autocomplete="email" maxlength="254" value="${prefill('email')}" aria-describedby="email-error">
<p class="error" id="email-error" aria-live="polite"></p></div>
<button type="submit" id="pay-button">${esc(fill(t.pay, { amount: view.amount_display }))}</button>
<p class="error" id="form-error" role="alert"></p>
</form><p class="expires" id="expires"></p></section>
<section id="screen-wait" aria-labelledby="wait-title" hidden>
<h2 id="wait-title" tabindex="-1" aria-describedby="instruction ussd">${esc(t.waitTitle)}</h2>
<p id="instruction"></p><p class="ussd" id="ussd" hidden></p>
<a class="button" id="redirect" href="#" target="_blank" rel="noopener" hidden></a>
<dl id="bank" hidden><dt>${esc(t.bankLabel)}</dt><dd id="bank-name"></dd><dt>${esc(t.accountLabel)}</dt><dd id="bank-account"></dd><dt>${esc(t.holderLabel)}</dt><dd id="bank-holder"></dd></dl>
<p class="status" role="status"><span class="spinner" aria-hidden="true"></span><span id="status-text"></span></p>
</section>
<section id="screen-success" aria-labelledby="success-title" hidden>
<h2 id="success-title" tabindex="-1" aria-describedby="success-text">${esc(t.successTitle)}</h2>
<p id="success-text">${esc(fill(t.successText, { merchant: view.merchant_name }))}</p>
<a class="button" id="continue" href="#">${esc(fill(t.continue, { merchant: view.merchant_name }))}</a>
<button type="button" class="secondary" id="stay">${esc(t.stay)}</button>
</section>
<section id="screen-failed" aria-labelledby="failed-title" hidden>
<h2 id="failed-title" tabindex="-1" aria-describedby="failure-reason retry-hint">${esc(t.failedTitle)}</h2>
<p id="failure-reason"></p><p id="retry-hint">${esc(t.retryHint)}</p>
<button type="button" id="retry">${esc(t.retry)}</button>
</section>
<section id="screen-expired" aria-labelledby="expired-title" hidden>
<h2 id="expired-title" tabindex="-1" aria-describedby="expired-text">${esc(t.expiredTitle)}</h2>
<p id="expired-text">${esc(fill(t.expiredText, { merchant: view.merchant_name }))}</p>
<a class="button" id="expired-return" href="#">${esc(fill(t.returnTo, { merchant: view.merchant_name }))}</a>
</section>
</div>
<script type="application/json" id="checkout-data">${scriptJson({ token, view, strings })}</script>
<script>${SCRIPT}</script>`;
  return shell(lang, fill(t.title, { merchant: view.merchant_name }), body);
}

/** The page for a link that leads nowhere (unknown or malformed token). */
export function renderNotFoundPage(lang: Lang = 'en'): string {
  const t = STRINGS[lang];
  return shell(
    lang,
    t.notFoundTitle,
    `<div class="card"><h1 class="amount">${esc(t.notFoundTitle)}</h1><p>${esc(t.notFoundText)}</p></div>`,
  );
}

/** The page shown when a client asks too often. */
export function renderRateLimitedPage(retryAfterSeconds: number, lang: Lang = 'en'): string {
  const t = STRINGS[lang];
  return shell(
    lang,
    t.rateLimited,
    `<div class="card"><h1 class="amount">${esc(t.rateLimited)}</h1><p>${retryAfterSeconds} s</p></div>`,
  );
}
