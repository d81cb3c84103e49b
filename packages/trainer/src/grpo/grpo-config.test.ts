import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { TRAINER_DEFAULTS } from '../defaults.js';
import { CORRECT, constantSampler, makeScripted } from '../testing/grpo-scripted.js';
import type { GrpoConfig } from './grpo-config.js';

beforeAll(async () => {
  await selectBackend({ candidates: ['cpu'] });
});

const make = (config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  makeScripted(constantSampler(['3', '1']), config as Partial<GrpoConfig>, extra);

describe('GrpoConfig: unknown keys (point 4)', () => {
  it('should reject a misspelled or foreign key, naming it and the right one', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ kl_coef: 0.5 }, 'config.kl_coef', 'beta'],
      [{ klCoefficient: 0.5 }, 'config.klCoefficient', 'beta'],
      [{ learning_rate: 1e-5 }, 'config.learning_rate', 'schedule'],
      [{ learningRate: 1e-5 }, 'config.learningRate', 'schedule'],
      [{ steps: 10 }, 'config.steps', 'maxSteps'],
      [{ maxResampleRounds: 3 }, 'config.maxResampleRounds', 'dynamicSampling'],
      [{ maxRounds: 3 }, 'config.maxRounds', 'dynamicSampling'],
      [{ max_grad_norm: 1 }, 'config.max_grad_norm', 'maxGradNorm'],
      [{ aggregation: 'token-mean' }, 'config.aggregation', 'lossAggregation'],
      [
        { dynamicSampling: { maxResampleRounds: 3 } },
        'config.dynamicSampling.maxResampleRounds',
        'maxRounds',
      ],
      [{ mismatch: { mod: 'token-mask' } }, 'config.mismatch.mod', 'mode'],
      [{ overlong: { maxLen: 4, bufferLength: 1 } }, 'config.overlong.maxLen', 'maxLength'],
      [{ schedule: { lr: 1e-5 } }, 'config.schedule.lr', 'learningRate'],
      [{ optimizer: { weight_decay: 0.1 } }, 'config.optimizer.weight_decay', 'weightDecay'],
    ];
    for (const [config, parameter, suggestion] of cases) {
      await expect(make(config), parameter).rejects.toMatchObject({
        code: 'UNKNOWN_OPTION',
        parameter,
        message: expect.stringContaining(`did you mean '${suggestion}'?`),
      });
    }
  });

  it('should reject unknown keys of the options and of each reward', async () => {
    await expect(make({}, { resumeFrom: true })).rejects.toMatchObject({
      code: 'UNKNOWN_OPTION',
      parameter: 'options.resumeFrom',
      message: expect.stringContaining("did you mean 'resume'?"),
    });
    await expect(make({}, { rewards: [{ ...CORRECT, wieght: 2 }] })).rejects.toMatchObject({
      code: 'UNKNOWN_OPTION',
      parameter: 'options.rewards[0].wieght',
    });
  });
});

describe('GrpoConfig: options without effect (point 4)', () => {
  it('should reject each ineffective combination, naming the option', async () => {
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [{ saveEvery: 5 }, {}, 'config.saveEvery'],
      [{ keepLast: 3 }, {}, 'config.keepLast'],
      [{ logCompletionsEvery: 2 }, {}, 'config.logCompletionsEvery'],
      [{ normalizer: 64 }, {}, 'config.normalizer'],
      [{ klEstimator: 'k1' }, {}, 'config.klEstimator'],
      [{ onNonFinite: 'error', maxConsecutiveSkips: 5 }, {}, 'config.maxConsecutiveSkips'],
      [{ advantageBaseline: 'leave-one-out', rewardStd: 'population' }, {}, 'config.rewardStd'],
      [{ scaleRewards: 'none', rewardStd: 'population' }, {}, 'config.rewardStd'],
      [{ quiet: true, progress: true }, {}, 'config.progress'],
      [{ overlong: { maxLength: 8, bufferLength: 2 } }, {}, 'config.overlong'],
      [{}, { overwrite: true }, 'options.overwrite'],
      [{}, { acceptConfigChanges: true }, 'options.acceptConfigChanges'],
    ];
    for (const [config, extra, parameter] of cases) {
      await expect(make(config, extra), parameter).rejects.toMatchObject({
        code: 'INEFFECTIVE_OPTION',
        parameter,
      });
    }
  });

  it('should accept the combinations that do have an effect', async () => {
    for (const config of [
      { normalizer: 64, lossAggregation: 'seq-mean-token-sum-norm' },
      { klEstimator: 'k1', beta: 0.1 },
      { rewardStd: 'population' }, // group scaling divides by the std
      { multiReward: 'normalize_then_sum', scaleRewards: 'none', rewardStd: 'population' },
      { miniBatchSize: 64 }, // ≥ the batch with μ = 1: one step per iteration, as TRL accepts
      { overlong: { maxLength: 4, bufferLength: 2 } },
    ]) {
      const made = await make(config);
      made.dispose();
    }
  });
});

describe('GrpoConfig: defaults shared with PolicyTrainer (point 9)', () => {
  it('should take every default from TRAINER_DEFAULTS', async () => {
    const sampler = constantSampler(new Array(8).fill('3'));
    const { grpo, dispose } = await makeScripted(sampler, {
      groupSize: undefined,
      schedule: undefined,
    });
    const { config, policy } = grpo;
    expect(config.schedule).toEqual({ learningRate: TRAINER_DEFAULTS.learningRate });
    expect(policy.learningRate).toBe(1e-6);
    expect(config.lossAggregation).toBe(TRAINER_DEFAULTS.lossAggregation);
    expect(config.maxGradNorm).toBe(TRAINER_DEFAULTS.maxGradNorm);
    expect(config.onNonFinite).toBe('skip');
    expect(config.maxConsecutiveSkips).toBe(3);
    expect(config.epsilonLow).toBe(TRAINER_DEFAULTS.epsilonLow);
    expect(config.beta).toBe(0);
    expect(policy.reference).toBeUndefined();
    expect(config.temperature).toBe(1);
    expect(policy.temperature).toBe(1);
    expect(config.groupSize).toBe(TRAINER_DEFAULTS.groupSize);
    expect(config.numIterations).toBe(TRAINER_DEFAULTS.numIterations);
    expect(config.scaleRewards).toBeUndefined(); // the baseline's own default
    await grpo.step();
    expect(sampler.sampleCalls[0]).toMatchObject({ n: 8, temperature: 1 });
    dispose();
  });
});

describe('GRPO_CONFIG_KEYS', () => {
  it('should be the exported list of every GrpoConfig key the trainer accepts', async () => {
    const { GRPO_CONFIG_KEYS } = await import('../index.js');
    expect(GRPO_CONFIG_KEYS).toContain('beta');
    expect(GRPO_CONFIG_KEYS).toContain('maxStaleness');
    expect(GRPO_CONFIG_KEYS).not.toContain('klCoefficient');
    expect(new Set(GRPO_CONFIG_KEYS).size).toBe(GRPO_CONFIG_KEYS.length);
  });
});
