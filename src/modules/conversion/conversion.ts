// Conversion and fees in integer minor units. One rounding rule everywhere: every derived amount (a
// converted amount, a percentage fee) is rounded DOWN to a whole minor unit of its currency. What the
// rounding leaves (less than one minor unit) stays with the service's FX position; no minor unit is made
// or lost (the ledger's postings balance in each currency, see postings.ts).

/** Rates are exact decimals with up to 12 places (see market data). */
export const RATE_PLACES = 12;
const RATE_SCALE = 10n ** BigInt(RATE_PLACES);

/** "129.45" → 129_450_000_000_000n: the rate in units of 10^-12. */
export function rateUnits(rate: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,12}))?$/.exec(rate);
  if (!match) throw new Error(`'${rate}' is not a decimal rate`);
  const whole = match[1] ?? '0';
  const fraction = (match[2] ?? '').padEnd(RATE_PLACES, '0');
  return BigInt(whole) * RATE_SCALE + BigInt(fraction);
}

function toSafe(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`${what} is too large`);
  return Number(value);
}

/**
 * `amount` minor units of a source (exponent `sourceExponent`) at `rate` target units per source unit, in
 * minor units of the target (exponent `targetExponent`), rounded down:
 *   floor(amount × rate × 10^targetExponent / 10^sourceExponent).
 */
export function convert(amount: number, sourceExponent: number, rate: string, targetExponent: number): number {
  const numerator = BigInt(amount) * rateUnits(rate) * 10n ** BigInt(targetExponent);
  const denominator = 10n ** BigInt(sourceExponent) * RATE_SCALE;
  return toSafe(numerator / denominator, 'the converted amount');
}

/** A fee of `fixed` minor units plus `bps` basis points of `gross` (rounded down), never more than `gross`. */
export function feeOf(gross: number, fixed: number, bps: number): number {
  const percentage = (BigInt(gross) * BigInt(bps)) / 10_000n;
  return Math.min(gross, fixed + toSafe(percentage, 'the fee'));
}

export interface Quote {
  /** The converted amount before the fee. */
  gross: number;
  fee: number;
  /** What reaches the recipient (or the balance): gross − fee. */
  net: number;
}

/** Converts, then takes the fee from the converted amount. With no rate (same currency) nothing is converted. */
export function quote(
  amount: number,
  conversion: { sourceExponent: number; rate: string; targetExponent: number } | undefined,
  fee: { fixed: number; bps: number },
): Quote {
  const gross = conversion
    ? convert(amount, conversion.sourceExponent, conversion.rate, conversion.targetExponent)
    : amount;
  const charged = feeOf(gross, fee.fixed, fee.bps);
  return { gross, fee: charged, net: gross - charged };
}

/** A conversion whose result is beyond 2^53 minor units (an absurd rate or amount) is not made: undefined. */
export function convertible<T>(make: () => T): T | undefined {
  try {
    return make();
  } catch (err) {
    if (err instanceof RangeError) return undefined;
    throw err;
  }
}
