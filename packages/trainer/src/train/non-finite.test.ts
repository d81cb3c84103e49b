import { ErrorCode, NonFiniteError } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import type { TokenSequence } from '../batch/token-batch.js';
import { TrainingStalledError } from '../errors/training-stalled-error.js';
import { createLlamaModel } from '../model/llama-model.js';
import { tinyCheckpoint } from '../testing/fixtures.js';
import {
  createPolicyTrainer,
  type LogitsLossFunction,
  type PolicyTrainerOptions,
} from './policy-trainer.js';

const VOCAB = 29; // gqa-untied
const sequences: TokenSequence[] = [
  { promptIds: [1, 2], completionIds: [3, 4, 5] },
  { promptIds: [6], completionIds: [7, 8] },
];
const advantages = [1, -1];

/** A model whose final norm weights are NaN: every logit, logprob and gradient is NaN. */
async function poisonedTrainer(options?: PolicyTrainerOptions) {
  const checkpoint = tinyCheckpoint('gqa-untied', 12);
  const poisoned = {
    ...checkpoint,
    tensors: checkpoint.tensors.map((t) =>
      t.name === 'model.norm.weight'
        ? { ...t, data: new Float32Array(t.data.length).fill(Number.NaN) }
        : t,
    ),
  };
  return createPolicyTrainer(await createLlamaModel(poisoned, { checkFinite: false }), options);
}

async function healthyTrainer(options?: PolicyTrainerOptions) {
  return createPolicyTrainer(await createLlamaModel(tinyCheckpoint('gqa-untied', 12)), {
    schedule: { learningRate: 1e-3 },
    ...options,
  });
}

const nanLoss: LogitsLossFunction = (rows) => ({
  loss: Number.NaN,
  dLogits: rows.map(() => new Float32Array(VOCAB)),
});
const zeroLoss: LogitsLossFunction = (rows, { totalTokens }) => ({
  loss: 0,
  dLogits: rows.map((row) => {
    const d = new Float32Array(VOCAB).fill(1 / (VOCAB * totalTokens));
    d[row.target] = -1 / totalTokens;
    return d;
  }),
});

function stallOf(run: () => unknown): TrainingStalledError {
  try {
    run();
  } catch (error) {
    if (TrainingStalledError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a TrainingStalledError');
}

describe("onNonFinite: 'skip' (cpu)", () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  it('should skip grpoStep (π_old, mismatch and loss paths) and stop after 3 in a row', async () => {
    const trainer = await poisonedTrainer({
      grpo: { mismatch: { mode: 'token-truncate', cap: 2 } },
    });
    const behaviourLogprobs = sequences.map((s) => s.completionIds.map(() => -1));
    const before = tf.memory().numTensors;
    // The mismatch correction needs π_old: it is NaN, which used to throw before the skip path.
    const first = trainer.grpoStep({ sequences, advantages, behaviourLogprobs });
    expect(first.steps).toHaveLength(1);
    expect(first.steps[0]!.skipped).toBe(true);
    expect(Number.isNaN(first.steps[0]!.loss)).toBe(true);
    const second = trainer.grpoStep(
      { sequences, advantages, behaviourLogprobs },
      { numIterations: 2 },
    );
    expect(second.steps.map((s) => s.skipped)).toEqual([true]);
    expect(trainer.skippedSteps).toBe(2);
    expect(trainer.consecutiveSkips).toBe(2);
    expect(tf.memory().numTensors).toBe(before);
    const stall = stallOf(() => trainer.grpoStep({ sequences, advantages, behaviourLogprobs }));
    expect(stall.code).toBe(ErrorCode.TRAINING_STALLED);
    expect(stall.count).toBe(3);
    expect(stall.message).toMatch(/3 consecutive updates were skipped/);
    expect(stall.message).toMatch(/NaN\/Inf model weights/);
    expect(trainer.step).toBe(0);
    trainer.dispose();
    trainer.model.dispose();
  });

  it('should skip the loss path of grpoStep, sftStep and logitsStep on poisoned weights', async () => {
    const trainer = await poisonedTrainer({ maxConsecutiveSkips: 0 });
    const results = [
      ...trainer.grpoStep({ sequences, advantages }).steps,
      trainer.sftStep(sequences),
      trainer.sftStep(sequences, { pack: true }),
      trainer.logitsStep(sequences, zeroLoss),
    ];
    expect(results.map((r) => r.skipped)).toEqual([true, true, true, true]);
    expect(trainer.skippedSteps).toBe(4);
    expect(trainer.consecutiveSkips).toBe(4); // 0: never stops
    expect(trainer.step).toBe(0);
    trainer.dispose();
    trainer.model.dispose();
  });

  it('should return non-finite logprobs with finite: false instead of throwing', async () => {
    const lenient = await poisonedTrainer();
    const out = lenient.completionLogprobs(sequences);
    expect(out.finite).toBe(false);
    expect(Number.isNaN(out.logprobs[0]![0]!)).toBe(true);
    expect(lenient.skippedSteps).toBe(0);
    const strict = await poisonedTrainer({ onNonFinite: 'error' });
    expect(() => strict.completionLogprobs(sequences)).toThrow(NonFiniteError);
    expect(() => strict.grpoStep({ sequences, advantages })).toThrow(NonFiniteError);
    expect(() => strict.sftStep(sequences)).toThrow(NonFiniteError);
    const healthy = await healthyTrainer();
    expect(healthy.completionLogprobs(sequences).finite).toBe(true);
    for (const trainer of [lenient, strict, healthy]) {
      trainer.dispose();
      trainer.model.dispose();
    }
  });

  it('should reset the count on an applied update and keep it across getState/setState', async () => {
    const trainer = await healthyTrainer();
    expect(trainer.logitsStep(sequences, nanLoss).skipped).toBe(true);
    expect(trainer.logitsStep(sequences, nanLoss).skipped).toBe(true);
    expect(trainer.consecutiveSkips).toBe(2);
    expect(trainer.logitsStep(sequences, zeroLoss).skipped).toBe(false);
    expect(trainer.consecutiveSkips).toBe(0);
    trainer.logitsStep(sequences, nanLoss);
    trainer.logitsStep(sequences, nanLoss);
    const state = trainer.getState();
    expect(state).toMatchObject({ skippedSteps: 4, consecutiveSkips: 2 });
    // A resumed trainer keeps the count: one more skip stalls it.
    const resumed = await healthyTrainer();
    resumed.setState(state);
    expect(resumed.skippedSteps).toBe(4);
    expect(stallOf(() => resumed.logitsStep(sequences, nanLoss)).count).toBe(3);
    // A state saved without the counter resumes at 0.
    const old = await healthyTrainer();
    old.setState({ optimizer: state.optimizer, skippedSteps: 4 });
    expect(old.consecutiveSkips).toBe(0);
    expect(old.logitsStep(sequences, nanLoss).skipped).toBe(true);
    for (const t of [trainer, resumed, old]) {
      t.dispose();
      t.model.dispose();
    }
  });
});
