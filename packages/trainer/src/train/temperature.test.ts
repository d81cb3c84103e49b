import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { createRng, policyLoss } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import type { TokenSequence } from '../batch/token-batch.js';
import { createLlamaModel, type LlamaModel } from '../model/llama-model.js';
import { tinyCheckpoint } from '../testing/fixtures.js';
import { TfjsSampler } from '../testing/tfjs-sampler.js';
import { accumulateGradients, microBatches } from './gradient-engine.js';
import { createPolicyTrainer, type PolicyTrainerOptions } from './policy-trainer.js';

const VOCAB = 29; // gqa-untied

function randomSequences(seed: number, count: number): TokenSequence[] {
  const rng = createRng(seed);
  const ids = (length: number) => Array.from({ length }, () => Math.floor(rng.next() * VOCAB));
  return Array.from({ length: count }, () => ({
    promptIds: ids(1 + Math.floor(rng.next() * 4)),
    completionIds: ids(1 + Math.floor(rng.next() * 6)),
  }));
}

/** float64 log softmax(z / T)[target] and the entropy of softmax(z / T), from the model's logits. */
function temperedReference(model: LlamaModel, sequences: TokenSequence[], temperature: number) {
  return sequences.map((sequence) => {
    const ids = [...sequence.promptIds, ...sequence.completionIds];
    const [rows] = model.logits({ inputIds: [ids.slice(0, -1)] });
    return sequence.completionIds.map((target, j) => {
      const z = Float64Array.from(
        rows![sequence.promptIds.length - 1 + j]!,
        (v) => v / temperature,
      );
      const max = Math.max(...z);
      const log = max + Math.log(z.reduce((sum, v) => sum + Math.exp(v - max), 0));
      const logp = z.map((v) => v - log);
      const entropy = -logp.reduce((sum, lp) => sum + Math.exp(lp) * lp, 0);
      return { logprob: logp[target]!, entropy };
    });
  });
}

async function makeTrainer(options: PolicyTrainerOptions, seed = 11) {
  const model = await createLlamaModel(tinyCheckpoint('gqa-untied', seed));
  return createPolicyTrainer(model, options);
}

describe('PolicyTrainer at the sampling temperature (cpu)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  it('should compute log softmax(logits / T) and its entropy (vs float64)', async () => {
    const trainer = await makeTrainer({ grpo: { temperature: 0.7 } });
    const sequences = randomSequences(1, 6);
    for (const [temperature, got] of [
      [0.7, trainer.completionLogprobs(sequences)],
      [1.3, trainer.completionLogprobs(sequences, { temperature: 1.3 })],
      [1, trainer.completionLogprobs(sequences, { temperature: 1 })],
    ] as const) {
      const want = temperedReference(trainer.model, sequences, temperature);
      expect(got.finite).toBe(true);
      want.forEach((row, i) => {
        row.forEach(({ logprob, entropy }, j) => {
          expect(Math.abs(got.logprobs[i]![j]! - logprob)).toBeLessThan(2e-5);
          expect(Math.abs(got.entropies[i]![j]! - entropy)).toBeLessThan(2e-5);
        });
      });
    }
    expect(trainer.temperature).toBe(0.7);
    trainer.dispose();
    trainer.model.dispose();
  });

  it('should equal the behaviour logprobs of a sampler drawing at T = 0.7 (no truncation)', async () => {
    const trainer = await makeTrainer({ grpo: { temperature: 0.7 } });
    const sampler = await TfjsSampler.fromModel(trainer.model, {
      encode: (text) => [...text].map((c) => c.charCodeAt(0) % VOCAB),
      decode: (ids) => ids.join(' '),
      eosTokenId: VOCAB - 1,
    });
    const groups = await sampler.sample({
      prompts: [
        [1, 2, 3],
        [4, 5],
      ],
      n: 3,
      maxNewTokens: 6,
      temperature: 0.7,
      seed: 5,
    });
    const completions = groups.flat();
    const sequences = completions.map((c) => ({
      promptIds: c.promptTokenIds!,
      completionIds: c.tokenIds,
    }));
    const behaviour = completions.map((c) => c.logprobs!);
    const tempered = trainer.completionLogprobs(sequences).logprobs;
    const untempered = trainer.completionLogprobs(sequences, { temperature: 1 }).logprobs;
    let maxDiff = 0;
    let maxUntempered = 0;
    behaviour.forEach((row, i) => {
      row.forEach((value, j) => {
        maxDiff = Math.max(maxDiff, Math.abs(tempered[i]![j]! - value));
        maxUntempered = Math.max(maxUntempered, Math.abs(untempered[i]![j]! - value));
      });
    });
    expect(maxDiff).toBeLessThan(1e-4);
    // Before grpo.temperature, the trainer used T = 1: off-policy by this much.
    expect(maxUntempered).toBeGreaterThan(0.05);
    await sampler.close();
    trainer.dispose();
    trainer.model.dispose();
  });

  it('should use T for π_old, the reference and the mismatch correction in grpoStep', async () => {
    const temperature = 0.6;
    const trainer = await makeTrainer({
      schedule: { learningRate: 0 },
      grpo: {
        temperature,
        beta: 0.1,
        entropyCoefficient: 0.01,
        lossAggregation: 'token-mean',
        mismatch: { mode: 'token-truncate', cap: 2 },
      },
    });
    const sequences = randomSequences(2, 5);
    const advantages = sequences.map((_, i) => (i - 2) / 2);
    const want = temperedReference(trainer.model, sequences, temperature);
    const logprobs = want.map((row) => row.map((t) => t.logprob));
    const entropies = want.map((row) => row.map((t) => t.entropy));
    const { steps } = trainer.grpoStep({ sequences, advantages, behaviourLogprobs: logprobs });
    const core = policyLoss({
      logprobs,
      oldLogprobs: logprobs,
      advantages,
      refLogprobs: logprobs,
      klCoefficient: 0.1,
      entropies,
      entropyCoefficient: 0.01,
      aggregation: 'token-mean',
    });
    expect(steps[0]!.loss).toBeCloseTo(core.loss, 5);
    expect(steps[0]!.entropy).toBeCloseTo(core.metrics.entropy, 5);
    // A reference at T = 1 (or π_old at T = 1) would show a KL / mismatch far from 0.
    expect(steps[0]!.kl).toBeLessThan(1e-9);
    expect(steps[0]!.mismatch!.maxAbsLogprobDiff).toBeLessThan(1e-4);
    trainer.dispose();
    trainer.model.dispose();
  });

  it('should back-propagate the tempered chain exactly (vs tfjs autodiff)', async () => {
    const temperature = 0.7;
    const trainer = await makeTrainer({ schedule: { learningRate: 0 } });
    const sequences = randomSequences(3, 5);
    const rng = createRng(4);
    const [micro] = microBatches(trainer.model, Number.MAX_SAFE_INTEGER, sequences, 'test');
    const members = new Set(sequences.map((_, index) => index));
    const mask = sequences.map((s) => s.completionIds.map(() => 1));
    const g = sequences.map((s) => s.completionIds.map(() => rng.next() - 0.5));
    const e = sequences.map((s) => s.completionIds.map(() => 0.1 * (rng.next() - 0.5)));
    const accumulated = accumulateGradients(
      trainer.model,
      [micro!],
      members,
      mask,
      () => ({ loss: 0, gradLogprobs: g, gradEntropy: e, result: undefined }),
      temperature,
    );
    // Autodiff of Σ g·log p_T(target) + Σ e·H(p_T), p_T = softmax(logits / T), written out here.
    const model = trainer.model;
    const names = model.parameterNames;
    const variables = names.map((name) => tf.variable(model.param(name), true));
    const original = model.params;
    model.params = new Map(names.map((name, i) => [name, variables[i]! as tf.Tensor]));
    const { batch } = micro!;
    const size = batch.input.batchSize * batch.input.seqLen;
    const gFlat = new Float32Array(size);
    const eFlat = new Float32Array(size);
    batch.slots.forEach((row, r) => {
      row.forEach((slot, j) => {
        gFlat[slot] = g[r]![j]!;
        eFlat[slot] = e[r]![j]!;
      });
    });
    const { grads } = tf.variableGrads(() => {
      const { logits } = model.forwardWithCache(batch.input, false);
      const logp = tf.logSoftmax(tf.div(logits, temperature));
      const oneHot = tf.cast(tf.oneHot(tf.tensor1d(batch.targets, 'int32'), VOCAB), 'float32');
      const chosen = tf.sum(tf.mul(logp, oneHot), -1);
      const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1));
      return tf.add(
        tf.sum(tf.mul(chosen, tf.tensor1d(gFlat))),
        tf.sum(tf.mul(entropy, tf.tensor1d(eFlat))),
      ) as tf.Scalar;
    }, variables);
    model.params = original;
    names.forEach((name, i) => {
      const want = grads[variables[i]!.name]!.dataSync();
      const got = accumulated.grads.get(name)!.dataSync();
      let scale = 0;
      let error = 0;
      want.forEach((value, index) => {
        scale = Math.max(scale, Math.abs(value));
        error = Math.max(error, Math.abs(value - got[index]!));
      });
      expect(scale, name).toBeGreaterThan(0);
      expect(error, name).toBeLessThan(1e-5 * Math.max(1, scale) + 1e-7);
    });
    tf.dispose([...accumulated.grads.values(), ...variables, ...Object.values(grads)]);
    trainer.dispose();
    model.dispose();
  });
});
