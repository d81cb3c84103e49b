import { describe, expect, it } from 'vitest';
import { entropyFromLogits, logSoftmax, logSumExp, softmax } from './numeric.js';

describe('logSumExp / logSoftmax / softmax', () => {
  it('should match hand values and stay stable for large logits', () => {
    expect(logSumExp([0, 0])).toBeCloseTo(Math.LN2, 15);
    expect(logSumExp([1000, 1000])).toBeCloseTo(1000 + Math.LN2, 10);
    expect(logSumExp([])).toBe(-Infinity);
    expect(logSumExp([-Infinity, 0])).toBe(0);
    expect([...logSoftmax([0, 0])]).toEqual([-Math.LN2, -Math.LN2]);
    const p = softmax([1, 2, 3]);
    const z = Math.exp(1) + Math.exp(2) + Math.exp(3);
    expect(p[2]).toBeCloseTo(Math.exp(3) / z, 15);
    expect(p.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 15);
  });

  it('should compute the entropy of the softmax', () => {
    expect(entropyFromLogits([0, 0, 0, 0])).toBeCloseTo(Math.log(4), 14);
    expect(entropyFromLogits([0, -Infinity])).toBe(0);
    const p = [0.7, 0.2, 0.1];
    const expected = -p.reduce((sum, x) => sum + x * Math.log(x), 0);
    expect(entropyFromLogits(p.map(Math.log))).toBeCloseTo(expected, 14);
  });

  it('should reject NaN and +Infinity', () => {
    expect(() => logSoftmax([0, Number.NaN])).toThrow(/logits/);
    expect(() => logSumExp([Infinity])).toThrow(/values/);
  });
});
