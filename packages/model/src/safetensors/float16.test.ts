import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bfloat16BitsToFloat32,
  float16BitsToFloat32,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from './float16.js';

describe('float16', () => {
  it('decodes hand-worked values', () => {
    expect(float16BitsToFloat32(0x3c00)).toBe(1);
    expect(float16BitsToFloat32(0xc000)).toBe(-2);
    expect(float16BitsToFloat32(0x7bff)).toBe(65504);
    expect(float16BitsToFloat32(0x0001)).toBe(2 ** -24);
    expect(float16BitsToFloat32(0x3555)).toBeCloseTo(0.333251953125, 12);
    expect(float16BitsToFloat32(0x7c00)).toBe(Infinity);
    expect(float16BitsToFloat32(0x7e00)).toBeNaN();
    expect(Object.is(float16BitsToFloat32(0x8000), -0)).toBe(true);
  });

  it('round-trips every non-NaN half bit pattern', () => {
    for (let bits = 0; bits < 65536; bits++) {
      const value = float16BitsToFloat32(bits);
      if (Number.isNaN(value)) {
        expect(Number.isNaN(float16BitsToFloat32(float32ToFloat16Bits(value)))).toBe(true);
        continue;
      }
      expect(float32ToFloat16Bits(value)).toBe(bits);
    }
  });

  it('rounds to the nearest half, ties to even, overflow to infinity', () => {
    expect(float32ToFloat16Bits(1 + 2 ** -11)).toBe(0x3c00); // tie → even (1.0)
    expect(float32ToFloat16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie → even (1 + 2^-9)
    expect(float32ToFloat16Bits(65520)).toBe(0x7c00);
    expect(float32ToFloat16Bits(2 ** -25)).toBe(0); // tie between 0 and the smallest subnormal
    expect(float32ToFloat16Bits(2 ** -25 * 1.5)).toBe(1);
  });

  it('is the nearest representable half (property)', () => {
    fc.assert(
      fc.property(fc.float({ min: -60000, max: 60000, noNaN: true }), (value) => {
        const rounded = float16BitsToFloat32(float32ToFloat16Bits(value));
        const bits = float32ToFloat16Bits(value);
        // Neighbours one ulp away are never closer.
        for (const neighbour of [bits - 1, bits + 1]) {
          if ((neighbour & 0x7fff) > 0x7bff || neighbour < 0 || neighbour > 0xffff) continue;
          const other = float16BitsToFloat32(neighbour);
          if ((Math.sign(other) || 1) !== (Math.sign(rounded) || 1)) continue;
          expect(Math.abs(other - value)).toBeGreaterThanOrEqual(Math.abs(rounded - value));
        }
      }),
      { seed: 11, numRuns: 2000 },
    );
  });
});

describe('bfloat16', () => {
  it('decodes hand-worked values and round-trips every non-NaN pattern', () => {
    expect(bfloat16BitsToFloat32(0x3f80)).toBe(1);
    expect(bfloat16BitsToFloat32(0xc0a0)).toBe(-5);
    expect(bfloat16BitsToFloat32(0x7f80)).toBe(Infinity);
    for (let bits = 0; bits < 65536; bits++) {
      const value = bfloat16BitsToFloat32(bits);
      if (Number.isNaN(value)) {
        expect(Number.isNaN(bfloat16BitsToFloat32(float32ToBfloat16Bits(value)))).toBe(true);
      } else {
        expect(float32ToBfloat16Bits(value)).toBe(bits);
      }
    }
  });

  it('rounds ties to even and has relative error ≤ 2^-8 (unit roundoff) (property)', () => {
    expect(float32ToBfloat16Bits(1 + 2 ** -8)).toBe(0x3f80);
    expect(float32ToBfloat16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    fc.assert(
      fc.property(
        fc.float({
          min: Math.fround(-1e30),
          max: Math.fround(1e30),
          noNaN: true,
          noDefaultInfinity: true,
        }),
        (value) => {
          const rounded = bfloat16BitsToFloat32(float32ToBfloat16Bits(value));
          if (Math.abs(value) < 1e-30) return;
          expect(Math.abs(rounded - value) / Math.abs(value)).toBeLessThanOrEqual(2 ** -8);
        },
      ),
      { seed: 5, numRuns: 2000 },
    );
  });
});
