import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';
import { highEntropyMask } from './entropy-mask.js';

describe('highEntropyMask', () => {
  it('should keep the tokens at or above the (1 − ρ)-quantile (by hand)', () => {
    // sorted 0.1, 0.3, 1.5, 2.0; the median (ρ 0.5) interpolates 0.3 and 1.5: 0.9
    const result = highEntropyMask({ entropies: [[0.1, 2.0, 0.3, 1.5]], quantile: 0.5 });
    expect(result.threshold).toBeCloseTo(0.9, 14);
    expect(result.mask).toEqual([[0, 1, 0, 1]]);
    expect(result.keptFraction).toBe(0.5);
  });

  it("should give torch.quantile's thresholds (linear interpolation)", () => {
    // torch 1.13: torch.quantile(v, q) for these 11 values, float64
    const values = [2.31, 0.04, 1.17, 0.88, 3.05, 0.52, 1.93, 0.27, 2.64, 1.41, 0.09];
    const cases: [number, number][] = [
      [0.2, 2.31],
      [0.5, 1.17],
      [0.05, 2.8449999999999998],
      [0.67, 0.6280000000000001],
    ];
    for (const [quantile, torch] of cases) {
      // one row, and the same values split over ragged rows: the quantile is batch-wide
      const one = highEntropyMask({ entropies: [values], quantile });
      const split = highEntropyMask({
        entropies: [values.slice(0, 3), values.slice(3, 4), values.slice(4)],
        quantile,
      });
      expect(one.threshold).toBeCloseTo(torch, 12);
      expect(split.threshold).toBe(one.threshold);
      expect(split.mask.flat()).toEqual(one.mask[0]);
      expect(one.mask[0]).toEqual(values.map((value) => (value >= one.threshold ? 1 : 0)));
    }
    // ρ 0.2 of 11 tokens: 2.31, 2.64 and 3.05 (the quantile is an order statistic here)
    expect(highEntropyMask({ entropies: [values], quantile: 0.2 }).keptFraction).toBeCloseTo(
      3 / 11,
      14,
    );
  });

  it('should keep every token at ρ = 1 and only the maximum (with ties) at ρ = 0', () => {
    const entropies = [
      [0.5, 1.2],
      [1.2, 0.1],
    ];
    expect(highEntropyMask({ entropies, quantile: 1 }).mask).toEqual([
      [1, 1],
      [1, 1],
    ]);
    const top = highEntropyMask({ entropies, quantile: 0 });
    expect(top.threshold).toBe(1.2);
    expect(top.mask).toEqual([
      [0, 1],
      [1, 0],
    ]);
  });

  it('should leave masked tokens out of the quantile and never select them', () => {
    const result = highEntropyMask({
      entropies: [[9, 1, 2, 3]],
      mask: [[0, 1, 1, 1]],
      quantile: 0.5,
    });
    // the 9 is masked: the median of 1, 2, 3 is 2
    expect(result.threshold).toBe(2);
    expect(result.mask).toEqual([[0, 0, 1, 1]]);
    expect(result.keptFraction).toBeCloseTo(2 / 3, 14);
    const none = highEntropyMask({ entropies: [[1, 2]], mask: [[0, 0]], quantile: 0.2 });
    expect(none.threshold).toBe(Infinity);
    expect(none.mask).toEqual([[0, 0]]);
    expect(none.keptFraction).toBe(0);
  });

  it('should reject bad input naming the parameter', () => {
    expect(() => highEntropyMask({ entropies: [[1]], quantile: 1.5 })).toThrow(/'quantile'/);
    expect(() => highEntropyMask({ entropies: [[1]], mask: [[1, 1]], quantile: 0.2 })).toThrow(
      ShapeMismatchError,
    );
    expect(() =>
      highEntropyMask({ entropies: [[1]], quantile: 0.2, rho: 0.2 } as unknown as {
        entropies: number[][];
        quantile: number;
      }),
    ).toThrow(/'rho'/);
  });
});
