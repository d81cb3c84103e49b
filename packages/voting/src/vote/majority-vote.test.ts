import { describe, expect, it } from 'vitest';
import { majorityVote } from './majority-vote.js';
import { bestOfN, scoredVote } from './scored.js';

/** A simple extractor for these tests: the text after "A:", or null. */
const extract = (text: string) => {
  const match = /A:\s*(\S+)/.exec(text);
  return match ? match[1]! : null;
};
/** Numeric equivalence of simple fractions/decimals. */
const equals = (a: string, b: string) => {
  const value = (x: string) => {
    const [n, d] = x.split('/');
    return d === undefined ? Number(n) : Number(n) / Number(d);
  };
  return Math.abs(value(a) - value(b)) < 1e-12;
};

describe('majorityVote', () => {
  it('should cluster equivalent answers and report the distribution', () => {
    const result = majorityVote(['A: 1/2', 'A: 0.5', 'A: 3', 'nothing', 'A: 2/4'], {
      extract,
      equals,
    });
    expect(result.answer).toBe('1/2');
    expect(result.share).toBe(3 / 4);
    expect(result.votes).toBe(4);
    expect(result.discarded).toBe(1);
    expect(result.discardedIndices).toEqual([3]);
    expect(result.clusters).toEqual([
      { answer: '1/2', members: [0, 1, 4], count: 3, weight: 3, share: 3 / 4 },
      { answer: '3', members: [2], count: 1, weight: 1, share: 1 / 4 },
    ]);
    // Hand-worked: margin 3/4 − 1/4; entropy −(¾ ln ¾ + ¼ ln ¼) = 0.5623351446188083 nats.
    expect(result.margin).toBe(0.5);
    expect(result.entropy).toBeCloseTo(0.5623351446188083, 14);
    expect(result.extracted).toEqual(['1/2', '0.5', '3', null, '2/4']);
  });

  it('should break ties by weight, then count, then first appearance', () => {
    expect(majorityVote(['A: 7', 'A: 5', 'A: 5', 'A: 7'], { extract, equals }).answer).toBe('7');
    expect(majorityVote(['A: 5', 'A: 7', 'A: 7', 'A: 5'], { extract, equals }).answer).toBe('5');
    // Equal weight, different counts: more samples win.
    const weighted = majorityVote(
      [
        { text: 'A: 1', weight: 1 },
        { text: 'A: 2', weight: 0.5 },
        { text: 'A: 2', weight: 0.5 },
      ],
      { extract, equals, weighting: 'provided' },
    );
    expect(weighted.answer).toBe('2');
  });

  it('should let weights overturn the plain majority', () => {
    const samples = ['A: 1', 'A: 1', 'A: 2'];
    expect(majorityVote(samples, { extract, equals }).answer).toBe('1');
    const result = majorityVote(samples, {
      extract,
      equals,
      weighting: 'provided',
      weights: [0.2, 0.2, 1],
    });
    expect(result.answer).toBe('2');
    expect(result.share).toBeCloseTo(1 / 1.4, 12);
  });

  it('should weight by sequence or mean token logprob', () => {
    const samples = [
      { text: 'A: 1', logprobs: [-0.1, -0.1] }, // sum −0.2, mean −0.1
      { text: 'A: 1', logprobs: [-3, -3] }, // sum −6
      { text: 'A: 2', logprobs: [-0.05] }, // sum −0.05
    ];
    const bySequence = majorityVote(samples, { extract, equals, weighting: 'sequence-logprob' });
    // weights exp(L − max): exp(−0.15), exp(−5.95), 1 → '1' has 0.8633, '2' has 1
    expect(bySequence.answer).toBe('2');
    expect(bySequence.clusters[1]!.weight).toBeCloseTo(Math.exp(-0.15) + Math.exp(-5.95), 12);
    const byMean = majorityVote(samples, { extract, equals, weighting: 'mean-logprob' });
    expect(byMean.clusters.find((c) => c.answer === '1')!.weight).toBeCloseTo(
      Math.exp(-0.1) + Math.exp(-3),
      12,
    );
    expect(byMean.answer).toBe('1');
  });

  it('should return no answer when every sample is discarded', () => {
    const result = majorityVote(['?', '', 'A:'], { extract, equals });
    expect(result).toMatchObject({ answer: null, share: 0, votes: 0, discarded: 3, clusters: [] });
    expect(majorityVote([], { extract, equals }).answer).toBeNull();
  });

  it('should treat a throwing extractor or equality as no answer / not equal', () => {
    const result = majorityVote(['boom', 'A: 1'], {
      extract: (text) => {
        if (text === 'boom') throw new Error('bad');
        return extract(text);
      },
      equals: () => {
        throw new Error('bad');
      },
    });
    expect(result.answer).toBe('1');
    expect(result.discarded).toBe(1);
  });

  it('should reject bad input naming the parameter', () => {
    expect(() => majorityVote('x' as unknown as string[])).toThrow(/'samples'/);
    expect(() => majorityVote([42 as unknown as string])).toThrow(/samples\[0\]/);
    expect(() => majorityVote(['a'], { weighting: 'provided' })).toThrow(/samples\[0\].weight/);
    expect(() => majorityVote(['a'], { weighting: 'provided', weights: [-1] })).toThrow(
      /options.weights\[0\]/,
    );
    expect(() => majorityVote(['a'], { weights: [1, 2] })).toThrow(/options.weights/);
    expect(() => majorityVote(['a'], { weighting: 'mean-logprob' })).toThrow(
      /samples\[0\].logprobs/,
    );
    expect(() => majorityVote(['a'], { weighting: 'best' as 'uniform' })).toThrow(
      /options.weighting/,
    );
    expect(() => majorityVote(['a'], { extract: 3 as unknown as () => null })).toThrow(
      /options.extract/,
    );
  });
});

describe('scoredVote and bestOfN', () => {
  const samples = ['A: 1 (short)', 'A: 2 (long and careful)', 'A: 1 again', 'A: 2 verified'];
  const scorer = (text: string) => (text.includes('2') ? 0.9 : 0.3);

  it('should weight votes by the scorer', async () => {
    const result = await scoredVote(samples, { scorer, extract, equals });
    expect(result.answer).toBe('2');
    expect(result.clusters[0]!.weight).toBeCloseTo(1.8, 12);
    expect(result.share).toBeCloseTo(1.8 / 2.4, 12);
  });

  it('should pick the best sample, earliest on ties, with async scorers', async () => {
    const best = await bestOfN(samples, { scorer: async (text) => scorer(text) });
    expect(best).toMatchObject({ index: 1, text: samples[1], score: 0.9 });
    expect(best.scores).toEqual([0.3, 0.9, 0.3, 0.9]);
    expect((await bestOfN([], { scorer })).index).toBe(-1);
  });

  it('should reject bad scores', async () => {
    await expect(scoredVote(['A: 1'], { scorer: () => -1, extract, equals })).rejects.toThrow(
      /scorer/,
    );
    await expect(bestOfN(['A: 1'], { scorer: () => Number.NaN })).rejects.toThrow(/scorer/);
    await expect(bestOfN(['A: 1'], {} as { scorer: () => number })).rejects.toThrow(
      /options.scorer/,
    );
  });
});

describe('majorityVote with the default math extraction and equivalence', () => {
  it('should cluster equivalent forms and discard hedged answers', () => {
    const result = majorityVote([
      'so x = \\boxed{\\frac{1}{2}}',
      'The answer is 0.5',
      '#### 1/2',
      '\\boxed{3}',
      '\\boxed{1} or \\boxed{2}',
    ]);
    expect(result.answer).toBe('\\frac{1}{2}');
    expect(result.share).toBe(0.75);
    expect(result.clusters.map((cluster) => cluster.members)).toEqual([[0, 1, 2], [3]]);
    expect(result.discardedIndices).toEqual([4]);
  });
});
