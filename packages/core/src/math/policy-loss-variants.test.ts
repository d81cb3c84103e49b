import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../errors/error-codes.js';
import { type PolicyLossInput, policyLoss } from './policy-loss.js';

const ln = Math.log;
/** σ(x), written out for the hand-worked values. */
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/** The `INEFFECTIVE_OPTION` error of `input`, or undefined. */
function ineffective(input: PolicyLossInput): { parameter: string; message: string } | undefined {
  try {
    policyLoss(input);
  } catch (error) {
    const e = error as { code?: string; parameter: string; message: string };
    if (e.code === ErrorCode.INEFFECTIVE_OPTION) return e;
    throw error;
  }
  return undefined;
}

describe('policyLoss lossMode cispo (MiniMax-M1)', () => {
  // one token per sequence, π_old = −1: ratios 1.5 (A > 0), 0.5 (A < 0), 1.1 (inside)
  const logprobs = [[-1 + ln(1.5)], [-1 + ln(0.5)], [-1 + ln(1.1)]];
  const base: PolicyLossInput = {
    logprobs,
    oldLogprobs: [[-1], [-1], [-1]],
    advantages: [1, -1, 2],
    epsilonLow: 0.2,
    epsilonHigh: 0.28,
    aggregation: 'token-mean',
  };

  it('should weight −A·log π by the clipped ratio, a constant: every token keeps a gradient', () => {
    const result = policyLoss({ ...base, lossMode: 'cispo' });
    const weights = [1.28, 0.8, 1.1]; // clip(1.5), clip(0.5), 1.1
    const advantages = [1, -1, 2];
    weights.forEach((weight, index) => {
      const logprob = logprobs[index]![0]!;
      expect(result.perTokenLoss[index]![0]).toBeCloseTo(
        -weight * advantages[index]! * logprob,
        13,
      );
      // d/d logp of −sg(w)·A·logp is −w·A (÷ 3 tokens)
      expect(result.gradLogprobs[index]![0]).toBeCloseTo((-weight * advantages[index]!) / 3, 13);
    });
    // the 'clip' surrogate gives the two clipped tokens no gradient at all
    const clip = policyLoss(base);
    expect(clip.gradLogprobs.map((row) => row[0])).toEqual([0, 0, expect.closeTo(-2.2 / 3, 13)]);
    expect(result.metrics.clipFraction).toBeCloseTo(2 / 3, 14);
    expect(result.metrics.clipRatioHigh).toBeCloseTo(1 / 3, 14);
    expect(result.metrics.clipRatioLow).toBeCloseTo(1 / 3, 14);
  });

  it('should have no lower bound with epsilonLow 1 (MiniMax-M1) and cap at 1 + ε_high', () => {
    // TRL's loss_type='cispo' with epsilon_high=5 (the ratio cap itself) is epsilonHigh: 4
    const result = policyLoss({
      logprobs: [[ln(0.1)], [ln(7)], [ln(3)]],
      oldLogprobs: [[0], [0], [0]],
      advantages: [-1, 1, 1],
      lossMode: 'cispo',
      epsilonLow: 1,
      epsilonHigh: 4,
      aggregation: 'seq-mean-token-sum',
    });
    expect(result.gradLogprobs.map((row) => row[0])).toEqual([
      expect.closeTo(0.1 / 3, 14),
      expect.closeTo(-5 / 3, 14),
      expect.closeTo(-3 / 3, 14),
    ]);
  });

  it('should equal the clip surrogate’s gradient on-policy (ratio 1)', () => {
    const on = { ...base, oldLogprobs: logprobs };
    const cispo = policyLoss({ ...on, lossMode: 'cispo' }).gradLogprobs;
    expect(cispo).toEqual(policyLoss(on).gradLogprobs);
  });

  it('should refuse a dual clip or a δ cap (INEFFECTIVE_OPTION naming the field)', () => {
    const dual = ineffective({ ...base, lossMode: 'cispo', dualClip: 3 });
    expect(dual?.parameter).toBe('dualClip');
    expect(dual?.message).toMatch(/lossMode 'cispo'/);
    expect(ineffective({ ...base, lossMode: 'cispo', delta: 2 })?.parameter).toBe('delta');
    expect(ineffective({ ...base, lossMode: 'cispo', sapoTemperatureNeg: 2 })?.parameter).toBe(
      'sapoTemperatureNeg',
    );
  });
});

describe('policyLoss lossMode sapo (soft adaptive policy optimization)', () => {
  it('should replace the clip by the gate σ(τ(r − 1))·4/τ, τ by the sign of A (by hand)', () => {
    const result = policyLoss({
      logprobs: [[ln(1.5)], [ln(0.5)], [ln(2)]],
      oldLogprobs: [[0], [0], [0]],
      advantages: [1, -1, 0],
      lossMode: 'sapo',
      aggregation: 'token-mean',
    });
    // A = 1, τ_pos = 1: σ(0.5) = 0.6224593312018546
    const g0 = 0.6224593312018546;
    expect(sigmoid(0.5)).toBeCloseTo(g0, 15);
    expect(result.perTokenLoss[0]![0]).toBeCloseTo(-4 * g0, 13);
    expect(result.gradLogprobs[0]![0]).toBeCloseTo((-4 * g0 * (1 - g0) * 1.5) / 3, 13);
    // A = −1, τ_neg = 1.05: σ(1.05 · (0.5 − 1)) = σ(−0.525)
    const g1 = sigmoid(-0.525);
    expect(result.perTokenLoss[1]![0]).toBeCloseTo((4 * g1) / 1.05, 13);
    expect(result.gradLogprobs[1]![0]).toBeCloseTo((4 * g1 * (1 - g1) * 0.5) / 3, 13);
    // A = 0 takes τ_neg (TRL, verl: τ_pos only for A > 0) and contributes nothing
    expect(result.perTokenLoss[2]![0]).toBe(0);
    expect(result.gradLogprobs[2]![0]).toBe(0);
    expect(result.metrics.clipFraction).toBe(0);
    expect(result.metrics.clipRatioRegion).toBe(0);
  });

  it('should give PPO’s gradient −A at ratio 1 and attenuate it smoothly, faster for A < 0', () => {
    const at = (ratio: number, advantage: number) =>
      policyLoss({
        logprobs: [[ln(ratio)]],
        oldLogprobs: [[0]],
        advantages: [advantage],
        lossMode: 'sapo',
      }).gradLogprobs[0]![0]!;
    expect(at(1, 0.7)).toBeCloseTo(-0.7, 14);
    expect(at(1, -0.7)).toBeCloseTo(0.7, 14);
    // |gradient| / (|A|·r) = 4σ(1 − σ) < 1 away from r = 1; the A < 0 gate (τ 1.05) is narrower
    const positive = Math.abs(at(3, 1)) / 3;
    const negative = Math.abs(at(3, -1)) / 3;
    expect(positive).toBeCloseTo(4 * sigmoid(2) * (1 - sigmoid(2)), 13);
    expect(negative).toBeLessThan(positive);
    // far off-policy the gate shuts (no hard cliff, no blow-up)
    expect(Math.abs(at(40, 1))).toBeLessThan(1e-12);
  });

  it('should honour both temperatures', () => {
    const result = policyLoss({
      logprobs: [[ln(2)], [ln(2)]],
      oldLogprobs: [[0], [0]],
      advantages: [1, -1],
      lossMode: 'sapo',
      sapoTemperaturePos: 2,
      sapoTemperatureNeg: 0.5,
      aggregation: 'seq-mean-token-sum',
    });
    expect(result.perTokenLoss[0]![0]).toBeCloseTo((-sigmoid(2) * 4) / 2, 13);
    expect(result.perTokenLoss[1]![0]).toBeCloseTo((sigmoid(0.5) * 4) / 0.5, 13);
  });

  it('should refuse ε, δ and the dual clip, and SAPO temperatures elsewhere', () => {
    const ok: PolicyLossInput = { logprobs: [[-1]], oldLogprobs: [[-1]], advantages: [1] };
    for (const field of ['epsilonLow', 'epsilonHigh', 'dualClip', 'delta'] as const) {
      const error = ineffective({ ...ok, lossMode: 'sapo', [field]: 1.5 });
      expect(error?.parameter).toBe(field);
      expect(error?.message).toMatch(/soft gate/);
    }
    expect(ineffective({ ...ok, sapoTemperaturePos: 1 })?.parameter).toBe('sapoTemperaturePos');
    expect(() => policyLoss({ ...ok, lossMode: 'sapo', sapoTemperatureNeg: 0 })).toThrow(
      /'sapoTemperatureNeg'/,
    );
    expect(() => policyLoss({ ...ok, lossMode: 'ppo' as 'clip' })).toThrow(/'lossMode'/);
  });
});

describe('policyLoss useBiasCorrectionKl (DeepSeek-V3.2)', () => {
  const k3 = (logp: number, ref: number) => Math.exp(ref - logp) - (ref - logp) - 1;

  it('should weight k3 by the ratio, with the gradient through it: r·(logp − refLogp)', () => {
    const logp = -1;
    const ref = -1.5;
    const result = policyLoss({
      logprobs: [[logp]],
      oldLogprobs: [[logp - ln(2)]], // ratio 2
      advantages: [0],
      refLogprobs: [[ref]],
      klCoefficient: 0.1,
      useBiasCorrectionKl: true,
      aggregation: 'token-mean',
    });
    expect(result.perTokenLoss[0]![0]).toBeCloseTo(0.1 * 2 * k3(logp, ref), 14);
    expect(result.metrics.kl).toBeCloseTo(2 * k3(logp, ref), 14);
    // d/dx [r·k3] = r·k3 + r·(1 − e^(ref − x)) = r·(x − ref) = 2 · 0.5
    expect(result.gradLogprobs[0]![0]).toBeCloseTo(0.1 * 2 * 0.5, 14);
    // plain k3's gradient is β·(1 − e^(ref − x)) at any ratio
    const plain = policyLoss({
      logprobs: [[logp]],
      oldLogprobs: [[logp - ln(2)]],
      advantages: [0],
      refLogprobs: [[ref]],
      klCoefficient: 0.1,
    });
    expect(plain.gradLogprobs[0]![0]).toBeCloseTo(0.1 * (1 - Math.exp(ref - logp)), 14);
  });

  it('should differ from k3 on-policy too (ratio 1, d r / d logp = 1)', () => {
    const result = policyLoss({
      logprobs: [[-2, -0.5]],
      oldLogprobs: [[-2, -0.5]],
      advantages: [0],
      refLogprobs: [[-1, -1]],
      klCoefficient: 0.04,
      useBiasCorrectionKl: true,
      aggregation: 'token-mean',
    });
    expect(result.gradLogprobs[0]).toEqual([
      expect.closeTo((0.04 * (-2 - -1)) / 2, 14),
      expect.closeTo((0.04 * (-0.5 - -1)) / 2, 14),
    ]);
  });

  it('should take the GSPO-token form with sequence ratios: β·s·(KL_t + KL′_t) per token', () => {
    const logprobs = [-1, -0.9, -2];
    const ref = [-0.6, -1.9, -1];
    const result = policyLoss({
      logprobs: [logprobs],
      oldLogprobs: [[-1.1, -0.7, -2.2]],
      advantages: [0],
      refLogprobs: [ref],
      klCoefficient: 0.2,
      useBiasCorrectionKl: true,
      ratioLevel: 'sequence',
      aggregation: 'token-mean',
    });
    const s = Math.exp((0.1 - 0.2 + 0.2) / 3);
    logprobs.forEach((logp, t) => {
      expect(result.perTokenLoss[0]![t]).toBeCloseTo(0.2 * s * k3(logp, ref[t]!), 14);
      // k3 + k3′ = logp − ref
      expect(result.gradLogprobs[0]![t]).toBeCloseTo((0.2 * s * (logp - ref[t]!)) / 3, 14);
    });
  });

  it('should refuse the correction without a KL term', () => {
    const error = ineffective({
      logprobs: [[-1]],
      oldLogprobs: [[-1]],
      advantages: [1],
      useBiasCorrectionKl: true,
    });
    expect(error?.parameter).toBe('useBiasCorrectionKl');
  });
});

describe('policyLoss offPolicyMaskThreshold (DeepSeek-V3.2 off-policy sequence masking)', () => {
  // current logprobs −1 everywhere; behaviour − current per sequence: mean 0.6, 0.2, 0.9
  const behaviour = [
    [-0.2, -0.6],
    [-0.8, -0.8],
    [-0.1, -0.1],
  ];
  const input: PolicyLossInput = {
    logprobs: [
      [-1, -1],
      [-1, -1],
      [-1, -1],
    ],
    oldLogprobs: [
      [-1, -1],
      [-1, -1],
      [-1, -1],
    ],
    advantages: [-1, -1, 1],
    behaviourLogprobs: behaviour,
    offPolicyMaskThreshold: 0.5,
    refLogprobs: [
      [-2, -2],
      [-2, -2],
      [-2, -2],
    ],
    klCoefficient: 0.1,
    klEstimator: 'k1',
    aggregation: 'token-mean',
  };

  it('should drop the policy term of A < 0 sequences whose mean KL exceeds δ, keeping the KL term', () => {
    const result = policyLoss(input);
    // sequence 0: A < 0 and 0.6 > 0.5 → only β·KL (k1 gradient 1) is left
    expect(result.gradLogprobs[0]).toEqual([
      expect.closeTo(0.1 / 6, 14),
      expect.closeTo(0.1 / 6, 14),
    ]);
    expect(result.perTokenLoss[0]).toEqual([expect.closeTo(0.1, 14), expect.closeTo(0.1, 14)]);
    // sequence 1 (KL 0.2 ≤ δ) and sequence 2 (A > 0) keep it: −A + β
    expect(result.gradLogprobs[1]![0]).toBeCloseTo((1 + 0.1) / 6, 14);
    expect(result.gradLogprobs[2]![0]).toBeCloseTo((-1 + 0.1) / 6, 14);
    expect(result.metrics.offPolicyMaskedFraction).toBeCloseTo(2 / 6, 14);
    expect(result.policyLoss).toBeCloseTo((2 * 1 + 2 * -1) / 6, 14);
  });

  it('should average over unmasked tokens only and drop only the A < 0 tokens', () => {
    const result = policyLoss({
      ...input,
      // a masked token with a large KL does not count; per-token advantages of both signs
      behaviourLogprobs: [[-0.6, 5], ...behaviour.slice(1)],
      mask: [
        [1, 0],
        [1, 1],
        [1, 1],
      ],
      advantages: [
        [-1, -1],
        [-1, -1],
        [1, 1],
      ],
    });
    // sequence 0: mean over its one unmasked token is 0.4 ≤ 0.5: kept
    expect(result.metrics.offPolicyMaskedFraction).toBe(0);
    const mixed = policyLoss({
      ...input,
      advantages: [
        [-1, 2],
        [-1, -1],
        [1, 1],
      ],
    });
    expect(mixed.gradLogprobs[0]![0]).toBeCloseTo(0.1 / 6, 14);
    expect(mixed.gradLogprobs[0]![1]).toBeCloseTo((-2 + 0.1) / 6, 14);
  });

  it('should compare with π_old when no behaviour logprobs are given', () => {
    const { behaviourLogprobs: _behaviour, ...rest } = input;
    const result = policyLoss({ ...rest, oldLogprobs: behaviour });
    expect(result.metrics.offPolicyMaskedFraction).toBeCloseTo(2 / 6, 14);
    expect(
      ineffective({ ...rest, offPolicyMaskThreshold: undefined, behaviourLogprobs: behaviour })
        ?.parameter,
    ).toBe('behaviourLogprobs');
  });
});

describe('policyLoss entropyMask (top-ρ entropy tokens)', () => {
  it('should zero the policy term and the entropy bonus of unselected tokens, not the counts or the KL', () => {
    const result = policyLoss({
      logprobs: [[-1, -1, -1, -1]],
      oldLogprobs: [[-1, -1, -1, -1]],
      advantages: [1],
      entropyMask: [[1, 0, 0, 1]],
      entropies: [[2, 0.1, 0.3, 1.5]],
      entropyCoefficient: 0.01,
      refLogprobs: [[-2, -2, -2, -2]],
      klCoefficient: 0.1,
      klEstimator: 'k1',
      aggregation: 'token-mean',
    });
    // token-mean still divides by 4 tokens
    expect(result.gradLogprobs[0]).toEqual([
      expect.closeTo((-1 + 0.1) / 4, 14),
      expect.closeTo(0.1 / 4, 14),
      expect.closeTo(0.1 / 4, 14),
      expect.closeTo((-1 + 0.1) / 4, 14),
    ]);
    expect(result.perTokenLoss[0]![1]).toBeCloseTo(0.1, 14);
    expect(result.perTokenLoss[0]![3]).toBeCloseTo(-1 + 0.1 - 0.01 * 1.5, 14);
    expect(result.policyLoss).toBeCloseTo(-2 / 4, 14);
  });
});

describe('policyLoss variants (property: gradients = finite differences)', () => {
  it('should match central differences for sapo, the bias-corrected KL and the masks', () => {
    const sequenceArb = fc.integer({ min: 1, max: 4 }).chain((length) => {
      const row = (min: number, max: number) =>
        fc.array(fc.double({ min, max, noNaN: true }), { minLength: length, maxLength: length });
      return fc.record({
        logprobs: row(-4, -0.01),
        shifts: row(-0.6, 0.6),
        ref: row(-4, -0.01),
        behaviour: row(-0.8, 0.8),
        keep: fc.array(fc.constantFrom(0, 1), { minLength: length, maxLength: length }),
        advantage: fc.double({ min: -2, max: 2, noNaN: true }),
      });
    });
    fc.assert(
      fc.property(
        fc.array(sequenceArb, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('clip', 'sapo'),
        fc.constantFrom('seq-mean-token-mean', 'token-mean', 'seq-mean-token-sum'),
        fc.constantFrom('k1', 'k3'),
        (sequences, lossMode, aggregation, klEstimator) => {
          const threshold = 0.1;
          const build = (logprobs: number[][]): PolicyLossInput => ({
            logprobs,
            oldLogprobs: sequences.map((s) => s.logprobs.map((value, t) => value + s.shifts[t]!)),
            advantages: sequences.map((s) => s.advantage),
            refLogprobs: sequences.map((s) => s.ref),
            klCoefficient: 0.05,
            klEstimator: klEstimator as 'k1',
            useBiasCorrectionKl: true,
            offPolicyMaskThreshold: threshold,
            behaviourLogprobs: sequences.map((s) => s.logprobs.map((v, t) => v + s.behaviour[t]!)),
            entropyMask: sequences.map((s) => s.keep),
            lossMode: lossMode as 'clip',
            ...(lossMode === 'clip' ? { epsilonLow: 0.2, epsilonHigh: 0.28 } : {}),
            aggregation: aggregation as 'token-mean',
          });
          const base = sequences.map((s) => [...s.logprobs]);
          const result = policyLoss(build(base));
          // the masks do not move under ±h unless a sequence sits at δ
          const meanKl = sequences.map(
            (s) => s.behaviour.reduce((a, b) => a + b, 0) / s.behaviour.length,
          );
          if (meanKl.some((kl) => Math.abs(kl - threshold) < 1e-4)) return;
          const h = 1e-6;
          base.forEach((row, s) => {
            row.forEach((_, t) => {
              const plus = base.map((r) => [...r]);
              const minus = base.map((r) => [...r]);
              plus[s]![t]! += h;
              minus[s]![t]! -= h;
              const numeric =
                (policyLoss(build(plus)).loss - policyLoss(build(minus)).loss) / (2 * h);
              const ratio = result.ratios[s]![t]!;
              const nearKink = [0.8, 1.28].some((edge) => Math.abs(ratio - edge) < 1e-4);
              if (lossMode === 'sapo' || !nearKink) {
                expect(result.gradLogprobs[s]![t]).toBeCloseTo(numeric, 4);
              }
            });
          });
        },
      ),
      { numRuns: 80 },
    );
  });
});
