// Operator float: the balances of the accounts operators hold our money in (payouts fail when they are empty), read on
// a schedule from each connector whose operator's API gives them, kept with the time read, and shown to the operator.
// A balance crossing below its threshold raises `operator.float_low` in the operator workspace's events, and crossing
// back raises `operator.float_restored`: once per crossing, under the account row's lock. A failed read never throws
// out of here: it is kept as the account's error, and the account shows `unknown`. See docs/guides/operator-float.md.
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from '../../db/errors.js';
import { withTransaction, type Db, type Tx } from '../../db/pool.js';
import { recordEvent } from '../events/events.repository.js';
import {
  ANSWER_BY_CALLBACK,
  type BalanceSink,
  type FloatReading,
  type OperatorConnector,
} from '../providers/provider.js';
import { findOperatorWorkspaceId } from '../workspaces/workspaces.repository.js';
import * as repo from './float.repository.js';
import type { FloatStatus, OperatorFloatAccount } from './float.schemas.js';

export const FLOAT_LOW = 'operator.float_low';
export const FLOAT_RESTORED = 'operator.float_restored';

/** A reading older than this many intervals (the operator stopped answering, a callback never came) shows `unknown`. */
const STALE_INTERVALS = 3;

export interface FloatSettings {
  intervalMs: number;
  /** Minor units by `connector/account`, or by `connector` for each of its accounts. */
  thresholds: Record<string, number>;
}

export class OperatorFloatService implements BalanceSink {
  private operatorWorkspace: string | undefined;

  constructor(
    private readonly db: Db,
    private readonly settings: FloatSettings,
    private readonly log: FastifyBaseLogger,
    /** The connectors (composition.ts hands them in once the registry is built; it is built with this as its sink). */
    private readonly connectors: () => OperatorConnector[],
  ) {}

  /** The connectors whose operator's API gives balances. */
  private readers(): (OperatorConnector & Required<Pick<OperatorConnector, 'readBalances'>>)[] {
    return this.connectors().filter(
      (c): c is OperatorConnector & Required<Pick<OperatorConnector, 'readBalances'>> => c.readBalances !== undefined,
    );
  }

  threshold(connector: string, account: string): number | null {
    return this.settings.thresholds[`${connector}/${account}`] ?? this.settings.thresholds[connector] ?? null;
  }

  /**
   * The scheduled round: each connector whose read is due (claimed by exactly one node per interval) is read. The
   * connectors are asked at once, each bounded by OPERATOR_TIMEOUT_MS. Only a database outage escapes (the periodic
   * job pauses on it).
   */
  async readDue(): Promise<void> {
    await Promise.all(
      this.readers().map(async (connector) => {
        if (await repo.claimRead(this.db, connector.name, this.settings.intervalMs)) await this.read(connector);
      }),
    );
  }

  /** Reads one connector now; what it answered (or why it could not) is recorded. */
  async read(connector: OperatorConnector): Promise<void> {
    let answer: FloatReading[] | typeof ANSWER_BY_CALLBACK;
    try {
      if (connector.readBalances === undefined) return;
      answer = await connector.readBalances();
    } catch (err) {
      if (isDatabaseUnavailable(err)) throw err;
      await this.record(connector.name, { error: (err as Error).message });
      return;
    }
    if (answer === ANSWER_BY_CALLBACK) return;
    await this.record(connector.name, { readings: answer });
  }

  /** What an operator answered (at once, or by callback): each account's balance or error, and the crossings. */
  async record(connector: string, outcome: { readings: FloatReading[] } | { error: string }): Promise<void> {
    const at = new Date();
    if ('error' in outcome) {
      this.log.warn({ connector, error: outcome.error }, 'operator float: the balance could not be read');
      await repo.storeConnectorError(this.db, connector, outcome.error, at);
      return;
    }
    // One transaction for the whole answer: a reader sees all of an operator's accounts from the same read.
    await withTransaction(this.db, async (tx) => {
      for (const reading of outcome.readings) {
        if ('error' in reading) {
          this.log.warn({ connector, account: reading.account, error: reading.error }, 'operator float: read failed');
          await repo.storeAccountError(tx, connector, reading.account, reading.error, at);
          continue;
        }
        await repo.dropPlaceholder(tx, connector);
        const before = await repo.lockAccount(tx, connector, reading.account);
        const threshold = this.threshold(connector, reading.account);
        const low = threshold !== null && reading.balance < threshold;
        const after = await repo.storeBalance(tx, connector, reading.account, { ...reading, low, at });
        if (low !== before.low) await this.raise(tx, low ? FLOAT_LOW : FLOAT_RESTORED, after, at);
      }
    });
  }

  /** The event of a crossing, in the operator workspace's events (its webhooks and the events API of an admin token). */
  private async raise(tx: Tx, type: string, row: repo.FloatRow, at: Date): Promise<void> {
    this.operatorWorkspace ??= await findOperatorWorkspaceId(tx);
    const account = this.toApi(row, at);
    this.log.warn({ connector: row.connector, account: row.account, balance: account.balance }, type);
    if (this.operatorWorkspace === undefined) return;
    await recordEvent(tx, this.operatorWorkspace, {
      type,
      objectType: 'operator_float',
      objectId: row.id,
      data: account,
      at,
    });
  }

  /**
   * Every account read so far, and a row of `unknown` for each connector that gives balances but has none yet; each
   * with its threshold and status.
   */
  async list(): Promise<OperatorFloatAccount[]> {
    const rows = await repo.listAccounts(this.db);
    const now = new Date();
    const out = rows.map((row) => this.toApi(row, now));
    for (const connector of this.readers()) {
      if (!rows.some((r) => r.connector === connector.name)) {
        out.push({
          connector: connector.name,
          account: '',
          currency: null,
          balance: null,
          read_at: null,
          threshold: this.threshold(connector.name, ''),
          status: 'unknown',
          error: 'not read yet',
          error_at: null,
        });
      }
    }
    return out.sort((a, b) => a.connector.localeCompare(b.connector) || a.account.localeCompare(b.account));
  }

  private toApi(row: repo.FloatRow, now: Date): OperatorFloatAccount {
    const threshold = this.threshold(row.connector, row.account);
    const balance = row.balance === null ? null : Number(row.balance);
    const failed = row.error_at !== null && (row.read_at === null || row.error_at >= row.read_at);
    const stale =
      !failed &&
      row.read_at !== null &&
      now.getTime() - row.read_at.getTime() > STALE_INTERVALS * this.settings.intervalMs;
    let status: FloatStatus;
    if (failed || stale || balance === null) status = 'unknown';
    else status = threshold !== null && balance < threshold ? 'low' : 'ok';
    return {
      connector: row.connector,
      account: row.account,
      currency: row.currency,
      balance,
      read_at: row.read_at?.toISOString() ?? null,
      threshold,
      status,
      error: failed
        ? row.last_error
        : stale
          ? `no reading since ${row.read_at?.toISOString() ?? ''}`
          : balance === null
            ? 'not read yet'
            : null,
      error_at: failed ? (row.error_at?.toISOString() ?? null) : null,
    };
  }
}
