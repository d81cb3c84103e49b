import type { TopLogprob } from '@rlvr/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfidenceWindow, tokenConfidence } from './confidence-stop.js';
import { topLogprobsOf } from './top-logprobs.js';

describe('topLogprobsOf', () => {
  it('should return the k most likely tokens of log softmax, hand-worked', () => {
    // softmax of [0, ln 3, 0, ln 4] = [1, 3, 1, 4] / 9
    const logits = Float32Array.of(9, 0, Math.log(3), 0, Math.log(4));
    const top = topLogprobsOf(logits, 1, 4, 3);
    expect(top.map((entry) => entry.tokenId)).toEqual([3, 1, 0]); // tie 0/2 → lower id
    expect(top[0]!.logprob).toBeCloseTo(Math.log(4 / 9), 6);
    expect(top[1]!.logprob).toBeCloseTo(Math.log(3 / 9), 6);
    expect(top[2]!.logprob).toBeCloseTo(Math.log(1 / 9), 6);
    expect(topLogprobsOf(logits, 1, 4, 10)).toHaveLength(4); // clamped to the vocabulary
  });

  it('should agree with a full sort (ties to the lower id)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 12 }),
        (values, k) => {
          const sorted = values
            .map((value, tokenId) => ({ value, tokenId }))
            .sort((a, b) => b.value - a.value || a.tokenId - b.tokenId)
            .slice(0, k)
            .map((entry) => entry.tokenId);
          expect(topLogprobsOf(values, 0, values.length, k).map((e) => e.tokenId)).toEqual(sorted);
        },
      ),
      { seed: 7 },
    );
  });
});

describe('ConfidenceWindow', () => {
  const top = (...logprobs: number[]): TopLogprob[] =>
    logprobs.map((logprob, tokenId) => ({ tokenId, logprob }));

  it('should compute token confidence as minus the mean top-k logprob', () => {
    expect(tokenConfidence(top(-1, -2, -3))).toBeCloseTo(2, 12);
  });

  it('should stop only once the window is full and its mean is below the threshold', () => {
    const window = new ConfidenceWindow({ windowSize: 3, threshold: 2 });
    // 0.5 and 0.5: the window is not full yet; then means 3, 19/6, 10/3, then 5/6 (< 2)
    const pushed = [0.5, 0.5, 8, 1, 1, 0.5].map((c) => window.push(c));
    expect(pushed).toEqual([false, false, false, false, false, true]);
  });
});
