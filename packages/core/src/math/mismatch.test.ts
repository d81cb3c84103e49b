import { describe, expect, it } from 'vitest';
import { MISMATCH_DEFAULTS, mismatchCorrection } from './mismatch.js';

describe('mismatchCorrection', () => {
  const trainerLogprobs = [[-1.0, -2.0, -0.5], [-1.0]];
  const behaviourLogprobs = [[-1.1, -0.5, -0.5], [-2.5]];
  // token ratios: exp(0.1), exp(-1.5), 1 | exp(1.5)

  it('should truncate token ratios at the cap (TIS) and report metrics', () => {
    const { weights, mask, metrics } = mismatchCorrection({
      trainerLogprobs,
      behaviourLogprobs,
      mode: 'token-truncate',
      cap: 2,
    });
    expect(weights[0]![0]).toBeCloseTo(Math.exp(0.1), 14);
    expect(weights[0]![1]).toBeCloseTo(Math.exp(-1.5), 14);
    expect(weights[0]![2]).toBe(1);
    expect(weights[1]![0]).toBe(2); // exp(1.5) = 4.48 > 2
    expect(mask).toEqual([[1, 1, 1], [1]]);
    expect(metrics.maxAbsLogprobDiff).toBeCloseTo(1.5, 14);
    expect(metrics.meanAbsLogprobDiff).toBeCloseTo((0.1 + 1.5 + 0 + 1.5) / 4, 14);
    expect(metrics.isRatioMax).toBeCloseTo(Math.exp(1.5), 14);
    expect(metrics.isRatioMin).toBeCloseTo(Math.exp(-1.5), 14);
    expect(metrics.isRatioMean).toBeCloseTo(
      (Math.exp(0.1) + Math.exp(-1.5) + 1 + Math.exp(1.5)) / 4,
      14,
    );
    expect(metrics.truncatedFraction).toBe(0.25);
    expect(metrics.maskedFraction).toBe(0);
  });

  it('should mask tokens outside [lowerThreshold, cap] (MIS)', () => {
    const { weights, mask, metrics } = mismatchCorrection({
      trainerLogprobs,
      behaviourLogprobs,
      mode: 'token-mask',
      cap: 2,
      lowerThreshold: 0.5,
    });
    expect(mask).toEqual([[1, 0, 1], [0]]);
    expect(weights[0]![1]).toBe(0);
    expect(weights[1]![0]).toBe(0);
    expect(weights[0]![0]).toBeCloseTo(Math.exp(0.1), 14);
    expect(metrics.maskedFraction).toBe(0.5);
  });

  it('should use the product of token ratios per sequence in sequence modes', () => {
    const truncate = mismatchCorrection({
      trainerLogprobs,
      behaviourLogprobs,
      mode: 'sequence-truncate',
      cap: 3,
    });
    const ratio0 = Math.exp(0.1 - 1.5);
    expect(truncate.weights[0]).toEqual([ratio0, ratio0, ratio0].map((r) => expect.closeTo(r, 14)));
    expect(truncate.weights[1]).toEqual([3]);
    expect(truncate.metrics.truncatedFraction).toBe(0.25);
    const masked = mismatchCorrection({
      trainerLogprobs,
      behaviourLogprobs,
      mode: 'sequence-mask',
      cap: 3,
    });
    expect(masked.mask).toEqual([[1, 1, 1], [0]]);
    expect(masked.weights[1]).toEqual([0]);
    expect(masked.metrics.maskedFraction).toBe(0.25);
  });

  it('should respect an input mask', () => {
    const { weights, metrics } = mismatchCorrection({
      trainerLogprobs,
      behaviourLogprobs,
      mask: [[1, 0, 1], [0]],
      cap: 2,
    });
    expect(weights[0]![1]).toBe(0);
    expect(weights[1]![0]).toBe(0);
    expect(metrics.maxAbsLogprobDiff).toBeCloseTo(0.1, 14);
  });

  it('should reject bad input naming the parameter', () => {
    expect(() => mismatchCorrection({ trainerLogprobs, behaviourLogprobs: [[-1]] })).toThrow(
      /behaviourLogprobs/,
    );
    expect(() => mismatchCorrection({ trainerLogprobs, behaviourLogprobs, cap: 0.5 })).toThrow(
      /'cap'/,
    );
    expect(() =>
      mismatchCorrection({ trainerLogprobs, behaviourLogprobs, mode: 'x' as 'token-mask' }),
    ).toThrow(/'mode'/);
  });
});

describe('MISMATCH_DEFAULTS', () => {
  it('should be what mismatchCorrection applies when mode, cap and lowerThreshold are omitted', () => {
    // ratios exp(0.1), exp(-1.5), exp(1.5) ≈ 1.11, 0.22, 4.48: the cap and mode change the weights
    const input = {
      trainerLogprobs: [[-1.0, -2.0, -0.5]],
      behaviourLogprobs: [[-1.1, -0.5, -2.0]],
    };
    const omitted = mismatchCorrection(input);
    expect(omitted).toEqual(mismatchCorrection({ ...input, ...MISMATCH_DEFAULTS }));
    expect(omitted.weights).not.toEqual(mismatchCorrection({ ...input, cap: 2 }).weights);
    expect(omitted.weights).not.toEqual(
      mismatchCorrection({ ...input, mode: 'sequence-truncate' }).weights,
    );
  });
});
