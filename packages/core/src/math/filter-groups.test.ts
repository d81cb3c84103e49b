import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RolloutGroup } from '../types/rollout.js';
import { filterGroups } from './filter-groups.js';

function group(promptId: string, rewards: (number | null)[]): RolloutGroup {
  return {
    promptId,
    prompt: promptId,
    rollouts: rewards.map((reward) => ({
      promptId,
      prompt: promptId,
      completion: '',
      promptTokenIds: [],
      tokenIds: [],
      logprobs: [],
      reward,
      rewards: {},
      finishReason: 'stop',
      modelId: 'm',
    })),
  };
}

describe('filterGroups', () => {
  it('should drop zero-variance groups and count all-correct / all-wrong', () => {
    const result = filterGroups([
      [1, 1, 1, 1],
      [1, 0, 0, 1],
      [0, 0, 0, 0],
      [0, 1, 0, 0],
    ]);
    expect(result.keptIndices).toEqual([1, 3]);
    expect(result.kept).toEqual([
      [1, 0, 0, 1],
      [0, 1, 0, 0],
    ]);
    expect(result.counts).toMatchObject({
      total: 4,
      kept: 2,
      zeroStd: 2,
      allCorrect: 1,
      allWrong: 1,
    });
    expect(result.fracRewardZeroStd).toBe(0.5);
    expect(result.fracAllCorrect).toBe(0.25);
    expect(result.fracAllWrong).toBe(0.25);
    expect(result.dropped).toEqual([
      { index: 0, reason: 'low-std' },
      { index: 2, reason: 'low-std' },
    ]);
    expect(result.groups[1]).toEqual({
      mean: 0.5,
      std: Math.sqrt(1 / 3), // sample std of [1, 0, 1, 0]
      passRate: 0.5,
      validCount: 4,
    });
  });

  it('should use the std for continuous rewards, not just 0/1', () => {
    const result = filterGroups(
      [
        [0.7, 0.7, 0.7],
        [0.7, 0.71, 0.7],
        [0.2, 0.2000001, 0.2],
      ],
      { minStd: 1e-3 },
    );
    expect(result.keptIndices).toEqual([1]);
    expect(result.counts.zeroStd).toBe(1); // only the exactly-equal group has zero std
    expect(result.counts.lowStd).toBe(2);
  });

  it('should keep only groups inside the pass-rate band', () => {
    const result = filterGroups(
      [
        [1, 0, 0, 0],
        [1, 1, 0, 0],
        [1, 1, 1, 0],
      ],
      { passRate: { min: 0.3, max: 0.6 } },
    );
    expect(result.keptIndices).toEqual([1]);
    expect(result.counts.outsidePassRate).toBe(2);
    expect(result.dropped.map((drop) => drop.reason)).toEqual(['pass-rate', 'pass-rate']);
  });

  it('should read rewards from RolloutGroups, ignore nulls, and drop groups with no rewards', () => {
    const groups = [group('a', [1, null, 0]), group('b', [null, null]), group('c', [1, null, 1])];
    const result = filterGroups(groups, { passThreshold: 0.5 });
    expect(result.kept.map((kept) => kept.promptId)).toEqual(['a']);
    expect(result.groups[0]!.validCount).toBe(2);
    expect(result.counts.noRewards).toBe(1);
    expect(result.dropped).toEqual([
      { index: 1, reason: 'no-rewards' },
      { index: 2, reason: 'low-std' },
    ]);
  });

  it('should partition the input into kept and dropped groups (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.array(
            fc.integer({ min: 0, max: 2 }).map((x) => x / 2),
            { minLength: 1, maxLength: 6 },
          ),
          {
            maxLength: 10,
          },
        ),
        (groups) => {
          const result = filterGroups(groups);
          const indices = [...result.keptIndices, ...result.dropped.map((drop) => drop.index)].sort(
            (a, b) => a - b,
          );
          expect(indices).toEqual(groups.map((_, index) => index));
          for (const index of result.keptIndices)
            expect(new Set(groups[index]).size).toBeGreaterThan(1);
        },
      ),
    );
  });

  it('should reject bad input naming the parameter', () => {
    expect(() => filterGroups([[1, Number.NaN]])).toThrow(/groups\[0\]/);
    expect(() => filterGroups([{} as unknown as number[]])).toThrow(/groups\[0\]/);
    expect(() => filterGroups([[1, 0]], { passRate: { min: 0.8, max: 0.2 } })).toThrow(
      /options.passRate.max/,
    );
    expect(() => filterGroups([[1, 0]], { std: 'x' as 'sample' })).toThrow(/options.std/);
    expect(() => filterGroups('x' as unknown as number[][])).toThrow(/'groups'/);
  });
});

describe('filterGroups defaults', () => {
  it('should use the sample std by default, as groupAdvantages does', () => {
    // Group [0, 1]: population std 0.5, sample std 0.7071. minStd 0.6 keeps it only with sample std.
    expect(filterGroups([[0, 1]], { minStd: 0.6 }).keptIndices).toEqual([0]);
    expect(filterGroups([[0, 1]], { minStd: 0.6, std: 'population' }).keptIndices).toEqual([]);
  });
});
