// A workspace's rails: the catalogue narrowed by its active configuration, as every create path applies it. Built from
// what the token check read (AuthContext.enabledRails) or the checkout session's own read: never a statement of its own.
import type { EnabledRail } from '../../platform/enabled-rails.js';
import { ApiError } from '../../platform/errors.js';
import type { CurrencyRules, MarketCatalogue } from '../catalogue/catalogue.js';
import type { Market } from '../catalogue/catalogue.schema.js';

export interface AmountLimits {
  min_amount: number;
  max_amount: number;
}

export class WorkspaceRails {
  /** The whole catalogue: a workspace no admin narrowed. */
  static readonly ALL = new WorkspaceRails(null);

  static of(enabled: readonly EnabledRail[] | null | undefined): WorkspaceRails {
    return enabled === null || enabled === undefined ? WorkspaceRails.ALL : new WorkspaceRails(enabled);
  }

  /** `MARKET/rail` → the rail's entry; null when not narrowed. */
  private readonly byRail: ReadonlyMap<string, EnabledRail> | null;
  private readonly markets: ReadonlySet<string> | null;

  private constructor(enabled: readonly EnabledRail[] | null) {
    this.byRail = enabled === null ? null : new Map(enabled.map((e) => [`${e.market}/${e.rail}`, e]));
    this.markets = enabled === null ? null : new Set(enabled.map((e) => e.market));
  }

  /** Whether an admin narrowed the workspace (false: it may use the whole catalogue). */
  get narrowed(): boolean {
    return this.byRail !== null;
  }

  /** Whether the workspace may use `marketCode` at all: some rail of it is enabled. */
  hasMarket(marketCode: string): boolean {
    return this.markets === null || this.markets.has(marketCode);
  }

  has(marketCode: string, railCode: string): boolean {
    return this.byRail === null || this.byRail.has(`${marketCode}/${railCode}`);
  }

  /** The rail codes of a catalogue market the workspace may use, in the catalogue's order. */
  railsOf(marketCode: string, market: Market): string[] {
    return Object.keys(market.rails).filter((rail) => this.has(marketCode, rail));
  }

  /** The catalogue market as the workspace sees it: only its enabled rails (the hosted page offers these). */
  narrowMarket(marketCode: string, market: Market): Market {
    if (this.byRail === null) return market;
    const rails = Object.fromEntries(Object.entries(market.rails).filter(([rail]) => this.has(marketCode, rail)));
    return { ...market, rails };
  }

  /**
   * The limits of a rail for this workspace: the catalogue's currency limits, narrowed by the admin's. Both are applied,
   * so a catalogue changed after the admin's setting still bounds it: the configuration never widens the catalogue.
   */
  limits(marketCode: string, railCode: string, currency: CurrencyRules): AmountLimits {
    const entry = this.byRail?.get(`${marketCode}/${railCode}`);
    return {
      min_amount: Math.max(currency.min_amount, entry?.min_amount ?? currency.min_amount),
      max_amount: Math.min(currency.max_amount, entry?.max_amount ?? currency.max_amount),
    };
  }

  /** The admin's own limits for the rail (null where it set none, or the workspace is not narrowed). */
  ownLimits(marketCode: string, railCode: string): { min_amount: number | null; max_amount: number | null } {
    const entry = this.byRail?.get(`${marketCode}/${railCode}`);
    return { min_amount: entry?.min_amount ?? null, max_amount: entry?.max_amount ?? null };
  }

  /** 400 `invalid_market` when no rail of the market is enabled for the workspace. */
  requireMarket(marketCode: string, field = 'market'): void {
    if (this.hasMarket(marketCode)) return;
    throw new ApiError('invalid_market', `Market '${marketCode}' is not enabled for this workspace.`, {
      errors: [{ field, message: 'is not enabled for this workspace' }],
    });
  }

  /**
   * 400 `invalid_rail` when the workspace may not use the rail (its market offers it, but the admin did not enable
   * it); the detail names the rails it may use there. A market with no enabled rail is 400 `invalid_market`.
   */
  requireRail(marketCode: string, railCode: string, market: Market, field = 'rail'): void {
    if (this.has(marketCode, railCode)) return;
    this.requireMarket(marketCode, field === 'rail' ? 'market' : field);
    throw new ApiError(
      'invalid_rail',
      `Rail '${railCode}' is not enabled for this workspace in ${marketCode}; use one of ${this.railsOf(marketCode, market).join(', ')}.`,
      { errors: [{ field, message: `is not enabled for this workspace in ${marketCode}` }] },
    );
  }

  /** 422 `amount_out_of_range` when `amount` is outside the workspace's limits for the rail. */
  checkAmount(
    marketCode: string,
    railCode: string,
    currencyCode: string,
    currency: CurrencyRules,
    amount: number,
  ): void {
    const { min_amount, max_amount } = this.limits(marketCode, railCode, currency);
    if (amount >= min_amount && amount <= max_amount) return;
    throw new ApiError(
      'amount_out_of_range',
      `Amount must be between ${min_amount} and ${max_amount} minor units of ${currencyCode} on ${marketCode}/${railCode} for this workspace.`,
      { errors: [{ field: 'amount', message: `must be between ${min_amount} and ${max_amount}` }] },
    );
  }

  /** Markets using `currencyCode` the workspace may use: the hosted checkout infers a session's market from these. */
  marketsUsing(catalogue: MarketCatalogue, currencyCode: string): string[] {
    return catalogue
      .marketCodes()
      .filter((code) => catalogue.market(code)?.currency === currencyCode && this.hasMarket(code));
  }
}
