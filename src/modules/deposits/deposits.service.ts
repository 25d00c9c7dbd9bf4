// Deposit rules: addresses come from the liquidity provider's pool (the sandbox makes its own); a transfer
// is reported pending, then confirmed (or failed); a confirmed deposit is credited to the workspace's
// balance, in the asset or, on an autoconvert address, converted at the current rate (a deposit waits,
// confirmed, while there is no current rate). Each change records its event, and the credit its postings,
// in one transaction.
import { WorkspaceRails } from '../workspace-configuration/workspace-rails.js';
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { withTransaction, type Db, type Tx } from '../../db/pool.js';
import { ApiError, notFound } from '../../platform/errors.js';
import type { IdempotencyEngine, IdempotentResult } from '../../platform/idempotency.js';
import { isUuid, uuidv7, uuidv7Time } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import { stepTime } from '../../platform/time.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import { recordEvent } from '../events/events.repository.js';
import { postMany } from '../ledger/ledger.repository.js';
import type { MarketDataService } from '../market-data/market-data.service.js';
import {
  addressProblem,
  ASSETS,
  assetNetworkProblem,
  normaliseAddress,
  normaliseTxHash,
  sandboxAddress,
  type Asset,
  type Network,
} from '../conversion/assets.js';
import { convertible, quote } from '../conversion/conversion.js';
import { autoconvertPostings, depositPostings } from '../conversion/postings.js';
import * as repo from './deposits.repository.js';
import { DEPOSIT_TRANSITIONS } from './deposits.states.js';
import { allows } from '../../platform/state-machine.js';
import {
  toAddressApi,
  toCreditApi,
  toDepositApi,
  type CreateAddressBody,
  type Credit,
  type Deposit,
  type DepositAddress,
  type ListAddressesQuery,
  type ListDepositsQuery,
  type PoolBody,
  type ReportDepositBody,
  type ReportedStatus,
  type SandboxDepositBody,
} from './deposits.schemas.js';

function invalidTxHash(network: string): ApiError {
  const expected = network === 'solana' ? 'a base58 signature' : '64 hex digits, with or without 0x';
  return new ApiError('validation_failed', `tx_hash is not a ${network} transaction hash (${expected}).`, {
    errors: [{ field: 'tx_hash', message: `must be ${expected}` }],
  });
}

/** A transaction hash of the network's shape, from random bytes. */
function sandboxTxHash(network: Network): string {
  return network === 'solana' ? sandboxAddress('solana') + sandboxAddress('solana') : randomBytes(32).toString('hex');
}

function assetAndNetwork(asset: string, network: string): { asset: Asset; network: Network } {
  const problem = assetNetworkProblem(asset, network);
  if (problem) throw new ApiError('invalid_asset', `${asset} on ${network} is not taken here.`, { errors: [problem] });
  return { asset: asset as Asset, network: network as Network };
}

export class DepositsService {
  constructor(
    private readonly db: Db,
    private readonly catalogue: MarketCatalogue,
    private readonly idempotency: IdempotencyEngine,
    private readonly cursors: CursorCodec,
    private readonly marketData: MarketDataService,
    private readonly options: { env: 'sandbox' | 'production'; autoconvertFeeBps: number; log: FastifyBaseLogger },
  ) {}

  createAddress(
    workspaceId: string,
    body: CreateAddressBody,
    key: string | undefined,
    requestFingerprint: string,
    rails: WorkspaceRails = WorkspaceRails.ALL,
  ): Promise<IdempotentResult> {
    const { asset, network } = assetAndNetwork(body.asset, body.network);
    const currency = body.autoconvert_currency ?? null;
    // Converted money is the currency of a market the workspace may use (its active configuration), or none.
    if (
      currency !== null &&
      (!this.catalogue.currency(currency) || rails.marketsUsing(this.catalogue, currency).length === 0)
    ) {
      throw new ApiError(
        'invalid_currency',
        `Deposits cannot be converted to '${currency}'; use a currency of a supported market.`,
        {
          errors: [{ field: 'autoconvert_currency', message: 'is not a supported currency' }],
        },
      );
    }
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const id = uuidv7();
      const at = uuidv7Time(id);
      const wanted = {
        asset,
        network,
        autoconvert_currency: currency,
        label: body.label ?? null,
        metadata: body.metadata ?? {},
        at,
      };
      let row = await repo.assignFromPool(tx, workspaceId, wanted);
      if (!row && this.options.env === 'sandbox') {
        // The sandbox has no custody: it makes an address of the right shape that nothing on any chain controls.
        row = {
          id,
          workspace_id: workspaceId,
          status: 'assigned',
          address: sandboxAddress(network),
          pooled_at: at,
          created_at: at,
          ...wanted,
        };
        await repo.insertAddress(tx, row);
      }
      if (!row) {
        throw new ApiError(
          'deposit_address_pool_empty',
          `No ${asset} address on ${network} is free right now; the liquidity provider has been asked for more. Retry later.`,
          {
            headers: { 'Retry-After': '60' },
          },
        );
      }
      return {
        status: 201,
        headers: { location: `/v1/api/deposit-addresses/${row.id}` },
        body: JSON.stringify(toAddressApi(row)),
      };
    });
  }

  /** The liquidity provider (or the admin) stocks the pool with addresses its custody controls. */
  async addToPool(
    body: PoolBody,
  ): Promise<{ asset: string; network: string; added: number; already_known: number; available: number }> {
    const { asset, network } = assetAndNetwork(body.asset, body.network);
    const problems = body.addresses.flatMap((address, i) => {
      const problem = addressProblem(network, address);
      return problem ? [{ field: `addresses.${i}`, message: problem }] : [];
    });
    if (problems.length > 0)
      throw new ApiError('invalid_address', `Some addresses are not ${network} addresses.`, { errors: problems });
    const addresses = [...new Set(body.addresses.map((a) => normaliseAddress(network, a)))];
    const at = new Date();
    const added = await withTransaction(this.db, (tx) =>
      repo.addToPool(
        tx,
        addresses.map(() => uuidv7(at.getTime())),
        asset,
        network,
        addresses,
        at,
      ),
    );
    return {
      asset,
      network,
      added,
      already_known: body.addresses.length - added,
      available: await repo.poolSize(this.db, asset, network),
    };
  }

  async getAddress(workspaceId: string, id: string): Promise<DepositAddress> {
    const row = isUuid(id) ? await repo.findAddress(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('deposit address');
    return toAddressApi(row);
  }

  async listAddresses(workspaceId: string, query: ListAddressesQuery): Promise<Page<DepositAddress>> {
    const { limit, filter } = this.cursors.filterOf(query);
    return this.cursors.page(await repo.listAddresses(this.db, workspaceId, filter), limit, toAddressApi);
  }

  async getDeposit(workspaceId: string, id: string): Promise<Deposit> {
    const row = isUuid(id) ? await repo.findDeposit(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('deposit');
    return toDepositApi(row);
  }

  async listDeposits(workspaceId: string, query: ListDepositsQuery): Promise<Page<Deposit>> {
    const { limit, filter } = this.cursors.filterOf(query);
    return this.cursors.page(await repo.listDeposits(this.db, workspaceId, filter), limit, toDepositApi);
  }

  async getCredit(workspaceId: string, id: string): Promise<Credit> {
    const row = isUuid(id) ? await repo.findCredit(this.db, workspaceId, id) : undefined;
    if (!row) throw notFound('autoconvert credit');
    return toCreditApi(row);
  }

  /**
   * A transfer reported by the liquidity provider's chain watcher (production's way in). Idempotent by the
   * transfer (network, tx_hash, address): reported again, it answers 200 with the deposit as it is; a later
   * status moves it on. 201 when the transfer is new.
   */
  async report(body: ReportDepositBody): Promise<{ status: 200 | 201; deposit: Deposit }> {
    const { asset, network } = assetAndNetwork(body.asset, body.network);
    const problem = addressProblem(network, body.address);
    if (problem)
      throw new ApiError('invalid_address', `'${body.address}' ${problem}.`, {
        errors: [{ field: 'address', message: problem }],
      });
    const txHash = normaliseTxHash(network, body.tx_hash);
    if (txHash === undefined) throw invalidTxHash(network);
    const logIndex = body.log_index ?? 0;
    return withTransaction(this.db, async (tx) => {
      const address = await repo.findAssignedAddress(tx, network, normaliseAddress(network, body.address));
      if (!address?.workspace_id) {
        throw new ApiError('deposit_address_unknown', `No workspace holds ${body.address} on ${network}.`, {
          errors: [{ field: 'address', message: 'is not an assigned deposit address' }],
        });
      }
      if (address.asset !== asset) {
        throw new ApiError('validation_failed', `${body.address} takes ${address.asset}, not ${asset}.`, {
          errors: [{ field: 'asset', message: `must be ${address.asset} for this address` }],
        });
      }
      const id = uuidv7();
      const created = await repo.insertDeposit(tx, {
        id,
        workspace_id: address.workspace_id,
        deposit_address_id: address.id,
        asset,
        network,
        amount: body.amount,
        tx_hash: txHash,
        log_index: logIndex,
        confirmations: body.confirmations ?? 0,
        at: uuidv7Time(id),
      });
      const row = await repo.lockDepositByTransfer(tx, network, txHash, logIndex, address.id);
      if (!row) throw new Error(`deposit of ${txHash} vanished`);
      if (created) await this.event(tx, row);
      else if (row.amount !== body.amount) {
        throw new ApiError(
          'deposit_conflict',
          `Transfer ${txHash}#${logIndex} to this address was reported with amount ${row.amount}, not ${body.amount}.`,
          {
            errors: [{ field: 'amount', message: `must be ${row.amount}, as first reported` }],
          },
        );
      }
      const after = await this.move(tx, row, body.status, { confirmations: body.confirmations, reason: body.reason });
      return { status: created ? 201 : 200, deposit: toDepositApi(after) };
    });
  }

  /** The sandbox's way in: a pending deposit on one of the workspace's addresses. */
  sandboxDeposit(
    workspaceId: string,
    body: SandboxDepositBody,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const address = await repo.findAddress(tx, workspaceId, body.deposit_address_id);
      if (!address) throw notFound('deposit address');
      const id = uuidv7();
      const txHash =
        body.tx_hash === undefined
          ? sandboxTxHash(address.network as Network)
          : normaliseTxHash(address.network as Network, body.tx_hash);
      if (txHash === undefined) throw invalidTxHash(address.network);
      const created = await repo.insertDeposit(tx, {
        id,
        workspace_id: workspaceId,
        deposit_address_id: address.id,
        asset: address.asset,
        network: address.network,
        amount: body.amount,
        tx_hash: txHash,
        log_index: 0,
        confirmations: 0,
        at: uuidv7Time(id),
      });
      if (!created)
        throw new ApiError('deposit_conflict', `Transfer ${txHash} to this address is already recorded.`, {
          errors: [{ field: 'tx_hash', message: 'is already recorded for this address' }],
        });
      const row = await repo.findDeposit(tx, workspaceId, id);
      if (!row) throw new Error(`deposit ${id} vanished`);
      await this.event(tx, row);
      return { status: 201, headers: { location: `/v1/api/deposits/${id}` }, body: JSON.stringify(toDepositApi(row)) };
    });
  }

  /** The sandbox's hand: confirm (then credit) or fail a pending deposit. */
  simulate(
    workspaceId: string,
    id: string,
    outcome: 'confirmed' | 'failed',
    reason: string | undefined,
    key: string | undefined,
    requestFingerprint: string,
  ): Promise<IdempotentResult> {
    return this.idempotency.maybe(workspaceId, key, requestFingerprint, async (tx) => {
      const row = isUuid(id) ? await repo.findDeposit(tx, workspaceId, id, true) : undefined;
      if (!row) throw notFound('deposit');
      const after = await this.move(tx, row, outcome, {
        reason,
        confirmations: outcome === 'confirmed' ? Math.max(row.confirmations, 1) : undefined,
      });
      return { status: 200, headers: {}, body: JSON.stringify(toDepositApi(after)) };
    });
  }

  /** Credits confirmed deposits that are still waiting (a conversion waits for a current rate). Returns how many were credited. */
  async creditDue(limit = 100): Promise<number> {
    let credited = 0;
    for (const { workspace_id: workspaceId, id } of await repo.uncredited(this.db, limit)) {
      try {
        const row = await withTransaction(this.db, async (tx) => {
          const locked = await repo.findDeposit(tx, workspaceId, id, true);
          return locked?.status === 'confirmed' ? this.credit(tx, locked) : locked;
        });
        if (row?.status === 'credited') credited += 1;
      } catch (err) {
        this.options.log.error(
          { err, deposit_id: id },
          'crediting a confirmed deposit failed; the next run tries again',
        );
      }
    }
    return credited;
  }

  /** Moves a locked deposit to a reported status; a confirmation is credited at once when it can be. */
  private async move(
    tx: Tx,
    row: repo.DepositRow,
    to: ReportedStatus,
    o: { confirmations?: number | undefined; reason?: string | undefined },
  ): Promise<repo.DepositRow> {
    const confirmations = Math.max(row.confirmations, o.confirmations ?? 0);
    // The same news again, or news the deposit is already past (a stale pending, a confirmation after the credit).
    const already = row.status === to || (row.status === 'credited' && to === 'confirmed') || to === 'pending';
    if (already) {
      if (confirmations === row.confirmations) return row;
      const updated = { ...row, confirmations, updated_at: stepTime(row.updated_at) };
      await repo.saveDeposit(tx, updated);
      return updated;
    }
    if (!allows(DEPOSIT_TRANSITIONS, row.status, to)) {
      throw new ApiError(
        'deposit_conflict',
        `A ${row.status} deposit cannot become ${to}${row.status === 'credited' ? ': it is in the balance already; contact support to reverse it' : ''}.`,
      );
    }
    const at = stepTime(row.updated_at);
    let next: repo.DepositRow =
      to === 'confirmed'
        ? { ...row, status: 'confirmed', confirmations, confirmed_at: at, updated_at: at }
        : { ...row, status: 'failed', confirmations, failure_reason: o.reason ?? 'dropped', updated_at: at };
    await repo.saveDeposit(tx, next);
    await this.event(tx, next);
    if (next.status === 'confirmed') next = await this.credit(tx, next);
    return next;
  }

  /**
   * Credits a locked, confirmed deposit: in the asset, or converted (rounded down, less AUTOCONVERT_FEE_BPS)
   * at the newest rate observed within RATE_MAX_AGE_SECONDS. Without such a rate it stays confirmed. A
   * deposit worth less than one minor unit of the currency (or beyond 2^53 of them) is credited in the asset.
   */
  private async credit(tx: Tx, row: repo.DepositRow): Promise<repo.DepositRow> {
    const address = await repo.findAddress(tx, row.workspace_id, row.deposit_address_id);
    if (!address) throw new Error(`deposit ${row.id} has no address`);
    const at = stepTime(row.updated_at);
    const target = address.autoconvert_currency;
    const targetRules = target === null ? undefined : this.catalogue.currency(target);
    if (target !== null && targetRules) {
      const rate = await this.marketData.currentRate(row.asset, target, at, tx);
      if (!rate) return row;
      const feeBps = this.options.autoconvertFeeBps;
      const q = convertible(() =>
        quote(
          row.amount,
          {
            sourceExponent: ASSETS[row.asset as Asset].exponent,
            rate: rate.rate,
            targetExponent: targetRules.exponent,
          },
          { fixed: 0, bps: feeBps },
        ),
      );
      if (q === undefined)
        this.options.log.error(
          { deposit_id: row.id, rate_id: rate.rate_id },
          'deposit too large to convert at this rate; credited in the asset',
        );
      if (q !== undefined && q.net > 0) {
        const credit: repo.CreditRow = {
          id: uuidv7(at.getTime()),
          workspace_id: row.workspace_id,
          deposit_id: row.id,
          source_asset: row.asset,
          source_amount: row.amount,
          target_currency: target,
          gross_amount: q.gross,
          fee: q.fee,
          amount: q.net,
          fee_bps: feeBps,
          rate: rate.rate,
          rate_id: rate.rate_id,
          rate_source_id: rate.source_id,
          rate_source_name: rate.source_name,
          rate_observed_at: new Date(rate.observed_at),
          created_at: at,
        };
        await repo.insertCredit(tx, credit);
        await postMany(
          tx,
          row.workspace_id,
          autoconvertPostings(
            credit.id,
            { asset: row.asset, amount: row.amount },
            { currency: target, gross: q.gross, fee: q.fee },
          ),
          at,
        );
        return this.credited(tx, row, at, { currency: target, amount: q.net, creditId: credit.id });
      }
    }
    await postMany(tx, row.workspace_id, depositPostings(row.id, row.asset, row.amount), at);
    return this.credited(tx, row, at, { currency: row.asset, amount: row.amount, creditId: null });
  }

  private async credited(
    tx: Tx,
    row: repo.DepositRow,
    at: Date,
    c: { currency: string; amount: number; creditId: string | null },
  ): Promise<repo.DepositRow> {
    const next: repo.DepositRow = {
      ...row,
      status: 'credited',
      credited_currency: c.currency,
      credited_amount: c.amount,
      credit_id: c.creditId,
      credited_at: at,
      updated_at: at,
    };
    await repo.saveDeposit(tx, next);
    await this.event(tx, next);
    return next;
  }

  private async event(tx: Tx, row: repo.DepositRow): Promise<void> {
    await recordEvent(tx, row.workspace_id, {
      type: `deposit.${row.status}`,
      objectType: 'deposit',
      objectId: row.id,
      data: toDepositApi(row),
      at: row.updated_at,
    });
  }
}
