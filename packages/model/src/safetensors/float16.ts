const scratch = new Float32Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

/** IEEE 754 half-precision bits → float32 value (exact). */
export function float16BitsToFloat32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : Number.NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/** float32 value → IEEE 754 half-precision bits, rounding to nearest even (overflow → ±Inf). */
export function float32ToFloat16Bits(value: number): number {
  scratch[0] = value;
  const x = scratchBits[0] as number;
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 0x1f) return sign | 0x7c00;
  if (halfExponent <= 0) {
    if (halfExponent < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - halfExponent;
    const halfway = 1 << (shift - 1);
    const remainder = mantissa & ((1 << shift) - 1);
    let result = mantissa >>> shift;
    if (remainder > halfway || (remainder === halfway && result & 1)) result++;
    return sign | result;
  }
  const remainder = mantissa & 0x1fff;
  let result = (halfExponent << 10) | (mantissa >>> 13);
  if (remainder > 0x1000 || (remainder === 0x1000 && result & 1)) result++;
  return sign | result;
}

/** bfloat16 bits → float32 value (exact). */
export function bfloat16BitsToFloat32(bits: number): number {
  scratchBits[0] = (bits & 0xffff) << 16;
  return scratch[0] as number;
}

/** float32 value → bfloat16 bits, rounding to nearest even (NaN stays NaN). */
export function float32ToBfloat16Bits(value: number): number {
  scratch[0] = value;
  const x = scratchBits[0] as number;
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return ((x >>> 16) | 0x40) & 0xffff;
  const rounded = x + 0x7fff + ((x >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}
