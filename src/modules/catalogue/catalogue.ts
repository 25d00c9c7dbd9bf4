// The market and rail catalogue: loaded once at boot (built-in default or CATALOGUE_FILE), then read-only.
import { readFileSync } from 'node:fs';
import { ApiError } from '../../platform/errors.js';
import { compileBody, fieldErrors } from '../../platform/validation.js';
import { CatalogueSchema, type Catalogue, type Market, type Rail } from './catalogue.schema.js';
import { DEFAULT_CATALOGUE } from './default-catalogue.js';

export interface CurrencyRules {
  exponent: number;
  min_amount: number;
  max_amount: number;
}

export class CatalogueError extends Error {}

export function validateCatalogue(data: unknown): Catalogue {
  const validate = compileBody(CatalogueSchema);
  if (!validate(data)) {
    const problems = fieldErrors(validate.errors).map((e) => `${e.field} ${e.message}`);
    throw new CatalogueError(`the catalogue is invalid: ${problems.join('; ')}`);
  }
  const catalogue = data as Catalogue;
  for (const [code, rules] of Object.entries(catalogue.currencies)) {
    if (rules.min_amount > rules.max_amount)
      throw new CatalogueError(`currency ${code}: min_amount is above max_amount`);
  }
  for (const [code, market] of Object.entries(catalogue.markets)) {
    if (!catalogue.currencies[market.currency]) {
      throw new CatalogueError(`market ${code} uses currency ${market.currency}, which the catalogue does not define`);
    }
    if (Object.keys(market.rails).length === 0) throw new CatalogueError(`market ${code} offers no rails`);
  }
  return catalogue;
}

export function loadCatalogue(file: string | undefined): Catalogue {
  if (file === undefined) return validateCatalogue(structuredClone(DEFAULT_CATALOGUE));
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CatalogueError(`CATALOGUE_FILE ${file} could not be read as JSON: ${(err as Error).message}`);
  }
  return validateCatalogue(parsed);
}

/** Whether `phone` is an E.164 number in the market's country; the message says what is expected when it is not. */
export function phoneProblem(market: Market, phone: string): string | undefined {
  const { country_code, national_digits } = market.phone;
  if (new RegExp(`^\\+${country_code}[0-9]{${national_digits}}$`).test(phone)) return undefined;
  return `must be an E.164 number in ${market.name}: +${country_code} followed by ${national_digits} digits`;
}

export class MarketCatalogue {
  constructor(readonly data: Catalogue) {}

  market(code: string): Market | undefined {
    return Object.hasOwn(this.data.markets, code) ? this.data.markets[code] : undefined;
  }

  rail(market: Market, code: string): Rail | undefined {
    return Object.hasOwn(market.rails, code) ? market.rails[code] : undefined;
  }

  /** The market a request body names in `market`; 400 `invalid_market` naming that field when it is not one. */
  marketField(code: string): Market {
    const market = this.market(code);
    if (!market) {
      throw new ApiError(
        'invalid_market',
        `Market '${code}' is not supported; use one of ${this.marketCodes().join(', ')}.`,
        {
          errors: [{ field: 'market', message: 'is not a supported market' }],
        },
      );
    }
    return market;
  }

  /** The rail a request body names in `rail`, in the market `marketCode`; 400 `invalid_rail` naming that field when it is not offered there. */
  railField(market: Market, marketCode: string, code: string): Rail {
    const rail = this.rail(market, code);
    if (!rail) {
      throw new ApiError(
        'invalid_rail',
        `Rail '${code}' is not offered in ${marketCode}; use one of ${Object.keys(market.rails).join(', ')}.`,
        {
          errors: [{ field: 'rail', message: `is not offered in ${marketCode}` }],
        },
      );
    }
    return rail;
  }

  /**
   * Refuses a refund or payout on a rail the catalogue turns it off for (its operator's API has no such call): 422
   * `operation_not_supported` naming the rail. Rails offer both unless they say otherwise.
   */
  requireCapability(marketCode: string, railCode: string, capability: 'refunds' | 'payouts'): void {
    const market = this.market(marketCode);
    const rail = market === undefined ? undefined : this.rail(market, railCode);
    if (rail?.[capability] !== false) return;
    throw new ApiError(
      'operation_not_supported',
      `${rail.name} (${marketCode}/${railCode}) offers no ${capability}: its operator's API has no ${capability === 'refunds' ? 'refund' : 'payout'} call.`,
      capability === 'payouts' ? { errors: [{ field: 'rail', message: `offers no payouts in ${marketCode}` }] } : {},
    );
  }

  currency(code: string): CurrencyRules | undefined {
    return Object.hasOwn(this.data.currencies, code) ? this.data.currencies[code] : undefined;
  }

  marketCodes(): string[] {
    return Object.keys(this.data.markets).sort();
  }
}
