import {
  type EnvironmentFactory,
  InvalidArgumentError,
  isMultiTurnSampler,
  type MultiTurnSampler,
  rejectIneffective,
  type Sampler,
  type WeightedReward,
} from '@rlvr/core';
import type { ResolvedGrpoConfig } from './grpo-config.js';

const FN = 'createGrpoTrainer';

/** Name of the reward column that holds a trajectory's environment reward. */
export const ENVIRONMENT_REWARD = 'environment';

/** Default `maxTurns` of a multi-turn run. */
export const DEFAULT_MAX_TURNS = 4;

/** The environment reward as a reward column: the sum of the steps' rewards (null: none gave one). */
const environmentReward: WeightedReward = {
  name: ENVIRONMENT_REWARD,
  weight: 1,
  fn: ({ trajectory }) => trajectory?.environmentReward ?? null,
};

/**
 * Checks `options.environment` against the sampler and config, and returns the run's reward list
 * (the reward functions, then the environment's reward as the column `environment`, weight 1) and
 * its config with the multi-turn defaults (`maxTurns` 4, `maxTotalTokens` = `maxTurns ×
 * maxNewTokens`). Without an environment the multi-turn keys are `INEFFECTIVE_OPTION`.
 * @internal
 */
export function resolveEnvironment(
  environment: unknown,
  sampler: Sampler,
  config: ResolvedGrpoConfig,
  rewards: readonly WeightedReward[] | undefined,
): {
  environment: EnvironmentFactory | undefined;
  rewards: readonly WeightedReward[];
  config: ResolvedGrpoConfig;
} {
  if (environment === undefined) {
    for (const key of ['maxTurns', 'maxTotalTokens'] as const) {
      if (config[key] !== undefined) {
        rejectIneffective({
          parameter: `config.${key}`,
          value: config[key],
          because: 'options.environment is not set (every rollout is one completion)',
          functionName: FN,
        });
      }
    }
    return { environment: undefined, rewards: rewards ?? [], config };
  }
  if (typeof environment !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.environment',
      functionName: FN,
      value: environment,
      expected: 'an environment factory (input) => Environment (see @rlvr/core, @rlvr/tools)',
    });
  }
  if (!isMultiTurnSampler(sampler)) {
    throw new InvalidArgumentError({
      parameter: 'options.sampler',
      functionName: FN,
      value: sampler,
      expected:
        'a MultiTurnSampler (with sampleTrajectories(), e.g. @rlvr/rollout createOnnxSampler) since options.environment is set',
    });
  }
  if (config.maxStaleness > 0) {
    throw new InvalidArgumentError({
      parameter: 'options.environment',
      functionName: FN,
      value: 'an environment factory',
      expected: `no environment with config.maxStaleness ${config.maxStaleness}: asynchronous GRPO does not roll out multi-turn trajectories (set maxStaleness: 0)`,
    });
  }
  if (rewards?.some((reward) => reward.name === ENVIRONMENT_REWARD)) {
    throw new InvalidArgumentError({
      parameter: 'options.rewards',
      functionName: FN,
      value: rewards,
      expected: `no reward named '${ENVIRONMENT_REWARD}' (the environment's reward has that column)`,
    });
  }
  const maxTurns = config.maxTurns ?? DEFAULT_MAX_TURNS;
  return {
    environment: environment as EnvironmentFactory,
    rewards: [...(rewards ?? []), environmentReward],
    config: {
      ...config,
      maxTurns,
      maxTotalTokens: config.maxTotalTokens ?? maxTurns * config.maxNewTokens,
    },
  };
}

/** The sampler of a multi-turn run (checked by {@link resolveEnvironment}). @internal */
export function multiTurnSampler(sampler: Sampler): MultiTurnSampler {
  return sampler as MultiTurnSampler;
}
