// Market data rules: the admin keeps the sources; liquidity providers post rates from active sources;
// a rate older than RATE_MAX_AGE_SECONDS is never used to convert.
import type { Db, Queryable } from '../../db/pool.js';
import { ApiError, notFound } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import { isUuid, uuidv7, uuidv7Time } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import * as repo from './market-data.repository.js';
import {
  toRateApi,
  toSourceApi,
  type CreateRateBody,
  type CreateSourceBody,
  type ListRatesQuery,
  type ListSourcesQuery,
  type Rate,
  type Source,
  type UpdateSourceBody,
} from './market-data.schemas.js';

const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

export class MarketDataService {
  constructor(
    private readonly db: Db,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
    /** RATE_MAX_AGE_SECONDS: older rates are never used to convert. */
    private readonly maxAgeSeconds: number,
  ) {}

  createSource(
    workspaceId: string,
    body: CreateSourceBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const id = uuidv7();
      const now = uuidv7Time(id);
      const row = await repo.insertSource(tx, {
        id,
        name: body.name,
        kind: body.kind,
        url: body.url ?? null,
        status: 'active',
        created_at: now,
        updated_at: now,
      });
      if (!row)
        throw new ApiError('source_name_taken', `A rate source named '${body.name}' already exists.`, {
          errors: [{ field: 'name', message: 'is taken' }],
        });
      return {
        status: 201,
        headers: { location: `/v1/api/markets/sources/${id}` },
        body: JSON.stringify(toSourceApi(row)),
      };
    });
  }

  async updateSource(id: string, body: UpdateSourceBody): Promise<Source> {
    const row = isUuid(id) ? await repo.updateSource(this.db, id, body, new Date()) : undefined;
    if (!row) throw notFound('rate source');
    return toSourceApi(row);
  }

  async listSources(query: ListSourcesQuery): Promise<Page<Source>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listActiveSources(this.db, filter);
    return this.cursors.page(rows, limit, toSourceApi);
  }

  postRate(
    workspaceId: string,
    credentialId: string,
    body: CreateRateBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    if (body.base === body.quote)
      throw new ApiError('validation_failed', 'base and quote must differ.', {
        errors: [{ field: 'quote', message: 'must differ from base' }],
      });
    if (Number(body.rate) <= 0)
      throw new ApiError('validation_failed', 'rate must be above zero.', {
        errors: [{ field: 'rate', message: 'must be above zero' }],
      });
    const observedAt = body.observed_at === undefined ? undefined : new Date(body.observed_at);
    if (observedAt && observedAt.getTime() > Date.now() + MAX_CLOCK_SKEW_MS) {
      throw new ApiError('validation_failed', 'observed_at is in the future.', {
        errors: [{ field: 'observed_at', message: 'must not be more than 5 minutes ahead' }],
      });
    }
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const source = await repo.findSource(tx, body.source_id);
      if (!source || source.status !== 'active') {
        throw new ApiError(
          'rate_source_unavailable',
          `Rate source ${body.source_id} is ${source ? 'inactive' : 'unknown'}; post rates of an active source.`,
          {
            errors: [{ field: 'source_id', message: `is ${source ? 'inactive' : 'unknown'}` }],
          },
        );
      }
      const id = uuidv7();
      const now = uuidv7Time(id);
      const row = {
        id,
        source_id: source.id,
        base: body.base,
        quote: body.quote,
        rate: body.rate,
        observed_at: observedAt ?? now,
        created_at: now,
      };
      await repo.insertRate(tx, { ...row, posted_by: credentialId });
      return { status: 201, headers: {}, body: JSON.stringify(toRateApi({ ...row, source_name: source.name })) };
    });
  }

  async listRates(query: ListRatesQuery): Promise<Page<Rate>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const [base, quote] = query.pair?.split('/') ?? [];
    const rows = await repo.listRates(this.db, base && quote ? { base, quote } : undefined, filter);
    return this.cursors.page(rows, limit, toRateApi);
  }

  /** The rate to convert with: the newest from an active source, observed within RATE_MAX_AGE_SECONDS; else none. */
  async currentRate(base: string, quote: string, now = new Date(), db: Queryable = this.db): Promise<Rate | undefined> {
    const row = await repo.freshestRate(db, base, quote, new Date(now.getTime() - this.maxAgeSeconds * 1000));
    return row ? toRateApi(row) : undefined;
  }
}
