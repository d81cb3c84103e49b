import {
  type AdvantageScaling,
  InvalidArgumentError,
  rejectIneffective,
  softOverlongPenalty,
} from '@rlvr/core';
import { defaultsOf, type OptionsOutput, parseOptions } from '@rlvr/options';
import { withoutUnsetNulls } from '../null-as-unset.js';
import { validateSchedule } from '../optim/schedule.js';
import {
  rejectIneffectiveVariants,
  resolveLossVariants,
  validateLossAggregation,
} from '../train/loss-variant-options.js';
import { TRAINER_DEFAULTS } from '../trainer-defaults.js';
import { CONFIG_ALIASES } from './config-aliases.js';
import { checkAsyncConfig } from './grpo-async.js';
import {
  DYNAMIC_SAMPLING_SCHEMA,
  GRPO_CONFIG,
  type GrpoConfig,
  type ResolvedGrpoConfig,
} from './grpo-config.js';

/**
 * Every key of {@link GrpoConfig}: the keys `createGrpoTrainer` accepts in `config` (any other is
 * an `UNKNOWN_OPTION` error), from {@link GRPO_CONFIG}. Exported so that layers passing a config
 * through (apps, CLIs) check against the same list instead of a copy.
 */
export const GRPO_CONFIG_KEYS = GRPO_CONFIG.keys;

type Parsed = OptionsOutput<typeof GRPO_CONFIG.schema>;

/** `dynamicSampling` as the run applies it (`true`: every default; off: undefined). */
function resolveDynamic(value: Parsed['dynamicSampling']): ResolvedGrpoConfig['dynamic'] {
  if (value === undefined || value === false) return undefined;
  const { minStd, maxRounds } = value === true ? defaultsOf(DYNAMIC_SAMPLING_SCHEMA) : value;
  return { minStd, maxRounds };
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
 * Validates a {@link GrpoConfig} (unknown keys, ranges: {@link GRPO_CONFIG}; combinations that do
 * nothing, here) and applies its defaults ({@link TRAINER_DEFAULTS} and the run's own). @internal
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
  const parsed = parseOptions(GRPO_CONFIG.schema, withoutUnsetNulls(GRPO_CONFIG.schema, config), {
    parameter: 'config',
    functionName,
    aliases: CONFIG_ALIASES,
  });
  const raw = config as Partial<GrpoConfig>;
  const { maxSteps, maxNewTokens } = parsed;
  checkOverlong(raw, maxNewTokens, functionName);
  const schedule = raw.schedule ?? { learningRate: TRAINER_DEFAULTS.learningRate };
  validateSchedule(schedule, functionName, 'config.schedule'); // totalSteps: needs warmupSteps
  const lossAggregation = validateLossAggregation(
    parsed.lossAggregation,
    'config.lossAggregation',
    functionName,
  );
  const resolved: ResolvedGrpoConfig = {
    ...raw,
    maxSteps,
    maxNewTokens,
    promptsPerStep: parsed.promptsPerStep,
    groupSize: parsed.groupSize,
    seed: parsed.seed,
    shuffle: parsed.shuffle,
    temperature: parsed.temperature,
    beta: parsed.beta,
    klEstimator: parsed.klEstimator,
    epsilonLow: parsed.epsilonLow,
    numIterations: parsed.numIterations,
    advantageBaseline: parsed.advantageBaseline,
    rewardStd: parsed.rewardStd,
    multiReward: parsed.multiReward,
    maskTruncatedCompletions: parsed.maskTruncatedCompletions,
    lossAggregation,
    ...resolveLossVariants(parsed),
    onNonFinite: parsed.onNonFinite,
    maxConsecutiveSkips: parsed.maxConsecutiveSkips,
    maxGradNorm: parsed.maxGradNorm,
    syncWeights: parsed.syncWeights,
    maxStaleness: parsed.maxStaleness,
    ...(parsed.maxTurns === undefined ? {} : { maxTurns: parsed.maxTurns }),
    ...(parsed.maxTotalTokens === undefined ? {} : { maxTotalTokens: parsed.maxTotalTokens }),
    schedule,
    saveEvery: parsed.saveEvery ?? Math.max(1, Math.ceil(maxSteps / 10)),
    keepLast: parsed.keepLast,
    logCompletionsEvery: parsed.logCompletionsEvery,
    quiet: parsed.quiet,
    entropyCollapseRatio: parsed.entropyCollapseRatio,
    dynamic: resolveDynamic(parsed.dynamicSampling),
  };
  rejectIneffectiveSettings(raw, resolved, functionName);
  rejectIneffectiveVariants(raw, resolved.beta, 'config.', functionName);
  checkAsyncConfig(raw, resolved, functionName);
  return resolved;
}
