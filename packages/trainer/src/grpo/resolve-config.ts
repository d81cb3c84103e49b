import {
  type AdvantageScaling,
  InvalidArgumentError,
  rejectIneffective,
  softOverlongPenalty,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { TRAINER_DEFAULTS } from '../defaults.js';
import { validateSchedule } from '../optim/schedule.js';
import {
  rejectIneffectiveVariants,
  resolveLossVariants,
  validateLossAggregation,
} from '../train/loss-variant-options.js';
import { checkAsyncConfig } from './grpo-async.js';
import type { GrpoConfig, ResolvedGrpoConfig } from './grpo-config.js';

/**
 * Every key of {@link GrpoConfig}: the keys `createGrpoTrainer` accepts in `config` (any other is
 * an `UNKNOWN_OPTION` error). Exported so that layers passing a config through (apps, CLIs) check
 * against the same list instead of a copy.
 */
export const GRPO_CONFIG_KEYS = [
  'maxSteps',
  'promptsPerStep',
  'groupSize',
  'seed',
  'shuffle',
  'maxNewTokens',
  'temperature',
  'topP',
  'topK',
  'minP',
  'repetitionPenalty',
  'stop',
  'beta',
  'klEstimator',
  'useBiasCorrectionKl',
  'lossMode',
  'epsilonLow',
  'epsilonHigh',
  'delta',
  'dualClip',
  'sapoTemperaturePos',
  'sapoTemperatureNeg',
  'topEntropyQuantile',
  'offPolicyMaskThreshold',
  'ratioLevel',
  'entropyCoefficient',
  'lossAggregation',
  'normalizer',
  'numIterations',
  'miniBatchSize',
  'mismatch',
  'scaleRewards',
  'advantageBaseline',
  'rewardStd',
  'multiReward',
  'dynamicSampling',
  'maskTruncatedCompletions',
  'overlong',
  'schedule',
  'optimizer',
  'maxGradNorm',
  'microBatchSize',
  'microBatchTokens',
  'gradientCheckpointing',
  'memoryLimitBytes',
  'lora',
  'onNonFinite',
  'maxConsecutiveSkips',
  'syncWeights',
  'maxStaleness',
  'maxTurns',
  'maxTotalTokens',
  'outputDir',
  'saveEvery',
  'keepLast',
  'logCompletionsEvery',
  'progress',
  'quiet',
  'entropyCollapseRatio',
] as const satisfies readonly (keyof GrpoConfig)[];

/** Names other layers and libraries use (our older ones, TRL's, verl's) → ours, for the hint. */
const CONFIG_ALIASES: Record<string, string> = {
  kl_coef: 'beta',
  klCoef: 'beta',
  klCoefficient: 'beta',
  init_kl_coef: 'beta',
  learning_rate: 'schedule',
  learningRate: 'schedule',
  lr: 'schedule',
  warmupSteps: 'schedule',
  lr_scheduler_type: 'schedule',
  steps: 'maxSteps',
  num_train_steps: 'maxSteps',
  maxResampleRounds: 'dynamicSampling',
  maxRounds: 'dynamicSampling',
  minStd: 'dynamicSampling',
  aggregation: 'lossAggregation',
  loss_type: 'lossAggregation',
  loss_agg_mode: 'lossAggregation',
  weightDecay: 'optimizer',
  adam_beta1: 'optimizer',
  adam_beta2: 'optimizer',
  adam_epsilon: 'optimizer',
  num_generations: 'groupSize',
  n: 'groupSize',
  max_completion_length: 'maxNewTokens',
  max_tokens: 'maxNewTokens',
  save_steps: 'saveEvery',
  save_total_limit: 'keepLast',
  epsilon: 'epsilonLow',
  clip_range: 'epsilonLow',
  ppo_epochs: 'numIterations',
  grad_clip: 'maxGradNorm',
  importance_sampling_level: 'ratioLevel',
  mask_truncated_completions: 'maskTruncatedCompletions',
  vllm_importance_sampling_correction: 'mismatch',
  resume: 'outputDir',
  max_staleness: 'maxStaleness',
  max_async_level: 'maxStaleness',
  maxAsyncLevel: 'maxStaleness',
  max_head_offpolicyness: 'maxStaleness',
  max_turns: 'maxTurns',
  max_tool_calling_iterations: 'maxTurns',
  max_response_length: 'maxTotalTokens',
  // the 2025–26 loss variants (TRL's GRPOConfig names; verl's where TRL has none)
  loss_mode: 'lossMode',
  policy_loss: 'lossMode',
  sapo_temperature_pos: 'sapoTemperaturePos',
  sapo_temperature_neg: 'sapoTemperatureNeg',
  tau_pos: 'sapoTemperaturePos',
  tau_neg: 'sapoTemperatureNeg',
  top_entropy_quantile: 'topEntropyQuantile',
  off_policy_mask_threshold: 'offPolicyMaskThreshold',
  use_bias_correction_kl: 'useBiasCorrectionKl',
};

/** Every key of the `dynamicSampling`, `mismatch`, `overlong`, `schedule`, `optimizer` objects. */
const NESTED: Record<string, { known: readonly string[]; aliases?: Record<string, string> }> = {
  dynamicSampling: {
    known: ['minStd', 'maxRounds'],
    aliases: { maxResampleRounds: 'maxRounds', rounds: 'maxRounds', std: 'minStd' },
  },
  mismatch: {
    known: ['mode', 'cap', 'lowerThreshold'],
    aliases: { vllm_importance_sampling_cap: 'cap', mask_threshold: 'lowerThreshold' },
  },
  overlong: {
    known: ['maxLength', 'bufferLength', 'penaltyFactor'],
    aliases: { overlong_buffer_len: 'bufferLength', overlong_penalty_factor: 'penaltyFactor' },
  },
  schedule: {
    known: ['learningRate', 'schedule', 'warmupSteps', 'totalSteps', 'minLearningRateRatio'],
    aliases: { lr: 'learningRate', lr_scheduler_type: 'schedule', kind: 'schedule' },
  },
  optimizer: {
    known: ['betas', 'epsilon', 'weightDecay'],
    aliases: { adam_beta1: 'betas', adam_beta2: 'betas', adam_epsilon: 'epsilon', eps: 'epsilon' },
  },
};

type Context = { functionName: string };

function int(name: string, value: unknown, min: number, { functionName }: Context): number {
  return validateInteger(value, { parameter: `config.${name}`, functionName, min });
}

function checkNested(raw: Partial<GrpoConfig>, functionName: string): void {
  for (const [name, { known, aliases }] of Object.entries(NESTED)) {
    const value = (raw as Record<string, unknown>)[name];
    if (value === undefined || typeof value === 'boolean') continue;
    validateOptions(value, {
      parameter: `config.${name}`,
      functionName,
      known,
      ...(aliases ? { aliases } : {}),
    });
  }
}

function resolveDynamic(
  raw: Partial<GrpoConfig>,
  functionName: string,
): ResolvedGrpoConfig['dynamic'] {
  const value = raw.dynamicSampling;
  if (value === undefined || value === false) return undefined;
  if (value !== true && (value === null || typeof value !== 'object')) {
    throw new InvalidArgumentError({
      parameter: 'config.dynamicSampling',
      functionName,
      value,
      expected: 'a boolean or { minStd?, maxRounds? }',
    });
  }
  const d = value === true ? {} : value;
  return {
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
}

function checkSampling(raw: Partial<GrpoConfig>, context: Context): void {
  const { functionName } = context;
  if (raw.topP !== undefined) {
    validateNumber(raw.topP, {
      parameter: 'config.topP',
      functionName,
      min: 0,
      exclusiveMin: true,
      max: 1,
    });
  }
  if (raw.topK !== undefined) int('topK', raw.topK, 0, context);
  if (raw.minP !== undefined) {
    validateNumber(raw.minP, { parameter: 'config.minP', functionName, min: 0, max: 1 });
  }
  if (raw.repetitionPenalty !== undefined) {
    validateNumber(raw.repetitionPenalty, {
      parameter: 'config.repetitionPenalty',
      functionName,
      min: 0,
      exclusiveMin: true,
    });
  }
  if (
    raw.stop !== undefined &&
    (!Array.isArray(raw.stop) || raw.stop.some((s) => typeof s !== 'string' || s === ''))
  ) {
    throw new InvalidArgumentError({
      parameter: 'config.stop',
      functionName,
      value: raw.stop,
      expected: 'an array of non-empty strings',
    });
  }
}

function checkOverlong(raw: Partial<GrpoConfig>, maxNewTokens: number, functionName: string): void {
  if (raw.overlong === undefined) return;
  try {
    softOverlongPenalty(0, raw.overlong);
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) {
      throw new InvalidArgumentError({
        parameter: `config.overlong.${error.parameter.replace(/^options\./, '')}`,
        functionName,
        value: error.value,
        expected: 'valid soft-overlong settings (maxLength ≥ bufferLength ≥ 1, penaltyFactor ≥ 0)',
        cause: error,
      });
    }
    throw error;
  }
  if (raw.overlong.maxLength - raw.overlong.bufferLength >= maxNewTokens) {
    rejectIneffective({
      parameter: 'config.overlong',
      functionName,
      value: raw.overlong,
      because: `no completion is longer than maxNewTokens (${maxNewTokens}), so the penalty, which starts after maxLength − bufferLength, is always 0`,
    });
  }
}

/**
 * The advantage scaling that applies when `scaleRewards` is not set: @rlvr/core's
 * `groupAdvantages` default for the baseline (`group` for `mean`, `none` for `leave-one-out`,
 * `batch` for `reinforce-plus-plus` and for `multiReward: 'normalize_then_sum'`). @internal
 */
export function defaultRewardScaling(
  config: Pick<ResolvedGrpoConfig, 'advantageBaseline' | 'multiReward'>,
): AdvantageScaling {
  if (config.multiReward === 'normalize_then_sum') return 'batch';
  if (config.advantageBaseline === 'leave-one-out') return 'none';
  return config.advantageBaseline === 'mean' ? 'group' : 'batch';
}

/** `INEFFECTIVE_OPTION` for settings that would do nothing in this combination. */
function rejectIneffectiveSettings(
  raw: Partial<GrpoConfig>,
  resolved: ResolvedGrpoConfig,
  functionName: string,
): void {
  if (raw.outputDir === undefined) {
    for (const name of ['saveEvery', 'keepLast', 'logCompletionsEvery'] as const) {
      if (raw[name] !== undefined) {
        rejectIneffective({
          parameter: `config.${name}`,
          functionName,
          value: raw[name],
          because: 'config.outputDir is not set (nothing is written)',
        });
      }
    }
  }
  if (raw.normalizer !== undefined && resolved.lossAggregation !== 'seq-mean-token-sum-norm') {
    rejectIneffective({
      parameter: 'config.normalizer',
      functionName,
      value: raw.normalizer,
      because: `it is used only by lossAggregation 'seq-mean-token-sum-norm' (this run: '${resolved.lossAggregation}')`,
    });
  }
  if (raw.klEstimator !== undefined && resolved.beta === 0) {
    rejectIneffective({
      parameter: 'config.klEstimator',
      functionName,
      value: raw.klEstimator,
      because: 'β (config.beta) is 0, so no KL term is computed',
    });
  }
  if (raw.maxConsecutiveSkips !== undefined && resolved.onNonFinite === 'error') {
    rejectIneffective({
      parameter: 'config.maxConsecutiveSkips',
      functionName,
      value: raw.maxConsecutiveSkips,
      because: "onNonFinite is 'error': the first non-finite update already stops the run",
    });
  }
  const scale = resolved.scaleRewards ?? defaultRewardScaling(resolved);
  if (
    raw.rewardStd !== undefined &&
    scale === 'none' &&
    resolved.multiReward !== 'normalize_then_sum'
  ) {
    rejectIneffective({
      parameter: 'config.rewardStd',
      functionName,
      value: raw.rewardStd,
      because: "advantages are not divided by a std (scaling 'none')",
    });
  }
  if (raw.progress === true && resolved.quiet) {
    rejectIneffective({
      parameter: 'config.progress',
      functionName,
      value: true,
      because: 'config.quiet is true (no console output)',
    });
  }
}

/**
 * Validates a {@link GrpoConfig} (unknown keys, ranges, combinations that do nothing) and applies
 * its defaults ({@link TRAINER_DEFAULTS}). @internal
 */
export function resolveGrpoConfig(config: GrpoConfig, functionName: string): ResolvedGrpoConfig {
  if (config === undefined) {
    throw new InvalidArgumentError({
      parameter: 'config',
      functionName,
      value: config,
      expected: 'a GrpoConfig object { maxSteps, maxNewTokens, … }',
    });
  }
  const raw = validateOptions<GrpoConfig>(config, {
    parameter: 'config',
    functionName,
    known: GRPO_CONFIG_KEYS,
    aliases: CONFIG_ALIASES,
  });
  checkNested(raw, functionName);
  const context = { functionName };
  const maxSteps = int('maxSteps', raw.maxSteps, 1, context);
  const maxNewTokens = int('maxNewTokens', raw.maxNewTokens, 1, context);
  checkSampling(raw, context);
  checkOverlong(raw, maxNewTokens, functionName);
  const schedule = raw.schedule ?? { learningRate: TRAINER_DEFAULTS.learningRate };
  validateSchedule(schedule, functionName, 'config.schedule');
  const number = (name: keyof GrpoConfig, fallback: number, min: number, exclusiveMin = false) =>
    validateNumber(raw[name] ?? fallback, {
      parameter: `config.${name}`,
      functionName,
      min,
      exclusiveMin,
    });
  const oneOf = <T extends string>(name: keyof GrpoConfig, fallback: T, values: readonly T[]) =>
    validateOneOf((raw[name] as T | undefined) ?? fallback, values, {
      parameter: `config.${name}`,
      functionName,
    });
  const resolved: ResolvedGrpoConfig = {
    ...raw,
    maxSteps,
    maxNewTokens,
    promptsPerStep: int('promptsPerStep', raw.promptsPerStep ?? 4, 1, context),
    groupSize: int('groupSize', raw.groupSize ?? TRAINER_DEFAULTS.groupSize, 2, context),
    seed: int('seed', raw.seed ?? 0, 0, context),
    shuffle: raw.shuffle ?? true,
    temperature: number('temperature', TRAINER_DEFAULTS.temperature, 0, true),
    beta: number('beta', TRAINER_DEFAULTS.beta, 0),
    klEstimator: oneOf('klEstimator', TRAINER_DEFAULTS.klEstimator, ['k1', 'k2', 'k3', 'abs']),
    epsilonLow: number('epsilonLow', TRAINER_DEFAULTS.epsilonLow, 0),
    numIterations: int(
      'numIterations',
      raw.numIterations ?? TRAINER_DEFAULTS.numIterations,
      1,
      context,
    ),
    advantageBaseline: oneOf('advantageBaseline', 'mean', [
      'mean',
      'leave-one-out',
      'reinforce-plus-plus',
    ]),
    rewardStd: oneOf('rewardStd', 'sample', ['sample', 'population']),
    multiReward: oneOf('multiReward', 'sum_then_normalize', [
      'sum_then_normalize',
      'normalize_then_sum',
    ]),
    maskTruncatedCompletions: raw.maskTruncatedCompletions ?? false,
    lossAggregation: validateLossAggregation(
      raw.lossAggregation ?? TRAINER_DEFAULTS.lossAggregation,
      'config.lossAggregation',
      functionName,
    ),
    ...resolveLossVariants(raw, 'config.', functionName),
    onNonFinite: oneOf('onNonFinite', TRAINER_DEFAULTS.onNonFinite, ['skip', 'error']),
    maxConsecutiveSkips: int(
      'maxConsecutiveSkips',
      raw.maxConsecutiveSkips ?? TRAINER_DEFAULTS.maxConsecutiveSkips,
      0,
      context,
    ),
    maxGradNorm: number('maxGradNorm', TRAINER_DEFAULTS.maxGradNorm, 0),
    syncWeights: raw.syncWeights ?? true,
    maxStaleness: int('maxStaleness', raw.maxStaleness ?? 0, 0, context),
    ...(raw.maxTurns === undefined ? {} : { maxTurns: int('maxTurns', raw.maxTurns, 1, context) }),
    ...(raw.maxTotalTokens === undefined
      ? {}
      : { maxTotalTokens: int('maxTotalTokens', raw.maxTotalTokens, 1, context) }),
    schedule,
    saveEvery: int('saveEvery', raw.saveEvery ?? Math.max(1, Math.ceil(maxSteps / 10)), 1, context),
    keepLast: int('keepLast', raw.keepLast ?? 2, 1, context),
    logCompletionsEvery: int('logCompletionsEvery', raw.logCompletionsEvery ?? 1, 0, context),
    quiet: raw.quiet ?? false,
    entropyCollapseRatio: validateNumber(raw.entropyCollapseRatio ?? 0.1, {
      parameter: 'config.entropyCollapseRatio',
      functionName,
      min: 0,
      max: 1,
    }),
    dynamic: resolveDynamic(raw, functionName),
  };
  if (raw.scaleRewards !== undefined) oneOf('scaleRewards', 'group', ['group', 'batch', 'none']);
  if (raw.miniBatchSize !== undefined) int('miniBatchSize', raw.miniBatchSize, 1, context);
  if (raw.microBatchSize !== undefined) int('microBatchSize', raw.microBatchSize, 1, context);
  for (const name of [
    'shuffle',
    'maskTruncatedCompletions',
    'syncWeights',
    'quiet',
    'progress',
  ] as const) {
    if (raw[name] !== undefined && typeof raw[name] !== 'boolean') {
      throw new InvalidArgumentError({
        parameter: `config.${name}`,
        functionName,
        value: raw[name],
        expected: 'a boolean',
      });
    }
  }
  if (raw.outputDir !== undefined && (typeof raw.outputDir !== 'string' || raw.outputDir === '')) {
    throw new InvalidArgumentError({
      parameter: 'config.outputDir',
      functionName,
      value: raw.outputDir,
      expected: 'a folder path',
    });
  }
  rejectIneffectiveSettings(raw, resolved, functionName);
  rejectIneffectiveVariants(raw, resolved.beta, 'config.', functionName);
  checkAsyncConfig(raw, resolved, functionName);
  return resolved;
}
