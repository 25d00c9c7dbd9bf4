// Amounts between our integer minor units and the decimal major units operators write ("10.5" KES is 1050).

/** An amount in minor units as a decimal string in major units (1050 with exponent 2: "10.5"; 1000: "10"). */
export function majorUnits(amount: number, exponent: number): string {
  if (exponent === 0) return String(amount);
  const scale = 10 ** exponent;
  const whole = Math.trunc(amount / scale);
  const fraction = String(amount % scale)
    .padStart(exponent, '0')
    .replace(/0+$/, '');
  return fraction === '' ? String(whole) : `${whole}.${fraction}`;
}

/** An amount in the operator's major units back in minor units, or undefined when it is not a plain decimal. */
export function minorUnits(value: unknown, exponent: number): number | undefined {
  const s = typeof value === 'number' ? String(value) : value;
  if (typeof s !== 'string' || !/^\d+(\.\d+)?$/.test(s)) return undefined;
  const [whole = '0', fraction = ''] = s.split('.');
  if (fraction.replace(/0+$/, '').length > exponent) return undefined;
  return Number(whole) * 10 ** exponent + Number(fraction.padEnd(exponent, '0').slice(0, exponent) || '0');
}

/** "129.450000000000" → "129.45"; "5.000000000000" → "5". */
export function normaliseDecimal(value: string): string {
  return value.includes('.') ? value.replace(/0+$/, '').replace(/\.$/, '') : value;
}
