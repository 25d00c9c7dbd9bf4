// The settlement report: one UTC day of a workspace in one currency, from the events and the ledger.
import type { Db } from '../../db/pool.js';
import { ApiError } from '../../platform/errors.js';
import type { MarketCatalogue } from '../catalogue/catalogue.js';
import { isAsset } from '../conversion/assets.js';
import * as repo from './reports.repository.js';
import { toMismatchApi, type SettlementQuery, type SettlementReport } from './reports.schemas.js';

type RailReport = SettlementReport['rails'][number];
const tally = () => ({ count: 0, amount: 0 });

/** The report's UTC day, [from, to); a date that does not exist is refused. */
function dayOf(date: string): { from: Date; to: Date } {
  const from = new Date(`${date}T00:00:00.000Z`);
  if (Number.isNaN(from.getTime()) || from.toISOString().slice(0, 10) !== date) {
    throw new ApiError('validation_failed', `The date ${date} does not exist.`, {
      errors: [{ field: 'date', message: 'must be a real day, YYYY-MM-DD' }],
    });
  }
  return { from, to: new Date(from.getTime() + 86_400_000) };
}

export class ReportsService {
  constructor(
    private readonly db: Db,
    private readonly catalogue: MarketCatalogue,
  ) {}

  async settlement(workspaceId: string, query: SettlementQuery): Promise<SettlementReport> {
    const { from, to } = dayOf(query.date);
    if (!this.catalogue.currency(query.currency) && !isAsset(query.currency)) {
      throw new ApiError('invalid_currency', `No market or asset uses '${query.currency}'.`, {
        errors: [{ field: 'currency', message: 'is not a currency of any market, nor an asset' }],
      });
    }
    const [outcomes, movements, opening, fees, mismatches] = await Promise.all([
      repo.outcomesOfDay(this.db, workspaceId, query.currency, from, to),
      repo.availableMovements(this.db, workspaceId, query.currency, from, to),
      repo.availableBefore(this.db, workspaceId, query.currency, from),
      repo.feesOfDay(this.db, workspaceId, query.currency, from, to),
      repo.mismatchesOfDay(this.db, workspaceId, from, to),
    ]);
    const rails = new Map<string, RailReport>();
    for (const o of outcomes) {
      const key = `${o.market}/${o.rail}`;
      const rail = rails.get(key) ?? {
        market: o.market,
        rail: o.rail,
        collections: { successful: tally(), failed: tally(), expired: tally(), refunded: tally(), reversed: tally() },
        refunds: { successful: tally(), failed: tally() },
        payouts: { successful: tally(), failed: tally(), fees: 0 },
      };
      rails.set(key, rail);
      const entry = { count: o.count, amount: Number(o.amount) };
      const [kind, status] = o.type.split('.') as [string, string];
      if (kind === 'collection') rail.collections[status as keyof RailReport['collections']] = entry;
      else if (kind === 'refund') rail.refunds[status as 'successful' | 'failed'] = entry;
      else {
        rail.payouts[status as 'successful' | 'failed'] = entry;
        if (status === 'successful') rail.payouts.fees = Number(o.fee);
      }
    }
    return {
      date: query.date,
      currency: query.currency,
      rails: [...rails.values()],
      fees,
      ledger: {
        opening_available: opening,
        // Everything posted in the day moved it: the closing is the opening and the movements.
        closing_available: opening + movements.reduce((sum, m) => sum + Number(m.amount), 0),
        movements: movements.map((m) => ({ kind: m.kind, count: m.count, amount: Number(m.amount) })),
      },
      reconciliation_mismatches: mismatches.map(toMismatchApi),
    };
  }
}

/**
 * The report as CSV, one row per figure: `section,market,rail,item,count,amount`. Sections: `collections`,
 * `refunds`, `payouts` (per rail and status; `fees` as an item of payouts), `fees`, `ledger` (opening, each kind,
 * closing) and `reconciliation_mismatch` (the item names the object and both statuses).
 */
export function settlementCsv(report: SettlementReport): string {
  const rows: (string | number)[][] = [['section', 'market', 'rail', 'item', 'count', 'amount']];
  for (const r of report.rails) {
    for (const [status, t] of Object.entries(r.collections))
      rows.push(['collections', r.market, r.rail, status, t.count, t.amount]);
    for (const [status, t] of Object.entries(r.refunds))
      rows.push(['refunds', r.market, r.rail, status, t.count, t.amount]);
    rows.push(['payouts', r.market, r.rail, 'successful', r.payouts.successful.count, r.payouts.successful.amount]);
    rows.push(['payouts', r.market, r.rail, 'failed', r.payouts.failed.count, r.payouts.failed.amount]);
    rows.push(['payouts', r.market, r.rail, 'fees', '', r.payouts.fees]);
  }
  rows.push(['fees', '', '', 'earned', '', report.fees]);
  rows.push(['ledger', '', '', 'opening_available', '', report.ledger.opening_available]);
  for (const m of report.ledger.movements) rows.push(['ledger', '', '', m.kind, m.count, m.amount]);
  rows.push(['ledger', '', '', 'closing_available', '', report.ledger.closing_available]);
  for (const m of report.reconciliation_mismatches) {
    const item = `${m.object_type} ${m.object_id}: ours ${m.our_status}, ${m.provider} ${m.provider_status}`;
    rows.push(['reconciliation_mismatch', '', '', item, 1, '']);
  }
  return `${rows.map((row) => row.map(csvCell).join(',')).join('\r\n')}\r\n`;
}

/** RFC 4180: a cell with a comma, quote or line break is quoted, its quotes doubled. */
function csvCell(value: string | number): string {
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
