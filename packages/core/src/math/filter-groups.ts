import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

import type { RolloutGroup } from '../types/rollout.js';
import {
  validateNullableFiniteArray,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '../validation/validate.js';
import { meanAndStd, type StdKind } from './numeric.js';

/** Options of {@link filterGroups}. */
export type FilterGroupsOptions = {
  /**
   * Drop groups whose reward std is ≤ this (DAPO dynamic sampling; works for continuous rewards).
   * Default 1e-6. Set to -1 to keep zero-variance groups.
   */
  minStd?: number;
  /** Std kind used for `minStd`. Default `sample` (as `groupAdvantages` and TRL). */
  std?: StdKind;
  /** Keep only groups whose pass rate is within `[min, max]` (inclusive). Default no band. */
  passRate?: { min?: number; max?: number };
  /** A reward ≥ this counts as a pass (for pass rates and the all-correct/all-wrong counts). Default 1. */
  passThreshold?: number;
};

/** Why a group was dropped. */
export type FilterDropReason = 'low-std' | 'pass-rate' | 'no-rewards';

/** Result of {@link filterGroups}. */
export type FilterGroupsResult<T> = {
  /** The groups that were kept, in input order. */
  kept: T[];
  /** Indices (into the input) of the kept groups. */
  keptIndices: number[];
  /** Dropped groups with the reason. */
  dropped: { index: number; reason: FilterDropReason }[];
  /** Per-group statistics, in input order. */
  groups: { mean: number; std: number; passRate: number; validCount: number }[];
  counts: {
    total: number;
    kept: number;
    /** Groups whose rewards are all equal (std 0), whatever `minStd` is: TRL's `frac_reward_zero_std`. */
    zeroStd: number;
    /** Groups dropped because their std is ≤ `minStd` (includes the zero-std ones when minStd ≥ 0). */
    lowStd: number;
    allCorrect: number;
    allWrong: number;
    outsidePassRate: number;
    noRewards: number;
  };
  /** Fraction of groups with zero reward std (TRL's `frac_reward_zero_std`). */
  fracRewardZeroStd: number;
  fracAllCorrect: number;
  fracAllWrong: number;
};

const FN = 'filterGroups';

/**
 * Group filtering for dynamic sampling: drops groups that carry no learning signal (reward std ≤
 * `minStd`) or whose pass rate is outside a band, and counts what it saw.
 *
 * Accepts `RolloutGroup`s (rewards read from `rollouts[].reward`) or plain arrays of rewards, one
 * array per group; groups may have different sizes. `null` rewards are ignored.
 *
 * @example
 * ```ts
 * const { kept, fracRewardZeroStd } = filterGroups([[1, 1, 1, 1], [1, 0, 0, 1], [0, 0, 0, 0]]);
 * // kept = [[1, 0, 0, 1]], fracRewardZeroStd = 2/3
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for bad options or groups.
 * @throws {NonFiniteError} `NON_FINITE` for NaN or infinite rewards.
 */
export function filterGroups<T extends RolloutGroup | readonly (number | null)[]>(
  groups: readonly T[],
  options?: FilterGroupsOptions,
): FilterGroupsResult<T> {
  const raw = validateOptions<FilterGroupsOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: ['minStd', 'std', 'passRate', 'passThreshold'],
  });
  const minStd = validateNumber(raw.minStd ?? 1e-6, {
    parameter: 'options.minStd',
    functionName: FN,
  });
  const std = validateOneOf(raw.std ?? 'sample', ['population', 'sample'], {
    parameter: 'options.std',
    functionName: FN,
  });
  const passThreshold = validateNumber(raw.passThreshold ?? 1, {
    parameter: 'options.passThreshold',
    functionName: FN,
  });
  const passRate = validateOptions<{ min?: number; max?: number }>(raw.passRate, {
    parameter: 'options.passRate',
    functionName: FN,
    known: ['min', 'max'],
  });
  const minPass = validateNumber(passRate.min ?? 0, {
    parameter: 'options.passRate.min',
    functionName: FN,
    min: 0,
    max: 1,
  });
  const maxPass = validateNumber(passRate.max ?? 1, {
    parameter: 'options.passRate.max',
    functionName: FN,
    min: minPass,
    max: 1,
  });
  if (!Array.isArray(groups)) {
    throw new InvalidArgumentError({
      parameter: 'groups',
      functionName: FN,
      value: groups,
      expected: 'an array of groups',
    });
  }

  const result: FilterGroupsResult<T> = {
    kept: [],
    keptIndices: [],
    dropped: [],
    groups: [],
    counts: {
      total: groups.length,
      kept: 0,
      zeroStd: 0,
      lowStd: 0,
      allCorrect: 0,
      allWrong: 0,
      outsidePassRate: 0,
      noRewards: 0,
    },
    fracRewardZeroStd: 0,
    fracAllCorrect: 0,
    fracAllWrong: 0,
  };

  groups.forEach((group, groupIndex) => {
    const rewards = rewardsOf(group, groupIndex);
    const stats = meanAndStd(rewards, std);
    const passes = rewards.filter((reward) => reward >= passThreshold).length;
    const rate = rewards.length > 0 ? passes / rewards.length : 0;
    result.groups.push({
      mean: stats.mean,
      std: stats.std,
      passRate: rate,
      validCount: rewards.length,
    });
    if (rewards.length === 0) {
      result.counts.noRewards++;
      result.dropped.push({ index: groupIndex, reason: 'no-rewards' });
      return;
    }
    const lowStd = stats.std <= minStd;
    if (stats.std <= 1e-12) result.counts.zeroStd++;
    if (passes === rewards.length) result.counts.allCorrect++;
    if (passes === 0) result.counts.allWrong++;
    if (lowStd) {
      result.counts.lowStd++;
      result.dropped.push({ index: groupIndex, reason: 'low-std' });
    } else if (rate < minPass || rate > maxPass) {
      result.counts.outsidePassRate++;
      result.dropped.push({ index: groupIndex, reason: 'pass-rate' });
    } else {
      result.kept.push(group);
      result.keptIndices.push(groupIndex);
    }
  });
  result.counts.kept = result.kept.length;
  const total = Math.max(groups.length, 1);
  result.fracRewardZeroStd = result.counts.zeroStd / total;
  result.fracAllCorrect = result.counts.allCorrect / total;
  result.fracAllWrong = result.counts.allWrong / total;
  return result;
}

function rewardsOf(group: unknown, groupIndex: number): number[] {
  let values: unknown[];
  let name = `groups[${groupIndex}]`;
  if (Array.isArray(group)) {
    values = group;
  } else if (
    group !== null &&
    typeof group === 'object' &&
    Array.isArray((group as RolloutGroup).rollouts)
  ) {
    values = (group as RolloutGroup).rollouts.map((rollout) => rollout?.reward);
    name = `groups[${groupIndex}].rollouts[].reward`;
  } else {
    throw new InvalidArgumentError({
      parameter: `groups[${groupIndex}]`,
      functionName: FN,
      value: group,
      expected: 'a RolloutGroup or an array of rewards',
    });
  }
  return validateNullableFiniteArray(values, { parameter: name, functionName: FN }).filter(
    (value): value is number => value !== null,
  );
}
