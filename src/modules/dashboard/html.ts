// HTML for the dashboard's pages: a tagged template that escapes every value it is given unless the value is
// already HTML, and the formatting every page shares (amounts in their currency, times with their zone).

/** Markup that is already safe: made only by `html` (or `raw` for constant strings). */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);

function render(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  return esc(String(value));
}

/** `html\`<p>${name}</p>\``: `name` is escaped; an Html value, or an array of them, is inserted as it is. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** A constant string of markup (never user data). */
export const raw = (markup: string): Html => new Html(markup);

/**
 * An amount in minor units, in its currency (`KES 1,500.00`, `UGX 25,000`). `exponent` is the currency's number of
 * minor digits from the catalogue; an unknown currency shows its code and the minor units as they are.
 */
export function formatMoney(amount: number, currency: string, exponent: number | undefined): string {
  if (exponent === undefined) return `${currency} ${amount} (minor units)`;
  const major = amount / 10 ** exponent;
  const number = new Intl.NumberFormat('en', {
    minimumFractionDigits: exponent,
    maximumFractionDigits: exponent,
  }).format(major);
  return `${currency} ${number}`;
}

/** A time as `24 Nov 2026, 14:05:09 UTC` in the zone given (UTC by default, or the browser's as a cookie tells). */
export function formatTime(iso: string | null | undefined, timeZone = 'UTC'): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).format(date);
}

/** The `<time>` element of a time: machine-readable, and shown with its zone. */
export const time = (iso: string | null | undefined, timeZone?: string): Html =>
  iso ? html`<time datetime="${iso}">${formatTime(iso, timeZone)}</time>` : html`—`;
