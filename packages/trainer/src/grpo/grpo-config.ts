import {
  type AdvantageBaseline,
  type AdvantageScaling,
  InvalidArgumentError,
  type KlEstimator,
  type LossAggregation,
  type MismatchMode,
  type MultiRewardAggregation,
  type RatioLevel,
  type SoftOverlongOptions,
  type StdKind,
  softOverlongPenalty,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import type { AdamWOptions } from '../optim/adamw.js';
import { type LearningRateSchedule, validateSchedule } from '../optim/schedule.js';

/**
 * Settings of a {@link GrpoTrainer} run, named after TRL's `GRPOConfig` where one exists (TRL's
 * name in brackets).
 */
export type GrpoConfig = {
  /** Generation steps to run (each: sample, score, one `grpoStep`) [`max_steps`]. */
  maxSteps: number;
  /** Prompts per generation step (default 4). */
  promptsPerStep?: number;
  /** G: completions per prompt (default 8) [`num_generations`]. */
  groupSize?: number;
  /** Seed of the data order and of every sampler request (default 0) [`seed`]. */
  seed?: number;
  /** Shuffle the dataset each epoch (default true). */
  shuffle?: boolean;

  /** Hard cap on generated tokens [`max_completion_length`]. */
  maxNewTokens: number;
  /** Sampling temperature (default 1) [`temperature`]. */
  temperature?: number;
  /** Nucleus sampling [`top_p`]. */
  topP?: number;
  /** Top-k sampling [`top_k`]. */
  topK?: number;
  /** Min-p sampling [`min_p`]. */
  minP?: number;
  /** Repetition penalty [`repetition_penalty`]. */
  repetitionPenalty?: number;
  /** Stop strings. */
  stop?: readonly string[];

  /** β: KL coefficient to the frozen initial policy (default 0: no reference model) [`beta`]. */
  beta?: number;
  /** KL estimator (default `k3`). */
  klEstimator?: KlEstimator;
  /** ε_low (default 0.2) [`epsilon`]. */
  epsilonLow?: number;
  /** ε_high (default ε_low; DAPO 0.28) [`epsilon_high`]. */
  epsilonHigh?: number;
  /** Two-sided clip δ [`delta`]. */
  delta?: number;
  /** Dual-clip constant c > 1. */
  dualClip?: number;
  /** Token or sequence (GSPO) ratios [`importance_sampling_level`]. Default `token`. */
  ratioLevel?: RatioLevel;
  /** η: entropy bonus (default 0). */
  entropyCoefficient?: number;
  /** Loss aggregation (default `token-mean`, TRL's `dapo`) [`loss_type`]. */
  lossAggregation?: LossAggregation;
  /** Normalizer of `seq-mean-token-sum-norm` (default `maxNewTokens`). */
  normalizer?: number;
  /** μ: PPO epochs per generation batch (default 1) [`num_iterations`]. */
  numIterations?: number;
  /** Sequences per optimizer step (default: the whole generation batch). */
  miniBatchSize?: number;
  /** Rollout↔trainer mismatch correction [`vllm_importance_sampling_*`]. Default off. */
  mismatch?: { mode?: MismatchMode; cap?: number; lowerThreshold?: number };

  /** Advantage scaling (default `group`) [`scale_rewards`]. */
  scaleRewards?: AdvantageScaling;
  /** Advantage baseline (default `mean`). */
  advantageBaseline?: AdvantageBaseline;
  /** Std kind of the advantage normalization (default `sample`, as TRL). */
  rewardStd?: StdKind;
  /** How several reward functions combine (default `sum_then_normalize`). */
  multiReward?: MultiRewardAggregation;
  /**
   * DAPO dynamic sampling: drop groups whose reward std ≤ `minStd` and sample more prompts until
   * `promptsPerStep` groups are kept or `maxRounds` sampling rounds were spent; a step with no
   * kept group is skipped (counted). `true` = `{ minStd: 1e-6, maxRounds: 3 }`. Default off.
   */
  dynamicSampling?: boolean | { minStd?: number; maxRounds?: number };
  /** Mask completions that hit `maxNewTokens` out of the loss [`mask_truncated_completions`]. */
  maskTruncatedCompletions?: boolean;
  /** DAPO soft overlong punishment added to the reward (as a reward column named `overlong`). */
  overlong?: SoftOverlongOptions;

  /** Learning rate and schedule (default constant 1e-6) [`learning_rate`, `lr_scheduler_type`]. */
  schedule?: LearningRateSchedule;
  /** AdamW settings [`adam_beta1`, `adam_beta2`, `adam_epsilon`, `weight_decay`]. */
  optimizer?: AdamWOptions;
  /** Global-norm clipping (default 1) [`max_grad_norm`]. */
  maxGradNorm?: number;
  /** Sequences per forward/backward pass (default: all). */
  microBatchSize?: number;
  /** NaN/Inf loss or gradients: skip the update and count it (default) or throw. */
  onNonFinite?: 'error' | 'skip';

  /** Folder for `metrics.jsonl`, `completions.jsonl` and `checkpoints/` (default: none). */
  outputDir?: string;
  /** Checkpoint every this many steps (default: only at the end; needs `outputDir`) [`save_steps`]. */
  saveEvery?: number;
  /** Keep the newest N checkpoints (default 2) [`save_total_limit`]. */
  keepLast?: number;
  /** Write the completions table every this many steps (default 1; 0: never). */
  logCompletionsEvery?: number;
  /** Console progress bar (default: when stderr is a TTY and `CI` is unset). */
  progress?: boolean;
  /** No console output at all (progress or diagnostics); metrics files are still written. */
  quiet?: boolean;
  /** Warn when the mean entropy falls below this fraction of the first step's (default 0.1). */
  entropyCollapseRatio?: number;
};

/** {@link GrpoConfig} with defaults applied. @internal */
export type ResolvedGrpoConfig = Required<
  Pick<
    GrpoConfig,
    | 'maxSteps'
    | 'promptsPerStep'
    | 'groupSize'
    | 'seed'
    | 'shuffle'
    | 'maxNewTokens'
    | 'temperature'
    | 'beta'
    | 'numIterations'
    | 'scaleRewards'
    | 'advantageBaseline'
    | 'rewardStd'
    | 'multiReward'
    | 'maskTruncatedCompletions'
    | 'keepLast'
    | 'logCompletionsEvery'
    | 'quiet'
    | 'entropyCollapseRatio'
    | 'lossAggregation'
    | 'onNonFinite'
  >
> &
  GrpoConfig & {
    dynamic: { minStd: number; maxRounds: number } | undefined;
    saveEvery: number;
  };

/** Validates a {@link GrpoConfig} and applies its defaults. @internal */
export function resolveGrpoConfig(config: GrpoConfig, functionName: string): ResolvedGrpoConfig {
  const raw = validateOptions<GrpoConfig>(config, { parameter: 'config', functionName });
  const int = (name: keyof GrpoConfig, value: unknown, min: number) =>
    validateInteger(value, { parameter: `config.${name}`, functionName, min });
  const maxSteps = int('maxSteps', raw.maxSteps, 1);
  const maxNewTokens = int('maxNewTokens', raw.maxNewTokens, 1);
  const temperature = validateNumber(raw.temperature ?? 1, {
    parameter: 'config.temperature',
    functionName,
    min: 0,
  });
  if (raw.topP !== undefined) {
    validateNumber(raw.topP, {
      parameter: 'config.topP',
      functionName,
      min: 0,
      exclusiveMin: true,
      max: 1,
    });
  }
  if (raw.topK !== undefined) int('topK', raw.topK, 0);
  if (raw.minP !== undefined) {
    validateNumber(raw.minP, { parameter: 'config.minP', functionName, min: 0, max: 1 });
  }
  let dynamic: ResolvedGrpoConfig['dynamic'];
  if (raw.dynamicSampling === true || typeof raw.dynamicSampling === 'object') {
    const d = validateOptions<{ minStd?: number; maxRounds?: number }>(
      raw.dynamicSampling === true ? {} : raw.dynamicSampling,
      { parameter: 'config.dynamicSampling', functionName },
    );
    dynamic = {
      minStd: validateNumber(d.minStd ?? 1e-6, {
        parameter: 'config.dynamicSampling.minStd',
        functionName,
        min: 0,
      }),
      maxRounds: validateInteger(d.maxRounds ?? 3, {
        parameter: 'config.dynamicSampling.maxRounds',
        functionName,
        min: 1,
      }),
    };
  } else if (raw.dynamicSampling !== undefined && raw.dynamicSampling !== false) {
    throw new InvalidArgumentError({
      parameter: 'config.dynamicSampling',
      functionName,
      value: raw.dynamicSampling,
      expected: 'a boolean or { minStd?, maxRounds? }',
    });
  }
  if (raw.overlong !== undefined) {
    try {
      softOverlongPenalty(0, raw.overlong);
    } catch (error) {
      if (InvalidArgumentError.isInstance(error)) {
        throw new InvalidArgumentError({
          parameter: `config.overlong.${error.parameter.replace(/^options\./, '')}`,
          functionName,
          value: error.value,
          expected:
            'valid soft-overlong settings (maxLength ≥ bufferLength ≥ 1, penaltyFactor ≥ 0)',
        });
      }
      throw error;
    }
  }
  if (raw.schedule !== undefined) validateSchedule(raw.schedule, functionName);
  const resolved: ResolvedGrpoConfig = {
    ...raw,
    maxSteps,
    promptsPerStep: int('promptsPerStep', raw.promptsPerStep ?? 4, 1),
    groupSize: int('groupSize', raw.groupSize ?? 8, 2),
    seed: int('seed', raw.seed ?? 0, 0),
    shuffle: raw.shuffle ?? true,
    maxNewTokens,
    temperature,
    beta: validateNumber(raw.beta ?? 0, { parameter: 'config.beta', functionName, min: 0 }),
    numIterations: int('numIterations', raw.numIterations ?? 1, 1),
    scaleRewards: validateOneOf(raw.scaleRewards ?? 'group', ['group', 'batch', 'none'], {
      parameter: 'config.scaleRewards',
      functionName,
    }),
    advantageBaseline: validateOneOf(
      raw.advantageBaseline ?? 'mean',
      ['mean', 'leave-one-out', 'reinforce-plus-plus'],
      { parameter: 'config.advantageBaseline', functionName },
    ),
    rewardStd: validateOneOf(raw.rewardStd ?? 'sample', ['sample', 'population'], {
      parameter: 'config.rewardStd',
      functionName,
    }),
    multiReward: validateOneOf(
      raw.multiReward ?? 'sum_then_normalize',
      ['sum_then_normalize', 'normalize_then_sum'],
      { parameter: 'config.multiReward', functionName },
    ),
    maskTruncatedCompletions: raw.maskTruncatedCompletions ?? false,
    lossAggregation: raw.lossAggregation ?? 'token-mean',
    onNonFinite: validateOneOf(raw.onNonFinite ?? 'skip', ['skip', 'error'], {
      parameter: 'config.onNonFinite',
      functionName,
    }),
    saveEvery: int('saveEvery', raw.saveEvery ?? maxSteps, 1),
    keepLast: int('keepLast', raw.keepLast ?? 2, 1),
    logCompletionsEvery: int('logCompletionsEvery', raw.logCompletionsEvery ?? 1, 0),
    quiet: raw.quiet ?? false,
    entropyCollapseRatio: validateNumber(raw.entropyCollapseRatio ?? 0.1, {
      parameter: 'config.entropyCollapseRatio',
      functionName,
      min: 0,
      max: 1,
    }),
    dynamic,
  };
  if (raw.miniBatchSize !== undefined) int('miniBatchSize', raw.miniBatchSize, 1);
  if (raw.outputDir !== undefined && (typeof raw.outputDir !== 'string' || raw.outputDir === '')) {
    throw new InvalidArgumentError({
      parameter: 'config.outputDir',
      functionName,
      value: raw.outputDir,
      expected: 'a folder path',
    });
  }
  return resolved;
}
