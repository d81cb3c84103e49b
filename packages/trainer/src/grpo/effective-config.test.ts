import { groupAdvantages, InvalidArgumentError, MISMATCH_DEFAULTS } from '@rlvr/core';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  ADAMW_DEFAULTS,
  effectiveGrpoConfig,
  GRPO_CONFIG_KEYS,
  type GrpoConfig,
  POLICY_TRAINER_OPTION_KEYS,
  type PolicyTrainerOptions,
  SCHEDULE_DEFAULTS,
  TRAINER_DEFAULTS,
} from '../index.js';
import { resolveTrainerOptions } from '../train/trainer-options.js';
import { defaultRewardScaling } from './resolve-config.js';

const minimal = { maxSteps: 20, maxNewTokens: 16 } as const;

describe('effectiveGrpoConfig', () => {
  it('should fill every default from TRAINER_DEFAULTS and the trainer fallbacks', () => {
    const config = effectiveGrpoConfig(minimal);
    expect(config).toMatchObject({
      maxSteps: 20,
      maxNewTokens: 16,
      groupSize: TRAINER_DEFAULTS.groupSize,
      temperature: TRAINER_DEFAULTS.temperature,
      beta: TRAINER_DEFAULTS.beta,
      epsilonLow: TRAINER_DEFAULTS.epsilonLow,
      epsilonHigh: TRAINER_DEFAULTS.epsilonLow,
      lossAggregation: TRAINER_DEFAULTS.lossAggregation,
      numIterations: TRAINER_DEFAULTS.numIterations,
      maxGradNorm: TRAINER_DEFAULTS.maxGradNorm,
      onNonFinite: TRAINER_DEFAULTS.onNonFinite,
      maxConsecutiveSkips: TRAINER_DEFAULTS.maxConsecutiveSkips,
      schedule: {
        learningRate: TRAINER_DEFAULTS.learningRate,
        schedule: 'constant',
        warmupSteps: 0,
        minLearningRateRatio: 0,
      },
      promptsPerStep: 4,
      seed: 0,
      shuffle: true,
      ratioLevel: TRAINER_DEFAULTS.ratioLevel,
      entropyCoefficient: TRAINER_DEFAULTS.entropyCoefficient,
      advantageBaseline: 'mean',
      scaleRewards: 'group',
      rewardStd: 'sample',
      multiReward: 'sum_then_normalize',
      dynamicSampling: false,
      maskTruncatedCompletions: false,
      syncWeights: true,
      maxStaleness: 0,
      quiet: false,
      entropyCollapseRatio: 0.1,
    });
    expect(config.schedule).toEqual(SCHEDULE_DEFAULTS);
    expect(config.optimizer).toEqual(ADAMW_DEFAULTS);
    expect(
      effectiveGrpoConfig({ ...minimal, optimizer: { betas: [0.8, 0.99] } }).optimizer,
    ).toEqual({ ...ADAMW_DEFAULTS, betas: [0.8, 0.99] });
    // Only GrpoConfig keys (nothing internal such as the resolved `dynamic`).
    for (const key of Object.keys(config)) expect(GRPO_CONFIG_KEYS).toContain(key);
  });

  it('should keep what is given and add only the settings that apply', () => {
    expect(effectiveGrpoConfig(minimal)).not.toHaveProperty('klEstimator');
    expect(effectiveGrpoConfig(minimal)).not.toHaveProperty('saveEvery');
    const config = effectiveGrpoConfig({
      ...minimal,
      beta: 0.04,
      epsilonHigh: 0.28,
      outputDir: 'run',
      dynamicSampling: true,
      onNonFinite: 'error',
      lossAggregation: 'seq-mean-token-sum-norm',
      advantageBaseline: 'leave-one-out',
    });
    expect(config).toMatchObject({
      beta: 0.04,
      klEstimator: TRAINER_DEFAULTS.klEstimator,
      epsilonHigh: 0.28,
      saveEvery: 2,
      keepLast: 2,
      logCompletionsEvery: 1,
      dynamicSampling: { minStd: 1e-6, maxRounds: 3 },
      normalizer: 16,
      scaleRewards: 'none',
    });
    expect(config).not.toHaveProperty('maxConsecutiveSkips');
    expect(config).not.toHaveProperty('rewardStd');
  });

  it('should fill a given mismatch with the mode and cap the correction applies', () => {
    expect(effectiveGrpoConfig(minimal)).not.toHaveProperty('mismatch');
    expect(effectiveGrpoConfig({ ...minimal, mismatch: {} }).mismatch).toEqual({
      mode: TRAINER_DEFAULTS.mismatchMode,
      cap: MISMATCH_DEFAULTS.cap,
    });
    expect(effectiveGrpoConfig({ ...minimal, mismatch: { mode: 'token-mask' } }).mismatch).toEqual({
      mode: 'token-mask',
      cap: MISMATCH_DEFAULTS.cap,
      lowerThreshold: MISMATCH_DEFAULTS.lowerThreshold,
    });
    expect(effectiveGrpoConfig({ ...minimal, mismatch: { cap: 2 } }).mismatch).toEqual({
      mode: TRAINER_DEFAULTS.mismatchMode,
      cap: 2,
    });
  });

  it('should give a config that is valid as it stands and resolves to itself', () => {
    const configs: GrpoConfig[] = [
      minimal,
      { ...minimal, beta: 0.1, outputDir: 'run', schedule: { learningRate: 1e-3 } },
      { ...minimal, advantageBaseline: 'reinforce-plus-plus', onNonFinite: 'error' },
      { ...minimal, lossAggregation: 'seq-mean-token-sum-norm', dynamicSampling: { maxRounds: 2 } },
      { ...minimal, mismatch: { mode: 'sequence-mask' } },
      {
        ...minimal,
        schedule: { learningRate: 1e-4, schedule: 'cosine', totalSteps: 20, warmupSteps: 2 },
      },
    ];
    for (const config of configs) {
      const effective = effectiveGrpoConfig(config);
      expect(effectiveGrpoConfig(effective)).toEqual(effective);
    }
  });

  it('should reject what createGrpoTrainer rejects, naming the setting', () => {
    const errorOf = (config: unknown) => {
      try {
        effectiveGrpoConfig(config as GrpoConfig);
      } catch (error) {
        if (InvalidArgumentError.isInstance(error)) return error;
        throw error;
      }
      throw new Error('accepted');
    };
    expect(errorOf({ ...minimal, beta: -1 })).toMatchObject({ parameter: 'config.beta' });
    expect(errorOf({ ...minimal, kl_coef: 1 })).toMatchObject({
      parameter: 'config.kl_coef',
      code: 'UNKNOWN_OPTION',
    });
    expect(errorOf({ ...minimal, klEstimator: 'k1' })).toMatchObject({
      code: 'INEFFECTIVE_OPTION',
    });
    // a loss setting checked by createPolicyTrainer's validator
    expect(errorOf({ ...minimal, epsilonHigh: -0.1 }).parameter).toBe('config.epsilonHigh');
    // an advantage combination checked by core's groupAdvantages
    expect(
      errorOf({ ...minimal, advantageBaseline: 'reinforce-plus-plus', scaleRewards: 'group' }),
    ).toMatchObject({ parameter: 'config.scaleRewards' });
  });
});

describe('defaultRewardScaling', () => {
  it("should be core's groupAdvantages default for each baseline", () => {
    const rewards = [0, 1, 1, 3, 2, 2, 5, 0];
    for (const baseline of ['mean', 'leave-one-out', 'reinforce-plus-plus'] as const) {
      const implicit = groupAdvantages(rewards, { groupSize: 4, baseline });
      const scale = defaultRewardScaling({
        advantageBaseline: baseline,
        multiReward: 'sum_then_normalize',
      });
      expect(groupAdvantages(rewards, { groupSize: 4, baseline, scale })).toEqual(implicit);
    }
  });
});

describe('POLICY_TRAINER_OPTION_KEYS', () => {
  it('should be exactly the keys createPolicyTrainer accepts', () => {
    let listed: string[] = [];
    try {
      resolveTrainerOptions({ zzzzzzzzzzzz: 1 }, 'createPolicyTrainer');
    } catch (error) {
      if (!InvalidArgumentError.isInstance(error)) throw error;
      const list = /one of (.*)\)/.exec(error.message)?.[1] ?? '';
      listed = [...list.matchAll(/'([^']+)'/g)].map((match) => match[1]!);
    }
    expect(listed.sort()).toEqual([...POLICY_TRAINER_OPTION_KEYS].sort());
    expectTypeOf<(typeof POLICY_TRAINER_OPTION_KEYS)[number]>().toEqualTypeOf<
      keyof PolicyTrainerOptions
    >();
  });
});
