import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { betaStopProbability, dirichletStopProbability } from './stopping.js';

/** P(X > 1/2), X ~ Beta(a, b), by numerical integration of the density (reference). */
function betaTailNumeric(a: number, b: number): number {
  const steps = 200_000;
  let logB = 0;
  // log B(a, b) with integer a, b = log((a−1)!(b−1)!/(a+b−1)!)
  for (let i = 1; i < a; i++) logB += Math.log(i);
  for (let i = 1; i < b; i++) logB += Math.log(i);
  for (let i = 1; i < a + b; i++) logB -= Math.log(i);
  let sum = 0;
  for (let i = 0; i < steps; i++) {
    const x = 0.5 + (0.5 * (i + 0.5)) / steps;
    sum += Math.exp((a - 1) * Math.log(x) + (b - 1) * Math.log(1 - x) - logB);
  }
  return (sum * 0.5) / steps;
}

describe('betaStopProbability', () => {
  it('should match hand-computed values', () => {
    expect(betaStopProbability(0, 0)).toBe(0.5);
    expect(betaStopProbability(4, 0)).toBeCloseTo(1 - 2 ** -5, 15);
    expect(betaStopProbability(3, 3)).toBeCloseTo(0.5, 15);
    expect(betaStopProbability(2, 1)).toBeCloseTo(11 / 16, 15); // n = 4: (1 + 4 + 6) / 16
  });

  it('should equal numerical integration of the Beta density (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }), (v1, v2) => {
        expect(betaStopProbability(v1, v2)).toBeCloseTo(betaTailNumeric(v1 + 1, v2 + 1), 6);
      }),
      { numRuns: 25 },
    );
  });

  it('should grow with the leader and fall with the runner-up', () => {
    expect(betaStopProbability(6, 2)).toBeGreaterThan(betaStopProbability(5, 2));
    expect(betaStopProbability(6, 3)).toBeLessThan(betaStopProbability(6, 2));
    expect(() => betaStopProbability(-1, 0)).toThrow(/leaderVotes/);
  });
});

describe('dirichletStopProbability', () => {
  it('should agree with the exact Beta criterion for two answers', () => {
    const estimate = dirichletStopProbability([5, 2], { samples: 20_000, seed: 3 });
    expect(Math.abs(estimate - betaStopProbability(5, 2))).toBeLessThan(0.015);
  });

  it('should be deterministic for a seed, 1 for a single answer, and lower with more rivals', () => {
    expect(dirichletStopProbability([3, 1, 1], { seed: 1 })).toBe(
      dirichletStopProbability([3, 1, 1], { seed: 1 }),
    );
    expect(dirichletStopProbability([7])).toBe(1);
    expect(dirichletStopProbability([4, 2, 2, 2], { seed: 2 })).toBeLessThan(
      dirichletStopProbability([4, 2], { seed: 2 }),
    );
    expect(() => dirichletStopProbability([])).toThrow(/counts/);
    expect(() => dirichletStopProbability([1.5])).toThrow(/counts\[0\]/);
  });
});
