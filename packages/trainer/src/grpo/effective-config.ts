import { MISMATCH_DEFAULTS } from '@rlvr/core';
import { TRAINER_DEFAULTS } from '../defaults.js';
import type { AdamWOptions } from '../optim/adamw.js';
import type { LearningRateSchedule } from '../optim/schedule.js';
import { validateSchedule } from '../optim/schedule.js';
import { resolveTrainerOptions } from '../train/trainer-options.js';
import { validateAdvantageSettings } from './grpo-advantages.js';
import type { GrpoConfig } from './grpo-config.js';
import { policyOptions, validatePolicyOptions } from './policy-options.js';
import { defaultRewardScaling, resolveGrpoConfig } from './resolve-config.js';

const FN = 'effectiveGrpoConfig';

/**
 * A {@link GrpoConfig} with every default filled in ({@link effectiveGrpoConfig}). Settings that
 * only apply in some combinations are present only when they apply: `klEstimator` when β > 0,
 * `maxConsecutiveSkips` with `onNonFinite: 'skip'`, `normalizer` with
 * `seq-mean-token-sum-norm`, `rewardStd` when advantages are divided by a std, `saveEvery`,
 * `keepLast` and `logCompletionsEvery` with `outputDir`, `epsilonLow` / `epsilonHigh` unless
 * `lossMode` is `sapo`, `sapoTemperaturePos` / `sapoTemperatureNeg` with `sapo`. Settings that
 * are off unless given (`topP`, `topK`, `minP`, `repetitionPenalty`, `stop`, `delta`, `dualClip`,
 * `offPolicyMaskThreshold`, `mismatch`,
 * `overlong`, `miniBatchSize`, `microBatchSize`, `outputDir`, `progress`) are present only when
 * given (`microBatchSize` not given: {@link TRAINER_DEFAULTS}`.microBatchSize`, the whole batch in
 * one pass). `schedule` and `optimizer` are complete ({@link SCHEDULE_DEFAULTS}, {@link ADAMW_DEFAULTS}
 * for the fields not given); a given `mismatch` has its `mode` ({@link TRAINER_DEFAULTS}`.mismatchMode`)
 * and `cap` filled in, and `lowerThreshold` in the mask modes (core's `MISMATCH_DEFAULTS`).
 */
export type EffectiveGrpoConfig = GrpoConfig &
  Required<
    Pick<
      GrpoConfig,
      | 'promptsPerStep'
      | 'groupSize'
      | 'seed'
      | 'shuffle'
      | 'temperature'
      | 'beta'
      | 'lossMode'
      | 'topEntropyQuantile'
      | 'useBiasCorrectionKl'
      | 'ratioLevel'
      | 'entropyCoefficient'
      | 'lossAggregation'
      | 'numIterations'
      | 'advantageBaseline'
      | 'scaleRewards'
      | 'multiReward'
      | 'dynamicSampling'
      | 'maskTruncatedCompletions'
      | 'maxGradNorm'
      | 'onNonFinite'
      | 'syncWeights'
      | 'maxStaleness'
      | 'quiet'
      | 'entropyCollapseRatio'
    >
  > & {
    schedule: Required<Omit<LearningRateSchedule, 'totalSteps'>> &
      Pick<LearningRateSchedule, 'totalSteps'>;
    optimizer: Required<AdamWOptions>;
    dynamicSampling: false | { minStd: number; maxRounds: number };
  };

/**
 * The settings a {@link GrpoTrainer} run with `config` uses: the config validated exactly as
 * `createGrpoTrainer` validates it (unknown keys, ranges, settings with no effect, loss and
 * advantage combinations), with every default filled in from the same place the trainer takes it
 * ({@link TRAINER_DEFAULTS}, {@link SCHEDULE_DEFAULTS}, {@link ADAMW_DEFAULTS} and the trainer's own
 * fallbacks). Layers that show or record a run's
 * settings (the CLI's `--print-config`, run pages) use this instead of copying defaults. Reads
 * nothing, writes nothing.
 *
 * @example
 * ```ts
 * const config = effectiveGrpoConfig({ maxSteps: 100, maxNewTokens: 256, beta: 0.04 });
 * config.groupSize; // 8 (TRAINER_DEFAULTS.groupSize)
 * config.klEstimator; // 'k3' (β > 0)
 * config.schedule; // { learningRate: 1e-6, schedule: 'constant', warmupSteps: 0, … }
 * config.optimizer; // { betas: [0.9, 0.999], epsilon: 1e-8, weightDecay: 0 } (ADAMW_DEFAULTS)
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` / `UNKNOWN_OPTION` / `INEFFECTIVE_OPTION`
 * naming the setting (`config.beta`, …), as `createGrpoTrainer` would.
 */
export function effectiveGrpoConfig(config: GrpoConfig): EffectiveGrpoConfig {
  const resolved = resolveGrpoConfig(config, FN);
  validatePolicyOptions(resolved, FN);
  validateAdvantageSettings(resolved, [1], FN);
  const { grpo: loss, optimizer } = resolveTrainerOptions(policyOptions(resolved), FN);
  const { totalSteps, ...schedule } = validateSchedule(resolved.schedule, FN, 'config.schedule');
  const { dynamic, ...settings } = resolved;
  const scaleRewards = resolved.scaleRewards ?? defaultRewardScaling(resolved);
  const effective: EffectiveGrpoConfig = {
    ...settings,
    ...(loss.lossMode === 'sapo'
      ? {
          sapoTemperaturePos: loss.sapoTemperaturePos!,
          sapoTemperatureNeg: loss.sapoTemperatureNeg!,
        }
      : { epsilonLow: loss.epsilonLow, epsilonHigh: loss.epsilonHigh }),
    ratioLevel: loss.ratioLevel,
    entropyCoefficient: loss.entropyCoefficient,
    scaleRewards,
    dynamicSampling: dynamic ?? false,
    schedule: { ...schedule, ...(totalSteps === undefined ? {} : { totalSteps }) },
    optimizer,
  };
  // Only what applies in this combination (createGrpoTrainer rejects the rest when given).
  if (resolved.beta === 0) delete effective.klEstimator;
  if (loss.lossMode === 'sapo') delete effective.epsilonLow;
  if (resolved.onNonFinite === 'error') delete effective.maxConsecutiveSkips;
  if (loss.normalizer !== undefined) effective.normalizer = loss.normalizer;
  if (resolved.mismatch !== undefined) effective.mismatch = effectiveMismatch(resolved.mismatch);
  if (scaleRewards === 'none' && resolved.multiReward !== 'normalize_then_sum') {
    delete effective.rewardStd;
  }
  if (resolved.outputDir === undefined) {
    delete effective.saveEvery;
    delete effective.keepLast;
    delete effective.logCompletionsEvery;
  }
  return effective;
}

/** A given `mismatch` with the defaults the correction applies (lowerThreshold: mask modes only). */
function effectiveMismatch(
  mismatch: NonNullable<GrpoConfig['mismatch']>,
): NonNullable<GrpoConfig['mismatch']> {
  const mode = mismatch.mode ?? TRAINER_DEFAULTS.mismatchMode;
  const filled = { ...mismatch, mode, cap: mismatch.cap ?? MISMATCH_DEFAULTS.cap };
  if (mode.endsWith('-mask')) {
    filled.lowerThreshold = mismatch.lowerThreshold ?? MISMATCH_DEFAULTS.lowerThreshold;
  }
  return filled;
}
