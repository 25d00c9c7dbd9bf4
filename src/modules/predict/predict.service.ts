// Predicting a phone number's operator and rails: the number read in any common form, placed in a market of the
// catalogue, and looked up in that market's numbering plan (numbering-plans.ts). Pure: no database, no I/O.
import { ApiError, type ErrorCode } from '../../platform/errors.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import type { Market } from '../catalogue/catalogue.schema.js';
import { NUMBERING_PLANS, type NumberingPlan, type OperatorPlan } from './numbering-plans.js';
import type { Prediction, PredictProviderBody } from './predict.schemas.js';

/** Separators people write inside numbers: whitespace (any, NBSP included), dashes, dots, slashes, parentheses. */
const SEPARATORS = /[\s().\-/\u2010-\u2015]/g;

const problem = (code: ErrorCode, detail: string, message: string): ApiError =>
  new ApiError(code, detail, { errors: [{ field: 'phone_number', message }] });

interface Placed {
  code: string;
  market: Market;
  national: string;
}

export class PredictService {
  constructor(
    private readonly catalogue: MarketCatalogue,
    private readonly plans: Readonly<Record<string, NumberingPlan>> = NUMBERING_PLANS,
  ) {}

  /** The operator and rails of a number; 400 with a stable code when it cannot be a mobile number of our markets. */
  predict(body: PredictProviderBody): Prediction {
    const given =
      body.market === undefined ? undefined : { code: body.market, market: this.catalogue.marketField(body.market) };
    return this.lookUp(this.place(body.phone_number, given));
  }

  /** The number in the market and its national digits: from its country code, or from `market` for a local form. */
  private place(raw: string, given: { code: string; market: Market } | undefined): Placed {
    const compact = raw.replace(SEPARATORS, '');
    if (!/^(\+|00)?[0-9]+$/.test(compact)) {
      throw problem(
        'validation_failed',
        'A phone number holds digits, with a leading + or 00 for the country code.',
        'may hold only digits, a leading + and separators (spaces, dashes, dots, parentheses)',
      );
    }
    if (compact.startsWith('+')) return this.international(compact.slice(1), given);
    if (compact.startsWith('00')) return this.international(compact.slice(2), given);
    if (given) {
      const { country_code: cc, national_digits: n } = given.market.phone;
      if (compact.length === cc.length + n && compact.startsWith(cc)) return this.international(compact, given);
      // A 0 first is the trunk prefix, unless the market's own numbers begin with 0 (Côte d'Ivoire's 01, 05, 07).
      const trunk = compact.startsWith('0') && !this.numbersStartWithZero(given.code);
      if (compact.length === n && !trunk) return { ...given, national: compact };
      if (compact.length === n + 1 && compact.startsWith('0')) return { ...given, national: compact.slice(1) };
      throw this.wrongLength(given.code, given.market, trunk ? compact.length - 1 : compact.length);
    }
    // Without a market, digits that begin with one of our country codes and are long enough for it are international.
    const byCode = this.marketByCountryCode(compact);
    if (byCode && compact.length >= byCode.market.phone.country_code.length + byCode.market.phone.national_digits) {
      return this.international(compact, undefined);
    }
    throw problem(
      'market_required',
      'This looks like a local number: send `market`, or write the number with its country code (+254…).',
      'is a local number; send market or the country code',
    );
  }

  private international(digits: string, given: { code: string; market: Market } | undefined): Placed {
    const found = this.marketByCountryCode(digits);
    if (!found) {
      throw problem(
        'phone_number_country',
        `+${digits.slice(0, 3)}… is not the country code of any of our markets (${this.catalogue.marketCodes().join(', ')}).`,
        'has a country code none of our markets uses',
      );
    }
    if (given && given.code !== found.code) {
      throw problem(
        'phone_number_country',
        `This is a number of ${found.market.name} (+${found.market.phone.country_code}), not of ${given.market.name}.`,
        `is not a number of ${given.market.name}`,
      );
    }
    let national = digits.slice(found.market.phone.country_code.length);
    const n = found.market.phone.national_digits;
    // "+254 0712 345 678": the trunk 0 kept after the country code.
    if (national.length === n + 1 && national.startsWith('0')) national = national.slice(1);
    if (national.length !== n) throw this.wrongLength(found.code, found.market, national.length);
    return { ...found, national };
  }

  private wrongLength(code: string, market: Market, length: number): ApiError {
    const { country_code: cc, national_digits: n } = market.phone;
    return problem(
      'phone_number_length',
      `A mobile number of ${market.name} (${code}) has ${n} digits after +${cc}; this one has ${length}.`,
      `must have ${n} digits after +${cc}`,
    );
  }

  private numbersStartWithZero(code: string): boolean {
    const plan = Object.hasOwn(this.plans, code) ? this.plans[code] : undefined;
    return plan?.operators.some((o) => o.prefixes.some((p) => p.startsWith('0'))) ?? false;
  }

  /** The catalogue market whose country code begins the digits (the longest, should codes nest). */
  private marketByCountryCode(digits: string): { code: string; market: Market } | undefined {
    let best: { code: string; market: Market } | undefined;
    for (const code of this.catalogue.marketCodes()) {
      const market = this.catalogue.market(code);
      if (!market || !digits.startsWith(market.phone.country_code)) continue;
      if (!best || market.phone.country_code.length > best.market.phone.country_code.length) best = { code, market };
    }
    return best;
  }

  private lookUp({ code, market, national }: Placed): Prediction {
    const e164 = `+${market.phone.country_code}${national}`;
    const plan = Object.hasOwn(this.plans, code) ? this.plans[code] : undefined;
    if (!plan || plan.country_code !== market.phone.country_code) {
      throw problem(
        'phone_number_unknown_prefix',
        `We hold no numbering plan for ${market.name} (${code}), so its operators cannot be predicted.`,
        `cannot be predicted in ${code}`,
      );
    }
    if (plan.not_mobile.some((p) => national.startsWith(p))) {
      throw problem(
        'phone_number_not_mobile',
        `${e164} is not a mobile number of ${market.name} (a fixed line).`,
        'is not a mobile number',
      );
    }
    const operator = longestMatch(plan.operators, national);
    if (!operator) {
      throw problem(
        'phone_number_unknown_prefix',
        `No mobile operator of ${market.name} holds the prefix of ${e164}.`,
        `has a prefix no operator of ${market.name} holds`,
      );
    }
    const offered = (rail: string): boolean => Object.hasOwn(market.rails, rail);
    const rails = [...new Set([...operator.rails, ...plan.any_operator_rails])].filter(offered);
    return { phone_number: e164, market: code, operator: operator.operator, rails, portability: plan.portability };
  }
}

function longestMatch(operators: readonly OperatorPlan[], national: string): OperatorPlan | undefined {
  let best: { operator: OperatorPlan; length: number } | undefined;
  for (const operator of operators) {
    for (const prefix of operator.prefixes) {
      if (national.startsWith(prefix) && (!best || prefix.length > best.length)) {
        best = { operator, length: prefix.length };
      }
    }
  }
  return best?.operator;
}
