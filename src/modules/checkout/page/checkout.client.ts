// The checkout page's behaviour, in the payer's browser. checkout.page.ts bundles it with esbuild at start, inlines
// it and pins it by hash in the Content-Security-Policy. It builds every text with textContent (never HTML), so
// payer-visible strings cannot inject markup; it talks only to the by-token endpoints of this origin.
import type { Prediction } from '../../predict/predict.schemas.js';
import type { PayerView } from '../checkout.schemas.js';
import type { Strings } from './checkout.strings.js';

/** What the server puts in <script id="checkout-data">: the strings with `{merchant}` already filled. */
interface PageData {
  token: string;
  view: PayerView;
  strings: { [K in keyof Strings]: string };
}

type Screen = 'pay' | 'wait' | 'success' | 'failed' | 'expired';
type CustomerField = 'phone_number' | 'name' | 'email';
type Rail = PayerView['rails'][number];
type Problem = { field?: string };

function $(id: string): HTMLElement {
  const element = document.getElementById(id);
  if (!element) throw new Error(`checkout page: no #${id}`);
  return element;
}
const input = (id: string): HTMLInputElement => $(id) as HTMLInputElement;

/** Fills `{name}` placeholders; a name `vars` lacks becomes empty. */
const fill = (template: string, vars: Record<string, string | number>): string =>
  template.replace(/\{(\w+)\}/g, (_, k: string) => (vars[k] === undefined ? '' : String(vars[k])));

const data = JSON.parse($('checkout-data').textContent ?? '') as PageData;
const t = data.strings;
const api = '/v1/checkout/by-token/' + encodeURIComponent(data.token);
let view = data.view;
const cc = view.phone.country_code;
const digits = view.phone.national_digits;
const form = $('pay-form') as HTMLFormElement;
const payButton = $('pay-button');
const phone = input('phone');
const nameInput = input('name');
const email = input('email');
const payLabel = fill(t.pay, { amount: view.amount_display });

let current: Screen | null = null;
let pollTimer: ReturnType<typeof setTimeout> | undefined;
let redirectTimer: ReturnType<typeof setTimeout> | undefined;
let retrying = false;
let sending = false;
let polls = 0;
let lastSeen = '';
/** Set once the payer picks a rail: a prediction then never overrides the choice. */
let railByHand = false;
/** The national number last asked about, so each whole number is asked about once. */
let predictedFor = '';
let predictTimer: ReturnType<typeof setTimeout> | undefined;
/** The payment being sent: one key per attempt, reused when the same details are sent again after a network error. */
let attempt: { key: string; body: string } | null = null;

/** A text of the page by name, for names built at run time (`reason_…`, `status_…`). */
const text = (name: string): string | undefined => (t as Record<string, string | undefined>)[name];

function railName(code: string): string {
  return view.rails.find((r) => r.rail === code)?.name ?? code;
}

function show(name: Screen): void {
  for (const s of ['pay', 'wait', 'success', 'failed', 'expired'] as const) $('screen-' + s).hidden = s !== name;
  if (current !== null && current !== name)
    $('screen-' + name)
      .querySelector('h2')
      ?.focus();
  current = name;
}

function selectedRail(): Rail | null {
  const checked = form.querySelector<HTMLInputElement>('input[name=rail]:checked');
  return (checked && view.rails.find((r) => r.rail === checked.value)) ?? null;
}
function needs(field: CustomerField): boolean {
  return selectedRail()?.customer_fields.includes(field) ?? false;
}
function updateFields(): void {
  for (const f of ['phone_number', 'name', 'email'] as const) $('field-' + f).hidden = !needs(f);
}

/** The national digits the payer typed: spaces and dashes dropped, a +cc, 00cc or leading 0 taken off. */
function nationalDigits(): string {
  const v = phone.value.replace(/[\s().-]/g, '');
  if (v.startsWith('+' + cc)) return v.slice(cc.length + 1);
  if (v.startsWith('00' + cc)) return v.slice(cc.length + 2);
  if (v.startsWith('0') && v.length === digits + 1) return v.slice(1);
  return v;
}
function phoneProblem(final: boolean): string {
  const v = nationalDigits();
  if (v === '') return final ? t.phoneRequired : '';
  if (!/^[0-9]+$/.test(v)) return t.phoneDigitsOnly;
  if (v.length > digits) return fill(t.phoneTooLong, { digits, cc });
  if (v.length < digits && final) return fill(t.phoneTooShort, { digits, cc, missing: digits - v.length });
  return '';
}
/** The number as typed, without separators: sent as it is, the server reads its local or international form. */
const typedNumber = (): string => phone.value.replace(/[\s().-]/g, '');

/**
 * Once the payer has typed a whole number (and paused: no request per keystroke), asks which operator holds it and
 * selects that operator's rail, the first the session offers, unless the payer chose a rail. Where numbers are ported
 * it is a guess, so the payer can still change it.
 */
function predictRail(): void {
  const typed = typedNumber();
  if (railByHand || view.rails.length < 2 || typed === predictedFor) return;
  if (nationalDigits().length !== digits || !/^\+?[0-9]+$/.test(typed)) return;
  predictedFor = typed;
  void fetch(api + '/predict-provider', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ phone_number: typed }),
  })
    .then((res) => (res.ok ? (res.json() as Promise<Prediction>) : null))
    .then((prediction) => {
      if (prediction && !railByHand && typedNumber() === typed) preselect(prediction.rails);
    })
    // A prediction is a convenience: without one the payer picks the rail as before.
    .catch(() => undefined);
}
function predictSoon(): void {
  clearTimeout(predictTimer);
  predictTimer = setTimeout(predictRail, 300);
}
function preselect(rails: string[]): void {
  const code = rails.find((r) => view.rails.some((offered) => offered.rail === r));
  const radio = Array.from(form.querySelectorAll<HTMLInputElement>('input[name=rail]')).find((r) => r.value === code);
  if (!code || !radio || radio.checked) return;
  radio.checked = true;
  updateFields();
  $('rail-hint').textContent = fill(t.railPredicted, { rail: railName(code) });
}
function setError(field: HTMLInputElement, box: HTMLElement, message: string): void {
  box.textContent = message;
  if (message) field.setAttribute('aria-invalid', 'true');
  else field.removeAttribute('aria-invalid');
}
function checkPhone(final: boolean): string {
  const m = needs('phone_number') ? phoneProblem(final) : '';
  setError(phone, $('phone-error'), m);
  return m;
}
function checkName(): string {
  const m = needs('name') && nameInput.value.trim() === '' ? t.nameRequired : '';
  setError(nameInput, $('name-error'), m);
  return m;
}
function checkEmail(): string {
  const m = needs('email') && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email.value.trim()) ? t.emailInvalid : '';
  setError(email, $('email-error'), m);
  return m;
}
/** Cleared first, then set a moment later, so the same message twice is announced twice. */
function formError(message: string): void {
  $('form-error').textContent = '';
  if (message) setTimeout(() => ($('form-error').textContent = message), 50);
}

/** Polls every ms while things change; a payment that stays in one state for minutes is asked about less often. */
function schedulePoll(ms: number): void {
  clearTimeout(pollTimer);
  const seen = view.status + '/' + (view.attempt ? view.attempt.status : '');
  polls = seen === lastSeen ? polls + 1 : 0;
  lastSeen = seen;
  pollTimer = setTimeout(refresh, polls > 150 ? Math.max(ms, 15000) : polls > 30 ? Math.max(ms, 5000) : ms);
}
function refresh(): Promise<void> {
  return fetch(api, { cache: 'no-store', headers: { accept: 'application/json' } })
    .then((res) => (res.ok ? (res.json() as Promise<PayerView>) : null))
    .then((next) => (next ? render(next) : schedulePoll(4000)))
    .catch(() => schedulePoll(4000));
}

function render(next: PayerView): void {
  view = next;
  clearTimeout(pollTimer);
  const a = view.attempt;
  if (view.status === 'open') {
    if (a?.failure_reason && !retrying) {
      const reason = text('reason_' + a.failure_reason) ?? t.reason_provider_error;
      $('failure-reason').textContent = fill(reason, { rail: railName(a.rail) });
      $('retry-hint').textContent =
        a.failure_reason === 'expired'
          ? t.retryHintExpired
          : a.failure_reason === 'late_payment_refunded'
            ? t.retryHintRefunded
            : t.retryHint;
      show('failed');
    } else {
      show('pay');
    }
    schedulePoll(5000);
  } else if (view.status === 'processing') {
    retrying = false;
    const instruction = a?.payment_instruction ?? null;
    $('instruction').textContent = instruction
      ? instruction.message
      : fill(t.noInstruction, { rail: a ? railName(a.rail) : '' });
    $('ussd').hidden = instruction?.type !== 'ussd_code';
    $('ussd').textContent = instruction?.type === 'ussd_code' ? instruction.ussd_code : '';
    // The operator's page (Wave's launch URL opens the Wave app on a phone) opens beside this one, which keeps polling.
    const redirect = $('redirect') as HTMLAnchorElement;
    redirect.hidden = instruction?.type !== 'redirect';
    if (instruction?.type === 'redirect' && redirect.href !== instruction.url) {
      redirect.href = instruction.url;
      redirect.textContent = fill(t.openRedirect, { rail: a ? railName(a.rail) : '' });
    }
    $('bank').hidden = instruction?.type !== 'bank_transfer';
    if (instruction?.type === 'bank_transfer') {
      $('bank-name').textContent = instruction.bank_name;
      $('bank-account').textContent = instruction.account_number;
      $('bank-holder').textContent = instruction.account_name;
    }
    // Written only when it changes, so a screen reader announces each step once.
    const statusText = text('status_' + (a ? a.status : 'created')) ?? t.status_processing;
    if ($('status-text').textContent !== statusText) $('status-text').textContent = statusText;
    show('wait');
    schedulePoll(2000);
  } else if (view.status === 'complete') {
    const returnUrl = view.return_url ?? '#';
    ($('continue') as HTMLAnchorElement).href = returnUrl;
    const first = current !== 'success';
    show('success');
    // Back to the shop after 5 s, unless the payer asks to stay (WCAG 2.2.1: a timed move can be turned off).
    if (first && !$('stay').hidden) redirectTimer = setTimeout(() => window.location.assign(returnUrl), 5000);
  } else {
    ($('expired-return') as HTMLAnchorElement).href = view.return_url ?? '#';
    const refunded = a?.failure_reason === 'late_payment_refunded';
    $('expired-text').textContent = fill(refunded ? t.expiredRefundedText : t.expiredText, {
      merchant: view.merchant_name,
    });
    show('expired');
  }
}

function newKey(): string {
  const bytes = window.crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Sends the payment; the button is not disabled (that would lose the keyboard focus) but says it is busy. */
function pay(rail: Rail): void {
  const customer: Partial<Record<CustomerField, string>> = {};
  if (needs('phone_number')) customer.phone_number = '+' + cc + nationalDigits();
  if (needs('name')) customer.name = nameInput.value.trim();
  if (needs('email')) customer.email = email.value.trim();
  const body = JSON.stringify({ rail: rail.rail, customer });
  if (!attempt || attempt.body !== body) attempt = { key: newKey(), body };
  sending = true;
  payButton.setAttribute('aria-disabled', 'true');
  payButton.textContent = t.sending;
  void fetch(api + '/pay', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': attempt.key },
    body,
  })
    .then((res) =>
      res
        .json()
        .catch(() => null)
        .then((json: unknown) => answered(res, json, rail)),
    )
    .catch(() => formError(t.networkError))
    .then(() => {
      sending = false;
      payButton.removeAttribute('aria-disabled');
      payButton.textContent = payLabel;
    });
}

function answered(res: Response, json: unknown, rail: Rail): Promise<void> | void {
  if (res.ok && json) {
    attempt = null;
    retrying = false;
    return render(json as PayerView);
  }
  if (res.status === 409) {
    attempt = null;
    retrying = false;
    return refresh();
  }
  if (res.status === 429) return formError(t.rateLimited);
  // The server's words are English; the payer reads this page's own, in the page's language.
  let shown = false;
  for (const err of (json as { errors?: Problem[] } | null)?.errors ?? []) {
    if (err.field === 'customer.phone_number') {
      setError(phone, $('phone-error'), fill(t.phoneRejected, { rail: rail.name }));
      phone.focus();
      shown = true;
    }
    if (err.field === 'customer.name') {
      setError(nameInput, $('name-error'), t.nameRequired);
      shown = true;
    }
  }
  formError(shown ? t.required : res.status >= 500 ? t.networkError : t.startFailed);
}

form.addEventListener('change', (e) => {
  if ((e.target as HTMLInputElement | null)?.name === 'rail') {
    railByHand = true;
    $('rail-hint').textContent = '';
    updateFields();
    formError('');
  }
});
// As the payer types: wrong characters and too many digits at once; a number still too short only on Pay (a message
// appearing on blur would move the Pay button under the pointer between press and release).
phone.addEventListener('input', () => {
  checkPhone(false);
  predictSoon();
});
nameInput.addEventListener('input', () => $('name-error').textContent && checkName());
email.addEventListener('input', () => $('email-error').textContent && checkEmail());

form.addEventListener('submit', (e) => {
  e.preventDefault();
  if (sending) return;
  formError('');
  const rail = selectedRail();
  const problems = [checkPhone(true), checkName(), checkEmail()];
  const firstBad = [phone, nameInput, email].find((_, i) => problems[i] !== '');
  if (!rail || firstBad) {
    formError(t.required);
    firstBad?.focus();
    return;
  }
  pay(rail);
});

$('stay').addEventListener('click', () => {
  clearTimeout(redirectTimer);
  $('stay').hidden = true;
  $('success-text').textContent = t.stayed;
  $('continue').focus();
});

$('retry').addEventListener('click', () => {
  retrying = true;
  render(view);
  phone.focus();
});

const expires = new Date(view.expires_at);
const time = expires.toLocaleTimeString(document.documentElement.lang, { hour: '2-digit', minute: '2-digit' });
$('expires').textContent = fill(t.expiresAt, { time });
updateFields();
render(view);
// A number the merchant prefilled is asked about at once.
predictRail();
