import { createRng } from '@rlvr/core';
import { type Checkpoint, createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import type { TokenSequence } from '../batch/token-batch.js';
import { createLlamaModel } from '../model/llama-model.js';
import {
  expectSameGrpoSteps,
  expectSameTrainedWeights,
  weightsOf,
  worstDifference,
} from '../testing/engine-compare.js';
import {
  createPolicyTrainer,
  type LogitsLossFunction,
  type PolicyTrainerOptions,
} from '../train/policy-trainer.js';

type Case = {
  name: string;
  kvHeads: number;
  headDim?: number;
  tied?: boolean;
  pack?: boolean;
  weightDecay?: number;
  /** Several micro-batches: gradients accumulated over forward + backward runs. */
  microBatchSize?: number;
  /** Projection biases, random from the start: Qwen2's q/k/v, or Llama's `attention_bias` (and o). */
  biases?: 'qwen2' | 'llama';
};

/** The config fields of a case's biases. */
function biasFields(biases: 'qwen2' | 'llama' | undefined): Record<string, unknown> {
  if (biases === 'qwen2') return { model_type: 'qwen2' };
  return biases === 'llama' ? { attention_bias: true } : {};
}

const CASES: Case[] = [
  { name: 'GQA, padded rows of different lengths', kvHeads: 2 },
  { name: 'MHA, packed rows, weight decay', kvHeads: 4, pack: true, weightDecay: 0.1 },
  { name: 'MQA, tied embeddings, head_dim 12', kvHeads: 1, headDim: 12, tied: true },
  { name: 'GQA, 3 micro-batches (accumulated gradients)', kvHeads: 2, microBatchSize: 2 },
  { name: 'Qwen2 q/k/v biases, GQA', kvHeads: 2, biases: 'qwen2' },
  {
    name: 'Llama attention_bias (q/k/v/o), 3 micro-batches',
    kvHeads: 4,
    biases: 'llama',
    microBatchSize: 2,
  },
];

/** Sequences of 1–3 prompt tokens and 2–9 completion tokens (the loss is on the completions). */
function sequences(vocab: number): TokenSequence[] {
  const rng = createRng(5);
  const ids = (count: number) =>
    Array.from({ length: count }, () => Math.floor(rng.next() * vocab));
  return Array.from({ length: 5 }, (_, i) => ({
    promptIds: ids(1 + (i % 3)),
    completionIds: ids(2 + ((i * 3) % 8)),
  }));
}

// lr 1e-2 and a clipping norm the gradients exceed: the updates matter for steps 2 and 3
const LEARNING_RATE = 1e-2;
const MAX_GRAD_NORM = 0.5;

/**
 * A trainer on the native engine (`native`) or on the tfjs path (the reference: wasm with its own
 * matMul, no onnxruntime natives), with activation checkpointing per `activations`.
 */
async function trainer(
  checkpoint: Checkpoint,
  native: boolean,
  weightDecay: number,
  options: PolicyTrainerOptions = {},
) {
  const model = await createLlamaModel(checkpoint, { engine: native ? 'native' : 'tfjs' });
  expect(model.engine).toBe(native ? 'native' : 'tfjs');
  // the reference model (β > 0) is created here too: on the same engine as the policy
  const policy = await createPolicyTrainer(model, {
    schedule: { learningRate: LEARNING_RATE },
    maxGradNorm: MAX_GRAD_NORM,
    optimizer: { weightDecay },
    ...options,
  });
  if (options.grpo?.beta) expect(policy.reference?.engine).toBe(model.engine);
  return { model, policy };
}

beforeAll(async () => {
  await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
});

describe('sftStep on the native engine', () => {
  for (const c of CASES) {
    it(`matches the tfjs sftStep's loss, gradient norm and weights over 3 steps (${c.name})`, async () => {
      const spec = {
        hidden_size: 32,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: c.kvHeads,
        intermediate_size: 40,
        vocab_size: 19,
        ...(c.headDim === undefined ? {} : { head_dim: c.headDim }),
        tie_word_embeddings: c.tied ?? false,
        ...biasFields(c.biases),
      };
      const config = parseLlamaConfig({ ...spec, max_position_embeddings: 64 });
      const checkpoint = createRandomCheckpoint(config, {
        seed: 3,
        std: 0.2,
        ...(c.biases ? { perturbStd: 0.2 } : {}),
      });
      if (c.biases) {
        const biased = checkpoint.tensors.filter((tensor) => tensor.name.endsWith('.bias'));
        expect(biased.length).toBe(spec.num_hidden_layers * (c.biases === 'llama' ? 4 : 3));
      }
      const batch = sequences(spec.vocab_size);
      const weightDecay = c.weightDecay ?? 0;
      // the reference: the tfjs model and optimizer; then sftStep on the native engine
      const micro = c.microBatchSize === undefined ? {} : { microBatchSize: c.microBatchSize };
      const reference = await trainer(checkpoint, false, weightDecay, micro);
      const native = await trainer(checkpoint, true, weightDecay, micro);
      const pack = c.pack === true ? { pack: true } : {};
      try {
        for (let step = 0; step < 3; step++) {
          const want = reference.policy.sftStep(batch, pack);
          expect(want.gradNorm).toBeGreaterThan(MAX_GRAD_NORM);
          const got = [native.policy.sftStep(batch, pack)];
          // the first step is forward and backward alone: float32 rounding; later steps start
          // from updated weights, and Adam's normalization amplifies rounding in entries whose
          // gradient is near zero (seen: 1.7e-5 in the loss, 1.4e-4 in a weight, lr 1e-2)
          const bound = step === 0 ? 1e-5 : 1e-3;
          for (const result of got) {
            expect(Math.abs(result.loss - want.loss)).toBeLessThan(bound);
            expect(Math.abs(result.gradNorm - want.gradNorm) / want.gradNorm).toBeLessThan(bound);
          }
        }
        expect(native.policy.getState().optimizer.step).toBe(3);
        // reproducible: a second native run from the same start gives the same bits
        const again = await trainer(checkpoint, true, weightDecay, micro);
        for (let step = 0; step < 3; step++) again.policy.sftStep(batch, pack);
        expect(
          worstDifference(
            weightsOf(again.model.toCheckpoint()),
            weightsOf(native.model.toCheckpoint()),
          ),
        ).toBe(0);
        again.policy.dispose();
        again.model.dispose();
        const trained = weightsOf(reference.model.toCheckpoint());
        expect(worstDifference(weightsOf(native.model.toCheckpoint()), trained)).toBeLessThan(1e-3);
        // the three updates moved the weights (~3 · lr), so the agreement is not the start's
        expect(worstDifference(trained, weightsOf(checkpoint))).toBeGreaterThan(1e-2);
      } finally {
        for (const { model, policy } of [reference, native]) {
          policy.dispose();
          model.dispose();
        }
      }
    });
  }

  it('is reproducible bit for bit on a batch large enough for onnxruntime to split its work', async () => {
    const config = parseLlamaConfig({
      hidden_size: 64,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      intermediate_size: 128,
      vocab_size: 25,
      max_position_embeddings: 64,
    });
    const checkpoint = createRandomCheckpoint(config, { seed: 4, std: 0.1 });
    const rng = createRng(9);
    const ids = (count: number) => Array.from({ length: count }, () => Math.floor(rng.next() * 25));
    // 32 × 48 tokens of a 25-token vocabulary: every id repeats ~60 times in the embedding grad
    const batch = Array.from({ length: 32 }, () => ({ promptIds: ids(8), completionIds: ids(40) }));
    const run = async () => {
      const { model, policy } = await trainer(checkpoint, true, 0);
      for (let step = 0; step < 3; step++) policy.sftStep(batch);
      const weights = weightsOf(model.toCheckpoint());
      policy.dispose();
      model.dispose();
      return weights;
    };
    expect(worstDifference(await run(), await run())).toBe(0);
  });
});

type GrpoCase = {
  name: string;
  options: PolicyTrainerOptions;
  step?: { numIterations?: number; miniBatchSize?: number };
  tied?: boolean;
  /** Sampler logprobs for the mismatch correction: the start's, perturbed. */
  behaviour?: boolean;
  biases?: 'qwen2' | 'llama';
};

const GRPO_CASES: GrpoCase[] = [
  {
    name: 'T 0.7, KL to the reference, entropy bonus, 2 iterations (π_old), 3 micro-batches',
    options: {
      microBatchSize: 2,
      grpo: {
        temperature: 0.7,
        beta: 0.05,
        entropyCoefficient: 0.01,
        lossAggregation: 'token-mean',
      },
    },
    step: { numIterations: 2 },
  },
  {
    name: 'one micro-batch: T 0.7, KL, entropy bonus, 2 iterations',
    options: { grpo: { temperature: 0.7, beta: 0.05, entropyCoefficient: 0.01 } },
    step: { numIterations: 2 },
  },
  {
    name: 'dual clip, δ cap, k2 KL, Dr. GRPO aggregation, importance weights (token-truncate)',
    options: {
      microBatchSize: 3,
      grpo: {
        dualClip: 3,
        delta: 1.4,
        beta: 0.1,
        klEstimator: 'k2',
        lossAggregation: 'seq-mean-token-sum-norm',
        normalizer: 10,
        mismatch: { mode: 'token-truncate', cap: 2 },
      },
    },
    step: { numIterations: 2 },
    behaviour: true,
  },
  {
    name: 'GSPO sequence ratios',
    options: {
      grpo: { ratioLevel: 'sequence', beta: 0.02, epsilonLow: 0.003, epsilonHigh: 0.004 },
    },
    step: { numIterations: 2 },
  },
  {
    name: 'seq-mean-token-mean, 2 mini-batches, tied embeddings, no reference',
    options: { grpo: { lossAggregation: 'seq-mean-token-mean', epsilonHigh: 0.28 } },
    step: { miniBatchSize: 3 },
    tied: true,
  },
  {
    name: 'Qwen2 q/k/v biases: one micro-batch with KL to the reference',
    options: { grpo: { temperature: 0.7, beta: 0.05 } },
    step: { numIterations: 2 },
    biases: 'qwen2',
  },
];

/** The small GQA config of the GRPO and logitsStep cases, with `extra` fields. */
function smallConfig(extra: Record<string, unknown>) {
  return parseLlamaConfig({
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 40,
    vocab_size: 19,
    max_position_embeddings: 64,
    ...extra,
  });
}

/** Frees the trainers and models of a case. */
function release(...pairs: { model: { dispose(): void }; policy: { dispose(): void } }[]) {
  for (const { model, policy } of pairs) {
    policy.dispose();
    model.dispose();
  }
}

describe('grpoStep on the native engine', () => {
  for (const c of GRPO_CASES) {
    it(`matches the tfjs grpoStep's metrics and weights (${c.name})`, async () => {
      const config = smallConfig({
        tie_word_embeddings: c.tied ?? false,
        ...biasFields(c.biases),
      });
      const checkpoint = createRandomCheckpoint(config, {
        seed: 6,
        std: 0.2,
        ...(c.biases ? { perturbStd: 0.2 } : {}),
      });
      const batch = {
        sequences: sequences(config.vocab_size),
        advantages: [1.2, -0.8, 0.3, -1.1, 0.4],
      };
      const reference = await trainer(checkpoint, false, 0, c.options);
      const native = await trainer(checkpoint, true, 0, c.options);
      if (c.behaviour) {
        const start = reference.policy.completionLogprobs(batch.sequences).logprobs;
        const rng = createRng(8);
        Object.assign(batch, {
          behaviourLogprobs: start.map((row) => row.map((lp) => lp + 0.6 * (rng.next() - 0.5))),
        });
      }
      try {
        const logprobs = [reference, native].map(
          ({ policy }) => policy.completionLogprobs(batch.sequences).logprobs,
        );
        expect(logprobs[1]!.flat().length).toBe(logprobs[0]!.flat().length);
        logprobs[1]!.flat().forEach((value, index) => {
          expect(Math.abs(value - logprobs[0]!.flat()[index]!)).toBeLessThan(1e-5);
        });
        const { clipped } = expectSameGrpoSteps(reference, native, batch, c.step);
        // later updates are off-policy enough to clip (the ratio term is exercised, not only ratio 1)
        expect(clipped).toBeGreaterThan(0);
        expectSameTrainedWeights(reference, native, checkpoint);
      } finally {
        release(reference, native);
      }
    });
  }
});

describe('logitsStep on the native engine', () => {
  it("matches the tfjs logitsStep's loss, gradient norm and weights (forward KL to a teacher, Qwen2 biases, 2 micro-batches)", async () => {
    const config = smallConfig({ model_type: 'qwen2' });
    const checkpoint = createRandomCheckpoint(config, { seed: 9, std: 0.2, perturbStd: 0.2 });
    const batch = sequences(config.vocab_size);
    // a fixed teacher distribution per (sequence, token): token mean of KL(q ‖ softmax(logits))
    const teacher = (sequence: number, index: number) => {
      const rng = createRng(100 * sequence + index);
      const raw = Array.from({ length: config.vocab_size }, () => Math.exp(2 * rng.next()));
      const total = raw.reduce((a, b) => a + b, 0);
      return raw.map((value) => value / total);
    };
    const lossOf: LogitsLossFunction = (rows, { totalTokens }) => {
      let loss = 0;
      const dLogits = rows.map((row) => {
        const max = Math.max(...row.logits);
        const exps = Array.from(row.logits, (value) => Math.exp(value - max));
        const sum = exps.reduce((a, b) => a + b, 0);
        const q = teacher(row.sequence, row.index);
        return exps.map((e, v) => {
          const p = e / sum;
          loss += (q[v]! * (Math.log(q[v]!) - Math.log(p))) / totalTokens;
          return (p - q[v]!) / totalTokens;
        });
      });
      return { loss, dLogits };
    };
    const options = { microBatchSize: 3 };
    const reference = await trainer(checkpoint, false, 0.1, options);
    const native = await trainer(checkpoint, true, 0.1, options);
    try {
      for (let step = 0; step < 3; step++) {
        const want = reference.policy.logitsStep(batch, lossOf);
        const got = native.policy.logitsStep(batch, lossOf);
        expect(got.skipped).toBe(false);
        const bound = step === 0 ? 1e-5 : 1e-3;
        expect(Math.abs(got.loss - want.loss)).toBeLessThan(bound);
        expect(Math.abs(got.gradNorm - want.gradNorm) / want.gradNorm).toBeLessThan(bound);
        expect(want.gradNorm).toBeGreaterThan(MAX_GRAD_NORM);
      }
      const trained = weightsOf(reference.model.toCheckpoint());
      expect(worstDifference(weightsOf(native.model.toCheckpoint()), trained)).toBeLessThan(1e-3);
      expect(worstDifference(trained, weightsOf(checkpoint))).toBeGreaterThan(1e-2);
    } finally {
      release(reference, native);
    }
  });
});
