/**
 * Exact rational numbers on BigInt, used for integers, fractions and terminating decimals so that
 * `0.5`, `1/2` and `\frac{2}{4}` compare exactly (no float rounding). Internal.
 */
export type Rational = { readonly num: bigint; readonly den: bigint };

/**
 * Largest numerator/denominator bit length of a fraction kept exact (reducing it takes a gcd, whose
 * cost grows with the square of the size); beyond it, callers fall back to floats.
 */
export const MAX_RATIONAL_BITS = 4096;
/** Largest integer kept exact, in bits (`2^{10000}`, `1000!`): integers need no gcd. */
export const MAX_INTEGER_BITS = 32768;

function abs(value: bigint): bigint {
  return value < 0n ? -value : value;
}

function gcd(a: bigint, b: bigint): bigint {
  let x = abs(a);
  let y = abs(b);
  while (y !== 0n) {
    const t = x % y;
    x = y;
    y = t;
  }
  return x;
}

const TWO_POW_32 = 1n << 32n;

function bitLength(value: bigint): number {
  if (value === 0n) return 0;
  const magnitude = abs(value);
  if (magnitude < TWO_POW_32) return 32 - Math.clz32(Number(magnitude)); // no string for small values
  const hex = magnitude.toString(16);
  return (hex.length - 1) * 4 + (32 - Math.clz32(Number.parseInt(hex[0]!, 16)));
}

/** A normalized rational (den > 0, lowest terms), or null for a zero denominator or a huge value. */
export function rational(num: bigint, den = 1n): Rational | null {
  if (den === 0n) return null;
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  if (den === 1n) return bitLength(num) > MAX_INTEGER_BITS ? null : { num, den };
  if (bitLength(num) > 2 * MAX_RATIONAL_BITS || bitLength(den) > 2 * MAX_RATIONAL_BITS) {
    return null; // refuse before an expensive gcd
  }
  const divisor = gcd(num, den);
  const result = divisor > 1n ? { num: num / divisor, den: den / divisor } : { num, den };
  if (bitLength(result.num) > MAX_RATIONAL_BITS || bitLength(result.den) > MAX_RATIONAL_BITS) {
    return null;
  }
  return result;
}

export function add(a: Rational, b: Rational): Rational | null {
  return rational(a.num * b.den + b.num * a.den, a.den * b.den);
}

export function sub(a: Rational, b: Rational): Rational | null {
  return rational(a.num * b.den - b.num * a.den, a.den * b.den);
}

export function mul(a: Rational, b: Rational): Rational | null {
  return rational(a.num * b.num, a.den * b.den);
}

export function div(a: Rational, b: Rational): Rational | null {
  return rational(a.num * b.den, a.den * b.num);
}

export function neg(a: Rational): Rational {
  return { num: -a.num, den: a.den };
}

/** `a^k` for an integer exponent; null when the result would be too large to keep exact. */
export function pow(a: Rational, exponent: Rational): Rational | null {
  if (exponent.den !== 1n) return null;
  const k = exponent.num;
  if (k === 0n) return a.num === 0n ? null : { num: 1n, den: 1n };
  const magnitude = abs(k);
  const bits = Math.max(bitLength(a.num), bitLength(a.den));
  const limit = a.den === 1n && k > 0n ? MAX_INTEGER_BITS : MAX_RATIONAL_BITS;
  if (magnitude > 1_000_000n || Number(magnitude) * bits > limit + bits) return null;
  const base = k > 0n ? a : a.num === 0n ? null : { num: a.den, den: a.num };
  if (!base) return null;
  return rational(base.num ** magnitude, base.den ** magnitude);
}

export function equals(a: Rational, b: Rational): boolean {
  return a.num === b.num && a.den === b.den;
}

export function isInteger(a: Rational): boolean {
  return a.den === 1n;
}

/** Float approximation (exact for small values; handles huge BigInts without overflow to NaN). */
export function toNumber(a: Rational): number {
  const num = Number(a.num);
  const den = Number(a.den);
  if (Number.isFinite(num) && Number.isFinite(den)) return num / den;
  // Scale both down to keep the ratio.
  const shift = BigInt(Math.max(bitLength(a.num), bitLength(a.den)) - 1000);
  const scale = 1n << (shift > 0n ? shift : 0n);
  return Number(a.num / scale) / Number(a.den / scale || 1n);
}

/**
 * Parses a plain decimal numeral (`-12`, `3.50`, `.5`, `1e-3`, `2.5E+4`) exactly. Returns the value
 * and the number of digits after the decimal point as written (`3.50` → 2), or null.
 */
export function parseDecimal(text: string): { value: Rational; decimalPlaces: number } | null {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?$/.exec(text);
  if (!match) return null;
  const [, sign = '', whole = '', fraction = '', exponentText] = match;
  if (whole === '' && fraction === '') return null;
  const digits = `${whole}${fraction}` || '0';
  let num = BigInt(digits);
  let den = 10n ** BigInt(fraction.length);
  if (exponentText !== undefined) {
    const exponent = Number(exponentText);
    if (Math.abs(exponent) > 1000) return null;
    if (exponent >= 0) num *= 10n ** BigInt(exponent);
    else den *= 10n ** BigInt(-exponent);
  }
  const value = rational(sign === '-' ? -num : num, den);
  if (!value) return null;
  const decimalPlaces = exponentText === undefined ? fraction.length : 0;
  return { value, decimalPlaces };
}
