import { InvalidArgumentError } from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import type { PolicyTrainerOptions } from '../train/trainer-options.js';
import { resolveTrainerOptions } from '../train/trainer-options.js';
import type { ResolvedGrpoConfig } from './grpo-config.js';

/**
 * The `createPolicyTrainer` options of a GRPO config: the same defaults (TRAINER_DEFAULTS), the
 * sampling temperature as `grpo.temperature`, and only the settings that have an effect in this
 * combination (no `klEstimator` at β = 0, `normalizer` only for `seq-mean-token-sum-norm`,
 * `maxConsecutiveSkips` only with `onNonFinite: 'skip'`, no `epsilonLow` with `lossMode: 'sapo'`).
 * @internal
 */
export function policyOptions(
  config: ResolvedGrpoConfig,
  referenceCheckpoint?: Checkpoint,
): PolicyTrainerOptions {
  const optional = <K extends keyof ResolvedGrpoConfig>(keys: readonly K[]) =>
    Object.fromEntries(
      keys.filter((key) => config[key] !== undefined).map((key) => [key, config[key]]),
    );
  return {
    schedule: config.schedule,
    ...optional([
      'optimizer',
      'microBatchSize',
      'microBatchTokens',
      'gradientCheckpointing',
      'memoryLimitBytes',
      'lora',
    ]),
    maxGradNorm: config.maxGradNorm,
    onNonFinite: config.onNonFinite,
    ...(config.onNonFinite === 'skip' ? { maxConsecutiveSkips: config.maxConsecutiveSkips } : {}),
    grpo: {
      temperature: config.temperature,
      // SAPO reads no ε (a given one is refused by the config check, under its config name)
      ...(config.lossMode === 'sapo' ? {} : { epsilonLow: config.epsilonLow }),
      beta: config.beta,
      lossAggregation: config.lossAggregation,
      lossMode: config.lossMode,
      topEntropyQuantile: config.topEntropyQuantile,
      useBiasCorrectionKl: config.useBiasCorrectionKl,
      ...optional(['ratioLevel', 'epsilonHigh', 'dualClip', 'delta', 'entropyCoefficient']),
      ...optional(['sapoTemperaturePos', 'sapoTemperatureNeg', 'offPolicyMaskThreshold']),
      ...optional(['mismatch']),
      ...(config.beta > 0 ? { klEstimator: config.klEstimator } : {}),
      ...(config.lossAggregation === 'seq-mean-token-sum-norm'
        ? { normalizer: config.normalizer ?? config.maxNewTokens }
        : {}),
    },
    ...(referenceCheckpoint && config.beta > 0 ? { referenceCheckpoint } : {}),
  };
}

/**
 * Validates the policy trainer's share of the config (loss, schedule, optimizer) with
 * `createPolicyTrainer`'s own checks, reporting errors under the config's names
 * (`options.grpo.epsilonHigh` → `config.epsilonHigh`). Reads nothing, writes nothing. @internal
 */
export function validatePolicyOptions(config: ResolvedGrpoConfig, functionName: string): void {
  try {
    resolveTrainerOptions(policyOptions(config), functionName);
  } catch (error) {
    if (!InvalidArgumentError.isInstance(error)) throw error;
    const expected = /expected (.*), got /s.exec(error.message)?.[1] ?? 'a valid value';
    throw new InvalidArgumentError({
      parameter: error.parameter.replace(/^options\.(grpo\.)?/, 'config.'),
      functionName,
      value: error.value,
      expected,
      code: error.code,
      cause: error,
    });
  }
}
