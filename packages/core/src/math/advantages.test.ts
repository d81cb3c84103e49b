import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { NonFiniteError } from '../errors/non-finite-error.js';
import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';
import { groupAdvantages } from './advantages.js';

const rewardArb = fc.double({ min: -10, max: 10, noNaN: true, noDefaultInfinity: true });

/** A batch of `groups` groups of size `size` with rewards on a coarse grid (so stds are not tiny). */
const batchArb = fc
  .record({ size: fc.integer({ min: 2, max: 8 }), groups: fc.integer({ min: 1, max: 4 }) })
  .chain(({ size, groups }) =>
    fc.record({
      size: fc.constant(size),
      rewards: fc.array(
        fc.integer({ min: -4, max: 4 }).map((x) => x / 2),
        {
          minLength: size * groups,
          maxLength: size * groups,
        },
      ),
    }),
  );

describe('groupAdvantages', () => {
  it("should reproduce the seed's worked example exactly", () => {
    const result = groupAdvantages([1, 0, 0, 1, 1, 0, 0, 0], { groupSize: 8, std: 'population' });
    expect(result.groupMeans[0]).toBe(0.375);
    expect(result.groupStds[0]).toBeCloseTo(0.484123, 6); // sqrt(0.375 * 0.625)
    const correct = 0.625 / (Math.sqrt(0.375 * 0.625) + 1e-6);
    const wrong = -0.375 / (Math.sqrt(0.375 * 0.625) + 1e-6);
    expect(correct).toBeCloseTo(1.29, 2);
    expect(wrong).toBeCloseTo(-0.77, 2);
    expect(result.advantages).toEqual([
      correct,
      wrong,
      wrong,
      correct,
      correct,
      wrong,
      wrong,
      wrong,
    ]);
    expect(result.zeroStdGroups).toBe(0);
  });

  it('should use the sample (Bessel) std by default, like torch.std in TRL and verl', () => {
    const { advantages, groupStds } = groupAdvantages([1, 0, 0, 1], { groupSize: 4 });
    const std = Math.sqrt(1 / 3); // squares 4 * 0.25 = 1, divided by n - 1 = 3
    expect(groupStds[0]).toBeCloseTo(std, 12);
    expect(advantages[0]).toBeCloseTo(0.5 / (std + 1e-6), 12);
  });

  it('should give all-zero advantages, never NaN, for all-equal groups', () => {
    for (const scale of ['group', 'batch', 'none'] as const) {
      const { advantages, zeroStdGroups } = groupAdvantages([1, 1, 1, 0, 0, 0], {
        groupSize: 3,
        scale,
      });
      expect(advantages).toEqual([0, 0, 0, 0, 0, 0]);
      expect(zeroStdGroups).toBe(2);
    }
    const { advantages } = groupAdvantages([0.3, 0.3, 0.3, 0.3], { groupSize: 4, epsilon: 0 });
    expect(advantages).toEqual([0, 0, 0, 0]);
  });

  it('should compute leave-one-out (RLOO) baselines by hand', () => {
    // Group [1, 0, 0, 1]: for r=1 the others average 1/3, for r=0 they average 2/3.
    const { advantages } = groupAdvantages([1, 0, 0, 1], {
      groupSize: 4,
      baseline: 'leave-one-out',
    });
    expect(advantages[0]).toBeCloseTo(2 / 3, 12);
    expect(advantages[1]).toBeCloseTo(-2 / 3, 12);
    expect(advantages[3]).toBeCloseTo(2 / 3, 12);
  });

  it('should scale by the batch std when scale is batch (TRL scale_rewards="batch")', () => {
    const rewards = [1, 0, 1, 1, 0, 0, 0, 1];
    const { advantages } = groupAdvantages(rewards, {
      groupSize: 4,
      scale: 'batch',
      std: 'population',
    });
    // batch: mean 0.5, population std 0.5; group means 0.75 and 0.25.
    expect(advantages[0]).toBeCloseTo(0.25 / (0.5 + 1e-6), 12);
    expect(advantages[1]).toBeCloseTo(-0.75 / (0.5 + 1e-6), 12);
    expect(advantages[7]).toBeCloseTo(0.75 / (0.5 + 1e-6), 12);
  });

  it('should not scale with scale none (Dr. GRPO)', () => {
    const { advantages } = groupAdvantages([3, 1, 2, 2], { groupSize: 2, scale: 'none' });
    expect(advantages).toEqual([1, -1, 0, 0]);
  });

  it('should whiten group-centered rewards over the batch for REINFORCE++-baseline', () => {
    const { advantages } = groupAdvantages([2, 0, 1, 1, 5, 3], {
      groupSize: 2,
      baseline: 'reinforce-plus-plus',
      std: 'population',
    });
    // centered: [1, -1, 0, 0, 1, -1] → batch mean 0, population std sqrt(4/6).
    const std = Math.sqrt(4 / 6);
    expect(advantages[0]).toBeCloseTo(1 / (std + 1e-6), 12);
    expect(advantages[1]).toBeCloseTo(-1 / (std + 1e-6), 12);
    expect(advantages[2]).toBe(0);
    expect(advantages[3]).toBe(0);
  });

  it('should exclude null rewards from the baseline and give them advantage 0', () => {
    const { advantages, groupMeans } = groupAdvantages([1, null, 0, 1], {
      groupSize: 4,
      std: 'population',
    });
    expect(groupMeans[0]).toBeCloseTo(2 / 3, 12);
    expect(advantages[1]).toBe(0);
    const std = Math.sqrt(2 / 9);
    expect(advantages[0]).toBeCloseTo(1 / 3 / (std + 1e-6), 12);
    expect(advantages[2]).toBeCloseTo(-2 / 3 / (std + 1e-6), 12);
    expect(groupAdvantages([null, null], { groupSize: 2 }).advantages).toEqual([0, 0]);
    // RLOO with a single valid reward has no baseline: advantage 0.
    expect(
      groupAdvantages([1, null], { groupSize: 2, baseline: 'leave-one-out' }).advantages,
    ).toEqual([0, 0]);
  });

  it('should sum weighted rewards before normalizing (sum_then_normalize)', () => {
    const result = groupAdvantages(
      [
        [1, 0, 1, 0],
        [1, 1, 0, null],
      ],
      { groupSize: 4, weights: [1, 0.5], std: 'population', scale: 'none' },
    );
    expect(result.combinedRewards).toEqual([1.5, 0.5, 1, 0]);
    expect(result.advantages).toEqual([0.75, -0.25, 0.25, -0.75]);
    // A sample where every function returned null stays null.
    const allNull = groupAdvantages(
      [
        [1, null],
        [0, null],
      ],
      { groupSize: 2 },
    );
    expect(allNull.combinedRewards).toEqual([1, null]);
  });

  it('should z-score each reward per group, sum, then whiten (GDPO normalize_then_sum)', () => {
    const result = groupAdvantages(
      [
        [1, 0, 1, 0],
        [1, 1, 1, 0],
      ],
      { groupSize: 4, multiReward: 'normalize_then_sum', std: 'population', epsilon: 0 },
    );
    // reward 0: mean .5 std .5 → [1,-1,1,-1]; reward 1: mean .75 std sqrt(3)/4 → [1/√3, 1/√3, 1/√3, -√3]
    const a = 1 / Math.sqrt(3);
    const sums = [1 + a, -1 + a, 1 + a, -1 - Math.sqrt(3)];
    const std = Math.sqrt(sums.reduce((s, x) => s + x * x, 0) / 4);
    result.combinedRewards.forEach((value, index) => {
      expect(value).toBeCloseTo(sums[index]!, 12);
    });
    result.advantages.forEach((value, index) => {
      expect(value).toBeCloseTo(sums[index]! / std, 12);
    });
    const unscaled = groupAdvantages(
      [
        [1, 0, 1, 0],
        [1, 1, 1, 0],
      ],
      {
        groupSize: 4,
        multiReward: 'normalize_then_sum',
        std: 'population',
        epsilon: 0,
        scale: 'none',
      },
    );
    unscaled.advantages.forEach((value, index) => {
      expect(value).toBeCloseTo(sums[index]!, 12);
    });
  });

  it('should be invariant to adding a constant to a group (property)', () => {
    fc.assert(
      fc.property(
        batchArb,
        rewardArb,
        fc.constantFrom('group', 'batch', 'none'),
        ({ size, rewards }, shift, scale) => {
          const base = groupAdvantages(rewards, { groupSize: size, scale: scale as 'group' });
          const shifted = groupAdvantages(
            rewards.map((r) => r + shift),
            { groupSize: size, scale: scale as 'group' },
          );
          base.advantages.forEach((value, index) => {
            expect(shifted.advantages[index]).toBeCloseTo(value, 6);
          });
        },
      ),
    );
  });

  it('should be invariant to positive scaling of rewards when dividing by the std (property)', () => {
    fc.assert(
      fc.property(
        batchArb,
        fc.double({ min: 0.01, max: 100, noNaN: true }),
        ({ size, rewards }, factor) => {
          const options = { groupSize: size, epsilon: 0 };
          const base = groupAdvantages(rewards, options);
          const scaled = groupAdvantages(
            rewards.map((r) => r * factor),
            options,
          );
          base.advantages.forEach((value, index) => {
            expect(scaled.advantages[index]).toBeCloseTo(value, 6);
          });
        },
      ),
    );
  });

  it('should give zero-sum groups for the mean baseline and RLOO = G/(G-1) × centered (property)', () => {
    fc.assert(
      fc.property(batchArb, ({ size, rewards }) => {
        const centered = groupAdvantages(rewards, { groupSize: size, scale: 'none' }).advantages;
        const rloo = groupAdvantages(rewards, {
          groupSize: size,
          baseline: 'leave-one-out',
        }).advantages;
        for (let group = 0; group < rewards.length / size; group++) {
          const slice = centered.slice(group * size, (group + 1) * size);
          expect(slice.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 9);
        }
        centered.forEach((value, index) => {
          expect(rloo[index]).toBeCloseTo((value * size) / (size - 1), 9);
        });
      }),
    );
  });

  it('should give zeros for zero-variance groups whatever the mode (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 8 }),
        rewardArb,
        fc.constantFrom('mean', 'leave-one-out', 'reinforce-plus-plus'),
        (size, value, baseline) => {
          const rewards = new Array(size).fill(value);
          const { advantages } = groupAdvantages(rewards, {
            groupSize: size,
            baseline: baseline as 'mean',
          });
          expect(advantages.every((a) => a === 0)).toBe(true);
        },
      ),
    );
  });

  it('should reject bad input with typed errors naming the parameter', () => {
    expect(() => groupAdvantages([1, 0], { groupSize: 1 })).toThrow(
      "Invalid argument for parameter 'options.groupSize' of groupAdvantages(): expected an integer >= 2, got 1",
    );
    expect(() => groupAdvantages([1, 0, 1], { groupSize: 2 })).toThrow(ShapeMismatchError);
    expect(() => groupAdvantages([1, 0, 1], { groupSize: 2 })).toThrow(/multiple of groupSize 2/);
    const nan = () => groupAdvantages([1, Number.NaN], { groupSize: 2 });
    expect(nan).toThrow(NonFiniteError);
    expect(nan).toThrow(/'rewards'.*rewards\[1\]/);
    expect(() => groupAdvantages([1, Infinity], { groupSize: 2 })).toThrow(NonFiniteError);
    expect(() => groupAdvantages([1, '1' as unknown as number], { groupSize: 2 })).toThrow(
      /rewards\[1\]/,
    );
    expect(() => groupAdvantages('nope' as unknown as number[], { groupSize: 2 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => groupAdvantages([1, 0], { groupSize: 2, baseline: 'median' as 'mean' })).toThrow(
      /options.baseline/,
    );
    expect(() => groupAdvantages([1, 0], { groupSize: 2, std: 'biased' as 'sample' })).toThrow(
      /options.std/,
    );
    expect(() => groupAdvantages([1, 0], { groupSize: 2, epsilon: -1 })).toThrow(/options.epsilon/);
    expect(() => groupAdvantages([[1, 0], [1]], { groupSize: 2 })).toThrow(/rewards\[1\]/);
    expect(() =>
      groupAdvantages(
        [
          [1, 0],
          [1, 0],
        ],
        { groupSize: 2, weights: [1] },
      ),
    ).toThrow(/options.weights/);
    expect(() =>
      groupAdvantages([1, 0], { groupSize: 2, baseline: 'reinforce-plus-plus', scale: 'group' }),
    ).toThrow(/options.scale/);
    expect(() => groupAdvantages([1, 0], undefined as unknown as { groupSize: number })).toThrow(
      /groupSize/,
    );
  });

  it('should accept an empty batch', () => {
    expect(groupAdvantages([], { groupSize: 4 }).advantages).toEqual([]);
  });
});
