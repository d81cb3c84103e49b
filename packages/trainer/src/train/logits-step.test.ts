import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { createRng, InvalidArgumentError, NonFiniteError, ShapeMismatchError } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import type { TokenSequence } from '../batch/token-batch.js';
import { createLlamaModel } from '../model/llama-model.js';
import { tinyCheckpoint } from '../testing/fixtures.js';
import { microBatches } from './gradient-engine.js';
import { logitsGradients } from './logits-loss.js';
import {
  createPolicyTrainer,
  type LogitsLossFunction,
  type PolicyTrainerOptions,
} from './policy-trainer.js';

const VOCAB = 29; // gqa-untied

function randomSequences(seed: number, count: number): TokenSequence[] {
  const rng = createRng(seed);
  return Array.from({ length: count }, () => ({
    promptIds: Array.from({ length: 1 + Math.floor(rng.next() * 4) }, () =>
      Math.floor(rng.next() * VOCAB),
    ),
    completionIds: Array.from({ length: 1 + Math.floor(rng.next() * 6) }, () =>
      Math.floor(rng.next() * VOCAB),
    ),
  }));
}

function softmax(logits: Float32Array): Float64Array {
  let max = -Infinity;
  for (const value of logits) max = Math.max(max, value);
  const out = new Float64Array(logits.length);
  let sum = 0;
  logits.forEach((value, v) => {
    out[v] = Math.exp(value - max);
    sum += out[v]!;
  });
  return out.map((value) => value / sum);
}

/** Token-mean cross-entropy written as a logits loss: dLogits = (softmax − onehot) / tokens. */
const crossEntropy: LogitsLossFunction = (rows, { totalTokens }) => {
  let loss = 0;
  const dLogits = rows.map((row) => {
    const p = softmax(row.logits);
    loss -= Math.log(p[row.target]!) / totalTokens;
    const d = p.map((value, v) => (value - (v === row.target ? 1 : 0)) / totalTokens);
    return d;
  });
  return { loss, dLogits };
};

/** A fixed random "teacher" distribution per (sequence, token). */
function teacher(seed: number, sequences: TokenSequence[]) {
  const rng = createRng(seed);
  return sequences.map((s) =>
    s.completionIds.map(() => {
      const raw = Float64Array.from({ length: VOCAB }, () => Math.exp(2 * (rng.next() - 0.5)));
      const sum = raw.reduce((a, b) => a + b, 0);
      return raw.map((value) => value / sum);
    }),
  );
}

/** Forward KL(q ‖ p_student), token mean; d/dlogits = (p − q) / tokens. */
function forwardKl(q: Float64Array[][]): LogitsLossFunction {
  return (rows, { totalTokens }) => {
    let loss = 0;
    const dLogits = rows.map((row) => {
      const p = softmax(row.logits);
      const target = q[row.sequence]![row.index]!;
      target.forEach((qv, v) => {
        loss += (qv * (Math.log(qv) - Math.log(p[v]!))) / totalTokens;
      });
      return p.map((pv, v) => (pv - target[v]!) / totalTokens);
    });
    return { loss, dLogits };
  };
}

async function makeTrainer(options: PolicyTrainerOptions, seed = 11) {
  const model = await createLlamaModel(tinyCheckpoint('gqa-untied', seed));
  return createPolicyTrainer(model, options);
}

function paramsOf(trainer: Awaited<ReturnType<typeof makeTrainer>>) {
  return new Map([...trainer.model.params].map(([name, t]) => [name, t.dataSync().slice()]));
}

describe('PolicyTrainer.logitsStep (cpu)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  it('should give the same update as sftStep for dLogits = (softmax − onehot) / tokens', async () => {
    const sequences = randomSequences(1, 6);
    const options = (microBatchSize: number): PolicyTrainerOptions => ({
      schedule: { learningRate: 1e-2 },
      optimizer: { weightDecay: 0.1 },
      maxGradNorm: 0.5,
      microBatchSize,
    });
    const sft = await makeTrainer(options(6));
    const logits = await makeTrainer(options(6));
    const split = await makeTrainer(options(4));
    for (let step = 0; step < 3; step++) {
      const want = sft.sftStep(sequences);
      for (const trainer of [logits, split]) {
        const got = trainer.logitsStep(sequences, crossEntropy);
        expect(got.loss).toBeCloseTo(want.loss, 5);
        expect(got.gradNorm).toBeCloseTo(want.gradNorm, 5);
        expect(got.tokens).toBe(want.tokens);
        expect(got.step).toBe(want.step);
      }
    }
    const reference = paramsOf(sft);
    for (const trainer of [logits, split]) {
      const params = paramsOf(trainer);
      for (const [name, data] of reference) {
        const got = params.get(name)!;
        let error = 0;
        data.forEach((value, index) => {
          error = Math.max(error, Math.abs(value - got[index]!));
        });
        expect(error, name).toBeLessThan(1e-5);
      }
    }
    // Packed rows give the same loss too.
    const packed = await makeTrainer({ schedule: { learningRate: 0 } });
    const plain = await makeTrainer({ schedule: { learningRate: 0 } });
    expect(
      packed.logitsStep(sequences, crossEntropy, { pack: true, rowLength: 12 }).loss,
    ).toBeCloseTo(plain.sftStep(sequences).loss, 5);
    for (const trainer of [sft, logits, split, packed, plain]) {
      trainer.dispose();
      trainer.model.dispose();
    }
  });

  it('should back-propagate dLogits exactly (vs tfjs autodiff of a KL loss)', async () => {
    const trainer = await makeTrainer({ schedule: { learningRate: 0 } });
    const sequences = randomSequences(2, 5);
    const q = teacher(3, sequences);
    const micro = microBatches(trainer.model, Number.MAX_SAFE_INTEGER, sequences, 'test');
    const accumulated = logitsGradients(trainer.model, micro, sequences, forwardKl(q), 'test');
    const model = trainer.model;
    const names = model.parameterNames;
    const variables = names.map((name) => tf.variable(model.param(name), true));
    const original = model.params;
    model.params = new Map(names.map((name, i) => [name, variables[i]! as tf.Tensor]));
    const batch = micro[0]!.batch;
    const size = batch.input.batchSize * batch.input.seqLen;
    const tokens = sequences.reduce((sum, s) => sum + s.completionIds.length, 0);
    const weights = new Float32Array(size * VOCAB);
    let constant = 0;
    batch.slots.forEach((row, r) => {
      row.forEach((slot, j) => {
        q[r]![j]!.forEach((qv, v) => {
          weights[slot * VOCAB + v] = qv / tokens;
          constant += (qv * Math.log(qv)) / tokens;
        });
      });
    });
    const { value, grads } = tf.variableGrads(() => {
      const { logits } = model.forwardWithCache(batch.input, false);
      const logSoftmax = tf.logSoftmax(logits);
      return tf.neg(tf.sum(tf.mul(logSoftmax, tf.tensor2d(weights, [size, VOCAB])))) as tf.Scalar;
    }, variables);
    model.params = original;
    expect(accumulated.loss).toBeCloseTo(value.dataSync()[0]! + constant, 5);
    expect(accumulated.tokens).toBe(tokens);
    names.forEach((name, i) => {
      const want = grads[variables[i]!.name]!.dataSync();
      const got = accumulated.grads.get(name)!.dataSync();
      let scale = 0;
      let error = 0;
      want.forEach((w, index) => {
        scale = Math.max(scale, Math.abs(w));
        error = Math.max(error, Math.abs(w - got[index]!));
      });
      expect(scale, name).toBeGreaterThan(0);
      expect(error, name).toBeLessThan(1e-5 * Math.max(1, scale) + 1e-7);
    });
    tf.dispose([...accumulated.grads.values(), ...variables, ...Object.values(grads), value]);
    trainer.dispose();
    model.dispose();
  });

  it('should match central finite differences along a random direction', async () => {
    const sequences = randomSequences(4, 4);
    const q = teacher(5, sequences);
    const trainer = await makeTrainer({});
    const model = trainer.model;
    const rng = createRng(6);
    const base = new Map([...model.params].map(([name, t]) => [name, tf.clone(t)]));
    const direction = new Map(
      [...base].map(([name, t]) => [
        name,
        Float32Array.from({ length: t.size }, () => (rng.next() < 0.5 ? -1 : 1)),
      ]),
    );
    const lossAt = (h: number) => {
      model.replaceParams(
        new Map(
          [...base].map(([name, t]) => [
            name,
            tf.add(t, tf.mul(tf.tensor(direction.get(name)!, t.shape), h)),
          ]),
        ),
      );
      const micro = microBatches(trainer.model, Number.MAX_SAFE_INTEGER, sequences, 'test');
      const out = logitsGradients(trainer.model, micro, sequences, forwardKl(q), 'test');
      let directional = 0;
      for (const [name, grad] of out.grads) {
        const d = direction.get(name)!;
        const data = grad.dataSync();
        for (let i = 0; i < data.length; i++) directional += data[i]! * d[i]!;
      }
      tf.dispose([...out.grads.values()]);
      return { loss: out.loss, directional };
    };
    const h = 2e-3;
    const [center, plus, minus] = [lossAt(0), lossAt(h), lossAt(-h)];
    const numeric = (plus.loss - minus.loss) / (2 * h);
    expect(Math.abs(center.directional)).toBeGreaterThan(1e-2);
    expect(Math.abs(numeric - center.directional)).toBeLessThan(
      2e-2 * Math.abs(center.directional),
    );
    tf.dispose([...base.values()]);
    trainer.dispose();
    model.dispose();
  });

  it('should validate lossOf and its output, and skip non-finite updates when asked', async () => {
    const sequences = randomSequences(7, 3);
    const trainer = await makeTrainer({
      schedule: { learningRate: 1e-3 },
      microBatchSize: 2,
      onNonFinite: 'error',
    });
    const before = tf.memory().numTensors;
    expect(() => trainer.logitsStep(sequences, 1 as unknown as LogitsLossFunction)).toThrow(
      InvalidArgumentError,
    );
    expect(() =>
      trainer.logitsStep(sequences, (rows) => ({ loss: 0, dLogits: rows.slice(1).map(() => []) })),
    ).toThrow(ShapeMismatchError);
    expect(() =>
      trainer.logitsStep(sequences, (rows) => ({
        loss: 0,
        dLogits: rows.map(() => new Float32Array(VOCAB - 1)),
      })),
    ).toThrow(/vocab_size/);
    const nan: LogitsLossFunction = (rows) => ({
      loss: 0,
      dLogits: rows.map(() => new Float32Array(VOCAB).fill(Number.NaN)),
    });
    expect(() => trainer.logitsStep(sequences, nan)).toThrow(NonFiniteError);
    expect(() =>
      trainer.logitsStep(sequences, (rows) => ({
        loss: Number.POSITIVE_INFINITY,
        dLogits: rows.map(() => new Float32Array(VOCAB)),
      })),
    ).toThrow(NonFiniteError);
    expect(() => trainer.logitsStep([{ promptIds: [1], completionIds: [] }], crossEntropy)).toThrow(
      /at least one completion token/,
    );
    expect(trainer.step).toBe(0);
    // No tensors leak on the error paths or across steps.
    trainer.logitsStep(sequences, crossEntropy);
    const after = tf.memory().numTensors;
    trainer.logitsStep(sequences, crossEntropy);
    expect(tf.memory().numTensors).toBe(after);
    expect(after).toBeGreaterThanOrEqual(before);
    const lenient = await makeTrainer({ onNonFinite: 'skip' });
    const result = lenient.logitsStep(sequences, nan);
    expect(result.skipped).toBe(true);
    expect(lenient.skippedSteps).toBe(1);
    expect(lenient.step).toBe(0);
    for (const t of [trainer, lenient]) {
      t.dispose();
      t.model.dispose();
    }
  });
});
