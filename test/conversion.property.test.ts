// Properties of the integer money of src/modules/conversion/ (fast-check): conversion and fees rounded DOWN to
// a whole minor unit, checked against a BigInt oracle written here from the documented formula (the rate parsed
// from its decimal string by this file, not by rateUnits); and conservation of its postings, applied to an
// in-memory ledger across random runs of deposits, autoconvert credits and payouts reserved, settled or released.
// Pure functions only: no database, no app.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  CUSTODY_ASSETS,
  FEE_INCOME,
  FX_CONVERSION,
  PAYOUTS_IN_FLIGHT,
  PROVIDER_RECEIVABLE,
  WORKSPACE_AVAILABLE,
  type Posting,
} from '../src/modules/ledger/ledger.repository.js';
import { convert, feeOf, quote, rateUnits } from '../src/modules/conversion/conversion.js';
import {
  autoconvertPostings,
  depositPostings,
  payoutReleasePostings,
  payoutReservePostings,
  payoutSettlePostings,
  type PayoutMoney,
} from '../src/modules/conversion/postings.js';

const RUNS = 2_000;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** A rate's exact value as num / 10^places, from its decimal string (this file's own parsing). */
function parseRate(rate: string): { num: bigint; places: number } {
  const [whole, fraction = ''] = rate.split('.');
  return { num: BigInt(`${whole}${fraction}`), places: fraction.length };
}
/** floor(amount × rate × 10^te / 10^se), in BigInt. */
function oracleConvert(amount: number, se: number, rate: string, te: number): bigint {
  const { num, places } = parseRate(rate);
  return (BigInt(amount) * num * pow10(te)) / (pow10(places) * pow10(se));
}

/** Decimal rate strings with 0 to 12 places (whole part up to `maxWhole`), plus a few real-looking ones. */
const rateArb = (maxWhole: number): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constantFrom('0.000123456789', '129.45', '1600', '3700.5', '0.0078', '1'),
    fc
      .tuple(
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: maxWhole })),
        fc.integer({ min: 0, max: 12 }),
        fc.array(fc.constantFrom(...'0123456789'), { minLength: 12, maxLength: 12 }),
      )
      .map(([whole, places, digits]) => (places === 0 ? `${whole}` : `${whole}.${digits.slice(0, places).join('')}`)),
  );

describe('convert: floor(amount × rate × 10^te / 10^se), exactly', () => {
  it(`${RUNS} random amounts, rates and exponents`, () => {
    let inRange = 0;
    let tooLarge = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e12 }),
        rateArb(100_000),
        fc.constantFrom(0, 2, 6),
        fc.constantFrom(0, 2),
        (amount, rate, se, te) => {
          const expected = oracleConvert(amount, se, rate, te);
          const { num, places } = parseRate(rate);
          const R = num * pow10(12 - places); // the rate in 10^-12 units
          assert.equal(rateUnits(rate), R, `rateUnits(${rate})`);
          if (expected > MAX_SAFE) {
            tooLarge += 1;
            assert.throws(() => convert(amount, se, rate, te), RangeError);
            return;
          }
          inRange += 1;
          const gross = convert(amount, se, rate, te);
          assert.ok(Number.isSafeInteger(gross) && gross >= 0, `convert gave ${gross}`);
          assert.equal(BigInt(gross), expected, `convert(${amount}, ${se}, ${rate}, ${te})`);
          // Rounded down, and less than one minor unit lost.
          const exact = BigInt(amount) * R * pow10(te);
          const unit = pow10(se + 12);
          assert.ok(BigInt(gross) * unit <= exact, 'rounded up');
          assert.ok(exact < (BigInt(gross) + 1n) * unit, 'lost a whole minor unit or more');
        },
      ),
      { numRuns: RUNS },
    );
    assert.ok(inRange > RUNS / 2 && tooLarge > 0, `in range ${inRange}, too large ${tooLarge}`);
  });

  it('rateUnits refuses what is not a decimal of at most 12 places', () => {
    for (const bad of ['', '.5', '1.', '-1', '1e3', '1.0000000000001', ' 1', '1,5'])
      assert.throws(() => rateUnits(bad), Error, bad);
  });
});

describe('feeOf and quote', () => {
  it(`feeOf = min(gross, fixed + floor(gross × bps / 10000)) over ${RUNS} runs`, () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        (gross, fixed, bps) => {
          const pct = (BigInt(gross) * BigInt(bps)) / 10_000n;
          const expected = BigInt(fixed) + pct < BigInt(gross) ? BigInt(fixed) + pct : BigInt(gross);
          assert.equal(BigInt(feeOf(gross, fixed, bps)), expected, `feeOf(${gross}, ${fixed}, ${bps})`);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it(`quote: gross = net + fee, fee and net ≥ 0, with and without a conversion, over ${RUNS} runs`, () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e10 }),
        fc.option(
          fc.record({
            sourceExponent: fc.constantFrom(0, 2, 6),
            rate: rateArb(1_000),
            targetExponent: fc.constantFrom(0, 2),
          }),
        ),
        fc.record({ fixed: fc.integer({ min: 0, max: 100_000 }), bps: fc.integer({ min: 0, max: 10_000 }) }),
        (amount, conversion, fee) => {
          const q = quote(amount, conversion ?? undefined, fee);
          const gross = conversion
            ? oracleConvert(amount, conversion.sourceExponent, conversion.rate, conversion.targetExponent)
            : BigInt(amount);
          assert.equal(BigInt(q.gross), gross, 'gross');
          const charged = BigInt(fee.fixed) + (gross * BigInt(fee.bps)) / 10_000n;
          assert.equal(BigInt(q.fee), charged < gross ? charged : gross, 'fee');
          assert.equal(q.gross, q.net + q.fee, 'gross = net + fee');
          assert.ok(q.fee >= 0 && q.net >= 0, `fee ${q.fee}, net ${q.net}`);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('documented rounding, by example', () => {
  it('rounds down, never to nearest', () => {
    // 12.345679 USDT × 129.45 = 1598.14814655 KES = 159814.81… cents.
    assert.equal(convert(12_345_679, 6, '129.45', 2), 159_814);
    // The same into a currency of exponent 0: 1598.148… whole units.
    assert.equal(convert(12_345_679, 6, '129.45', 0), 1598);
    assert.equal(feeOf(1598, 0, 100), 15); // 15.98
    assert.equal(feeOf(159_814, 0, 100), 1598); // 1598.14
    assert.deepEqual(
      quote(12_345_679, { sourceExponent: 6, rate: '129.45', targetExponent: 2 }, { fixed: 0, bps: 100 }),
      { gross: 159_814, fee: 1598, net: 158_216 },
    );
    assert.equal(convert(999_999, 6, '1', 2), 99); // 99.9999 cents
    assert.equal(convert(1, 6, '1600', 2), 0); // 0.16 of a cent
    assert.equal(convert(1_000_000, 6, '3700.5', 0), 3700);
    assert.equal(convert(1, 0, '0.000123456789', 2), 0);
    assert.equal(convert(1_000_123, 2, '0.000123456789', 6), 1_234_719); // 10001.23 × 0.000123456789 = 1.234719…
    assert.equal(feeOf(50, 100, 0), 50, 'the fee never exceeds the gross');
    assert.equal(feeOf(199, 0, 50), 0); // 0.995
    assert.deepEqual(quote(500, undefined, { fixed: 10, bps: 250 }), { gross: 500, fee: 22, net: 478 }); // 10 + 12.5
  });
});

// ---------------------------------------------------------------------------------------------------------
// Conservation: random runs on one workspace, every posting applied to an in-memory ledger.

const EXPONENT: Record<string, number> = { USDT: 6, USDC: 6, KES: 2, GHS: 2, UGX: 0 };
const FIATS = ['KES', 'GHS', 'UGX'] as const;

type Op =
  | {
      kind: 'deposit';
      asset: 'USDT' | 'USDC';
      amount: number;
      convert: { currency: string; rate: string; bps: number } | null;
    }
  | { kind: 'commit'; source: number; amount: number; target: number; rate: string; fixed: number; bps: number }
  | { kind: 'resolve'; pick: number; settle: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('deposit' as const),
      asset: fc.constantFrom('USDT' as const, 'USDC' as const),
      amount: fc.oneof(
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 100 }) },
        { weight: 5, arbitrary: fc.integer({ min: 1, max: 1_000_000_000 }) },
      ),
      convert: fc.option(
        fc.record({
          currency: fc.constantFrom(...FIATS),
          rate: rateArb(5_000),
          bps: fc.constantFrom(0, 50, 100, 100, 9_999, 10_000),
        }),
      ),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('commit' as const),
      source: fc.nat(),
      amount: fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER)), // the latter: the whole available balance
      target: fc.nat(),
      rate: rateArb(5_000),
      fixed: fc.constantFrom(0, 0, 1, 25, 1_000),
      bps: fc.constantFrom(0, 30, 100, 250),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('resolve' as const), pick: fc.nat(), settle: fc.boolean() }) },
);

/** What the ledger should hold, per currency, as plain sums of the amounts moved. */
class Model {
  readonly owed = new Map<string, number>(); // deposits credited + net credits − reserved + released
  readonly fees = new Map<string, number>(); // fees of credits and of settled payouts
  readonly inFlight = new Map<string, number>(); // reserved, not yet settled or released
  readonly custody = new Map<string, number>();
  readonly paidOut = new Map<string, number>(); // recipients' amounts of settled payouts
  readonly fx = new Map<string, number>(); // converted amounts out minus source amounts in
  readonly open: PayoutMoney[] = [];
  add(m: Map<string, number>, currency: string, amount: number): void {
    m.set(currency, (m.get(currency) ?? 0) + amount);
  }
}

const key = (account: string, currency: string): string => `${account} ${currency}`;

/** Checks one posting as postMany does (zero lines dropped; at least two left; they sum to zero) and applies it. */
function apply(ledger: Map<string, number>, p: Posting): void {
  const kept = p.lines.filter((l) => l.amount !== 0);
  assert.ok(kept.length >= 2, `${p.kind} of ${p.objectId} has ${kept.length} non-zero lines`);
  assert.ok(
    kept.every((l) => Number.isSafeInteger(l.amount)),
    `${p.kind}: an amount is not a safe integer`,
  );
  assert.equal(
    kept.reduce((s, l) => s + l.amount, 0),
    0,
    `${p.kind} of ${p.objectId} does not sum to zero`,
  );
  for (const l of kept)
    ledger.set(key(l.account, p.currency), (ledger.get(key(l.account, p.currency)) ?? 0) + l.amount);
}

function check(ledger: Map<string, number>, m: Model): void {
  const currencies = new Set([...ledger.keys()].map((k) => k.split(' ')[1] as string));
  for (const c of Object.keys(EXPONENT)) currencies.add(c);
  const bal = (account: string, c: string): number => ledger.get(key(account, c)) ?? 0;
  const get = (map: Map<string, number>, c: string): number => map.get(c) ?? 0;
  for (const c of currencies) {
    const total = [...ledger.entries()].filter(([k]) => k.endsWith(` ${c}`)).reduce((s, [, v]) => s + v, 0);
    assert.equal(total, 0, `${c}: the balances sum to ${total}, not 0`);
    assert.equal(bal(WORKSPACE_AVAILABLE, c), 0 - get(m.owed, c), `${c}: workspace_available`);
    assert.equal(bal(FEE_INCOME, c), 0 - get(m.fees, c), `${c}: fee_income`);
    assert.equal(bal(PAYOUTS_IN_FLIGHT, c), 0 - get(m.inFlight, c), `${c}: payouts_in_flight`);
    assert.equal(bal(CUSTODY_ASSETS, c), get(m.custody, c), `${c}: custody_assets`);
    assert.equal(bal(PROVIDER_RECEIVABLE, c), 0 - get(m.paidOut, c), `${c}: provider_receivable`);
    assert.equal(bal(FX_CONVERSION, c), get(m.fx, c), `${c}: fx_conversion`);
    assert.ok(
      bal(WORKSPACE_AVAILABLE, c) <= 0,
      `${c}: the available balance is ${bal(WORKSPACE_AVAILABLE, c)} (the workspace owes us)`,
    );
    assert.ok(bal(PAYOUTS_IN_FLIGHT, c) <= 0, `${c}: payouts_in_flight is positive`);
  }
}

function step(ledger: Map<string, number>, m: Model, op: Op, n: number, stats: Map<string, number>): void {
  const count = (what: string): void => void stats.set(what, (stats.get(what) ?? 0) + 1);
  const post = (ps: Posting[]): void => ps.forEach((p) => apply(ledger, p));
  if (op.kind === 'deposit') {
    m.add(m.custody, op.asset, op.amount);
    const q =
      op.convert &&
      quote(
        op.amount,
        { sourceExponent: 6, rate: op.convert.rate, targetExponent: EXPONENT[op.convert.currency] as number },
        { fixed: 0, bps: op.convert.bps },
      );
    if (op.convert && q && q.net > 0) {
      // As deposits.service credits: converted when the net is at least one minor unit, else in the asset.
      count('autoconvert');
      post(
        autoconvertPostings(
          `credit-${n}`,
          { asset: op.asset, amount: op.amount },
          { currency: op.convert.currency, gross: q.gross, fee: q.fee },
        ),
      );
      m.add(m.fx, op.asset, -op.amount);
      m.add(m.fx, op.convert.currency, q.gross);
      m.add(m.owed, op.convert.currency, q.net);
      m.add(m.fees, op.convert.currency, q.fee);
    } else {
      count(op.convert ? 'deposit in the asset (too small to convert)' : 'deposit in the asset');
      post(depositPostings(`deposit-${n}`, op.asset, op.amount));
      m.add(m.owed, op.asset, op.amount);
    }
  } else if (op.kind === 'commit') {
    const funded = [...m.owed.entries()].filter(([, v]) => v > 0).sort(([a], [b]) => a.localeCompare(b));
    const source = funded[op.source % Math.max(funded.length, 1)];
    if (!source) return void count('commit: nothing available');
    const [from, available] = source;
    const amount = op.amount === Number.MAX_SAFE_INTEGER ? available : 1 + (op.amount % available);
    // A route pays out of an asset (converted into the payout currency) or out of the payout currency itself.
    const to = EXPONENT[from] === 6 ? (FIATS[op.target % FIATS.length] as string) : from;
    const conversion =
      to === from
        ? undefined
        : { sourceExponent: EXPONENT[from] as number, rate: op.rate, targetExponent: EXPONENT[to] as number };
    const q = quote(amount, conversion, { fixed: op.fixed, bps: op.bps });
    if (q.net <= 0) return void count('commit: does not cover the fee');
    assert.ok(amount <= available, 'the model reserved more than is available');
    const p: PayoutMoney = {
      id: `payout-${n}`,
      source_currency: from,
      source_amount: amount,
      currency: to,
      gross_amount: q.gross,
      fee: q.fee,
      amount: q.net,
    };
    count(to === from ? 'commit: same currency' : 'commit: converted');
    post(payoutReservePostings(p));
    m.open.push(p);
    m.add(m.owed, from, -amount);
    m.add(m.inFlight, from, amount);
  } else {
    if (m.open.length === 0) return void count('resolve: nothing open');
    const [p] = m.open.splice(op.pick % m.open.length, 1) as [PayoutMoney];
    m.add(m.inFlight, p.source_currency, -p.source_amount);
    if (op.settle) {
      count(p.currency === p.source_currency ? 'settle: same currency' : 'settle: converted');
      post(payoutSettlePostings(p));
      m.add(m.fees, p.currency, p.fee);
      m.add(m.paidOut, p.currency, p.amount);
      if (p.currency !== p.source_currency) {
        m.add(m.fx, p.source_currency, -p.source_amount);
        m.add(m.fx, p.currency, p.gross_amount);
      }
    } else {
      count('release');
      post(payoutReleasePostings(p));
      m.add(m.owed, p.source_currency, p.source_amount);
    }
  }
}

describe('conservation of the deposit, autoconvert and payout postings', () => {
  const runs = 500;
  it(`${runs} random runs of 20 to 80 operations: no minor unit made or lost, every account as the model says`, () => {
    const stats = new Map<string, number>();
    let operations = 0;
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 20, maxLength: 80 }), (ops) => {
        const ledger = new Map<string, number>();
        const m = new Model();
        for (const [i, op] of ops.entries()) {
          try {
            step(ledger, m, op, i, stats);
            check(ledger, m);
          } catch (err) {
            throw new Error(`operation #${i} ${JSON.stringify(op)}: ${(err as Error).message}`, { cause: err });
          }
          operations += 1;
        }
      }),
      { numRuns: runs, includeErrorInReport: true },
    );
    console.log(`${operations} operations in ${runs} runs`);
    for (const [what, n] of [...stats.entries()].sort()) console.log(`  ${what}: ${n}`);
    for (const what of [
      'autoconvert',
      'deposit in the asset',
      'deposit in the asset (too small to convert)',
      'commit: same currency',
      'commit: converted',
      'commit: does not cover the fee',
      'settle: same currency',
      'settle: converted',
      'release',
    ]) {
      assert.ok((stats.get(what) ?? 0) > 0, `the runs never produced "${what}"`);
    }
  });
});
