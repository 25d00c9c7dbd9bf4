// Offramp routes and payouts. A commit (POST /api/transactions/commit) checks the route, the beneficiary and the
// limits, converts at the current rate when the route pays from an asset, and reserves the source amount from the
// workspace's available balance under a lock on that balance row, so concurrent commits can never overdraw it. The
// payout, its reservation postings, its event and any risk signal are written in the idempotent transaction; the
// provider gets it after the commit (the submitter), and its outcome settles or releases the reservation (the
// lifecycle).
import { WorkspaceRails } from '../workspace-configuration/workspace-rails.js';
import { withTransaction, type Db } from '../../db/pool.js';
import type { AuthContext } from '../../platform/auth.js';
import { ApiError, notFound, problemBody, type FieldError } from '../../platform/errors.js';
import { fingerprint, type IdempotencyEngine, type IdempotentResult } from '../../platform/idempotency.js';
import { isUuid, uuidv7, uuidv7Time } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import { recordEvent } from '../events/events.repository.js';
import { lockAvailable, postMany } from '../ledger/ledger.repository.js';
import type { MarketDataService } from '../market-data/market-data.service.js';
import { ASSETS, isAsset } from '../conversion/assets.js';
import { convertible, quote } from '../conversion/conversion.js';
import { payoutReservePostings } from '../conversion/postings.js';
import { LARGE_PAYOUT_RULE, type RiskService } from '../risk/risk.service.js';
import type { AfterCommit } from '../../platform/after-commit.js';
import type { ProviderLookup } from '../providers/provider.js';
import * as repo from './payouts.repository.js';
import type {
  BulkPayoutRequest,
  BulkPayoutResult,
  CommitBody,
  CreateRouteBody,
  ListPayoutsQuery,
  ListRoutesQuery,
  Payout,
  Route,
  UpdateRouteBody,
} from './payouts.schemas.js';
import { toPayoutApi, toRouteApi } from './payouts.schemas.js';

/** The single commit's path: a bulk item is fingerprinted as if it had been sent there, so they share the key space. */
export const COMMIT_PATH = '/api/transactions/commit';

const commitFingerprint = (body: CommitBody): string => fingerprint('POST', COMMIT_PATH, body);

function checkLimits(min: number, max: number): void {
  if (min > max)
    throw new ApiError('validation_failed', 'min_amount is above max_amount.', {
      errors: [{ field: 'max_amount', message: 'must be at least min_amount' }],
    });
}

export class PayoutsService {
  constructor(
    private readonly db: Db,
    private readonly catalogue: MarketCatalogue,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
    private readonly marketData: MarketDataService,
    private readonly risk: RiskService,
    /** The provider registry: the provider that runs each rail. */
    private readonly providers: ProviderLookup,
    /** Told of each new payout once it is committed (the submitter hands it to the provider). */
    private readonly afterCommit: AfterCommit,
  ) {}

  createRoute(
    auth: AuthContext,
    body: CreateRouteBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    const market = this.catalogue.marketField(body.market);
    this.catalogue.railField(market, body.market, body.rail);
    this.catalogue.requireCapability(body.market, body.rail, 'payouts');
    if (body.source !== market.currency && !isAsset(body.source)) {
      throw new ApiError(
        'invalid_currency',
        `A route into ${body.market} pays from ${market.currency} or an asset (${Object.keys(ASSETS).join(', ')}), not ${body.source}.`,
        {
          errors: [{ field: 'source', message: `must be ${market.currency} or an asset` }],
        },
      );
    }
    checkLimits(body.min_amount, body.max_amount);
    return this.idempotency.maybe(auth.workspaceId, key, requestFingerprint, async (tx) => {
      const id = uuidv7();
      const now = uuidv7Time(id);
      const row: repo.RouteRow = {
        id,
        source: body.source,
        market: body.market,
        rail: body.rail,
        currency: market.currency,
        min_amount: body.min_amount,
        max_amount: body.max_amount,
        fee_fixed: body.fee_fixed ?? 0,
        fee_bps: body.fee_bps ?? 0,
        status: 'active',
        created_by: auth.credentialId,
        created_at: now,
        updated_at: now,
      };
      await repo.insertRoute(tx, row);
      return { status: 201, headers: { location: `/v1/api/routes/${id}` }, body: JSON.stringify(toRouteApi(row)) };
    });
  }

  /** The admin changes any route; a liquidity provider only the routes its own workspace added. */
  async updateRoute(auth: AuthContext, id: string, body: UpdateRouteBody): Promise<Route> {
    return withTransaction(this.db, async (tx) => {
      const current = isUuid(id) ? await repo.lockRoute(tx, id) : undefined;
      if (!current) throw notFound('route');
      if (auth.audience !== 'admin' && (await repo.routeOwner(tx, current.id)) !== auth.workspaceId) {
        throw new ApiError(
          'forbidden',
          'Only the liquidity provider that added this route, or the admin, may change it.',
        );
      }
      const next: repo.RouteRow = {
        ...current,
        status: body.status ?? current.status,
        min_amount: body.min_amount ?? current.min_amount,
        max_amount: body.max_amount ?? current.max_amount,
        fee_fixed: body.fee_fixed ?? current.fee_fixed,
        fee_bps: body.fee_bps ?? current.fee_bps,
        updated_at: new Date(Math.max(Date.now(), current.updated_at.getTime() + 1)),
      };
      checkLimits(next.min_amount, next.max_amount);
      await repo.saveRoute(tx, next);
      return toRouteApi(next);
    });
  }

  async getRoute(id: string): Promise<Route> {
    const row = isUuid(id) ? await repo.findRoute(this.db, id) : undefined;
    if (!row) throw notFound('route');
    return toRouteApi(row);
  }

  async listRoutes(query: ListRoutesQuery): Promise<Page<Route>> {
    const { limit, filter } = this.cursors.filterOf(query);
    return this.cursors.page(await repo.listActiveRoutes(this.db, filter), limit, toRouteApi);
  }

  /** A commit (POST /api/transactions/commit): a payout of `body.amount` along an active route to a beneficiary. */
  async commit(
    workspaceId: string,
    body: CommitBody,
    key: string,
    requestFingerprint: string,
    rails: WorkspaceRails = WorkspaceRails.ALL,
  ): Promise<IdempotentResult> {
    let created: string | undefined;
    const result = await this.idempotency.run(workspaceId, key, requestFingerprint, async (tx) => {
      const route = await repo.findRoute(tx, body.route_id, true);
      if (route?.status !== 'active') {
        throw new ApiError(
          'route_unavailable',
          `Route ${body.route_id} is ${route ? 'inactive' : 'unknown'}; commit on an active route (GET /v1/api/routes).`,
          {
            errors: [{ field: 'route_id', message: `is ${route ? 'inactive' : 'unknown'}` }],
          },
        );
      }
      // A route made before the catalogue turned payouts off for its rail.
      this.catalogue.requireCapability(route.market, route.rail, 'payouts');
      // The workspace's active configuration: a rail it may not use is 400 invalid_rail, whatever the route.
      const market = this.catalogue.market(route.market);
      if (market) rails.requireRail(route.market, route.rail, market, 'route_id');
      const beneficiary = await repo.shareBeneficiary(tx, workspaceId, body.beneficiary_id);
      if (!beneficiary)
        throw new ApiError('not_found', 'No beneficiary with that id exists in this workspace.', {
          errors: [{ field: 'beneficiary_id', message: 'is unknown' }],
        });
      if (beneficiary.status !== 'active') {
        throw new ApiError('beneficiary_inactive', 'This beneficiary was deactivated and can receive no payout.', {
          errors: [{ field: 'beneficiary_id', message: 'is inactive' }],
        });
      }
      if (beneficiary.market !== route.market || beneficiary.rail !== route.rail) {
        throw new ApiError(
          'route_mismatch',
          `The beneficiary is paid over ${beneficiary.rail} in ${beneficiary.market}; the route pays over ${route.rail} in ${route.market}.`,
          {
            errors: [{ field: 'route_id', message: `must pay over ${beneficiary.rail} in ${beneficiary.market}` }],
          },
        );
      }
      if (body.amount < route.min_amount || body.amount > route.max_amount) {
        throw new ApiError(
          'amount_out_of_range',
          `This route takes ${route.min_amount} to ${route.max_amount} minor units of ${route.source}.`,
          {
            errors: [{ field: 'amount', message: `must be between ${route.min_amount} and ${route.max_amount}` }],
          },
        );
      }
      const now = new Date();
      const rate =
        route.source === route.currency
          ? undefined
          : await this.marketData.currentRate(route.source, route.currency, now, tx);
      if (route.source !== route.currency && !rate) {
        throw new ApiError(
          'rate_unavailable',
          `There is no current ${route.source}/${route.currency} rate; retry shortly.`,
          { headers: { 'Retry-After': '30' } },
        );
      }
      const targetExponent = this.catalogue.currency(route.currency)?.exponent ?? 2;
      const q = convertible(() =>
        quote(
          body.amount,
          rate && {
            sourceExponent: isAsset(route.source) ? ASSETS[route.source].exponent : targetExponent,
            rate: rate.rate,
            targetExponent,
          },
          { fixed: route.fee_fixed, bps: route.fee_bps },
        ),
      );
      if (q === undefined) {
        throw new ApiError(
          'amount_out_of_range',
          `${body.amount} ${route.source} minor units at ${rate?.rate ?? 1} are more ${route.currency} than can be paid out.`,
          {
            errors: [{ field: 'amount', message: 'converts to too large an amount' }],
          },
        );
      }
      if (q.net <= 0) {
        throw new ApiError(
          'amount_out_of_range',
          `${body.amount} ${route.source} minor units do not cover the route's fee of ${q.fee} ${route.currency} minor units.`,
          {
            errors: [{ field: 'amount', message: 'does not cover the fee' }],
          },
        );
      }
      // The admin's limits for the rail bound what it moves: the amount the recipient receives.
      const own = rails.ownLimits(route.market, route.rail);
      if ((own.min_amount !== null && q.net < own.min_amount) || (own.max_amount !== null && q.net > own.max_amount)) {
        throw new ApiError(
          'amount_out_of_range',
          `The recipient would receive ${q.net} ${route.currency} minor units; this workspace pays out ${own.min_amount ?? 1} to ${own.max_amount ?? 'any amount of'} over ${route.market}/${route.rail}.`,
          {
            errors: [{ field: 'amount', message: "converts to an amount outside the workspace's limits for the rail" }],
          },
        );
      }
      const unsupported = this.providers.amountProblem(route.market, route.rail, q.net, route.currency);
      if (unsupported !== undefined) {
        throw new ApiError(
          'amount_not_supported',
          `The recipient would receive ${q.net} ${route.currency} minor units. ${unsupported}`,
          {
            errors: [{ field: 'amount', message: 'converts to an amount the rail cannot move' }],
          },
        );
      }
      // The lock every commit of this workspace and source takes first: reservations are checked one at a time.
      const available = await lockAvailable(tx, workspaceId, route.source);
      if (available < body.amount) {
        throw new ApiError(
          'insufficient_balance',
          `The available ${route.source} balance is ${available} minor units; this payout needs ${body.amount}.`,
          {
            errors: [{ field: 'amount', message: `exceeds the available balance of ${available}` }],
          },
        );
      }
      const id = uuidv7(now.getTime());
      const at = uuidv7Time(id);
      const row: repo.PayoutRow = {
        id,
        workspace_id: workspaceId,
        route_id: route.id,
        beneficiary_id: beneficiary.id,
        market: route.market,
        rail: route.rail,
        source_currency: route.source,
        source_amount: body.amount,
        currency: route.currency,
        gross_amount: q.gross,
        fee: q.fee,
        amount: q.net,
        rate: rate?.rate ?? null,
        rate_id: rate?.rate_id ?? null,
        rate_source_name: rate?.source_name ?? null,
        reference: body.reference,
        metadata: body.metadata ?? {},
        status: 'created',
        failure_reason: null,
        provider: this.providers.nameFor(route.market, route.rail),
        provider_reference: null,
        provider_receipt: null,
        submitted_at: null,
        created_at: at,
        updated_at: at,
        completed_at: null,
      };
      await repo.insertPayout(tx, row);
      await postMany(tx, workspaceId, payoutReservePostings(row), at);
      await recordEvent(tx, workspaceId, {
        type: 'payout.created',
        objectType: 'payout',
        objectId: id,
        data: toPayoutApi(row),
        at,
      });
      await this.risk.afterPayoutCommitted(tx, workspaceId, row, this.largePayoutThreshold(row.currency));
      created = id;
      return {
        status: 201,
        headers: { location: `/v1/api/transactions/${id}` },
        body: JSON.stringify(toPayoutApi(row)),
      };
    });
    if (created !== undefined) this.afterCommit.emit({ kind: 'payout', workspaceId, id: created });
    return result;
  }

  /**
   * A bulk commit (POST /v1/payouts/bulk): each item is the commit its body names under its own key, in request
   * order, in a transaction of its own (a refused item undoes nothing of another). An item's fingerprint is the one
   * `POST /api/transactions/commit` would give its body, so the two share one key space: a key committed by either is
   * answered from its stored payout by both. The stored outcomes of all the keys are read in one statement first, so
   * a retried bulk request replays without a transaction per item. Two keys alike in one request: 400, nothing done.
   * A refused item stores nothing (as a refused single commit), so a retry tries it again.
   */
  async commitBulk(workspaceId: string, body: BulkPayoutRequest, requestId: string): Promise<BulkPayoutResult> {
    const first = new Map<string, number>();
    const duplicates: FieldError[] = [];
    body.items.forEach((item, index) => {
      const earlier = first.get(item.idempotency_key);
      if (earlier === undefined) first.set(item.idempotency_key, index);
      else duplicates.push({ field: `items.${index}.idempotency_key`, message: `repeats the key of items.${earlier}` });
    });
    if (duplicates.length > 0) {
      throw new ApiError('validation_failed', 'Each item needs an idempotency key of its own; nothing was committed.', {
        errors: duplicates,
      });
    }
    const requests = body.items.map(({ idempotency_key, ...commit }) => ({
      key: idempotency_key,
      commit,
      fingerprint: commitFingerprint(commit),
    }));
    const stored = await this.idempotency.storedMany(workspaceId, requests);
    const attempt = async ({ key, commit, fingerprint }: (typeof requests)[number]) => {
      try {
        return await this.commit(workspaceId, commit, key, fingerprint);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return err;
      }
    };
    const outcomes: (IdempotentResult | ApiError)[] = [];
    for (const request of requests) outcomes.push(stored.get(request.key) ?? (await attempt(request)));
    // A key another request was committing at that moment (a double submit, two retries at once) is tried once more
    // after the others: that request's item has almost always finished by then, and its stored payout is the answer.
    for (const [index, outcome] of outcomes.entries()) {
      if (outcome instanceof ApiError && outcome.code === 'idempotency_key_in_use')
        outcomes[index] = await attempt(requests[index]!);
    }
    return {
      data: outcomes.map((outcome, index) => {
        const idempotency_key = requests[index]!.key;
        return outcome instanceof ApiError
          ? { index, idempotency_key, status: 'refused', problem: problemBody(outcome, requestId) }
          : {
              index,
              idempotency_key,
              status: 'committed',
              replayed: outcome.replayed,
              payout: JSON.parse(outcome.response.body) as Payout,
            };
      }),
    };
  }

  /** `large_payout` fires at this many minor units: a share of the currency's largest collection amount. */
  largePayoutThreshold(currency: string): number {
    const max = this.catalogue.currency(currency)?.max_amount ?? Number.MAX_SAFE_INTEGER;
    return Math.floor((max * LARGE_PAYOUT_RULE.percentOfCurrencyMax) / 100);
  }

  async getPayout(workspaceId: string, id: string): Promise<Payout> {
    const row = isUuid(id) ? await repo.findPayout(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('payout transaction');
    return toPayoutApi(row);
  }

  async listPayouts(workspaceId: string, query: ListPayoutsQuery): Promise<Page<Payout>> {
    const { limit, filter } = this.cursors.filterOf(query);
    return this.cursors.page(await repo.listPayouts(this.db, workspaceId, filter), limit, toPayoutApi);
  }
}
