// What the dashboard's forms and pages share: the `:id` of a page's path, an amount typed in major units, a choice
// from a fixed list, a currency's minor digits, and the API's refusal of a form shown on it (its words, its stable
// code, the fields it names).
import { PaymentsError } from '../../../packages/sdk/src/index.js';
import { ASSETS, isAsset } from '../conversion/assets.js';
import type { PageContext } from './page-context.js';
import { html, type Html } from './html.js';

/** The `:id` of the page's path ('' on a page without one). */
export const pathId = (ctx: Pick<PageContext, 'request'>): string => (ctx.request.params as { id?: string }).id ?? '';

/** A currency's minor digits from the catalogue, or a crypto asset's (USDT, USDC: 6); undefined when unknown. */
export function exponentOf(ctx: Pick<PageContext, 'catalogue'>, currency: string): number | undefined {
  return ctx.catalogue.currency(currency)?.exponent ?? (isAsset(currency) ? ASSETS[currency].exponent : undefined);
}

/**
 * An amount typed in major units ("1500", "1,500.50") as minor units of a currency with `exponent` minor digits;
 * undefined when it is not a plain number or has more decimals than the currency.
 */
export function minorUnits(typed: string | undefined, exponent: number): number | undefined {
  const match = /^(\d+)(?:\.(\d*))?$/.exec((typed ?? '').replace(/[\s,]/g, ''));
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  if (fraction.length > exponent) return undefined;
  const minor = Number(match[1]) * 10 ** exponent + Number(fraction.padEnd(exponent, '0') || '0');
  return Number.isSafeInteger(minor) ? minor : undefined;
}

/** A form's value when it is one of `options`' keys (the values a select offers), else undefined. */
export function choice<K extends string>(options: Record<K, string>, value: string | undefined): K | undefined {
  return value !== undefined && Object.hasOwn(options, value) ? (value as K) : undefined;
}

/**
 * The API's refusal of a form (bad input, a state that does not allow it), to show on the form filled in as it was
 * sent; anything else (signed out, a failure) is thrown on to the dashboard's error handling.
 */
export function refusal(error: unknown): PaymentsError {
  if (error instanceof PaymentsError && error.status >= 400 && error.status < 500 && error.status !== 401) return error;
  throw error;
}

/** A refusal as an alert: the API's words, its stable code, and the fields it names. */
export function refusalAlert(error: PaymentsError): Html {
  const errors = error.problem.errors ?? [];
  return html`<div class="error" role="alert">
    <p>Not done: ${error.problem.detail} <span class="muted">(${error.code})</span></p>
    ${
      errors.length > 0
        ? html`<ul>
            ${errors.map((e) => html`<li>${e.field}: ${e.message}</li>`)}
          </ul>`
        : ''
    }
  </div>`;
}
