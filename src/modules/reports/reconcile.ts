// Reconciliation against an operator's statement: the statement's rows (an M-Pesa organisation statement export,
// or any CSV through a column map) read into one shape, then compared with our records of that connector by receipt
// or reference. Pure: `npm run reconcile` (src/cli/reconcile.ts) reads the file and the database around it.
import { parse } from 'csv-parse/sync';
import { minorUnits } from '../../platform/money.js';
import type { ProviderRecord } from './reports.repository.js';

/** One money movement as the operator's statement shows it. */
export interface StatementRow {
  /** The statement's line (1 is its first line), for the person reading the output. */
  line: number;
  /** The operator's receipt or reference. */
  reference: string;
  time: Date;
  /** Money into our account at the operator (a payment), or out of it (a refund, reversal or payout). */
  direction: 'in' | 'out';
  /** As the statement writes it, in major units without separators ("1500.00"). */
  amount: string;
  successful: boolean;
  /** The operator's own word for the status, shown in the output. */
  status: string;
}

export class StatementError extends Error {}

/** How a generic CSV names its columns (`--columns reference=Ref,amount=Amount,...`). */
export interface ColumnMap {
  reference: string;
  amount: string;
  status: string;
  time: string;
  /** A column saying in or out (`in`, `credit`, `paid in`… against `out`, `debit`, `withdrawn`…); without it, a negative amount is out. */
  direction?: string;
}

/** The statuses a generic statement means as "it happened" (compared without case), unless `--success` says others. */
export const DEFAULT_SUCCESS = ['completed', 'successful', 'success', 'succeeded'];

const MPESA_COLUMNS = ['Receipt No.', 'Completion Time', 'Details', 'Transaction Status', 'Paid In', 'Withdrawn'];

/** A CSV's records from its header line on (an M-Pesa export starts with lines about the account: skipped). */
function records(text: string, required: string[]): { header: string[]; rows: { cells: string[]; line: number }[] } {
  // Empty lines are kept (as one empty cell) so that a record's index is its line: statements have no multi-line cells.
  const all = parse(text, { relax_column_count: true, trim: true, bom: true }).map((cells, i) => ({
    cells,
    line: i + 1,
  }));
  const at = all.findIndex((r) => required.every((c) => r.cells.includes(c)));
  if (at === -1) throw new StatementError(`no header line with the columns ${required.join(', ')}`);
  const rows = all.slice(at + 1).filter((r) => r.cells.some((c) => c !== ''));
  return { header: (all[at] as { cells: string[] }).cells, rows };
}

/** "1,500.00", "-1,500.00", "(1,500.00)" → { negative, digits "1500.00" }; undefined when it is no amount. */
function amountOf(cell: string): { negative: boolean; value: string } | undefined {
  const trimmed = cell.replace(/[\s,]/g, '');
  if (trimmed === '') return undefined;
  const negative = trimmed.startsWith('-') || (trimmed.startsWith('(') && trimmed.endsWith(')'));
  const value = trimmed.replace(/^[-(]|\)$/g, '');
  return /^[0-9]+(\.[0-9]+)?$/.test(value) ? { negative, value } : undefined;
}

function timeOf(cell: string, line: number): Date {
  // "2026-11-24 10:15:02" (M-Pesa exports are in Nairobi time, UTC+3, with no offset written) or an ISO 8601 time.
  const local = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(:\d{2})?)$/.exec(cell);
  const date = local ? new Date(`${local[1]}T${local[2]}${local[3] ? '' : ':00'}+03:00`) : new Date(cell);
  if (Number.isNaN(date.getTime())) throw new StatementError(`line ${line}: '${cell}' is not a time`);
  return date;
}

/**
 * An M-Pesa organisation statement export (CSV): Receipt No., Completion Time (Nairobi time), Details, Transaction
 * Status, Paid In, Withdrawn, Balance. Paid In is money in; Withdrawn (written with or without a minus) is money out.
 */
export function parseMpesaStatement(text: string): StatementRow[] {
  const { header, rows } = records(text, MPESA_COLUMNS);
  const col = (name: string) => header.indexOf(name);
  const out: StatementRow[] = [];
  rows.forEach((row) => {
    const { cells: r, line } = row;
    const reference = r[col('Receipt No.')] ?? '';
    if (reference === '') return;
    const paidIn = amountOf(r[col('Paid In')] ?? '');
    const withdrawn = amountOf(r[col('Withdrawn')] ?? '');
    const moved = paidIn && Number(paidIn.value) !== 0 ? paidIn : withdrawn;
    if (!moved) throw new StatementError(`line ${line} (${reference}): neither Paid In nor Withdrawn is an amount`);
    const status = r[col('Transaction Status')] ?? '';
    out.push({
      line,
      reference,
      time: timeOf(r[col('Completion Time')] ?? '', line),
      direction: moved === paidIn ? 'in' : 'out',
      amount: moved.value,
      successful: status.toLowerCase() === 'completed',
      status,
    });
  });
  return out;
}

/** Any CSV whose columns `map` names; `success`: the status values that mean it happened. */
export function parseGenericStatement(text: string, map: ColumnMap, success = DEFAULT_SUCCESS): StatementRow[] {
  const required = [map.reference, map.amount, map.status, map.time, ...(map.direction ? [map.direction] : [])];
  const { header, rows } = records(text, required);
  const col = (name: string) => header.indexOf(name);
  const ok = new Set(success.map((s) => s.toLowerCase()));
  return rows.flatMap((row) => {
    const { cells: r, line } = row;
    const reference = r[col(map.reference)] ?? '';
    if (reference === '') return [];
    const amount = amountOf(r[col(map.amount)] ?? '');
    if (!amount)
      throw new StatementError(`line ${line} (${reference}): '${r[col(map.amount)] ?? ''}' is not an amount`);
    let direction: 'in' | 'out' = amount.negative ? 'out' : 'in';
    if (map.direction) {
      const word = (r[col(map.direction)] ?? '').toLowerCase();
      direction = /^(out|debit|dr|withdrawn|payout|refund|reversal)/.test(word) ? 'out' : 'in';
    }
    const status = r[col(map.status)] ?? '';
    return [
      {
        line,
        reference,
        time: timeOf(r[col(map.time)] ?? '', line),
        direction,
        amount: amount.value,
        successful: ok.has(status.toLowerCase()),
        status,
      },
    ];
  });
}

/** `reference=Ref,amount=Amount,...` → a ColumnMap; what is missing or unknown is said. */
export function parseColumnMap(spec: string): ColumnMap {
  const map: Record<string, string> = {};
  for (const pair of spec.split(',')) {
    const [key = '', ...rest] = pair.split('=');
    if (!['reference', 'amount', 'status', 'time', 'direction'].includes(key.trim()) || rest.length === 0)
      throw new StatementError(`--columns: '${pair}' is not one of reference=, amount=, status=, time=, direction=`);
    map[key.trim()] = rest.join('=').trim();
  }
  for (const needed of ['reference', 'amount', 'status', 'time'])
    if (!map[needed]) throw new StatementError(`--columns needs ${needed}=<column>`);
  return map as unknown as ColumnMap;
}

export interface Pair {
  row: StatementRow;
  record: ProviderRecord;
}
export interface Mismatch extends Pair {
  why: string[];
}
export interface Reconciliation {
  matched: Pair[];
  mismatched: Mismatch[];
  /** Completed rows the operator has and we do not. */
  operatorOnly: StatementRow[];
  /** Our money movements in the statement's period that it does not list. */
  oursOnly: ProviderRecord[];
  /** The operator's failed rows we have no record of: no money moved, listed for information only. */
  ignored: StatementRow[];
  /**
   * Ours without a receipt (a payment confirmed by its STK query only, whose callback was lost), each paired with the
   * one statement row of the same direction and amount within PROBABLE_WINDOW_MS: listed, to confirm by hand.
   */
  probable: Pair[];
}

/** How far apart our time and the operator's may be for a receipt-less record and a row to pair by amount. */
export const PROBABLE_WINDOW_MS = 15 * 60_000;

/** Where money moved for us: collections in, refunds and payouts out. */
const directionOf = (r: ProviderRecord): 'in' | 'out' => (r.kind === 'collection' ? 'in' : 'out');
/** Whether we say the money moved: a collection once credited (also if later refunded or reversed); the others when successful. */
const movedOf = (r: ProviderRecord): boolean =>
  r.kind === 'collection' ? ['successful', 'refunded', 'reversed'].includes(r.status) : r.status === 'successful';

/**
 * Compares the statement with our records: `named` are ours that the statement names (by receipt, else reference),
 * `inPeriod` our money movements during the statement's period. `exponentOf` gives a currency's decimals.
 */
export function reconcile(
  rows: StatementRow[],
  named: ProviderRecord[],
  inPeriod: ProviderRecord[],
  exponentOf: (currency: string) => number,
): Reconciliation {
  const byReceipt = new Map(named.filter((r) => r.provider_receipt).map((r) => [r.provider_receipt as string, r]));
  const byReference = new Map(
    named.filter((r) => r.provider_reference).map((r) => [r.provider_reference as string, r]),
  );
  const result: Reconciliation = {
    matched: [],
    mismatched: [],
    operatorOnly: [],
    oursOnly: [],
    ignored: [],
    probable: [],
  };
  const seen = new Set<string>();
  for (const row of rows) {
    const record = byReceipt.get(row.reference) ?? byReference.get(row.reference);
    if (!record) {
      if (row.successful) result.operatorOnly.push(row);
      else result.ignored.push(row);
      continue;
    }
    seen.add(`${record.kind}:${record.id}`);
    const why: string[] = [];
    if (directionOf(record) !== row.direction)
      why.push(`direction: ours ${directionOf(record)}, operator ${row.direction}`);
    const theirs = minorUnits(row.amount, exponentOf(record.currency));
    if (theirs !== record.amount)
      why.push(`amount: ours ${record.amount}, operator ${theirs ?? row.amount} (minor units)`);
    if (movedOf(record) !== row.successful) why.push(`status: ours ${record.status}, operator ${row.status}`);
    if (why.length > 0) result.mismatched.push({ row, record, why });
    else result.matched.push({ row, record });
  }
  for (const record of inPeriod) if (!seen.has(`${record.kind}:${record.id}`)) result.oursOnly.push(record);
  pairWithoutReceipts(result, exponentOf);
  return result;
}

/** Pairs receipt-less records of ours with unmatched rows when each has exactly one candidate (see `probable`). */
function pairWithoutReceipts(result: Reconciliation, exponentOf: (currency: string) => number): void {
  const fits = (record: ProviderRecord, row: StatementRow): boolean =>
    record.provider_receipt === null &&
    record.moved_at !== null &&
    directionOf(record) === row.direction &&
    minorUnits(row.amount, exponentOf(record.currency)) === record.amount &&
    Math.abs(row.time.getTime() - record.moved_at.getTime()) <= PROBABLE_WINDOW_MS;
  for (const record of [...result.oursOnly]) {
    const rows = result.operatorOnly.filter((row) => fits(record, row));
    const row = rows[0];
    if (rows.length !== 1 || !row || result.oursOnly.filter((r) => fits(r, row)).length !== 1) continue;
    result.probable.push({ row, record });
    result.oursOnly.splice(result.oursOnly.indexOf(record), 1);
    result.operatorOnly.splice(result.operatorOnly.indexOf(row), 1);
  }
}

/** The statement's period: its first and last times. */
export function periodOf(rows: StatementRow[]): { from: Date; to: Date } | undefined {
  if (rows.length === 0) return undefined;
  const times = rows.map((r) => r.time.getTime());
  return { from: new Date(Math.min(...times)), to: new Date(Math.max(...times)) };
}

/** What `npm run reconcile` prints: the counts, then every row that is not matched, with why. */
export function formatReconciliation(r: Reconciliation, title: string): string {
  const lines = [title, `matched: ${r.matched.length}`];
  const rec = (x: ProviderRecord) =>
    `${x.kind} ${x.id} (workspace ${x.workspace_id}) ${x.status} ${x.amount} ${x.currency}`;
  lines.push(`amount or status mismatches: ${r.mismatched.length}`);
  for (const m of r.mismatched)
    lines.push(`  line ${m.row.line} ${m.row.reference}: ${rec(m.record)}; ${m.why.join('; ')}`);
  lines.push(`on the statement, not here: ${r.operatorOnly.length}`);
  for (const row of r.operatorOnly)
    lines.push(
      `  line ${row.line} ${row.reference}: ${row.direction} ${row.amount} ${row.status} at ${row.time.toISOString()}`,
    );
  lines.push(`here, not on the statement: ${r.oursOnly.length}`);
  for (const x of r.oursOnly)
    lines.push(
      `  ${x.provider_receipt ?? x.provider_reference ?? '(no receipt)'}: ${rec(x)} at ${x.moved_at?.toISOString() ?? '?'}`,
    );
  if (r.probable.length > 0) {
    lines.push(`paired by amount and time, no receipt here (confirm by hand): ${r.probable.length}`);
    for (const p of r.probable) lines.push(`  line ${p.row.line} ${p.row.reference}: ${rec(p.record)}`);
  }
  if (r.ignored.length > 0)
    lines.push(`failed on the statement and unknown here (no money moved): ${r.ignored.length}`);
  return `${lines.join('\n')}\n`;
}

/** Whether anything needs a person: the exit code is 1 then. */
export const hasDifferences = (r: Reconciliation): boolean =>
  r.mismatched.length + r.operatorOnly.length + r.oursOnly.length > 0;
