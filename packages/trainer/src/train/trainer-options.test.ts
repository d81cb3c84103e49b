import { ErrorCode, InvalidArgumentError, MISMATCH_DEFAULTS, policyLoss } from '@rlvr/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import type { TokenSequence } from '../batch/token-batch.js';
import { ADAMW_DEFAULTS, SCHEDULE_DEFAULTS, TRAINER_DEFAULTS } from '../defaults.js';
import { createLlamaModel } from '../model/llama-model.js';
import { AdamW } from '../optim/adamw.js';
import { learningRateAt, validateSchedule } from '../optim/schedule.js';
import { tinyCheckpoint } from '../testing/fixtures.js';
import { createPolicyTrainer, type PolicyTrainerOptions } from './policy-trainer.js';
import { resolveTrainerOptions } from './trainer-options.js';

const sequences: TokenSequence[] = [
  { promptIds: [1, 2], completionIds: [3, 4, 5] },
  { promptIds: [6], completionIds: [7] },
];

async function makeTrainer(options?: unknown) {
  const model = await createLlamaModel(tinyCheckpoint('gqa-untied', 3));
  return createPolicyTrainer(model, options as PolicyTrainerOptions);
}

/** The error thrown by `run` (sync or async). */
async function errorOf(run: () => unknown): Promise<InvalidArgumentError> {
  try {
    await run();
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected an InvalidArgumentError');
}

describe('PolicyTrainer options', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  it.each([
    [{ learning_rate: 1e-5 }, 'options.learning_rate', 'schedule'],
    [{ max_grad_norm: 1 }, 'options.max_grad_norm', 'maxGradNorm'],
    [{ grpo: { klCoefficient: 0.1 } }, 'options.grpo.klCoefficient', 'beta'],
    [{ grpo: { kl_coef: 0.5 } }, 'options.grpo.kl_coef', 'beta'],
    [{ grpo: { aggregation: 'token-mean' } }, 'options.grpo.aggregation', 'lossAggregation'],
    [{ grpo: { temprature: 0.7 } }, 'options.grpo.temprature', 'temperature'],
    [{ grpo: { mismatch: { mode: 'token-mask', capp: 2 } } }, 'options.grpo.mismatch.capp', 'cap'],
    [{ optimizer: { weight_decay: 0.1 } }, 'options.optimizer.weight_decay', 'weightDecay'],
    [
      { schedule: { learningRate: 1e-5, warmup_steps: 3 } },
      'options.schedule.warmup_steps',
      'warmupSteps',
    ],
  ])(
    'should reject the unknown key of %j naming the closest one',
    async (options, parameter, hint) => {
      const error = await errorOf(() => makeTrainer(options));
      expect(error.code).toBe(ErrorCode.UNKNOWN_OPTION);
      expect(error.parameter).toBe(parameter);
      expect(error.message).toContain(`did you mean '${hint}'?`);
    },
  );

  it('should reject unknown keys of every method and factory', async () => {
    const trainer = await makeTrainer({ schedule: { learningRate: 0 } });
    const advantages = [1, -1];
    const cases: [() => unknown, string][] = [
      [
        () => trainer.grpoStep({ sequences, advantages }, { num_iterations: 2 } as never),
        'numIterations',
      ],
      [() => trainer.grpoStep({ sequences, advantages, masks: [[1, 1, 1], [1]] } as never), 'mask'],
      [() => trainer.sftStep(sequences, { packed: true } as never), 'pack'],
      [
        () =>
          trainer.logitsStep(sequences, () => ({ loss: 0, dLogits: [] }), {
            row_length: 4,
          } as never),
        'rowLength',
      ],
      [() => trainer.completionLogprobs(sequences, { temprature: 0.7 } as never), 'temperature'],
      [
        () => createLlamaModel(tinyCheckpoint('gqa-untied', 3), { check_finite: false } as never),
        'checkFinite',
      ],
      [() => selectBackend({ candidate: ['cpu'] } as never), 'candidates'],
      [
        () => trainer.model.logits({ inputIds: [[1, 2]], attention_mask: [[1, 1]] } as never),
        'attentionMask',
      ],
      [() => learningRateAt({ learningRate: 1, warmup: 3 } as never, 0), 'warmupSteps'],
    ];
    for (const [run, hint] of cases) {
      const error = await errorOf(run);
      expect(error.code, hint).toBe(ErrorCode.UNKNOWN_OPTION);
      expect(error.message, hint).toContain(`'${hint}'`);
    }
    expect(trainer.step).toBe(0);
    trainer.dispose();
    trainer.model.dispose();
  });

  it.each([
    [{ grpo: { normalizer: 64 } }, 'options.grpo.normalizer'],
    [
      { grpo: { lossAggregation: 'seq-mean-token-mean', normalizer: 64 } },
      'options.grpo.normalizer',
    ],
    [{ grpo: { klEstimator: 'k1' } }, 'options.grpo.klEstimator'],
    [{ grpo: { beta: 0, klEstimator: 'k3' } }, 'options.grpo.klEstimator'],
    [{ grpo: { mismatch: { lowerThreshold: 0.5 } } }, 'options.grpo.mismatch.lowerThreshold'],
    [
      { grpo: { mismatch: { mode: 'sequence-truncate', lowerThreshold: 0.5 } } },
      'options.grpo.mismatch.lowerThreshold',
    ],
    [{ onNonFinite: 'error', maxConsecutiveSkips: 5 }, 'options.maxConsecutiveSkips'],
  ])('should reject %j as INEFFECTIVE_OPTION', async (options, parameter) => {
    const error = await errorOf(() => makeTrainer(options));
    expect(error.code).toBe(ErrorCode.INEFFECTIVE_OPTION);
    expect(error.parameter).toBe(parameter);
  });

  it('should reject a referenceCheckpoint with β = 0, and accept the effective combinations', async () => {
    const checkpoint = tinyCheckpoint('gqa-untied', 3);
    const error = await errorOf(() => makeTrainer({ referenceCheckpoint: checkpoint }));
    expect(error.code).toBe(ErrorCode.INEFFECTIVE_OPTION);
    expect(error.parameter).toBe('options.referenceCheckpoint');
    const fine: PolicyTrainerOptions[] = [
      { grpo: { beta: 0.1, klEstimator: 'k1' }, referenceCheckpoint: checkpoint },
      { grpo: { lossAggregation: 'seq-mean-token-sum-norm', normalizer: 64 } },
      { grpo: { mismatch: { mode: 'token-mask', cap: 2, lowerThreshold: 0.5 } } },
      { onNonFinite: 'skip', maxConsecutiveSkips: 5 },
    ];
    for (const options of fine) {
      const trainer = await makeTrainer(options);
      trainer.dispose();
      trainer.model.dispose();
    }
  });

  it('should reject a temperature that is not > 0', async () => {
    for (const temperature of [0, -1, Number.NaN]) {
      const error = await errorOf(() => makeTrainer({ grpo: { temperature } }));
      expect(error.parameter).toBe('options.grpo.temperature');
    }
    const trainer = await makeTrainer();
    const error = await errorOf(() => trainer.completionLogprobs(sequences, { temperature: 0 }));
    expect(error.parameter).toBe('options.temperature');
    trainer.dispose();
    trainer.model.dispose();
  });

  it('should use TRAINER_DEFAULTS (TRL values) when nothing is set', async () => {
    expect(Object.isFrozen(TRAINER_DEFAULTS)).toBe(true);
    expect(TRAINER_DEFAULTS).toMatchObject({
      learningRate: 1e-6,
      lossAggregation: 'token-mean',
      maxGradNorm: 1,
      onNonFinite: 'skip',
      maxConsecutiveSkips: 3,
      epsilonLow: 0.2,
      beta: 0,
      klEstimator: 'k3',
      temperature: 1,
      groupSize: 8,
      numIterations: 1,
      weightDecay: 0,
      ratioLevel: 'token',
      entropyCoefficient: 0,
      mismatchMode: 'token-truncate',
      microBatchSize: Number.MAX_SAFE_INTEGER,
    });
    const trainer = await makeTrainer();
    expect(trainer.learningRate).toBe(1e-6);
    expect(trainer.temperature).toBe(1);
    expect(trainer.reference).toBeUndefined();
    // token-mean aggregation (was seq-mean-token-mean): compare the reported loss.
    const advantages = [1, -0.5];
    const { logprobs } = trainer.completionLogprobs(sequences);
    const { steps } = trainer.grpoStep({ sequences, advantages });
    const tokenMean = policyLoss({
      logprobs,
      oldLogprobs: logprobs,
      advantages,
      aggregation: 'token-mean',
    });
    const seqMean = policyLoss({
      logprobs,
      oldLogprobs: logprobs,
      advantages,
      aggregation: 'seq-mean-token-mean',
    });
    expect(Math.abs(tokenMean.loss - seqMean.loss)).toBeGreaterThan(1e-3);
    expect(steps[0]!.loss).toBeCloseTo(tokenMean.loss, 6);
    trainer.dispose();
    trainer.model.dispose();
  });

  it('should fill ratioLevel, entropyCoefficient, microBatchSize and the mismatch mode from TRAINER_DEFAULTS', () => {
    const resolved = resolveTrainerOptions({}, 'test');
    expect(resolved.grpo.ratioLevel).toBe(TRAINER_DEFAULTS.ratioLevel);
    expect(resolved.grpo.entropyCoefficient).toBe(TRAINER_DEFAULTS.entropyCoefficient);
    expect(resolved.microBatchSize).toBe(TRAINER_DEFAULTS.microBatchSize);
    // the mode the trainer assumes is the one core's mismatchCorrection applies
    expect(TRAINER_DEFAULTS.mismatchMode).toBe(MISMATCH_DEFAULTS.mode);
    expect(() =>
      resolveTrainerOptions({ grpo: { mismatch: { lowerThreshold: 0.5 } } }, 'test'),
    ).toThrow(
      expect.objectContaining({
        code: ErrorCode.INEFFECTIVE_OPTION,
        message: expect.stringContaining(`mode is '${TRAINER_DEFAULTS.mismatchMode}'`),
      }),
    );
  });

  it('should fill optimizer and schedule from ADAMW_DEFAULTS and SCHEDULE_DEFAULTS (PyTorch/HF values)', () => {
    expect(Object.isFrozen(ADAMW_DEFAULTS) && Object.isFrozen(ADAMW_DEFAULTS.betas)).toBe(true);
    expect(ADAMW_DEFAULTS).toEqual({ betas: [0.9, 0.999], epsilon: 1e-8, weightDecay: 0 });
    expect(ADAMW_DEFAULTS.weightDecay).toBe(TRAINER_DEFAULTS.weightDecay);
    expect(resolveTrainerOptions({}, 'test').optimizer).toEqual(ADAMW_DEFAULTS);
    // A field given keeps its value; the others are the defaults.
    expect(resolveTrainerOptions({ optimizer: { weightDecay: 0.1 } }, 'test').optimizer).toEqual({
      ...ADAMW_DEFAULTS,
      weightDecay: 0.1,
    });
    // AdamW's own fallbacks (used when constructed without options) are the same values.
    const adamw = new AdamW();
    expect([adamw.beta1, adamw.beta2, adamw.epsilon, adamw.weightDecay]).toEqual([
      ...ADAMW_DEFAULTS.betas,
      ADAMW_DEFAULTS.epsilon,
      ADAMW_DEFAULTS.weightDecay,
    ]);
    expect(SCHEDULE_DEFAULTS.learningRate).toBe(TRAINER_DEFAULTS.learningRate);
    const { totalSteps, ...schedule } = validateSchedule(
      resolveTrainerOptions({}, 'test').schedule,
      'test',
    );
    expect(totalSteps).toBeUndefined();
    expect(schedule).toEqual(SCHEDULE_DEFAULTS);
  });
});
