import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_INTEGER_BITS, MAX_RATIONAL_BITS, rational } from './rational.js';

describe('rational size limits (bit lengths on both sides of 2^32)', () => {
  it('should keep integers up to MAX_INTEGER_BITS bits and refuse longer ones', () => {
    expect(rational(2n ** BigInt(MAX_INTEGER_BITS - 1))).not.toBeNull();
    expect(rational(-(2n ** BigInt(MAX_INTEGER_BITS - 1)))).not.toBeNull();
    expect(rational(2n ** BigInt(MAX_INTEGER_BITS))).toBeNull();
    expect(rational(4294967295n)).toEqual({ num: 4294967295n, den: 1n });
    expect(rational(4294967296n)).toEqual({ num: 4294967296n, den: 1n });
  });

  it('should keep reduced fractions up to MAX_RATIONAL_BITS bits and refuse longer ones', () => {
    expect(rational(1n, 2n ** BigInt(MAX_RATIONAL_BITS - 1))).not.toBeNull();
    expect(rational(1n, 2n ** BigInt(MAX_RATIONAL_BITS))).toBeNull();
    expect(rational(6n, -4n)).toEqual({ num: -3n, den: 2n });
  });

  it('should reduce small fractions exactly (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }),
        fc.bigInt({ min: 1n, max: 2n ** 40n }),
        (num, den) => {
          const value = rational(num * 3n, den * 3n)!;
          expect(value.num * den).toBe(num * value.den);
        },
      ),
      { seed: 3 },
    );
  });
});
