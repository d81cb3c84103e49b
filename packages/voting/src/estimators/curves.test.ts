import { describe, expect, it } from 'vitest';
import { accuracyCurve, defaultKs, majAtKFromAnswers, meanAccuracyCurve } from './curves.js';

const extract = (text: string) => /A:\s*(\S+)/.exec(text)?.[1] ?? null;
const value = (x: string) => {
  const [n, d] = x.split('/');
  return d === undefined ? Number(n) : Number(n) / Number(d);
};
const equals = (a: string, b: string) => Math.abs(value(a) - value(b)) < 1e-12;

describe('majAtKFromAnswers', () => {
  it('should match a hand enumeration', () => {
    // Subsets of 3 from {1/2, 0.5, 3, ∅}: two wins, two 1–1 ties (½ each) → 0.75.
    expect(majAtKFromAnswers(['1/2', '0.5', '3', null], '1/2', 3, { equals })).toBeCloseTo(
      0.75,
      14,
    );
    expect(majAtKFromAnswers(['1/2', '0.5', '3', null], '1/2', 1, { equals })).toBeCloseTo(0.5, 14);
    expect(majAtKFromAnswers(['3', '3'], '1/2', 2, { equals })).toBe(0);
    expect(() => majAtKFromAnswers(['1'], '1', 2, { equals })).toThrow(/parameter 'k'/);
  });
});

describe('accuracyCurve', () => {
  it('should give unbiased pass@k and exact maj@k for k = 1, 2, 4', () => {
    const curve = accuracyCurve(['A: 4', 'A: 5', 'A: 4', 'hmm'], '4', { extract, equals });
    expect(curve.map((point) => point.k)).toEqual([1, 2, 4]);
    expect(curve[0]!.passAtK).toBeCloseTo(0.5, 14);
    expect(curve[0]!.majAtK).toBeCloseTo(0.5, 14);
    // k = 2: pass = 1 − C(2,2)/C(4,2) = 5/6; maj over the 6 pairs: {4,4} win, {4,5}×2 tie (½ each),
    // {4,∅}×2 win, {5,∅} lose → (1 + 1 + 2) / 6 = 2/3.
    expect(curve[1]!.passAtK).toBeCloseTo(5 / 6, 14);
    expect(curve[1]!.majAtK).toBeCloseTo(2 / 3, 14);
    expect(curve[2]).toEqual({ k: 4, passAtK: 1, majAtK: 1 });
  });

  it('should average over prompts', () => {
    const curve = meanAccuracyCurve(
      [
        { samples: ['A: 1', 'A: 1'], gold: '1' },
        { samples: ['A: 2', 'A: 3'], gold: '3' },
      ],
      { extract, equals },
    );
    expect(curve).toEqual([
      { k: 1, passAtK: 0.75, majAtK: 0.75 },
      { k: 2, passAtK: 1, majAtK: 0.75 },
    ]);
    expect(defaultKs(10)).toEqual([1, 2, 4, 8, 10]);
  });

  it('should reject bad input naming the parameter', () => {
    expect(() => accuracyCurve([], '1')).toThrow(/'samples'/);
    expect(() => accuracyCurve(['A: 1'], 1 as unknown as string)).toThrow(/'gold'/);
    expect(() => accuracyCurve(['A: 1'], '1', { ks: [2], extract, equals })).toThrow(
      /options.ks\[0\]/,
    );
  });
});
