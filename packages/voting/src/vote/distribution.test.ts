import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { voteDistribution } from './distribution.js';
import { majorityVote } from './majority-vote.js';

const extract = (text: string) => /A:\s*(\S+)/.exec(text)?.[1] ?? null;
const equals = (a: string, b: string) => a === b;

describe('voteDistribution (hand-worked values)', () => {
  it('should give shares, margin and entropy in nats', () => {
    // 2 : 1 : 1 → ½, ¼, ¼; margin ¼; entropy ½ ln 2 + 2·¼ ln 4 = 1.5 ln 2.
    const split = voteDistribution([2, 1, 1]);
    expect(split.shares).toEqual([0.5, 0.25, 0.25]);
    expect(split.margin).toBe(0.25);
    expect(split.entropy).toBeCloseTo(1.5 * Math.LN2, 15);
    // A tie: margin 0, entropy ln 2.
    expect(voteDistribution([3, 3])).toEqual({ shares: [0.5, 0.5], margin: 0, entropy: Math.LN2 });
    // Unanimous: margin 1, entropy 0.
    expect(voteDistribution([5])).toEqual({ shares: [1], margin: 1, entropy: 0 });
  });

  it('should give zeros when no weight was cast', () => {
    expect(voteDistribution([])).toEqual({ shares: [], margin: 0, entropy: 0 });
    expect(voteDistribution([0, 0])).toEqual({ shares: [0, 0], margin: 0, entropy: 0 });
  });

  it('should keep shares summing to 1, margin in [0, 1] and entropy in [0, ln k] (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0.001, max: 1000, noNaN: true }), {
          minLength: 1,
          maxLength: 12,
        }),
        (raw) => {
          const weights = [...raw].sort((a, b) => b - a); // winner first, as a vote orders them
          const { shares, margin, entropy } = voteDistribution(weights);
          expect(shares.reduce((sum, share) => sum + share, 0)).toBeCloseTo(1, 12);
          expect(margin).toBeGreaterThanOrEqual(0);
          expect(margin).toBeLessThanOrEqual(1);
          expect(entropy).toBeGreaterThanOrEqual(0);
          expect(entropy).toBeLessThanOrEqual(Math.log(weights.length) + 1e-12);
        },
      ),
      { seed: 12, numRuns: 200 },
    );
  });
});

describe('majorityVote distribution, margin and entropy', () => {
  it('should report them for a plain vote', () => {
    const result = majorityVote(['A: 7', 'A: 7', 'A: 5', 'A: 9', 'none'], { extract, equals });
    expect(result.clusters.map((cluster) => [cluster.answer, cluster.share])).toEqual([
      ['7', 0.5],
      ['5', 0.25],
      ['9', 0.25],
    ]);
    expect(result.share).toBe(0.5);
    expect(result.margin).toBe(0.25);
    expect(result.entropy).toBeCloseTo(1.5 * Math.LN2, 15);
  });

  it('should use the voting weights', () => {
    // weights 0.2, 0.2, 1 → '2': 1, '1': 0.4 of 1.4 → shares 5/7, 2/7; margin 3/7.
    const result = majorityVote(['A: 1', 'A: 1', 'A: 2'], {
      extract,
      equals,
      weighting: 'provided',
      weights: [0.2, 0.2, 1],
    });
    expect(result.clusters.map((cluster) => cluster.share)).toEqual([1 / 1.4, 0.4 / 1.4]);
    expect(result.margin).toBeCloseTo(3 / 7, 15);
    const p = 5 / 7;
    expect(result.entropy).toBeCloseTo(-(p * Math.log(p) + (1 - p) * Math.log(1 - p)), 14);
  });

  it('should read as "abstain" when no sample voted or the vote is tied', () => {
    expect(majorityVote(['none', 'x'], { extract, equals })).toMatchObject({
      answer: null,
      share: 0,
      margin: 0,
      entropy: 0,
      clusters: [],
    });
    const tie = majorityVote(['A: 1', 'A: 2'], { extract, equals });
    expect(tie.margin).toBe(0);
    expect(tie.entropy).toBeCloseTo(Math.LN2, 15);
  });
});
