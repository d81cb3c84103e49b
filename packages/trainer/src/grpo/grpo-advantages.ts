import {
  type GroupAdvantagesOptions,
  groupAdvantages,
  InvalidArgumentError,
  type WeightedReward,
} from '@rlvr/core';
import type { ResolvedGrpoConfig } from './grpo-config.js';
import type { Group } from './grpo-sampling.js';

/** Reward column names: each function's, then `overlong` when shaping is on. @internal */
export function rewardColumns(
  rewards: readonly WeightedReward[],
  config: ResolvedGrpoConfig,
): string[] {
  const names = rewards.map((reward) => reward.name);
  return config.overlong ? [...names, 'overlong'] : names;
}

/** One weight per reward column. @internal */
export function rewardWeights(
  rewards: readonly WeightedReward[],
  config: ResolvedGrpoConfig,
): number[] {
  const weights = rewards.map((reward) => reward.weight ?? 1);
  return config.overlong ? [...weights, 1] : weights;
}

/** Weighted sum per sample of a group (null when every column is null). @internal */
export function combinedRewards(group: Group, weights: readonly number[]): (number | null)[] {
  return group.samples.map((sample) => {
    let total: number | null = null;
    sample.rewards.forEach((value, column) => {
      if (value !== null) total = (total ?? 0) + weights[column]! * value;
    });
    return total;
  });
}

/**
 * The `groupAdvantages` options of a config. `scaleRewards` unset passes no `scale`, so the
 * baseline's own default applies (`group` for `mean`, `none` for RLOO, `batch` for
 * REINFORCE++ and GDPO).
 */
function advantageOptions(
  config: ResolvedGrpoConfig,
  weights: readonly number[],
): GroupAdvantagesOptions {
  return {
    groupSize: config.groupSize,
    baseline: config.advantageBaseline,
    ...(config.scaleRewards === undefined ? {} : { scale: config.scaleRewards }),
    std: config.rewardStd,
    weights,
    multiReward: config.multiReward,
  };
}

/** Group-major advantages of the kept groups (one per sample). @internal */
export function computeAdvantages(
  kept: readonly Group[],
  columns: number,
  weights: readonly number[],
  config: ResolvedGrpoConfig,
): number[] {
  if (kept.length === 0) return [];
  const perFunction = Array.from({ length: columns }, (_, column) =>
    kept.flatMap((group) => group.samples.map((sample) => sample.rewards[column]!)),
  );
  return groupAdvantages(perFunction, advantageOptions(config, weights)).advantages;
}

const CONFIG_FIELD: Record<string, string> = {
  'options.scale': 'config.scaleRewards',
  'options.baseline': 'config.advantageBaseline',
  'options.multiReward': 'config.multiReward',
  'options.std': 'config.rewardStd',
  'options.groupSize': 'config.groupSize',
  'options.weights': 'options.rewards[].weight',
};

/**
 * Runs `groupAdvantages` once on a dummy batch with the run's settings, so an invalid combination
 * (REINFORCE++ with `scaleRewards: 'group'`, GDPO with RLOO, …) fails at construction, naming the
 * config field, instead of at step 1 after sampling. @internal
 */
export function validateAdvantageSettings(
  config: ResolvedGrpoConfig,
  weights: readonly number[],
  functionName: string,
): void {
  const dummy = weights.map((_, column) =>
    Array.from({ length: 2 * config.groupSize }, (_, index) => (index + column) % 2),
  );
  try {
    groupAdvantages(dummy, advantageOptions(config, weights));
  } catch (error) {
    if (!InvalidArgumentError.isInstance(error)) throw error;
    const expected = /expected (.*), got /s.exec(error.message)?.[1] ?? 'a valid combination';
    throw new InvalidArgumentError({
      parameter: CONFIG_FIELD[error.parameter] ?? `config (${error.parameter})`,
      functionName,
      value: error.value,
      expected: `${expected} (in this combination of advantage settings)`,
      cause: error,
    });
  }
}
