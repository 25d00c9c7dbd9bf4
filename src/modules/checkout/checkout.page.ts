// The hosted payment page at /checkout/{token}: one HTML document served by the service itself, with its
// style and script inline and pinned by hash in a strict Content-Security-Policy. No CDN, no third-party
// asset, nothing secret: the page knows what the payer view (row 18) shows and talks only to those endpoints.
import { createHash } from 'node:crypto';
import type { PayerView } from './checkout.schemas.js';

type Lang = 'en' | 'fr';

const STRINGS = {
  en: {
    title: 'Pay {merchant}',
    paymentTo: 'Payment to',
    sandbox:
      'Sandbox: no real money moves. Numbers ending in 0001 are declined, 0002 lack funds, 0003 never approve; any other number pays.',
    payWith: 'Pay with',
    phoneLabel: 'Mobile money number',
    phoneHint: '{digits} digits after +{cc}',
    nameLabel: 'Full name',
    emailLabel: 'Email address',
    pay: 'Pay {amount}',
    sending: 'Sending…',
    required: 'Fill in the fields marked below.',
    phoneRequired: 'Enter your mobile money number.',
    phoneDigitsOnly: 'Use digits only.',
    phoneTooShort: 'The number needs {digits} digits after +{cc}; {missing} more to go.',
    phoneTooLong: 'Too many digits: the number has {digits} digits after +{cc}.',
    nameRequired: 'Enter your full name.',
    emailInvalid: 'Enter an email address like name@example.com.',
    waitTitle: 'Complete the payment',
    noInstruction: 'Follow the instructions {rail} sends to your phone.',
    status_created: 'Sending the payment request…',
    status_pending: 'Waiting for you to approve the payment…',
    status_processing: 'Payment approved. Confirming…',
    successTitle: 'Payment received',
    successText: 'Thank you. Taking you back to {merchant} in a few seconds.',
    stay: 'Stay on this page',
    stayed: 'You can go back to {merchant} when you are ready.',
    continue: 'Continue to {merchant}',
    failedTitle: 'Payment not completed',
    reason_payer_declined: 'The payment was declined.',
    reason_insufficient_funds: 'There was not enough money in the account.',
    reason_provider_error: '{rail} could not process the payment.',
    reason_provider_refused: '{rail} refused the payment request. Check the number.',
    reason_wrong_pin: 'The PIN entered was wrong.',
    reason_prompt_expired: 'The payment request on your phone timed out.',
    reason_payer_unreachable: 'Your phone could not be reached. Check that it is on and has signal.',
    reason_payer_busy: 'Another payment is in progress on this number. Finish it, then try again.',
    reason_payer_limit_reached: 'This payment is over a limit of your {rail} account.',
    reason_payer_not_found: 'This number has no {rail} account.',
    reason_expired: 'The payment was not approved in time.',
    retryHint: 'No money was taken. You can try again.',
    retryHintExpired:
      'If you approved the payment on your phone just now, wait for its confirmation message before you try again.',
    startFailed: 'The payment could not be started. Try again.',
    phoneRejected: 'This number cannot pay with {rail}. Check it or choose another way to pay.',
    expiresAt: 'This payment link expires at {time}.',
    retry: 'Try again',
    expiredTitle: 'This payment link has expired',
    expiredText: 'No payment was taken. Go back to {merchant} to start again.',
    returnTo: 'Return to {merchant}',
    networkError: 'We could not reach the server. Check your connection and try again.',
    rateLimited: 'Too many attempts. Wait a moment and try again.',
    notFoundTitle: 'Payment link not found',
    notFoundText: 'Check the link you were given, or ask the merchant for a new one.',
    noScript: 'This page needs JavaScript to take the payment.',
    bankLabel: 'Bank',
    accountLabel: 'Account number',
    holderLabel: 'Account name',
  },
  fr: {
    title: 'Payer {merchant}',
    paymentTo: 'Paiement à',
    sandbox:
      'Bac à sable : aucun argent réel ne circule. Les numéros finissant par 0001 sont refusés, 0002 sans fonds, 0003 jamais validés ; tout autre numéro paie.',
    payWith: 'Payer avec',
    phoneLabel: 'Numéro mobile money',
    phoneHint: '{digits} chiffres après +{cc}',
    nameLabel: 'Nom complet',
    emailLabel: 'Adresse e-mail',
    pay: 'Payer {amount}',
    sending: 'Envoi…',
    required: 'Complétez les champs signalés ci-dessous.',
    phoneRequired: 'Saisissez votre numéro mobile money.',
    phoneDigitsOnly: 'Utilisez uniquement des chiffres.',
    phoneTooShort: 'Le numéro compte {digits} chiffres après +{cc} ; il en manque {missing}.',
    phoneTooLong: 'Trop de chiffres : le numéro compte {digits} chiffres après +{cc}.',
    nameRequired: 'Saisissez votre nom complet.',
    emailInvalid: 'Saisissez une adresse comme nom@exemple.com.',
    waitTitle: 'Finalisez le paiement',
    noInstruction: 'Suivez les instructions que {rail} envoie sur votre téléphone.',
    status_created: 'Envoi de la demande de paiement…',
    status_pending: 'En attente de votre validation…',
    status_processing: 'Paiement validé. Confirmation en cours…',
    successTitle: 'Paiement reçu',
    successText: 'Merci. Retour vers {merchant} dans quelques secondes.',
    stay: 'Rester sur cette page',
    stayed: 'Vous pourrez retourner sur {merchant} quand vous le souhaitez.',
    continue: 'Continuer vers {merchant}',
    failedTitle: 'Paiement non effectué',
    reason_payer_declined: 'Le paiement a été refusé.',
    reason_insufficient_funds: 'Le solde du compte est insuffisant.',
    reason_provider_error: '{rail} n’a pas pu traiter le paiement.',
    reason_provider_refused: '{rail} a refusé la demande. Vérifiez le numéro.',
    reason_wrong_pin: 'Le code PIN saisi était incorrect.',
    reason_prompt_expired: 'La demande de paiement sur votre téléphone a expiré.',
    reason_payer_unreachable: 'Votre téléphone n’a pas pu être joint. Vérifiez qu’il est allumé et capte le réseau.',
    reason_payer_busy: 'Un autre paiement est en cours sur ce numéro. Terminez-le, puis réessayez.',
    reason_payer_limit_reached: 'Ce paiement dépasse une limite de votre compte {rail}.',
    reason_payer_not_found: 'Ce numéro n’a pas de compte {rail}.',
    reason_expired: 'Le paiement n’a pas été validé à temps.',
    retryHint: 'Aucun montant n’a été débité. Vous pouvez réessayer.',
    retryHintExpired:
      'Si vous venez de valider le paiement sur votre téléphone, attendez son message de confirmation avant de réessayer.',
    startFailed: 'Le paiement n’a pas pu être lancé. Réessayez.',
    phoneRejected: 'Ce numéro ne peut pas payer avec {rail}. Vérifiez-le ou choisissez un autre moyen de paiement.',
    expiresAt: 'Ce lien de paiement expire à {time}.',
    retry: 'Réessayer',
    expiredTitle: 'Ce lien de paiement a expiré',
    expiredText: 'Aucun paiement n’a été effectué. Retournez sur {merchant} pour recommencer.',
    returnTo: 'Retour vers {merchant}',
    networkError: 'Impossible de joindre le serveur. Vérifiez votre connexion et réessayez.',
    rateLimited: 'Trop de tentatives. Patientez un instant puis réessayez.',
    notFoundTitle: 'Lien de paiement introuvable',
    notFoundText: 'Vérifiez le lien reçu ou demandez-en un nouveau au marchand.',
    noScript: 'Cette page a besoin de JavaScript pour effectuer le paiement.',
    bankLabel: 'Banque',
    accountLabel: 'Numéro de compte',
    holderLabel: 'Titulaire du compte',
  },
} as const satisfies Record<Lang, Record<string, string>>;

type Strings = (typeof STRINGS)[Lang];

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** Fills the placeholders `vars` names; others stay for the script to fill (`{digits}`, `{rail}`…). */
const fill = (template: string, vars: Record<string, string | number>): string =>
  template.replace(/\{(\w+)\}/g, (whole, k: string) => (vars[k] === undefined ? whole : String(vars[k])));

// Colours: text #1a1a1a and links/buttons #0b5394 on white (contrast 17:1 and 7.9:1), errors #a4001d (8.3:1),
// muted #4d4d4d (8.4:1); focus is a 3px dark outline with a white gap, visible on every background used.
const STYLE = `*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;background:#f3f4f6}
main{max-width:28rem;margin:0 auto;padding:1rem}
.card{background:#fff;border:1px solid #c4c7cc;border-radius:12px;padding:1.25rem}
.merchant{margin:0;color:#4d4d4d;font-size:.95rem}
.amount{margin:.25rem 0 1rem;font-size:2rem;line-height:1.2;overflow-wrap:anywhere}
.sandbox{margin:0 0 1rem;padding:.5rem .75rem;background:#fff4ce;border:1px solid #8a6d00;border-radius:8px;font-size:.875rem}
h2{font-size:1.25rem;margin:0 0 .75rem}
h2:focus{outline:none}
fieldset{border:0;margin:0 0 1rem;padding:0}
legend{font-weight:600;margin-bottom:.5rem;padding:0}
.rail{display:flex;align-items:center;gap:.6rem;min-height:48px;padding:.5rem .75rem;border:1px solid #767676;border-radius:8px;margin-bottom:.5rem;cursor:pointer}
.rail input{width:1.25rem;height:1.25rem;margin:0;accent-color:#0b5394}
.field{margin-bottom:1rem}
label.text{display:block;font-weight:600;margin-bottom:.25rem}
.phone{display:flex;align-items:stretch}
.prefix{display:flex;align-items:center;padding:0 .75rem;border:1px solid #767676;border-right:0;border-radius:8px 0 0 8px;background:#ececec;font-variant-numeric:tabular-nums}
input[type=tel],input[type=text],input[type=email]{width:100%;min-width:0;min-height:48px;padding:.5rem .75rem;font:inherit;color:inherit;border:1px solid #767676;border-radius:8px;background:#fff}
.phone input{border-radius:0 8px 8px 0}
input[aria-invalid=true]{border:2px solid #a4001d}
.hint{margin:.25rem 0 0;color:#4d4d4d;font-size:.875rem}
.error{margin:.25rem 0 0;color:#a4001d;font-size:.875rem;font-weight:600}
.error:empty{display:none}
button,.button{display:flex;align-items:center;justify-content:center;width:100%;min-height:48px;padding:.75rem 1rem;font:inherit;font-weight:600;color:#fff;background:#0b5394;border:0;border-radius:8px;cursor:pointer;text-decoration:none;text-align:center}
button[aria-disabled=true]{background:#3d5a7a;cursor:progress}
.secondary{color:#0b5394;background:#fff;border:2px solid #0b5394;margin-top:.75rem}
a{color:#0b5394}
:focus-visible{outline:3px solid #1a1a1a;outline-offset:2px;box-shadow:0 0 0 2px #fff}
.rail:focus-within{outline:3px solid #1a1a1a;outline-offset:2px}
.ussd{font-size:1.75rem;font-weight:700;letter-spacing:.05em;margin:.5rem 0}
.status{display:flex;align-items:center;gap:.6rem;margin:1rem 0 0;font-weight:600}
.spinner{flex:none;width:1.25rem;height:1.25rem;border:3px solid #c4c7cc;border-top-color:#0b5394;border-radius:50%;animation:spin 1s linear infinite}
@keyframes spin{to{transform:rotate(360deg)}}
@media (prefers-reduced-motion:reduce){.spinner{animation:none}}
dl{margin:.5rem 0}dt{color:#4d4d4d;font-size:.875rem}dd{margin:0 0 .5rem;font-weight:600;overflow-wrap:anywhere}
[hidden]{display:none!important}
.expires{margin:1rem 0 0;color:#4d4d4d;font-size:.875rem}`;

// The page's behaviour. It builds every text with textContent (never HTML), so payer-visible strings cannot inject markup.
const SCRIPT = `(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('checkout-data').textContent);
  var t = data.strings, view = data.view, api = '/v1/checkout/by-token/' + encodeURIComponent(data.token);
  var cc = view.phone.country_code, digits = view.phone.national_digits;
  var $ = function (id) { return document.getElementById(id); };
  var fill = function (s, v) { return s.replace(/\\{(\\w+)\\}/g, function (_, k) { return v[k] === undefined ? '' : String(v[k]); }); };
  var current = null, pollTimer = null, redirectTimer = null, retrying = false, attempt = null, sending = false, polls = 0, lastSeen = '';
  var form = $('pay-form'), payButton = $('pay-button'), phone = $('phone');
  var payLabel = fill(t.pay, { amount: view.amount_display });

  function railName(code) {
    for (var i = 0; i < view.rails.length; i++) if (view.rails[i].rail === code) return view.rails[i].name;
    return code;
  }
  function show(name) {
    ['pay', 'wait', 'success', 'failed', 'expired'].forEach(function (s) { $('screen-' + s).hidden = s !== name; });
    if (current !== null && current !== name) {
      var heading = $('screen-' + name).querySelector('h2');
      if (heading) heading.focus();
    }
    current = name;
  }
  function selectedRail() {
    var checked = form.querySelector('input[name=rail]:checked');
    if (!checked) return null;
    for (var i = 0; i < view.rails.length; i++) if (view.rails[i].rail === checked.value) return view.rails[i];
    return null;
  }
  function needs(field) { var rail = selectedRail(); return rail !== null && rail.customer_fields.indexOf(field) !== -1; }
  function updateFields() {
    ['phone_number', 'name', 'email'].forEach(function (f) { $('field-' + f).hidden = !needs(f); });
  }
  /** The national digits the payer typed: spaces and dashes dropped, a +cc, 00cc or leading 0 taken off. */
  function nationalDigits() {
    var v = phone.value.replace(/[\\s().-]/g, '');
    if (v.indexOf('+' + cc) === 0) v = v.slice(cc.length + 1);
    else if (v.indexOf('00' + cc) === 0) v = v.slice(cc.length + 2);
    else if (v.charAt(0) === '0' && v.length === digits + 1) v = v.slice(1);
    return v;
  }
  function phoneProblem(final) {
    var v = nationalDigits();
    if (v === '') return final ? t.phoneRequired : '';
    if (!/^[0-9]+$/.test(v)) return t.phoneDigitsOnly;
    if (v.length > digits) return fill(t.phoneTooLong, { digits: digits, cc: cc });
    if (v.length < digits && final) return fill(t.phoneTooShort, { digits: digits, cc: cc, missing: digits - v.length });
    return '';
  }
  function setError(input, box, message) {
    box.textContent = message;
    if (message) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid');
  }
  function checkPhone(final) { var m = needs('phone_number') ? phoneProblem(final) : ''; setError(phone, $('phone-error'), m); return m; }
  function checkName() { var m = needs('name') && $('name').value.trim() === '' ? t.nameRequired : ''; setError($('name'), $('name-error'), m); return m; }
  function checkEmail() {
    var v = $('email').value.trim();
    var m = needs('email') && !/^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$/.test(v) ? t.emailInvalid : '';
    setError($('email'), $('email-error'), m);
    return m;
  }
  /** Cleared first, then set on the next frame, so the same message twice is announced twice. */
  function formError(message) {
    $('form-error').textContent = '';
    if (message) setTimeout(function () { $('form-error').textContent = message; }, 50);
  }

  /** Polls every ms while things change; a payment that stays in one state for minutes is asked about less often. */
  function schedulePoll(ms) {
    clearTimeout(pollTimer);
    var seen = view.status + '/' + (view.attempt ? view.attempt.status : '');
    polls = seen === lastSeen ? polls + 1 : 0;
    lastSeen = seen;
    pollTimer = setTimeout(refresh, polls > 150 ? Math.max(ms, 15000) : polls > 30 ? Math.max(ms, 5000) : ms);
  }
  function refresh() {
    return fetch(api, { cache: 'no-store', headers: { accept: 'application/json' } })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (next) { if (next) render(next); else schedulePoll(4000); })
      .catch(function () { schedulePoll(4000); });
  }

  function render(next) {
    view = next;
    clearTimeout(pollTimer);
    var a = view.attempt;
    if (view.status === 'open') {
      if (a && a.failure_reason && !retrying) {
        $('failure-reason').textContent = fill(t['reason_' + a.failure_reason] || t.reason_provider_error, { rail: railName(a.rail) });
        $('retry-hint').textContent = a.failure_reason === 'expired' ? t.retryHintExpired : t.retryHint;
        show('failed');
      } else {
        show('pay');
      }
      schedulePoll(5000);
    } else if (view.status === 'processing') {
      retrying = false;
      var instruction = a && a.payment_instruction;
      $('instruction').textContent = instruction ? instruction.message : fill(t.noInstruction, { rail: a ? railName(a.rail) : '' });
      $('ussd').hidden = !(instruction && instruction.type === 'ussd_code');
      $('ussd').textContent = instruction && instruction.ussd_code ? instruction.ussd_code : '';
      var bank = instruction && instruction.type === 'bank_transfer';
      $('bank').hidden = !bank;
      if (bank) {
        $('bank-name').textContent = instruction.bank_name;
        $('bank-account').textContent = instruction.account_number;
        $('bank-holder').textContent = instruction.account_name;
      }
      var statusText = t['status_' + (a ? a.status : 'created')] || t.status_processing;
      if ($('status-text').textContent !== statusText) $('status-text').textContent = statusText;
      show('wait');
      schedulePoll(2000);
    } else if (view.status === 'complete') {
      $('continue').href = view.return_url;
      var first = current !== 'success';
      show('success');
      // Back to the shop after 5 s, unless the payer asks to stay (WCAG 2.2.1: a timed move can be turned off).
      if (first && !$('stay').hidden) redirectTimer = setTimeout(function () { window.location.assign(view.return_url); }, 5000);
    } else {
      $('expired-return').href = view.return_url;
      show('expired');
    }
  }

  /** One key per attempt: a resubmission of the same details after a network error reuses it, so it is never paid twice. */
  function newKey() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join('');
  }

  form.addEventListener('change', function (e) { if (e.target && e.target.name === 'rail') { updateFields(); formError(''); } });
  // As the payer types: wrong characters and too many digits at once; a number still too short only on Pay (a message
  // appearing on blur would move the Pay button under the pointer between press and release).
  phone.addEventListener('input', function () { checkPhone(false); });
  $('name').addEventListener('input', function () { if ($('name-error').textContent) checkName(); });
  $('email').addEventListener('input', function () { if ($('email-error').textContent) checkEmail(); });

  form.addEventListener('submit', function (e) {
    e.preventDefault();
    if (sending) return;
    formError('');
    var rail = selectedRail();
    var problems = [checkPhone(true), checkName(), checkEmail()];
    var firstBad = [phone, $('name'), $('email')].filter(function (el, i) { return problems[i] !== ''; })[0];
    if (!rail || firstBad) {
      formError(t.required);
      if (firstBad) firstBad.focus();
      return;
    }
    var customer = {};
    if (needs('phone_number')) customer.phone_number = '+' + cc + nationalDigits();
    if (needs('name')) customer.name = $('name').value.trim();
    if (needs('email')) customer.email = $('email').value.trim();
    var body = JSON.stringify({ rail: rail.rail, customer: customer });
    if (!attempt || attempt.body !== body) attempt = { key: newKey(), body: body };
    // Not disabled: a disabled button loses the keyboard focus. aria-disabled says it is busy; the sending flag ignores repeats.
    sending = true;
    payButton.setAttribute('aria-disabled', 'true');
    payButton.textContent = t.sending;
    fetch(api + '/pay', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': attempt.key }, body: body })
      .then(function (res) {
        return res.json().catch(function () { return null; }).then(function (json) {
          if (res.ok && json) { attempt = null; retrying = false; render(json); return; }
          if (res.status === 409) { attempt = null; retrying = false; return refresh(); }
          if (res.status === 429) { formError(t.rateLimited); return; }
          // The server's words are English; the payer reads this page's own, in the page's language.
          var shown = false;
          ((json && json.errors) || []).forEach(function (err) {
            if (err.field === 'customer.phone_number') { setError(phone, $('phone-error'), fill(t.phoneRejected, { rail: rail.name })); phone.focus(); shown = true; }
            if (err.field === 'customer.name') { setError($('name'), $('name-error'), t.nameRequired); shown = true; }
          });
          formError(shown ? t.required : res.status >= 500 ? t.networkError : t.startFailed);
        });
      })
      .catch(function () { formError(t.networkError); })
      .then(function () { sending = false; payButton.removeAttribute('aria-disabled'); payButton.textContent = payLabel; });
  });

  $('stay').addEventListener('click', function () {
    clearTimeout(redirectTimer);
    $('stay').hidden = true;
    $('success-text').textContent = t.stayed;
    $('continue').focus();
  });

  $('retry').addEventListener('click', function () {
    retrying = true;
    render(view);
    phone.focus();
  });

  var expires = new Date(view.expires_at);
  $('expires').textContent = fill(t.expiresAt, { time: expires.toLocaleTimeString(document.documentElement.lang, { hour: '2-digit', minute: '2-digit' }) });
  updateFields();
  render(view);
})();`;

const hash = (s: string): string => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;

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
<p class="error" id="phone-error" aria-live="polite"></p></div>
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
