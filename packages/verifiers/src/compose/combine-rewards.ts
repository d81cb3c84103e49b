import {
  assertKnownKeys,
  InvalidArgumentError,
  NonFiniteError,
  type RewardFunction,
  type RewardInput,
  validateNumber,
  validateOneOf,
  validateOptions,
  type WeightedReward,
} from '@rlvr/core';

/** Per-reward running statistics (population std over non-null values). */
export type RewardMetrics = {
  name: string;
  weight: number;
  /** Samples scored. */
  count: number;
  /** Samples for which the reward returned `null` (not applicable). */
  nullCount: number;
  mean: number | null;
  std: number | null;
  min: number | null;
  max: number | null;
  /** Mean wall time per call in milliseconds (includes awaiting async rewards). */
  meanMs: number;
};

/** One sample's combined reward with every component. */
export type CombinedScore = {
  /** Weighted combination, or null when every component was null. */
  total: number | null;
  /** Each reward's raw value by name. */
  rewards: Record<string, number | null>;
  /** Each reward's wall time in milliseconds by name. */
  timings: Record<string, number>;
};

/** Options of {@link combineRewards}. */
export type CombineRewardsOptions = {
  /** The reward functions with names (for metrics) and weights (default 1). */
  rewards: WeightedReward[];
  /**
   * `'sum'` (default, as TRL): Σ wᵢ·rᵢ over the non-null rewards. `'mean'`: that sum divided by
   * Σ wᵢ of the non-null rewards, so a sample is not penalized because a reward does not apply.
   */
  mode?: 'sum' | 'mean';
};

/** What {@link combineRewards} returns. */
export type CombinedReward = {
  /** The combination as a core {@link RewardFunction} (async). */
  reward: RewardFunction;
  /** Scores one sample and returns every component. */
  score(input: RewardInput): Promise<CombinedScore>;
  /** Scores many samples concurrently (rewards of one sample run concurrently too). */
  scoreBatch(inputs: readonly RewardInput[]): Promise<CombinedScore[]>;
  /** Per-reward statistics since creation or the last reset. */
  metrics(): RewardMetrics[];
  resetMetrics(): void;
};

type Accumulator = {
  count: number;
  nullCount: number;
  sum: number;
  sumSquares: number;
  min: number;
  max: number;
  ms: number;
};

const emptyAccumulator = (): Accumulator => ({
  count: 0,
  nullCount: 0,
  sum: 0,
  sumSquares: 0,
  min: Number.POSITIVE_INFINITY,
  max: Number.NEGATIVE_INFINITY,
  ms: 0,
});

/**
 * Combines several reward functions (sync or async) into one, with weights, `null` as "not
 * applicable", and per-reward metrics (mean/std/min/max/null count/time). A reward that returns a
 * non-finite number throws {@link NonFiniteError}; a reward that throws propagates its error (reward
 * functions must not throw on model output — the verifiers here never do).
 *
 * @example
 * ```ts
 * const combined = combineRewards({
 *   rewards: [
 *     { name: 'accuracy', fn: mathReward(), weight: 1 },
 *     { name: 'format', fn: r1FormatReward(), weight: 0.2 },
 *   ],
 * });
 * const { total, rewards } = await combined.score({ prompt, completion, answer: '42' });
 * combined.metrics(); // [{ name: 'accuracy', mean: …, std: … }, …]
 * ```
 * @throws {InvalidArgumentError} for an empty list, duplicate names or bad weights.
 */
export function combineRewards(options: CombineRewardsOptions): CombinedReward {
  const functionName = 'combineRewards';
  if (
    typeof options !== 'object' ||
    options === null ||
    !Array.isArray(options.rewards) ||
    options.rewards.length === 0
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.rewards',
      functionName,
      value: options?.rewards,
      expected: 'a non-empty array of { name, fn, weight? }',
    });
  }
  validateOptions(options, { parameter: 'options', functionName, known: ['rewards', 'mode'] });
  const mode =
    options.mode === undefined
      ? 'sum'
      : validateOneOf(options.mode, ['sum', 'mean'], { parameter: 'options.mode', functionName });
  const names = new Set<string>();
  const specs = options.rewards.map((spec, index) => {
    const parameter = `options.rewards[${index}]`;
    if (typeof spec?.name !== 'string' || spec.name === '' || names.has(spec.name)) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.name`,
        functionName,
        value: spec?.name,
        expected: 'a unique non-empty name',
      });
    }
    if (typeof spec.fn !== 'function') {
      throw new InvalidArgumentError({
        parameter: `${parameter}.fn`,
        functionName,
        value: spec.fn,
        expected: 'a reward function',
      });
    }
    assertKnownKeys(spec, { parameter, functionName, known: ['name', 'fn', 'weight'] });
    names.add(spec.name);
    const weight =
      spec.weight === undefined
        ? 1
        : validateNumber(spec.weight, { parameter: `${parameter}.weight`, functionName });
    return { name: spec.name, fn: spec.fn, weight };
  });
  let accumulators = specs.map(emptyAccumulator);

  const score = async (input: RewardInput): Promise<CombinedScore> => {
    const values = await Promise.all(
      specs.map(async (spec) => {
        const start = performance.now();
        const value = await spec.fn(input);
        const ms = performance.now() - start;
        if (value !== null && (typeof value !== 'number' || !Number.isFinite(value))) {
          throw new NonFiniteError({
            parameter: `reward '${spec.name}'`,
            index: 0,
            value: Number(value),
            functionName: 'combineRewards',
          });
        }
        return { value, ms };
      }),
    );
    const rewards: Record<string, number | null> = {};
    const timings: Record<string, number> = {};
    let total = 0;
    let weightSum = 0;
    let applicable = 0;
    values.forEach(({ value, ms }, index) => {
      const spec = specs[index]!;
      const accumulator = accumulators[index]!;
      rewards[spec.name] = value;
      timings[spec.name] = ms;
      accumulator.count++;
      accumulator.ms += ms;
      if (value === null) {
        accumulator.nullCount++;
        return;
      }
      accumulator.sum += value;
      accumulator.sumSquares += value * value;
      accumulator.min = Math.min(accumulator.min, value);
      accumulator.max = Math.max(accumulator.max, value);
      total += spec.weight * value;
      weightSum += spec.weight;
      applicable++;
    });
    let combined: number | null = applicable === 0 ? null : total;
    if (combined !== null && mode === 'mean') combined = weightSum === 0 ? 0 : total / weightSum;
    return { total: combined, rewards, timings };
  };

  return {
    reward: async (input) => (await score(input)).total,
    score,
    scoreBatch: (inputs) => Promise.all(inputs.map((input) => score(input))),
    metrics: () =>
      specs.map((spec, index) => {
        const accumulator = accumulators[index]!;
        const n = accumulator.count - accumulator.nullCount;
        const mean = n > 0 ? accumulator.sum / n : null;
        const variance =
          n > 0 && mean !== null ? Math.max(0, accumulator.sumSquares / n - mean * mean) : null;
        return {
          name: spec.name,
          weight: spec.weight,
          count: accumulator.count,
          nullCount: accumulator.nullCount,
          mean,
          std: variance === null ? null : Math.sqrt(variance),
          min: n > 0 ? accumulator.min : null,
          max: n > 0 ? accumulator.max : null,
          meanMs: accumulator.count > 0 ? accumulator.ms / accumulator.count : 0,
        };
      }),
    resetMetrics() {
      accumulators = specs.map(emptyAccumulator);
    },
  };
}
