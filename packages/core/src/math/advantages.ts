import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';
import {
  validateFiniteArray,
  validateInteger,
  validateNullableFiniteArray,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '../validation/validate.js';
import { meanAndStd, type StdKind } from './numeric.js';

/**
 * How the baseline subtracted from each reward is formed.
 * - `mean`: the group mean (GRPO).
 * - `leave-one-out`: the mean of the *other* rewards of the group (RLOO).
 * - `reinforce-plus-plus`: group mean, then the centered rewards are whitened over the whole batch
 *   (REINFORCE++-baseline, as in OpenRLHF/verl).
 */
export type AdvantageBaseline = 'mean' | 'leave-one-out' | 'reinforce-plus-plus';

/**
 * What the centered reward is divided by.
 * - `group`: the group's reward std (GRPO),
 * - `batch`: the std of all rewards in the batch (TRL `scale_rewards="batch"`),
 * - `none`: nothing (Dr. GRPO; RLOO).
 */
export type AdvantageScaling = 'group' | 'batch' | 'none';

/**
 * How several reward functions are combined.
 * - `sum_then_normalize`: weighted sum per sample, then the usual advantage (TRL default).
 * - `normalize_then_sum`: each reward is z-scored within its group, the weighted sum of those is
 *   whitened over the batch (GDPO). `scale: 'none'` skips the final whitening.
 */
export type MultiRewardAggregation = 'sum_then_normalize' | 'normalize_then_sum';

/** Options of {@link groupAdvantages}. */
export type GroupAdvantagesOptions = {
  /** Samples per prompt (G); the rewards are group-major: group g is `[g*G, (g+1)*G)`. */
  groupSize: number;
  /** Default `mean`. */
  baseline?: AdvantageBaseline;
  /** Default `group` for `mean`, `none` for `leave-one-out`, `batch` for `reinforce-plus-plus`. */
  scale?: AdvantageScaling;
  /** Default `sample` (as `torch.std` in TRL and verl). The seed's worked example uses `population`. */
  std?: StdKind;
  /** Added to the std before dividing, so a zero-variance group gives 0, never NaN. Default 1e-6. */
  epsilon?: number;
  /** One weight per reward function when `rewards` is a list of per-function arrays. Default all 1. */
  weights?: readonly number[];
  /** Default `sum_then_normalize`. */
  multiReward?: MultiRewardAggregation;
};

/** Result of {@link groupAdvantages}. */
export type GroupAdvantagesResult = {
  /** One advantage per sample (0 for samples whose reward is `null`). */
  advantages: number[];
  /** The scalar reward each advantage came from (weighted sum; GDPO: sum of z-scores). */
  combinedRewards: (number | null)[];
  /** Mean of the non-null combined rewards of each group. */
  groupMeans: number[];
  /** Std (of the chosen kind) of the non-null combined rewards of each group. */
  groupStds: number[];
  /** Groups whose combined rewards have zero variance (their advantages are all 0). */
  zeroStdGroups: number;
};

const FN = 'groupAdvantages';
const ZERO_STD_TOLERANCE = 1e-12;

/**
 * Group-relative advantages over a flat, group-major batch of rewards (GRPO, RLOO,
 * REINFORCE++-baseline, Dr. GRPO, batch scaling, GDPO).
 *
 * `null` rewards mean "not applicable": they are excluded from every mean and std and get
 * advantage 0. A group whose rewards are all equal gets all-zero advantages, never NaN.
 *
 * @example
 * ```ts
 * // The seed's worked example: 3 of 8 correct, population std.
 * const { advantages } = groupAdvantages([1, 0, 0, 1, 1, 0, 0, 0], { groupSize: 8, std: 'population' });
 * // mean 0.375, std 0.484 → +1.29 for the correct ones, −0.77 for the wrong ones
 * ```
 * @example
 * ```ts
 * // Two reward functions (correctness, format), weighted, normalized separately (GDPO).
 * groupAdvantages([[1, 0, 1, 0], [1, 1, 0, 0]], { groupSize: 4, weights: [1, 0.5], multiReward: 'normalize_then_sum' });
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for groupSize < 2, unknown modes, bad weights.
 * @throws {ShapeMismatchError} `SHAPE_MISMATCH` when the length is not a multiple of groupSize.
 * @throws {NonFiniteError} `NON_FINITE` for NaN or infinite rewards (naming the index).
 */
export function groupAdvantages(
  rewards: readonly (number | null)[] | readonly (readonly (number | null)[])[],
  options: GroupAdvantagesOptions,
): GroupAdvantagesResult {
  const settings = readOptions(options);
  const perFunction = readRewards(rewards, settings.groupSize, settings.weights);
  const weights = settings.weights ?? perFunction.map(() => 1);
  const sampleCount = perFunction[0]?.length ?? 0;
  const groupCount = sampleCount / settings.groupSize;

  if (settings.multiReward === 'normalize_then_sum' && perFunction.length > 0) {
    return gdpoAdvantages(perFunction, weights, settings, groupCount);
  }

  const combined = combineWeighted(perFunction, weights, sampleCount);
  const { advantages, groupMeans, groupStds, zeroStdGroups } = centeredAndScaled(
    combined,
    settings,
    groupCount,
  );
  return { advantages, combinedRewards: combined, groupMeans, groupStds, zeroStdGroups };
}

type Settings = {
  groupSize: number;
  baseline: AdvantageBaseline;
  scale: AdvantageScaling;
  std: StdKind;
  epsilon: number;
  weights: readonly number[] | undefined;
  multiReward: MultiRewardAggregation;
};

function readOptions(options: GroupAdvantagesOptions): Settings {
  const raw = validateOptions<GroupAdvantagesOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: ['groupSize', 'baseline', 'scale', 'std', 'epsilon', 'weights', 'multiReward'],
  });
  const groupSize = validateInteger(raw.groupSize, {
    parameter: 'options.groupSize',
    functionName: FN,
    min: 2,
  });
  const baseline = validateOneOf(
    raw.baseline ?? 'mean',
    ['mean', 'leave-one-out', 'reinforce-plus-plus'],
    {
      parameter: 'options.baseline',
      functionName: FN,
    },
  );
  const multiReward = validateOneOf(
    raw.multiReward ?? 'sum_then_normalize',
    ['sum_then_normalize', 'normalize_then_sum'],
    {
      parameter: 'options.multiReward',
      functionName: FN,
    },
  );
  const defaultScale: AdvantageScaling =
    multiReward === 'normalize_then_sum'
      ? 'batch'
      : baseline === 'mean'
        ? 'group'
        : baseline === 'leave-one-out'
          ? 'none'
          : 'batch';
  const scale = validateOneOf(raw.scale ?? defaultScale, ['group', 'batch', 'none'], {
    parameter: 'options.scale',
    functionName: FN,
  });
  if (baseline === 'reinforce-plus-plus' && scale !== 'batch') {
    throw new InvalidArgumentError({
      parameter: 'options.scale',
      functionName: FN,
      value: scale,
      expected:
        "'batch' (or unset) with baseline 'reinforce-plus-plus', which whitens over the batch",
    });
  }
  const std = validateOneOf(raw.std ?? 'sample', ['population', 'sample'], {
    parameter: 'options.std',
    functionName: FN,
  });
  const epsilon = validateNumber(raw.epsilon ?? 1e-6, {
    parameter: 'options.epsilon',
    functionName: FN,
    min: 0,
  });
  if (multiReward === 'normalize_then_sum' && baseline !== 'mean') {
    throw new InvalidArgumentError({
      parameter: 'options.baseline',
      functionName: FN,
      value: baseline,
      expected: "'mean' (or unset) with multiReward 'normalize_then_sum' (GDPO)",
    });
  }
  if (multiReward === 'normalize_then_sum' && scale === 'group') {
    throw new InvalidArgumentError({
      parameter: 'options.scale',
      functionName: FN,
      value: scale,
      expected:
        "'batch' (whiten the summed z-scores, GDPO) or 'none' with multiReward 'normalize_then_sum'",
    });
  }
  let weights: readonly number[] | undefined;
  if (raw.weights !== undefined) {
    weights = validateFiniteArray(raw.weights, {
      parameter: 'options.weights',
      functionName: FN,
    }) as readonly number[];
  }
  return {
    groupSize,
    baseline,
    scale,
    std,
    epsilon,
    weights,
    multiReward,
  };
}

function readRewards(
  rewards: unknown,
  groupSize: number,
  weights: readonly number[] | undefined,
): (number | null)[][] {
  if (!Array.isArray(rewards)) {
    throw new InvalidArgumentError({
      parameter: 'rewards',
      functionName: FN,
      value: rewards,
      expected: 'an array of rewards (number | null), or one such array per reward function',
    });
  }
  const isMulti = rewards.length > 0 && Array.isArray(rewards[0]);
  const perFunction = (isMulti ? rewards : [rewards]) as unknown[];
  const length = isMulti ? (perFunction[0] as unknown[]).length : rewards.length;
  perFunction.forEach((values, functionIndex) => {
    const name = isMulti ? `rewards[${functionIndex}]` : 'rewards';
    if (!Array.isArray(values)) {
      throw new InvalidArgumentError({
        parameter: name,
        functionName: FN,
        value: values,
        expected: 'an array of rewards (number | null)',
      });
    }
    if (values.length !== length) {
      throw new ShapeMismatchError({
        parameter: name,
        functionName: FN,
        expected: `length ${length} (like rewards[0])`,
        actual: `length ${values.length}`,
      });
    }
    validateNullableFiniteArray(values, { parameter: name, functionName: FN });
  });
  if (length % groupSize !== 0) {
    throw new ShapeMismatchError({
      parameter: 'rewards',
      functionName: FN,
      expected: `a length that is a multiple of groupSize ${groupSize}`,
      actual: `length ${length}`,
    });
  }
  if (weights !== undefined && weights.length !== perFunction.length) {
    throw new ShapeMismatchError({
      parameter: 'options.weights',
      functionName: FN,
      expected: `${perFunction.length} weight(s), one per reward function`,
      actual: `${weights.length}`,
    });
  }
  return perFunction as (number | null)[][];
}

/** Weighted sum over reward functions per sample; `null` where every function returned `null`. */
function combineWeighted(
  perFunction: readonly (readonly (number | null)[])[],
  weights: readonly number[],
  sampleCount: number,
): (number | null)[] {
  const combined: (number | null)[] = new Array(sampleCount).fill(null);
  perFunction.forEach((values, functionIndex) => {
    const weight = weights[functionIndex]!;
    for (let index = 0; index < sampleCount; index++) {
      const value = values[index];
      if (value === null || value === undefined) continue;
      combined[index] = (combined[index] ?? 0) + weight * value;
    }
  });
  return combined;
}

function groupValues(
  values: readonly (number | null)[],
  group: number,
  groupSize: number,
): number[] {
  const out: number[] = [];
  for (let index = group * groupSize; index < (group + 1) * groupSize; index++) {
    const value = values[index];
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

function validValues(values: readonly (number | null)[]): number[] {
  return values.filter((value): value is number => value !== null);
}

function centeredAndScaled(
  rewards: readonly (number | null)[],
  settings: Settings,
  groupCount: number,
): Omit<GroupAdvantagesResult, 'combinedRewards'> {
  const { groupSize, baseline, scale, std, epsilon } = settings;
  const advantages: number[] = new Array(rewards.length).fill(0);
  const groupMeans: number[] = [];
  const groupStds: number[] = [];
  let zeroStdGroups = 0;

  for (let group = 0; group < groupCount; group++) {
    const values = groupValues(rewards, group, groupSize);
    const stats = meanAndStd(values, std);
    groupMeans.push(stats.mean);
    groupStds.push(stats.std);
    if (stats.std <= ZERO_STD_TOLERANCE) zeroStdGroups++;
    const validCount = values.length;
    const sum = stats.mean * validCount;
    for (let index = group * groupSize; index < (group + 1) * groupSize; index++) {
      const reward = rewards[index];
      if (reward === null || reward === undefined) continue;
      if (baseline === 'leave-one-out') {
        advantages[index] = validCount > 1 ? reward - (sum - reward) / (validCount - 1) : 0;
      } else {
        advantages[index] = reward - stats.mean;
      }
      // A zero-variance group has exactly zero signal; do not let float residue through.
      if (stats.std <= ZERO_STD_TOLERANCE) advantages[index] = 0;
    }
  }

  if (scale === 'group') {
    for (let index = 0; index < rewards.length; index++) {
      if (rewards[index] === null) continue;
      const groupStd = groupStds[Math.floor(index / groupSize)]!;
      advantages[index] = divideByStd(advantages[index]!, groupStd, epsilon);
    }
  } else if (scale === 'batch') {
    if (baseline === 'reinforce-plus-plus') {
      whiten(advantages, rewards, std, epsilon);
    } else {
      const batchStd = meanAndStd(validValues(rewards), std).std;
      for (let index = 0; index < rewards.length; index++) {
        if (rewards[index] === null) continue;
        advantages[index] = divideByStd(advantages[index]!, batchStd, epsilon);
      }
    }
  }
  return { advantages, groupMeans, groupStds, zeroStdGroups };
}

/** x / (std + ε); 0 when both are 0 (a zero-variance set has nothing to scale). */
function divideByStd(value: number, std: number, epsilon: number): number {
  const denominator = std + epsilon;
  return denominator > 0 ? value / denominator : 0;
}

/**
 * In place: x / (std + ε) over the entries whose reward is not null. The inputs are group-centered
 * (each group's values sum to 0), so their batch mean is 0 and whitening reduces to dividing by the
 * batch std; not subtracting the float residue keeps zero-variance groups at exactly 0.
 */
function whiten(
  values: number[],
  rewards: readonly (number | null)[],
  std: StdKind,
  epsilon: number,
): void {
  const present = values.filter((_, index) => rewards[index] !== null);
  const stats = meanAndStd(present, std);
  for (let index = 0; index < values.length; index++) {
    if (rewards[index] === null) continue;
    values[index] = divideByStd(values[index]!, stats.std, epsilon);
  }
}

function gdpoAdvantages(
  perFunction: readonly (readonly (number | null)[])[],
  weights: readonly number[],
  settings: Settings,
  groupCount: number,
): GroupAdvantagesResult {
  const { groupSize, std, epsilon } = settings;
  const sampleCount = perFunction[0]!.length;
  const summed: (number | null)[] = new Array(sampleCount).fill(null);
  perFunction.forEach((values, functionIndex) => {
    const weight = weights[functionIndex]!;
    for (let group = 0; group < groupCount; group++) {
      const stats = meanAndStd(groupValues(values, group, groupSize), std);
      for (let index = group * groupSize; index < (group + 1) * groupSize; index++) {
        const value = values[index];
        if (value === null || value === undefined) continue;
        const z =
          stats.std <= ZERO_STD_TOLERANCE ? 0 : divideByStd(value - stats.mean, stats.std, epsilon);
        summed[index] = (summed[index] ?? 0) + weight * z;
      }
    }
  });
  const advantages = summed.map((value) => value ?? 0);
  if (settings.scale === 'batch') whiten(advantages, summed, std, epsilon);
  const groupMeans: number[] = [];
  const groupStds: number[] = [];
  let zeroStdGroups = 0;
  for (let group = 0; group < groupCount; group++) {
    const stats = meanAndStd(groupValues(summed, group, groupSize), std);
    groupMeans.push(stats.mean);
    groupStds.push(stats.std);
    if (stats.std <= ZERO_STD_TOLERANCE) zeroStdGroups++;
  }
  return { advantages, combinedRewards: summed, groupMeans, groupStds, zeroStdGroups };
}
