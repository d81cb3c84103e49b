import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { createRng, NonFiniteError, policyLoss } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import type { TokenSequence } from '../batch/token-batch.js';
import { createLlamaModel } from '../model/llama-model.js';
import { tokenStats } from '../model/token-stats.js';
import { tinyCheckpoint } from '../testing/fixtures.js';
import { accumulateGradients, microBatches } from './gradient-engine.js';
import {
  createPolicyTrainer,
  type GrpoLossConfig,
  type PolicyTrainerOptions,
} from './policy-trainer.js';

const VOCAB = 29; // gqa-untied

function randomBatch(seed: number, count: number) {
  const rng = createRng(seed);
  const sequences: TokenSequence[] = [];
  for (let index = 0; index < count; index++) {
    const promptLength = 1 + Math.floor(rng.next() * 4);
    const completionLength = 1 + Math.floor(rng.next() * 6);
    sequences.push({
      promptIds: Array.from({ length: promptLength }, () => Math.floor(rng.next() * VOCAB)),
      completionIds: Array.from({ length: completionLength }, () => Math.floor(rng.next() * VOCAB)),
    });
  }
  const advantages = sequences.map(() => rng.next() * 2 - 1);
  return { sequences, advantages, rng };
}

async function makeTrainer(options: PolicyTrainerOptions, seed = 11) {
  const model = await createLlamaModel(tinyCheckpoint('gqa-untied', seed));
  return createPolicyTrainer(model, options);
}

function paramsOf(trainer: Awaited<ReturnType<typeof makeTrainer>>) {
  return new Map([...trainer.model.params].map(([name, t]) => [name, t.dataSync().slice()]));
}

const FULL_LOSS: GrpoLossConfig = {
  epsilonLow: 0.2,
  epsilonHigh: 0.28,
  dualClip: 3,
  beta: 0.05,
  klEstimator: 'k3',
  entropyCoefficient: 0.01,
  lossAggregation: 'token-mean',
  mismatch: { mode: 'token-truncate', cap: 2 },
};

describe('PolicyTrainer (cpu)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  it.each([
    ['token-mean', 'k3'],
    ['seq-mean-token-mean', 'k1'],
    ['seq-mean-token-sum', 'k2'],
    ['seq-mean-token-sum-norm', 'k3'],
  ] as const)(
    'should report the loss of core policyLoss (%s, %s)',
    async (aggregation, estimator) => {
      const grpo: GrpoLossConfig = {
        ...FULL_LOSS,
        lossAggregation: aggregation,
        klEstimator: estimator,
        ...(aggregation === 'seq-mean-token-sum-norm' ? { normalizer: 8 } : {}),
      };
      const trainer = await makeTrainer({ schedule: { learningRate: 0 }, microBatchSize: 3, grpo });
      const { sequences, advantages, rng } = randomBatch(1, 7);
      const current = trainer.completionLogprobs(sequences);
      const behaviourLogprobs = current.logprobs.map((row) =>
        row.map((v) => v + (rng.next() - 0.5)),
      );
      const { steps } = trainer.grpoStep({ sequences, advantages, behaviourLogprobs });
      const correction = await import('@rlvr/core').then((core) =>
        core.mismatchCorrection({
          trainerLogprobs: current.logprobs,
          behaviourLogprobs,
          mode: 'token-truncate',
          cap: 2,
        }),
      );
      // lr = 0: the reference model equals the policy, so refLogprobs = logprobs.
      const want = policyLoss({
        logprobs: current.logprobs,
        oldLogprobs: current.logprobs,
        advantages,
        mask: correction.mask,
        epsilonLow: 0.2,
        epsilonHigh: 0.28,
        dualClip: 3,
        refLogprobs: current.logprobs,
        klCoefficient: 0.05,
        klEstimator: estimator,
        entropies: current.entropies,
        entropyCoefficient: 0.01,
        importanceWeights: correction.weights,
        aggregation,
        ...(aggregation === 'seq-mean-token-sum-norm'
          ? { aggregationOptions: { normalizer: 8 } }
          : {}),
      });
      expect(steps).toHaveLength(1);
      expect(steps[0]!.loss).toBeCloseTo(want.loss, 10);
      expect(steps[0]!.policyLoss).toBeCloseTo(want.policyLoss, 10);
      expect(steps[0]!.entropy).toBeCloseTo(want.metrics.entropy, 10);
      expect(steps[0]!.mismatch!.maxAbsLogprobDiff).toBeCloseTo(
        correction.metrics.maxAbsLogprobDiff,
        10,
      );
      trainer.dispose();
      trainer.model.dispose();
    },
  );

  it('should back-propagate core gradLogprobs and the entropy term exactly (vs autodiff)', async () => {
    const trainer = await makeTrainer({ schedule: { learningRate: 0 }, grpo: FULL_LOSS });
    const { sequences, advantages, rng } = randomBatch(2, 5);
    const current = trainer.completionLogprobs(sequences);
    const old = current.logprobs.map((row) => row.map((v) => v + 0.3 * (rng.next() - 0.5)));
    const ref = current.logprobs.map((row) => row.map((v) => v + 0.3 * (rng.next() - 0.5)));
    const [micro] = microBatches(trainer.model, Number.MAX_SAFE_INTEGER, sequences, 'test');
    const members = new Set(sequences.map((_, index) => index));
    const mask = sequences.map((s) => s.completionIds.map(() => 1));
    const entropyCoefficient = 0.05;
    let core: ReturnType<typeof policyLoss> | undefined;
    const accumulated = accumulateGradients(
      trainer.model,
      [micro!],
      members,
      mask,
      (_rows, lp, en) => {
        core = policyLoss({
          logprobs: lp,
          oldLogprobs: old,
          advantages,
          refLogprobs: ref,
          klCoefficient: 0.1,
          entropies: en,
          entropyCoefficient,
          aggregation: 'token-mean',
        });
        const tokens = lp.reduce((sum, row) => sum + row.length, 0);
        return {
          loss: core.loss,
          gradLogprobs: core.gradLogprobs,
          gradEntropy: lp.map((row) => row.map(() => -entropyCoefficient / tokens)),
          result: core,
        };
      },
    );
    // Autodiff of Σ g_t · logp_t + Σ e_t · H_t with g from core.
    const model = trainer.model;
    const names = model.parameterNames;
    const variables = names.map((name) => tf.variable(model.param(name), true));
    const original = model.params;
    model.params = new Map(names.map((name, i) => [name, variables[i]! as tf.Tensor]));
    const tokens = mask.reduce((sum, row) => sum + row.length, 0);
    const size = micro!.batch.input.batchSize * micro!.batch.input.seqLen;
    const g = new Float32Array(size);
    const e = new Float32Array(size);
    micro!.batch.slots.forEach((row, r) => {
      row.forEach((slot, j) => {
        g[slot] = core!.gradLogprobs[r]![j]!;
        e[slot] = -entropyCoefficient / tokens;
      });
    });
    const { grads } = tf.variableGrads(() => {
      const { logits } = model.forwardWithCache(micro!.batch.input, false);
      const stats = tokenStats(logits, micro!.batch.targets);
      return tf.add(
        tf.sum(tf.mul(stats.logprobs, tf.tensor1d(g))),
        tf.sum(tf.mul(stats.entropy, tf.tensor1d(e))),
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
      expect(error, name).toBeLessThan(1e-5 * Math.max(1, scale) + 1e-7);
    });
    tf.dispose([...accumulated.grads.values(), ...variables, ...Object.values(grads)]);
    trainer.dispose();
    model.dispose();
  });

  it.each(['token-mean', 'seq-mean-token-mean'] as const)(
    'should give the same update for any micro-batch split (%s)',
    async (aggregation) => {
      const { sequences, advantages } = randomBatch(3, 6);
      const options = (microBatchSize: number): PolicyTrainerOptions => ({
        schedule: { learningRate: 1e-2 },
        optimizer: { weightDecay: 0.1 },
        microBatchSize,
        grpo: { lossAggregation: aggregation, beta: 0.02 },
      });
      const whole = await makeTrainer(options(6));
      const split = await makeTrainer(options(4));
      const single = await makeTrainer(options(1));
      const results = [whole, split, single].map((trainer) =>
        trainer.grpoStep({ sequences, advantages }),
      );
      const params = [whole, split, single].map(paramsOf);
      for (const other of [1, 2]) {
        expect(results[other]!.steps[0]!.loss).toBeCloseTo(results[0]!.steps[0]!.loss, 6);
        expect(results[other]!.steps[0]!.gradNorm).toBeCloseTo(results[0]!.steps[0]!.gradNorm, 4);
        for (const [name, data] of params[0]!) {
          const got = params[other]!.get(name)!;
          data.forEach((value, index) => {
            expect(Math.abs(value - got[index]!)).toBeLessThan(2e-5);
          });
        }
      }
      for (const trainer of [whole, split, single]) {
        trainer.dispose();
        trainer.model.dispose();
      }
    },
  );

  it('should keep the pre-update logprobs as π_old for μ > 1', async () => {
    const { sequences, advantages } = randomBatch(4, 4);
    const options: PolicyTrainerOptions = {
      schedule: { learningRate: 5e-2 },
      maxGradNorm: 0,
      grpo: { epsilonLow: 0.2, lossAggregation: 'seq-mean-token-mean' },
    };
    const twice = await makeTrainer(options);
    const once = await makeTrainer(options);
    const before = twice.completionLogprobs(sequences).logprobs;
    const { steps } = twice.grpoStep({ sequences, advantages }, { numIterations: 2 });
    once.grpoStep({ sequences, advantages });
    const after = once.completionLogprobs(sequences).logprobs;
    const want = policyLoss({ logprobs: after, oldLogprobs: before, advantages, epsilonLow: 0.2 });
    expect(steps).toHaveLength(2);
    expect(steps[0]!.ratioMax).toBeCloseTo(1, 6);
    expect(steps[1]!.loss).toBeCloseTo(want.loss, 5);
    expect(steps[1]!.clipFraction).toBeCloseTo(want.metrics.clipFraction, 6);
    expect(steps[1]!.ratioMax).not.toBeCloseTo(1, 3);
    for (const trainer of [twice, once]) {
      trainer.dispose();
      trainer.model.dispose();
    }
  });

  it('should not keep a reference model when β = 0', async () => {
    const trainer = await makeTrainer({ grpo: { beta: 0 } });
    expect(trainer.reference).toBeUndefined();
    const withKl = await makeTrainer({ grpo: { beta: 0.1 } });
    expect(withKl.reference).toBeDefined();
    for (const t of [trainer, withKl]) {
      t.dispose();
      t.model.dispose();
    }
  });

  it('should keep tf.memory().numTensors constant across steps', async () => {
    const trainer = await makeTrainer({
      schedule: { learningRate: 1e-3 },
      microBatchSize: 2,
      grpo: FULL_LOSS,
    });
    const { sequences, advantages } = randomBatch(5, 5);
    const behaviourLogprobs = trainer.completionLogprobs(sequences).logprobs;
    const counts: number[] = [];
    for (let step = 0; step < 4; step++) {
      trainer.grpoStep({ sequences, advantages, behaviourLogprobs }, { numIterations: 2 });
      trainer.sftStep(sequences, { pack: true });
      trainer.completionLogprobs(sequences);
      counts.push(tf.memory().numTensors);
    }
    expect(new Set(counts.slice(1)).size).toBe(1);
    trainer.dispose();
    trainer.model.dispose();
  });

  it('should train SFT on completion tokens only, packed or not', async () => {
    const sequences: TokenSequence[] = [
      { promptIds: [1, 2, 3], completionIds: [4, 5] },
      { promptIds: [6], completionIds: [7, 8, 9] },
      { promptIds: [10, 11], completionIds: [12] },
    ];
    const plain = await makeTrainer({ schedule: { learningRate: 0 } });
    const packed = await makeTrainer({ schedule: { learningRate: 0 } });
    const { logprobs } = plain.completionLogprobs(sequences);
    const flat = logprobs.flat();
    const want = -flat.reduce((a, b) => a + b, 0) / flat.length;
    expect(plain.sftStep(sequences).loss).toBeCloseTo(want, 5);
    const packedResult = packed.sftStep(sequences, { pack: true, rowLength: 8 });
    expect(packedResult.loss).toBeCloseTo(want, 5);
    expect(packedResult.gradNorm).toBeCloseTo(plain.sftStep(sequences).gradNorm, 4);
    // And it learns: the loss falls on repeated data.
    const learner = await makeTrainer({ schedule: { learningRate: 1e-2 } });
    const first = learner.sftStep(sequences).loss;
    let last = first;
    for (let step = 0; step < 30; step++) last = learner.sftStep(sequences).loss;
    expect(last).toBeLessThan(first * 0.5);
    for (const trainer of [plain, packed, learner]) {
      trainer.dispose();
      trainer.model.dispose();
    }
  });

  it('should throw or count a skip on non-finite losses, and validate input', async () => {
    const checkpoint = tinyCheckpoint('gqa-untied', 12);
    const broken = {
      ...checkpoint,
      tensors: checkpoint.tensors.map((t) =>
        t.name === 'model.norm.weight'
          ? { ...t, data: new Float32Array(t.data.length).fill(Infinity) }
          : t,
      ),
    };
    const sequences: TokenSequence[] = [{ promptIds: [1], completionIds: [2, 3] }];
    const strict = await createPolicyTrainer(
      await createLlamaModel(broken, { checkFinite: false }),
      { onNonFinite: 'error' },
    );
    expect(() => strict.grpoStep({ sequences, advantages: [1] })).toThrow(NonFiniteError);
    const lenient = await createPolicyTrainer(
      await createLlamaModel(broken, { checkFinite: false }),
      {
        onNonFinite: 'skip',
      },
    );
    const { steps } = lenient.grpoStep({ sequences, advantages: [1] });
    expect(steps[0]!.skipped).toBe(true);
    expect(lenient.skippedSteps).toBe(1);
    const ok = await makeTrainer({});
    expect(() => ok.grpoStep({ sequences, advantages: [Number.NaN] })).toThrow(/batch\.advantages/);
    expect(() => ok.grpoStep({ sequences, advantages: [1, 2] })).toThrow(/batch\.advantages/);
    expect(() => ok.grpoStep({ sequences: [], advantages: [] })).toThrow(/sequences/);
    expect(() =>
      ok.grpoStep({
        sequences: [{ promptIds: [1], completionIds: new Array(80).fill(1) }],
        advantages: [1],
      }),
    ).toThrow(/max_position_embeddings/);
    await expect(makeTrainer({ grpo: { epsilonLow: 2 } })).rejects.toThrow(
      /options\.grpo\.epsilonLow/,
    );
    for (const trainer of [strict, lenient, ok]) {
      trainer.dispose();
      trainer.model.dispose();
    }
  });
});
