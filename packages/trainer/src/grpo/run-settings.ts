import {
  diffSettings,
  fingerprint,
  ResumeMismatchError,
  type SettingsDifference,
  type WeightedReward,
} from '@rlvr/core';
import type { ModelConfig } from '@rlvr/model';
import { TRAINER_DEFAULTS } from '../defaults.js';
import { resolveLora } from '../train/trainer-options.js';
import type { ResolvedGrpoConfig } from './grpo-config.js';
import type { PromptRecord } from './prompt-dataset.js';

/**
 * Everything that changes a run's math, under the config's own field names (so a mismatch names
 * the field to change): the model config, sampling, loss, advantage and optimization settings,
 * group size, prompts per step, seed and data order, the reward functions' names and weights,
 * and a hash of the dataset. Not included: `maxSteps` (extending a run is normal), output and
 * logging settings, `microBatchSize` (the update does not depend on it), `onNonFinite` /
 * `maxConsecutiveSkips`, `syncWeights`. @internal
 */
export function runSettings(
  config: ResolvedGrpoConfig,
  model: ModelConfig,
  rewards: readonly WeightedReward[],
  dataset: readonly PromptRecord[],
  /** LoRA: the base model's weights fingerprint (a LoRA checkpoint holds the adapter only). */
  base?: string,
): Record<string, unknown> {
  const pick = <K extends keyof ResolvedGrpoConfig>(keys: readonly K[]) =>
    Object.fromEntries(keys.map((key) => [key, config[key]]));
  return {
    model,
    dataset: fingerprint(dataset),
    datasetSize: dataset.length,
    rewards: rewards.map((reward) => ({ name: reward.name, weight: reward.weight ?? 1 })),
    ...pick([
      'promptsPerStep',
      'groupSize',
      'seed',
      'shuffle',
      'maxNewTokens',
      'maxTurns',
      'maxTotalTokens',
      'temperature',
      'topP',
      'topK',
      'minP',
      'repetitionPenalty',
      'stop',
      'beta',
      'epsilonLow',
      'epsilonHigh',
      'delta',
      'dualClip',
      'ratioLevel',
      'entropyCoefficient',
      'lossAggregation',
      'numIterations',
      'miniBatchSize',
      'mismatch',
      'scaleRewards',
      'advantageBaseline',
      'rewardStd',
      'multiReward',
      'maskTruncatedCompletions',
      'overlong',
      'schedule',
      'maxGradNorm',
    ]),
    klEstimator: config.beta > 0 ? config.klEstimator : undefined,
    normalizer:
      config.lossAggregation === 'seq-mean-token-sum-norm'
        ? (config.normalizer ?? config.maxNewTokens)
        : undefined,
    // the loss variants only when set, so runs without them keep their fingerprint
    ...(config.lossMode === TRAINER_DEFAULTS.lossMode ? {} : { lossMode: config.lossMode }),
    sapoTemperaturePos: config.lossMode === 'sapo' ? config.sapoTemperaturePos : undefined,
    sapoTemperatureNeg: config.lossMode === 'sapo' ? config.sapoTemperatureNeg : undefined,
    topEntropyQuantile: config.topEntropyQuantile < 1 ? config.topEntropyQuantile : undefined,
    offPolicyMaskThreshold: config.offPolicyMaskThreshold,
    useBiasCorrectionKl: config.useBiasCorrectionKl ? true : undefined,
    dynamicSampling: config.dynamic,
    // Only when asynchronous, so checkpoints of synchronous runs keep their fingerprint.
    maxStaleness: config.maxStaleness > 0 ? config.maxStaleness : undefined,
    // Only with LoRA (full fine-tuning runs keep their fingerprint); the start weights are not
    // settings: they come from the checkpoint on resume
    lora: config.lora ? loraSettings(config.lora) : undefined,
    base,
    optimizer: { weightDecay: TRAINER_DEFAULTS.weightDecay, ...config.optimizer },
  };
}

/** The settings of `lora` that change the math (PEFT's defaults filled in; not `adapter`). */
function loraSettings(lora: NonNullable<ResolvedGrpoConfig['lora']>): Record<string, unknown> {
  const { adapter: _adapter, ...settings } = resolveLora(lora, 'createGrpoTrainer');
  return settings;
}

/**
 * The differences between a checkpoint's settings and the current ones; throws
 * {@link ResumeMismatchError} naming them unless `accept` (then they are returned for the log).
 * @internal
 */
export function compareSettings(options: {
  saved: unknown;
  current: Record<string, unknown>;
  checkpoint: string;
  accept: boolean;
  functionName: string;
}): SettingsDifference[] {
  // Through JSON, as the saved copy went (undefined members dropped, numbers round-tripped).
  const current = JSON.parse(JSON.stringify(options.current)) as unknown;
  const differences = diffSettings(options.saved, current);
  if (differences.length > 0 && !options.accept) {
    throw new ResumeMismatchError({
      what: `the checkpoint '${options.checkpoint}'`,
      differences,
      allowWith: 'acceptConfigChanges: true',
      functionName: options.functionName,
    });
  }
  return differences;
}
