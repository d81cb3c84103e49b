import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { klGradient, klPenalty, klValue } from './kl.js';
import { logSoftmax } from './numeric.js';

const logprobArb = fc.double({ min: -15, max: 0, noNaN: true });

describe('klPenalty', () => {
  it('should compute k1, k2, k3 and abs by hand', () => {
    const logp = [-1.2, -0.3];
    const ref = [-1.0, -0.5];
    expect(klPenalty(logp, ref, 'k1')).toEqual([-1.2 - -1.0, -0.3 - -0.5]);
    expect(klPenalty(logp, ref, 'k2')[0]).toBeCloseTo(0.5 * 0.04, 15);
    expect(klPenalty(logp, ref, 'abs')[1]).toBeCloseTo(0.2, 15);
    const k3 = klPenalty(logp, ref, 'k3');
    expect(k3[0]).toBeCloseTo(Math.exp(0.2) - 0.2 - 1, 15);
    expect(k3[1]).toBeCloseTo(Math.exp(-0.2) + 0.2 - 1, 15);
    expect(klPenalty(logp, ref)).toEqual(k3); // k3 is the default
  });

  it("should apply verl's clamping to k3", () => {
    // ref − logp = 30 is clamped to 20, then the value to 10.
    expect(klPenalty([-30], [0], 'k3')[0]).toBe(10);
    // ref − logp = −30: exp(−20) + 20 − 1 = 19 is clamped to 10 as well.
    expect(klPenalty([0], [-30], 'k3')[0]).toBe(10);
    // Inside the clamps nothing changes: ref − logp = −5.
    expect(klPenalty([0], [-5], 'k3')[0]).toBeCloseTo(Math.exp(-5) + 4, 14);
  });

  it('should handle ragged batches', () => {
    const result = klPenalty([[-1], [-2, -3]], [[-1], [-2, -2]], 'k1');
    expect(result).toEqual([[0], [0, -1]]);
  });

  it('should be an unbiased estimate of KL(p‖q) for k1 and k3 (exact expectation)', () => {
    const p = logSoftmax([0.3, -1.2, 2.0, 0.1]);
    const q = logSoftmax([0.0, 0.5, 1.0, -0.7]);
    let exact = 0;
    let k1 = 0;
    let k3 = 0;
    for (let i = 0; i < p.length; i++) {
      const probability = Math.exp(p[i]!);
      exact += probability * (p[i]! - q[i]!);
      k1 += probability * klValue(p[i]!, q[i]!, 'k1');
      k3 += probability * klValue(p[i]!, q[i]!, 'k3');
    }
    expect(k1).toBeCloseTo(exact, 14);
    expect(k3).toBeCloseTo(exact, 14);
  });

  it('should give k3 ≥ 0 and k2 ≥ 0 everywhere (property)', () => {
    fc.assert(
      fc.property(logprobArb, logprobArb, (logp, ref) => {
        expect(klValue(logp, ref, 'k3')).toBeGreaterThanOrEqual(0);
        expect(klValue(logp, ref, 'k2')).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('should have gradients that match finite differences (property)', () => {
    fc.assert(
      fc.property(
        logprobArb,
        logprobArb,
        fc.constantFrom('k1', 'k2', 'k3', 'abs'),
        (logp, ref, estimator) => {
          const kind = estimator as 'k1';
          fc.pre(Math.abs(logp - ref) > 1e-3 && ref - logp < 2); // away from the |x| kink and the clamp
          const h = 1e-6;
          const numeric = (klValue(logp + h, ref, kind) - klValue(logp - h, ref, kind)) / (2 * h);
          expect(klGradient(logp, ref, kind)).toBeCloseTo(numeric, 4);
        },
      ),
    );
  });

  it('should reject bad input naming the parameter', () => {
    expect(() => klPenalty([-1], [-1, -2], 'k1')).toThrow(/refLogprobs/);
    expect(() => klPenalty([-1], [-1], 'k4' as 'k1')).toThrow(/'estimator'/);
    expect(() => klPenalty([Number.NaN], [-1], 'k1')).toThrow(/logprobs/);
    expect(() => klPenalty([[-1]], [-1] as unknown as number[][], 'k1')).toThrow(/refLogprobs/);
    expect(() => klPenalty('x' as unknown as number[], [], 'k1')).toThrow(/'logprobs'/);
  });
});
