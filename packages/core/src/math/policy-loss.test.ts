import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NonFiniteError } from '../errors/non-finite-error.js';
import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';
import { type PolicyLossInput, policyLoss } from './policy-loss.js';

const ln = Math.log;

describe('policyLoss', () => {
  it('should equal −mean(A) on-policy (ratio 1) with seq-mean-token-mean', () => {
    const result = policyLoss({
      logprobs: [[-1, -2, -0.5], [-0.1]],
      oldLogprobs: [[-1, -2, -0.5], [-0.1]],
      advantages: [1.29, -0.77],
    });
    expect(result.loss).toBeCloseTo(-(1.29 - 0.77) / 2, 14);
    expect(result.metrics.ratioMean).toBe(1);
    expect(result.metrics.clipFraction).toBe(0);
    // d loss / d logp = −A · ratio · weight; weights 1/(3·2) and 1/2.
    expect(result.gradLogprobs[0]![0]).toBeCloseTo(-1.29 / 6, 14);
    expect(result.gradLogprobs[1]![0]).toBeCloseTo(0.77 / 2, 14);
  });

  it('should clip by hand: ε_low / ε_high (clip-higher)', () => {
    // ratios: 1.5 (A>0: clipped at 1.28), 0.5 (A<0: clipped at 0.8), 1.1 (inside), 0.5 with A>0 (unclipped, min picks it)
    const input: PolicyLossInput = {
      logprobs: [[ln(1.5)], [ln(0.5)], [ln(1.1)], [ln(0.5)]],
      oldLogprobs: [[0], [0], [0], [0]],
      advantages: [1, -1, 2, 1],
      epsilonLow: 0.2,
      epsilonHigh: 0.28,
      aggregation: 'token-mean',
    };
    const result = policyLoss(input);
    const expected = [-1 * 1.28, 1 * 0.8, -2 * 1.1, -1 * 0.5];
    result.perTokenLoss.forEach((row, index) => {
      expect(row[0]).toBeCloseTo(expected[index]!, 12);
    });
    expect(result.loss).toBeCloseTo(expected.reduce((a, b) => a + b, 0) / 4, 12);
    expect(result.gradLogprobs.map((row) => row[0])).toEqual([
      0,
      0,
      expect.closeTo((-2 * 1.1) / 4, 12),
      expect.closeTo(-0.5 / 4, 12),
    ]);
    expect(result.metrics.clipRatioHigh).toBe(0.25);
    expect(result.metrics.clipRatioLow).toBe(0.25);
    expect(result.metrics.clipRatioRegion).toBe(0.5);
    expect(result.metrics.clipFraction).toBe(0.5);
  });

  it('should cap negative-advantage losses with the dual clip', () => {
    const result = policyLoss({
      logprobs: [[ln(5)], [ln(2)]],
      oldLogprobs: [[0], [0]],
      advantages: [-1, -1],
      dualClip: 3,
      aggregation: 'token-mean',
    });
    // ratio 5: unclipped −A·5 = 5 > 3 → 3; ratio 2: 2 ≤ 3 stays.
    expect(result.perTokenLoss[0]![0]).toBeCloseTo(3, 12);
    expect(result.perTokenLoss[1]![0]).toBeCloseTo(2, 12);
    expect(result.gradLogprobs[0]![0]).toBe(0);
    expect(result.gradLogprobs[1]![0]).toBeCloseTo(2 / 2, 12);
    expect(result.metrics.dualClipFraction).toBe(0.5);
  });

  it('should cap the unclipped ratio at δ (two-sided clip)', () => {
    const result = policyLoss({
      logprobs: [[ln(3)], [ln(3)]],
      oldLogprobs: [[0], [0]],
      advantages: [-1, 1],
      delta: 2,
      aggregation: 'token-mean',
    });
    // A<0: max(1·min(3,2), 1·clip(3)=1.2) = 2; A>0: max(−2, −1.2) = −1.2.
    expect(result.perTokenLoss[0]![0]).toBeCloseTo(2, 12);
    expect(result.perTokenLoss[1]![0]).toBeCloseTo(-1.2, 12);
    expect(result.gradLogprobs[0]![0]).toBe(0);
  });

  it('should use the length-normalized sequence ratio for GSPO', () => {
    const result = policyLoss({
      logprobs: [[-1, -1.2, -0.9]],
      oldLogprobs: [[-1, -1, -1]],
      advantages: [1],
      ratioLevel: 'sequence',
      epsilonLow: 0.5,
    });
    const s = Math.exp((0 - 0.2 + 0.1) / 3);
    for (const ratio of result.ratios[0]!) expect(ratio).toBeCloseTo(s, 14);
    expect(result.loss).toBeCloseTo(-s, 14);
    // GSPO gradient: d(−A·s)/d logp_t = −A·s/|y| under seq-mean-token-mean.
    for (const gradient of result.gradLogprobs[0]!) expect(gradient).toBeCloseTo(-s / 3, 14);
  });

  it('should add β·KL, subtract η·entropy and weight the policy term by importance weights', () => {
    const result = policyLoss({
      logprobs: [[-1, -2]],
      oldLogprobs: [[-1, -2]],
      advantages: [0.5],
      refLogprobs: [[-1.5, -1.5]],
      klCoefficient: 0.1,
      klEstimator: 'k3',
      entropies: [[2, 1]],
      entropyCoefficient: 0.01,
      importanceWeights: [[0.5, 2]],
      aggregation: 'token-mean',
    });
    const k3 = (logp: number, ref: number) => Math.exp(ref - logp) - (ref - logp) - 1;
    const token0 = 0.5 * -0.5 + 0.1 * k3(-1, -1.5) - 0.01 * 2;
    const token1 = 2 * -0.5 + 0.1 * k3(-2, -1.5) - 0.01 * 1;
    expect(result.perTokenLoss[0]![0]).toBeCloseTo(token0, 14);
    expect(result.perTokenLoss[0]![1]).toBeCloseTo(token1, 14);
    expect(result.loss).toBeCloseTo((token0 + token1) / 2, 14);
    expect(result.policyLoss).toBeCloseTo((0.5 * -0.5 + 2 * -0.5) / 2, 14);
    expect(result.metrics.kl).toBeCloseTo((k3(-1, -1.5) + k3(-2, -1.5)) / 2, 14);
    expect(result.metrics.entropy).toBe(1.5);
  });

  it('should accept per-token advantages and masks', () => {
    const result = policyLoss({
      logprobs: [[-1, -1, -1]],
      oldLogprobs: [[-1, -1, -1]],
      advantages: [[1, 2, 3]],
      mask: [[1, 0, 1]],
      aggregation: 'token-mean',
    });
    expect(result.loss).toBe(-2);
    expect(result.perTokenLoss[0]![1]).toBe(0);
    expect(result.gradLogprobs[0]![1]).toBe(0);
    expect(result.metrics.tokens).toBe(2);
  });

  it('should give gradients that match finite differences of the aggregated loss (property)', () => {
    const sequenceArb = fc.integer({ min: 1, max: 5 }).chain((length) =>
      fc.record({
        logprobs: fc.array(fc.double({ min: -4, max: -0.01, noNaN: true }), {
          minLength: length,
          maxLength: length,
        }),
        shifts: fc.array(fc.double({ min: -0.6, max: 0.6, noNaN: true }), {
          minLength: length,
          maxLength: length,
        }),
        ref: fc.array(fc.double({ min: -4, max: -0.01, noNaN: true }), {
          minLength: length,
          maxLength: length,
        }),
        advantage: fc.double({ min: -2, max: 2, noNaN: true }),
      }),
    );
    fc.assert(
      fc.property(
        fc.array(sequenceArb, { minLength: 1, maxLength: 4 }),
        fc.constantFrom('token', 'sequence'),
        fc.constantFrom(
          'seq-mean-token-mean',
          'token-mean',
          'seq-mean-token-sum',
          'seq-mean-token-sum-norm',
        ),
        fc.constantFrom('k1', 'k2', 'k3'),
        (sequences, ratioLevel, aggregation, klEstimator) => {
          const build = (logprobs: number[][]): PolicyLossInput => ({
            logprobs,
            oldLogprobs: sequences.map((s) => s.logprobs.map((value, t) => value + s.shifts[t]!)),
            advantages: sequences.map((s) => s.advantage),
            refLogprobs: sequences.map((s) => s.ref),
            klCoefficient: 0.05,
            klEstimator: klEstimator as 'k1',
            ratioLevel: ratioLevel as 'token',
            epsilonLow: 0.2,
            epsilonHigh: 0.28,
            dualClip: 3,
            aggregation: aggregation as 'token-mean',
            aggregationOptions: { normalizer: 8 },
          });
          const base = sequences.map((s) => [...s.logprobs]);
          const result = policyLoss(build(base));
          const h = 1e-6;
          base.forEach((row, s) => {
            row.forEach((_, t) => {
              const plus = base.map((r) => [...r]);
              const minus = base.map((r) => [...r]);
              plus[s]![t]! += h;
              minus[s]![t]! -= h;
              const lossPlus = policyLoss(build(plus)).loss;
              const lossMinus = policyLoss(build(minus)).loss;
              const numeric = (lossPlus - lossMinus) / (2 * h);
              // Skip kinks: where a clip boundary lies inside the finite-difference interval.
              const ratio = result.ratios[s]![t]!;
              const nearKink = [0.8, 1.28].some((edge) => Math.abs(ratio - edge) < 1e-4);
              if (ratioLevel === 'token' && !nearKink) {
                expect(result.gradLogprobs[s]![t]).toBeCloseTo(numeric, 4);
              }
            });
          });
        },
      ),
      { numRuns: 60 },
    );
  });

  it('should reject bad input with typed errors naming the parameter', () => {
    const ok = { logprobs: [[-1]], oldLogprobs: [[-1]], advantages: [1] };
    expect(() => policyLoss({ ...ok, oldLogprobs: [[-1, -2]] })).toThrow(ShapeMismatchError);
    expect(() => policyLoss({ ...ok, oldLogprobs: [[-1, -2]] })).toThrow(/oldLogprobs\[0\]/);
    expect(() => policyLoss({ ...ok, advantages: [1, 2] })).toThrow(/'advantages'/);
    expect(() => policyLoss({ ...ok, logprobs: [[Number.NaN]] })).toThrow(NonFiniteError);
    expect(() => policyLoss({ ...ok, klCoefficient: 0.1 })).toThrow(/refLogprobs/);
    expect(() => policyLoss({ ...ok, entropyCoefficient: 0.1 })).toThrow(/entropies/);
    expect(() => policyLoss({ ...ok, dualClip: 1 })).toThrow(/dualClip/);
    expect(() => policyLoss({ ...ok, delta: 1.1 })).toThrow(/delta/);
    expect(() => policyLoss({ ...ok, epsilonLow: -0.1 })).toThrow(/epsilonLow/);
    expect(() => policyLoss({ ...ok, ratioLevel: 'batch' as 'token' })).toThrow(/ratioLevel/);
    expect(() => policyLoss({ ...ok, aggregation: 'sum' as 'token-mean' })).toThrow(/aggregation/);
    expect(() => policyLoss(null as unknown as PolicyLossInput)).toThrow(/'input'/);
  });
});
