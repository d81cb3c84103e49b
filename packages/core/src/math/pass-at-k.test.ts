import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { majAtK, meanAtN, passAtK } from './pass-at-k.js';

function choose(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  let result = 1n;
  for (let i = 0; i < k; i++) result = (result * BigInt(n - i)) / BigInt(i + 1);
  return result;
}

/** Brute force over all k-subsets: majority with uniform random tie-breaking. */
function bruteForceMajAtK(labels: number[], correct: number, k: number): number {
  const n = labels.length;
  let total = 0;
  let count = 0;
  const pick = (start: number, chosen: number[]) => {
    if (chosen.length === k) {
      count++;
      const votes = new Map<number, number>();
      for (const index of chosen) {
        const label = labels[index]!;
        if (label >= 0) votes.set(label, (votes.get(label) ?? 0) + 1);
      }
      if (votes.size === 0) return;
      const best = Math.max(...votes.values());
      const leaders = [...votes.entries()].filter(([, v]) => v === best).map(([label]) => label);
      if (leaders.includes(correct)) total += 1 / leaders.length;
      return;
    }
    for (let i = start; i < n; i++) pick(i + 1, [...chosen, i]);
  };
  pick(0, []);
  return total / count;
}

describe('passAtK', () => {
  it('should match hand-computed values', () => {
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 15);
    expect(passAtK(10, 3, 5)).toBeCloseTo(1 - 21 / 252, 15);
    expect(passAtK(10, 0, 5)).toBe(0);
    expect(passAtK(10, 8, 5)).toBe(1); // n − c < k
    expect(passAtK(1, 1, 1)).toBe(1);
  });

  it('should equal 1 − C(n−c,k)/C(n,k) on small cases and be monotone in k (property)', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 40 })
          .chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n }))),
        ([n, c]) => {
          let previous = -1;
          for (let k = 1; k <= n; k++) {
            const exact = 1 - Number(choose(n - c, k)) / Number(choose(n, k));
            const value = passAtK(n, c, k);
            expect(value).toBeCloseTo(exact, 12);
            expect(value).toBeGreaterThanOrEqual(previous - 1e-15);
            previous = value;
          }
        },
      ),
    );
  });

  it('should stay accurate for large n', () => {
    expect(passAtK(1000, 1, 1)).toBeCloseTo(0.001, 15);
    expect(passAtK(10_000, 5000, 100)).toBeCloseTo(1, 15);
  });

  it('should reject invalid counts naming the parameter', () => {
    expect(() => passAtK(10, 11, 1)).toThrow(/parameter 'c'/);
    expect(() => passAtK(10, 1, 0)).toThrow(/parameter 'k'/);
    expect(() => passAtK(10, 1, 11)).toThrow(/parameter 'k'/);
    expect(() => passAtK(0, 0, 1)).toThrow(/parameter 'n'/);
    expect(() => passAtK(10.5, 1, 1)).toThrow(/parameter 'n'/);
  });
});

describe('majAtK', () => {
  it('should match hand-computed values', () => {
    expect(majAtK({ clusterSizes: [2, 1], correctCluster: 0, k: 3 })).toBeCloseTo(1, 14);
    expect(majAtK({ clusterSizes: [1, 1], correctCluster: 0, k: 1 })).toBeCloseTo(0.5, 14);
    expect(majAtK({ clusterSizes: [1, 1], correctCluster: 0, k: 2 })).toBeCloseTo(0.5, 14); // always a tie
    expect(majAtK({ clusterSizes: [3], correctCluster: -1, k: 2 })).toBe(0);
    // 2 correct, 2 of another answer, k = 3: subsets of 4 choose 3 = 4, each has 2-1 split; correct wins in 2.
    expect(majAtK({ clusterSizes: [2, 2], correctCluster: 0, k: 3 })).toBeCloseTo(0.5, 14);
    // One correct, one abstained, k = 1: wins half the time, abstaining draws count as wrong.
    expect(majAtK({ clusterSizes: [1], correctCluster: 0, k: 1, abstained: 1 })).toBeCloseTo(
      0.5,
      14,
    );
  });

  it('should equal brute-force enumeration over all subsets (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -1, max: 3 }), { minLength: 1, maxLength: 9 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 0, max: 3 }),
        (labels, kRaw, correctRaw) => {
          const k = Math.min(kRaw, labels.length);
          const clusterSizes = [0, 1, 2, 3].map(
            (label) => labels.filter((l) => l === label).length,
          );
          const abstained = labels.filter((l) => l < 0).length;
          const value = majAtK({ clusterSizes, correctCluster: correctRaw, k, abstained });
          expect(value).toBeCloseTo(bruteForceMajAtK(labels, correctRaw, k), 12);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('should reject invalid input naming the parameter', () => {
    expect(() => majAtK({ clusterSizes: [1, 2], correctCluster: 2, k: 1 })).toThrow(
      /options.correctCluster/,
    );
    expect(() => majAtK({ clusterSizes: [1, 2], correctCluster: 0, k: 4 })).toThrow(/options.k/);
    expect(() => majAtK({ clusterSizes: [1.5], correctCluster: 0, k: 1 })).toThrow(
      /options.clusterSizes\[0\]/,
    );
    expect(() => majAtK({ clusterSizes: [], correctCluster: -1, k: 1 })).toThrow(
      /at least one sample/,
    );
  });
});

describe('meanAtN', () => {
  it('should average scores', () => {
    expect(meanAtN([1, 0, 1, 1])).toBe(0.75);
    expect(() => meanAtN([])).toThrow(/'scores'/);
  });
});
