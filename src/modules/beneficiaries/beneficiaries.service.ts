// Beneficiary rules: the destination must fit the rail (a wallet number in the market, or a bank account),
// and deactivation is final: an inactive beneficiary receives no payout.
import type { Db } from '../../db/pool.js';
import { ApiError, notFound, type FieldError } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import { isUuid, uuidv7, uuidv7Time } from '../../platform/ids.js';
import { type CursorCodec, type Page } from '../../platform/pagination.js';
import { phoneProblem, type MarketCatalogue } from '../catalogue/catalogue.js';
import * as repo from './beneficiaries.repository.js';
import {
  toBeneficiaryApi,
  type Beneficiary,
  type CreateBeneficiaryBody,
  type ListBeneficiariesQuery,
} from './beneficiaries.schemas.js';

export class BeneficiariesService {
  constructor(
    private readonly db: Db,
    private readonly catalogue: MarketCatalogue,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
  ) {}

  create(
    workspaceId: string,
    body: CreateBeneficiaryBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    const market = this.catalogue.marketField(body.market);
    const rail = this.catalogue.railField(market, body.market, body.rail);
    const problems: FieldError[] = [];
    if (rail.type === 'mobile_money') {
      if (body.phone_number === undefined)
        problems.push({ field: 'phone_number', message: `is required on ${rail.name}` });
      else {
        const issue = phoneProblem(market, body.phone_number);
        if (issue) problems.push({ field: 'phone_number', message: issue });
      }
      for (const field of ['bank_code', 'account_number'] as const) {
        if (body[field] !== undefined) problems.push({ field, message: `is for bank rails, not ${rail.name}` });
      }
    } else {
      for (const field of ['bank_code', 'account_number'] as const) {
        if (body[field] === undefined) problems.push({ field, message: `is required on ${rail.name}` });
      }
      if (body.phone_number !== undefined)
        problems.push({ field: 'phone_number', message: `is for mobile-money rails, not ${rail.name}` });
    }
    if (problems.length > 0)
      throw new ApiError('invalid_customer', `The beneficiary's details do not fit ${rail.name} in ${market.name}.`, {
        errors: problems,
      });

    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const id = uuidv7();
      const now = uuidv7Time(id);
      const row: repo.BeneficiaryRow = {
        id,
        workspace_id: workspaceId,
        name: body.name,
        market: body.market,
        rail: body.rail,
        currency: market.currency,
        phone_number: body.phone_number ?? null,
        bank_code: body.bank_code ?? null,
        account_number: body.account_number ?? null,
        reference: body.reference ?? null,
        metadata: body.metadata ?? {},
        status: 'active',
        created_at: now,
        updated_at: now,
        deactivated_at: null,
      };
      await repo.insertBeneficiary(tx, row);
      return {
        status: 201,
        headers: { location: `/v1/api/beneficiaries/${id}` },
        body: JSON.stringify(toBeneficiaryApi(row)),
      };
    });
  }

  async get(workspaceId: string, id: string): Promise<Beneficiary> {
    const row = isUuid(id) ? await repo.findBeneficiary(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('beneficiary');
    return toBeneficiaryApi(row);
  }

  /** Deactivates; deactivating again answers the same inactive record (deactivated_at unchanged). */
  async deactivate(workspaceId: string, id: string): Promise<Beneficiary> {
    const row = isUuid(id) ? await repo.deactivate(this.db, workspaceId, id, new Date()) : undefined;
    if (!row) throw notFound('beneficiary');
    return toBeneficiaryApi(row);
  }

  async list(workspaceId: string, query: ListBeneficiariesQuery): Promise<Page<Beneficiary>> {
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listBeneficiaries(this.db, workspaceId, filter);
    return this.cursors.page(rows, limit, toBeneficiaryApi);
  }
}
