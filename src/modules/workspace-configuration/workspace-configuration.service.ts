// A workspace's active configuration: the admin narrows the catalogue for a workspace (never widens it), and the
// workspace reads what it may use. Enforcement on the create paths is WorkspaceRails (workspace-rails.ts).
import type { Db } from '../../db/pool.js';
import type { EnabledRail } from '../../platform/enabled-rails.js';
import { ApiError, notFound, type ErrorCode, type FieldError } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import { isUuid } from '../../platform/ids.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import { getWorkspace } from '../workspaces/workspaces.service.js';
import * as repo from './workspace-configuration.repository.js';
import type {
  ConfiguredMarket,
  EnabledRailInput,
  SetConfigurationBody,
  WorkspaceConfiguration,
} from './workspace-configuration.schemas.js';
import { WorkspaceRails } from './workspace-rails.js';

type Problem = { code: ErrorCode } & FieldError;

export class WorkspaceConfigurationService {
  constructor(
    private readonly db: Db,
    private readonly catalogue: MarketCatalogue,
    private readonly idempotency: IdempotencyEngine,
  ) {}

  /**
   * The admin's setting, checked against the catalogue: every rail must be one the catalogue offers (else 400
   * `invalid_market` / `invalid_rail`), once (400 `validation_failed`), with limits inside the catalogue's currency
   * limits (else 400 `catalogue_widened`) and a minimum not above the maximum (400 `validation_failed`). All the
   * problems of the first kind found are answered together, each naming its field.
   */
  private check(entries: readonly EnabledRailInput[]): EnabledRail[] {
    const problems: Problem[] = [];
    const seen = new Set<string>();
    entries.forEach((entry, i) => {
      const at = `rails[${i}]`;
      const market = this.catalogue.market(entry.market);
      if (!market) {
        problems.push({ code: 'invalid_market', field: `${at}.market`, message: 'is not a market of the catalogue' });
        return;
      }
      if (!this.catalogue.rail(market, entry.rail)) {
        problems.push({ code: 'invalid_rail', field: `${at}.rail`, message: `is not offered in ${entry.market}` });
        return;
      }
      const name = `${entry.market}/${entry.rail}`;
      if (seen.has(name)) problems.push({ code: 'validation_failed', field: at, message: `repeats ${name}` });
      seen.add(name);
      const currency = this.catalogue.currency(market.currency);
      if (!currency) throw new Error(`catalogue has no rules for ${market.currency}`); // validated at boot
      const { min_amount: min, max_amount: max } = entry;
      if (min !== undefined && min < currency.min_amount)
        problems.push({
          code: 'catalogue_widened',
          field: `${at}.min_amount`,
          message: `is below the catalogue's minimum of ${currency.min_amount} ${market.currency}`,
        });
      if (max !== undefined && max > currency.max_amount)
        problems.push({
          code: 'catalogue_widened',
          field: `${at}.max_amount`,
          message: `is above the catalogue's maximum of ${currency.max_amount} ${market.currency}`,
        });
      if ((min ?? currency.min_amount) > (max ?? currency.max_amount))
        problems.push({ code: 'validation_failed', field: `${at}.min_amount`, message: 'is above max_amount' });
    });
    const order: ErrorCode[] = ['invalid_market', 'invalid_rail', 'validation_failed', 'catalogue_widened'];
    for (const code of order) {
      const found = problems.filter((p) => p.code === code);
      if (found.length === 0) continue;
      throw new ApiError(code, DETAILS[code] ?? 'The configuration is not valid.', {
        errors: found.map(({ field, message }) => ({ field, message })),
      });
    }
    return entries.map((e) => ({
      market: e.market,
      rail: e.rail,
      min_amount: e.min_amount ?? null,
      max_amount: e.max_amount ?? null,
    }));
  }

  /**
   * PUT /v1/admin/workspaces/{id}/configuration: replaces the workspace's configuration, or with `rails: null` removes
   * it (the whole catalogue again); once per Idempotency-Key.
   */
  async set(
    adminWorkspaceId: string,
    workspaceId: string,
    body: SetConfigurationBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    if (!isUuid(workspaceId)) throw notFound('workspace');
    const rails = body.rails === null ? null : this.check(body.rails);
    return this.idempotency.maybe(adminWorkspaceId, key, requestFingerprint, async (tx) => {
      let saved: repo.ConfigurationRow | undefined;
      if (rails === null) {
        await getWorkspace(tx, workspaceId);
        await repo.deleteConfiguration(tx, workspaceId);
      } else {
        saved = await repo.saveConfiguration(tx, workspaceId, rails, new Date());
        if (!saved) throw notFound('workspace');
      }
      return { status: 200, headers: {}, body: JSON.stringify(this.viewOf(workspaceId, saved)) };
    });
  }

  /** What the workspace may use; with `mustExist` (the admin's read), 404 when there is no such workspace. */
  async get(workspaceId: string, mustExist: boolean): Promise<WorkspaceConfiguration> {
    if (!isUuid(workspaceId)) throw notFound('workspace');
    if (mustExist) await getWorkspace(this.db, workspaceId);
    return this.viewOf(workspaceId, await repo.findConfiguration(this.db, workspaceId));
  }

  /** The catalogue narrowed by `saved`: markets by code, each with the rails the workspace may use and their limits. */
  viewOf(workspaceId: string, saved: repo.ConfigurationRow | undefined): WorkspaceConfiguration {
    const rails = WorkspaceRails.of(saved?.rails);
    const markets: ConfiguredMarket[] = [];
    for (const code of this.catalogue.marketCodes()) {
      const market = this.catalogue.market(code);
      const currency = market && this.catalogue.currency(market.currency);
      if (!market || !currency) continue;
      const enabled = rails.railsOf(code, market);
      if (enabled.length === 0) continue;
      markets.push({
        market: code,
        name: market.name,
        currency: market.currency,
        currency_exponent: currency.exponent,
        rails: enabled.map((railCode) => {
          const rail = market.rails[railCode];
          if (!rail) throw new Error(`rail ${code}/${railCode} vanished`);
          return {
            rail: railCode,
            name: rail.name,
            type: rail.type,
            ...rails.limits(code, railCode, currency),
            refunds: rail.refunds !== false,
            payouts: rail.payouts !== false,
            authorisation: rail.instruction?.type ?? 'none',
          };
        }),
      });
    }
    return {
      workspace_id: workspaceId,
      narrowed: rails.narrowed,
      updated_at: saved ? saved.updated_at.toISOString() : null,
      markets,
    };
  }
}

const DETAILS: Partial<Record<ErrorCode, string>> = {
  invalid_market: 'The configuration names a market the catalogue does not have: it can only narrow the catalogue.',
  invalid_rail: 'The configuration names a rail its market does not offer: it can only narrow the catalogue.',
  validation_failed: 'The configuration repeats a rail or has a minimum above its maximum.',
  catalogue_widened: "The configuration's limits go beyond the catalogue's: it can only narrow them.",
};
