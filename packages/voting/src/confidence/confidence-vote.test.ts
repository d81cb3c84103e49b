import { AbortedError } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { majorityVote } from '../vote/majority-vote.js';
import { type ConfidenceTrace, confidenceVote } from './confidence-vote.js';

const extract = (text: string) => /A: (\S+)/.exec(text)?.[1] ?? null;
const equals = (a: string, b: string) => a === b;

/** A trace answering `answer` whose every token has confidence `c` (k = 1: logprob −c). */
function trace(answer: string, c: number, length = 3): ConfidenceTrace {
  return {
    text: `A: ${answer}`,
    topLogprobs: Array.from({ length }, () => [{ tokenId: 0, logprob: -c }]),
  };
}

describe('confidenceVote', () => {
  // 10 traces: three confident '1's, seven unconfident '2's (plain majority says 2)
  const traces = [
    trace('2', 1),
    trace('1', 9),
    trace('2', 1.5),
    trace('2', 2),
    trace('1', 8),
    trace('2', 1),
    trace('2', 2.5),
    trace('1', 7),
    trace('2', 1),
    trace('2', 3),
  ];

  it('should keep the top eta% and weight votes by confidence (hand-worked)', () => {
    expect(
      majorityVote(
        traces.map((t) => t.text),
        { extract, equals },
      ).answer,
    ).toBe('2');
    // η = 10: ceil(1) = 1 trace kept, the most confident ('1', 9)
    const low = confidenceVote(traces, { keepTop: 10, extract, equals });
    expect(low.answer).toBe('1');
    expect(low.keptIndices).toEqual([1]);
    expect(low.threshold).toBe(9);
    expect(low.share).toBe(1);
    // η = 90: ceil(9) traces, the least confident '2' (index 5 or 8, both 1: the later one, 8, goes)
    const high = confidenceVote(traces, { keepTop: 90, extract, equals });
    expect(high.filteredIndices).toEqual([8]);
    // weights: '1' = 9 + 8 + 7 = 24; '2' = 1 + 1.5 + 2 + 1 + 2.5 + 3 = 11
    expect(high.answer).toBe('1');
    expect(high.clusters.map((c) => [c.answer, c.weight, c.members])).toEqual([
      ['1', 24, [1, 4, 7]],
      ['2', 11, [0, 2, 3, 5, 6, 9]],
    ]);
    expect(high.share).toBeCloseTo(24 / 35, 12);
    expect(high.margin).toBeCloseTo(13 / 35, 12);
    const p = [24 / 35, 11 / 35];
    expect(high.entropy).toBeCloseTo(-p[0]! * Math.log(p[0]!) - p[1]! * Math.log(p[1]!), 12);
    // uniform weighting over the same 9 kept traces: plain majority again
    expect(
      confidenceVote(traces, { keepTop: 90, weighting: 'uniform', extract, equals }).answer,
    ).toBe('2');
  });

  it("should never count a trace stopped by the confidence stop ('confidence')", () => {
    const stopped = { ...trace('3', 50), finishReason: 'confidence' as const };
    const result = confidenceVote([stopped, trace('1', 2), trace('2', 1)], {
      keepTop: 100,
      extract,
      equals,
    });
    expect(result.answer).toBe('1');
    expect(result.excludedIndices).toEqual([0]);
    expect(result.confidences).toEqual([null, 2, 1]);
    expect(result.extracted).toEqual([null, '1', '2']);
  });

  it('should take precomputed confidences and report discarded traces by input index', () => {
    const result = confidenceVote(
      [
        { text: 'no answer', confidence: 5 },
        { text: 'A: 4', confidence: 1 },
        { text: 'A: 4', confidence: 2 },
      ],
      { keepTop: 100, extract, equals },
    );
    expect(result.answer).toBe('4');
    expect(result.discardedIndices).toEqual([0]);
    expect(result.votes).toBe(2);
  });

  it('should reject an aborted trace, bad traces and unknown options', () => {
    const aborted = [trace('1', 1), { ...trace('1', 1), finishReason: 'abort' as const }];
    expect(() => confidenceVote(aborted, { extract, equals })).toThrow(AbortedError);
    expect(() => confidenceVote([{ text: 'A: 1' }], { extract })).toThrow(
      /traces\[0\]\.topLogprobs/,
    );
    expect(() => confidenceVote(traces, { keepTop: 0 })).toThrow(/options\.keepTop/);
    expect(() => confidenceVote(traces, { keepTp: 10 } as never)).toThrow(/did you mean 'keepTop'/);
  });
});
