// Reading operator statements and comparing them with our records (src/modules/reports/reconcile.ts): pure, no
// database. The end-to-end run of `npm run reconcile` against the Daraja fake's export is in connectors.daraja.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  hasDifferences,
  parseColumnMap,
  parseGenericStatement,
  parseMpesaStatement,
  periodOf,
  reconcile,
  StatementError,
} from '../src/modules/reports/reconcile.js';
import type { ProviderRecord } from '../src/modules/reports/reports.repository.js';

const MPESA = [
  'Account Holder:,600000 - Example Ltd',
  'Statement Period:,24-11-2026 - 24-11-2026',
  '',
  'Receipt No.,Completion Time,Initiation Time,Details,Transaction Status,Paid In,Withdrawn,Balance,Balance Confirmed,Reason Type,Other Party Info,Linked Transaction ID,A/C No.',
  'TAB1234567,2026-11-24 10:15:02,2026-11-24 10:14:50,Pay Bill Online,Completed,"1,500.00",,"1,500.00",true,Pay Bill Online,2547***678 - A Payer,,order42',
  'TAB1234568,2026-11-24 10:20:00,2026-11-24 10:19:58,Reversal,Completed,,-1500.00,0.00,true,Reversal,2547***678 - A Payer,TAB1234567,',
  'TAB1234569,2026-11-24 11:00:00,2026-11-24 10:59:58,Pay Bill Online,Failed,25.00,,0.00,true,Pay Bill Online,2547***111 - B Payer,,',
].join('\n');

const exponent = () => 2;

function record(over: Partial<ProviderRecord>): ProviderRecord {
  return {
    kind: 'collection',
    id: '01890a5d-ac96-774b-bcce-b302099a8001',
    workspace_id: '01890a5d-ac96-774b-bcce-b302099a8000',
    status: 'successful',
    amount: 150_000,
    currency: 'KES',
    provider_reference: null,
    provider_receipt: 'TAB1234567',
    moved_at: new Date('2026-11-24T07:15:03Z'),
    ...over,
  };
}

describe('reading an M-Pesa organisation statement', () => {
  it('skips the lines before the header; Paid In is in, Withdrawn (with its minus) is out; Completion Time is Nairobi time', () => {
    const rows = parseMpesaStatement(MPESA);
    assert.deepEqual(
      rows.map((r) => [r.line, r.reference, r.direction, r.amount, r.successful, r.time.toISOString()]),
      [
        [5, 'TAB1234567', 'in', '1500.00', true, '2026-11-24T07:15:02.000Z'],
        [6, 'TAB1234568', 'out', '1500.00', true, '2026-11-24T07:20:00.000Z'],
        [7, 'TAB1234569', 'in', '25.00', false, '2026-11-24T08:00:00.000Z'],
      ],
    );
    assert.deepEqual(periodOf(rows), { from: rows[0]?.time, to: rows[2]?.time });
  });

  it('refuses a file without the columns, an amount that is none, and a time that is none, naming the line', () => {
    assert.throws(() => parseMpesaStatement('a,b\n1,2'), StatementError);
    assert.throws(
      () => parseMpesaStatement(MPESA.replace('"1,500.00",,"1,500.00"', 'lots,,0')),
      /line 5 \(TAB1234567\): neither Paid In nor Withdrawn is an amount/,
    );
    assert.throws(() => parseMpesaStatement(MPESA.replace('2026-11-24 10:15:02', 'yesterday')), /line 5: 'yesterday'/);
  });
});

describe('reading a generic CSV through a column map', () => {
  const CSV =
    'Ref,When,Amount,State,Way\nR1,2026-11-24T10:00:00Z,12.50,SUCCESS,credit\nR2,2026-11-24T11:00:00Z,-3.00,ok,\n';

  it('maps the columns; a direction column decides in or out, else the sign does; --success names what counts as done', () => {
    const rows = parseGenericStatement(CSV, parseColumnMap('reference=Ref,amount=Amount,status=State,time=When'), [
      'SUCCESS',
      'ok',
    ]);
    assert.deepEqual(
      rows.map((r) => [r.reference, r.direction, r.amount, r.successful]),
      [
        ['R1', 'in', '12.50', true],
        ['R2', 'out', '3.00', true],
      ],
    );
    const withWay = parseGenericStatement(
      CSV,
      parseColumnMap('reference=Ref,amount=Amount,status=State,time=When,direction=Way'),
    );
    assert.deepEqual(
      withWay.map((r) => [r.direction, r.successful]),
      [
        ['in', true],
        ['in', false],
      ],
    );
  });

  it('a column map missing a column, or with an unknown key, is refused', () => {
    assert.throws(() => parseColumnMap('reference=Ref,amount=Amount,status=State'), /needs time=/);
    assert.throws(() => parseColumnMap('reference=Ref,colour=Blue'), /'colour=Blue' is not one of/);
    assert.throws(
      () => parseGenericStatement(CSV, parseColumnMap('reference=Id,amount=Amount,status=State,time=When')),
      StatementError,
    );
  });
});

describe('comparing', () => {
  const rows = parseMpesaStatement(MPESA);

  it('matches by receipt; a refund matches the reversal row; a failed row unknown here is only counted', () => {
    const refund = record({
      kind: 'refund',
      id: 'r1',
      provider_receipt: 'TAB1234568',
      moved_at: rows[1]?.time ?? null,
    });
    const result = reconcile(rows, [record({}), refund], [record({}), refund], exponent);
    assert.equal(result.matched.length, 2);
    assert.equal(result.ignored.length, 1);
    assert.equal(hasDifferences(result), false);
  });

  it('lists amount, status and direction mismatches, rows only one side has, and exits on them', () => {
    const wrongAmount = record({ amount: 150_001 });
    const ourFailure = record({ kind: 'refund', id: 'r1', status: 'failed', provider_receipt: 'TAB1234568' });
    const extra = record({ id: 'c9', provider_receipt: 'TZZ0000000', moved_at: new Date('2026-11-24T07:30:00Z') });
    const result = reconcile(rows, [wrongAmount, ourFailure], [wrongAmount, extra], exponent);
    assert.deepEqual(
      result.mismatched.map((m) => m.why),
      [['amount: ours 150001, operator 150000 (minor units)'], ['status: ours failed, operator Completed']],
    );
    assert.deepEqual(
      result.oursOnly.map((r) => r.id),
      ['c9'],
    );
    assert.equal(hasDifferences(result), true);
    const inwards = record({ kind: 'payout', id: 'p1', provider_receipt: 'TAB1234567' });
    assert.match(
      reconcile(rows, [inwards], [], exponent).mismatched[0]?.why[0] ?? '',
      /^direction: ours out, operator in/,
    );
  });

  it('pairs a record without a receipt with the one row of its amount and direction near its time; never when two could fit', () => {
    const blind = record({ id: 'c2', provider_receipt: null, moved_at: new Date('2026-11-24T07:16:00Z') });
    const paired = reconcile(rows, [], [blind], exponent);
    assert.deepEqual(
      paired.probable.map((p) => [p.record.id, p.row.reference]),
      [['c2', 'TAB1234567']],
    );
    // Paired, so neither is left over (the reversal row, with no refund given here, is).
    assert.deepEqual(paired.oursOnly, []);
    assert.deepEqual(
      paired.operatorOnly.map((r) => r.reference),
      ['TAB1234568'],
    );
    const twin = record({ id: 'c3', provider_receipt: null, moved_at: new Date('2026-11-24T07:17:00Z') });
    const ambiguous = reconcile(rows, [], [blind, twin], exponent);
    assert.deepEqual(ambiguous.probable, []);
    assert.equal(ambiguous.oursOnly.length, 2);
    const late = record({ id: 'c4', provider_receipt: null, moved_at: new Date('2026-11-24T09:00:00Z') });
    assert.deepEqual(reconcile(rows, [], [late], exponent).probable, []);
  });
});
