// Payer phone numbers as a partner may see them (a liquidity provider reading risk signals): enough to match against
// its own records, not enough to call. The rule, in one place:
//
//   keep the `+` and the country code, and the last 4 digits of the national number (the last 2 when the national
//   number has fewer than 8 digits, so at least half of it is always hidden); every other digit becomes one `*`.
//   +254712345678 → +254*****5678, +12025550123 → +1******0123, +2481234567 → +248*****67.
//
// Logs mask numbers their own way (`maskPhone` in logging.ts), keeping less: a log needs no matching.

// ITU-T E.164 country codes are prefix-free: 1 and 7 are the one-digit codes, these the two-digit ones, and every
// other code has three digits.
const TWO_DIGIT_CODES = new Set(
  (
    '20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 ' +
    '60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98'
  ).split(' '),
);

function countryCodeLength(digits: string): number {
  if (digits.startsWith('1') || digits.startsWith('7')) return 1;
  return TWO_DIGIT_CODES.has(digits.slice(0, 2)) ? 2 : 3;
}

/**
 * One phone number, masked by the rule above. A value that is not in E.164 form (no `+`) keeps no country code: its
 * digits are masked the same way, all but the last 4 (or 2).
 */
export function maskPhoneNumber(phone: string): string {
  const head = phone.startsWith('+') ? `+${phone.slice(1, 1 + countryCodeLength(phone.slice(1)))}` : '';
  const rest = phone.slice(head.length);
  const digits = rest.replace(/\D/g, '').length;
  const keep = digits >= 8 ? 4 : Math.min(2, Math.floor(digits / 2));
  let toMask = digits - keep;
  return head + rest.replace(/\d/g, (d) => (toMask-- > 0 ? '*' : d));
}

// An E.164 number inside free text: `+`, then 8 to 15 digits, not part of a longer run of digits.
const E164_IN_TEXT = /(?<![\d+])\+[1-9]\d{7,14}(?!\d)/g;

/** Every E.164 number written in `text` (no spaces inside it), masked by the rule above; the rest unchanged. */
export function maskPhoneNumbersIn(text: string): string {
  return text.replace(E164_IN_TEXT, maskPhoneNumber);
}

/** A JSON value with every E.164 number in its strings (object keys too) masked, at any depth. */
export function maskPhoneNumbersInJson(value: unknown): unknown {
  if (typeof value === 'string') return maskPhoneNumbersIn(value);
  if (Array.isArray(value)) return value.map(maskPhoneNumbersInJson);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [maskPhoneNumbersIn(k), maskPhoneNumbersInJson(v)]),
    );
  return value;
}
