import type { TopLogprob } from '@rlvr/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { groupConfidences, tokenConfidences, traceConfidence } from './confidence.js';

/** Top logprobs whose token confidences are exactly `confidences` (k = 2: −c ± 0.5). */
function tops(confidences: readonly number[]): TopLogprob[][] {
  return confidences.map((c) => [
    { tokenId: 0, logprob: -c + 0.5 },
    { tokenId: 1, logprob: -c - 0.5 },
  ]);
}

describe('DeepConf confidence measures', () => {
  // token confidences 2, 4, 1, 3, 5, 0.75 (hand-worked below)
  const trace = tops([2, 4, 1, 3, 5, 0.75]);

  it('should compute token confidence as minus the mean of the top-k logprobs', () => {
    expect(
      tokenConfidences([
        [
          { tokenId: 3, logprob: -1 },
          { tokenId: 4, logprob: -2 },
        ],
      ]),
    ).toEqual([1.5]);
    expect(tokenConfidences(trace)).toEqual([2, 4, 1, 3, 5, 0.75]);
  });

  it('should compute sliding-window groups, one group for a short trace', () => {
    // windows of 3: (2+4+1)/3, (4+1+3)/3, (1+3+5)/3, (3+5+0.75)/3
    const groups = groupConfidences([2, 4, 1, 3, 5, 0.75], 3);
    expect(groups).toEqual([7 / 3, 8 / 3, 3, 8.75 / 3]);
    expect(groupConfidences([2, 4], 3)).toEqual([3]);
    expect(groupConfidences([], 3)).toEqual([]);
  });

  it('should summarize a trace: lowest group, bottom 10%, tail and mean (hand-worked)', () => {
    expect(traceConfidence(trace, { measure: 'lowest-group', windowSize: 3 })).toBeCloseTo(
      7 / 3,
      12,
    );
    // 4 groups: the bottom 10% is max(1, floor(0.4)) = 1 group; bottom 50% = 2 groups
    expect(traceConfidence(trace, { measure: 'bottom-10', windowSize: 3 })).toBeCloseTo(7 / 3, 12);
    expect(
      traceConfidence(trace, { measure: 'bottom-10', windowSize: 3, bottomFraction: 0.5 }),
    ).toBeCloseTo((7 / 3 + 8 / 3) / 2, 12);
    expect(traceConfidence(trace, { measure: 'tail', tailSize: 2 })).toBeCloseTo(2.875, 12);
    expect(traceConfidence(trace, { measure: 'mean' })).toBeCloseTo(15.75 / 6, 12);
    // the default window (2048) is longer than the trace: one group, the mean
    expect(traceConfidence(trace)).toBeCloseTo(15.75 / 6, 12);
  });

  it('should order lowest-group <= bottom-10 <= mean of groups (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 20, noNaN: true }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 16 }),
        (confidences, windowSize) => {
          const top = tops(confidences.map((c) => c + 0.5));
          const lowest = traceConfidence(top, { measure: 'lowest-group', windowSize });
          const bottom = traceConfidence(top, { measure: 'bottom-10', windowSize });
          const groups = groupConfidences(tokenConfidences(top), windowSize);
          const meanOfGroups = groups.reduce((a, b) => a + b, 0) / groups.length;
          expect(lowest).toBeLessThanOrEqual(bottom + 1e-12);
          expect(bottom).toBeLessThanOrEqual(meanOfGroups + 1e-9);
          // a window of 1 token: the groups are the token confidences
          expect(groupConfidences(tokenConfidences(top), 1)).toEqual(tokenConfidences(top));
        },
      ),
      { seed: 12 },
    );
  });

  it('should reject bad input and unknown options naming the parameter', () => {
    expect(() => traceConfidence([], {})).toThrow(/topLogprobs/);
    expect(() => traceConfidence([[{ tokenId: 0, logprob: 0.5 }]])).toThrow(/topLogprobs\[0\]/);
    expect(() => traceConfidence(trace, { windowSize: 0 })).toThrow(/options\.windowSize/);
    expect(() => traceConfidence(trace, { measure: 'lowest' as never })).toThrow(
      /options\.measure/,
    );
    expect(() => traceConfidence(trace, { window: 3 } as never)).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_OPTION' }),
    );
  });
});
