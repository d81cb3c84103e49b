import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { RlvrError } from '@rlvr/core';
import { referenceForward } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { prepareInput } from '../batch/prepared-input.js';
import { TINY_CONFIGS, tinyCheckpoint } from '../testing/fixtures.js';
import { createLlamaModel } from './llama-model.js';

const NAMES = Object.keys(TINY_CONFIGS);

function maxAbsDiff(got: Float32Array[][], want: Float64Array, vocab: number, mask?: number[][]) {
  let max = 0;
  got.forEach((row, b) => {
    row.forEach((logits, t) => {
      if (mask && mask[b]![t] === 0) return;
      const base = (b * row.length + t) * vocab;
      logits.forEach((value, index) => {
        max = Math.max(max, Math.abs(value - want[base + index]!));
      });
    });
  });
  return max;
}

describe('LlamaModel (cpu)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  it.each(NAMES)('should match the float64 reference forward within 1e-4 (%s)', async (name) => {
    const checkpoint = tinyCheckpoint(name, 3);
    const model = await createLlamaModel(checkpoint);
    const inputIds = [
      [1, 5, 7, 3, 2, 9, 4, 11],
      [0, 2, 4, 6, 8, 10, 12, 14],
    ];
    const got = model.logits({ inputIds });
    const want = referenceForward(checkpoint, { inputIds });
    expect(maxAbsDiff(got, want.logits.data, checkpoint.config.vocab_size)).toBeLessThan(1e-4);
    model.dispose();
  });

  it('should match the reference with left padding and explicit positions', async () => {
    const checkpoint = tinyCheckpoint('gqa-untied', 4);
    const model = await createLlamaModel(checkpoint);
    const inputIds = [
      [0, 0, 3, 4, 5, 6],
      [7, 8, 9, 10, 11, 12],
    ];
    const attentionMask = [
      [0, 0, 1, 1, 1, 1],
      [1, 1, 1, 1, 1, 1],
    ];
    const positionIds = [
      [0, 0, 0, 1, 2, 3],
      [0, 1, 2, 3, 4, 5],
    ];
    const got = model.logits({ inputIds, attentionMask, positionIds });
    const want = referenceForward(checkpoint, { inputIds, attentionMask, positionIds });
    expect(
      maxAbsDiff(got, want.logits.data, checkpoint.config.vocab_size, attentionMask),
    ).toBeLessThan(1e-4);
    model.dispose();
  });

  it('should give each packed segment the logits it has alone', async () => {
    const checkpoint = tinyCheckpoint('mha-tied-qwen2-bias', 5);
    const model = await createLlamaModel(checkpoint);
    const packed = model.logits({
      inputIds: [[3, 4, 5, 6, 7, 8, 0]],
      segmentIds: [[1, 1, 1, 2, 2, 2, 0]],
    });
    const first = model.logits({ inputIds: [[3, 4, 5]] });
    const second = model.logits({ inputIds: [[6, 7, 8]] });
    for (let t = 0; t < 3; t++) {
      for (let v = 0; v < checkpoint.config.vocab_size; v++) {
        expect(packed[0]![t]![v]).toBeCloseTo(first[0]![t]![v]!, 5);
        expect(packed[0]![t + 3]![v]).toBeCloseTo(second[0]![t]![v]!, 5);
      }
    }
    model.dispose();
  });

  it.each(NAMES)('should compute the same gradients as tfjs autodiff (%s)', async (name) => {
    const checkpoint = tinyCheckpoint(name, 6);
    const model = await createLlamaModel(checkpoint);
    const input = prepareInput(
      {
        inputIds: [
          [1, 2, 3, 4, 5, 6],
          [6, 5, 4, 3, 2, 1],
        ],
        segmentIds: [
          [1, 1, 1, 2, 2, 0],
          [1, 1, 1, 1, 1, 1],
        ],
      },
      checkpoint.config.vocab_size,
      'test',
    );
    const names = model.parameterNames;
    const original = new Map(model.params);
    const weights = tf.randomNormal([12, checkpoint.config.vocab_size], 0, 1, 'float32', 7);
    const variables = names.map((n) => tf.variable(original.get(n)!, true));
    const swapped = new Map(names.map((n, i) => [n, variables[i]! as tf.Tensor]));
    model.params = swapped;
    const result = tf.variableGrads(
      () => tf.sum(tf.mul(model.forwardWithCache(input, false).logits, weights)) as tf.Scalar,
      variables,
    );
    model.params = original;
    const manual = tf.tidy(() => {
      const { logits, cache } = model.forwardWithCache(input, true);
      void logits;
      return Object.fromEntries(model.backward(input, cache, weights as tf.Tensor2D));
    });
    names.forEach((n, i) => {
      const want = result.grads[variables[i]!.name]!.dataSync();
      const got = manual[n]!.dataSync();
      let scale = 0;
      let error = 0;
      want.forEach((value, index) => {
        scale = Math.max(scale, Math.abs(value));
        error = Math.max(error, Math.abs(value - got[index]!));
      });
      expect(error, n).toBeLessThan(1e-4 * Math.max(1, scale));
    });
    model.dispose();
  });

  it('should export what it loaded', async () => {
    const checkpoint = tinyCheckpoint('mqa-llama-bias-headdim', 8);
    const model = await createLlamaModel(checkpoint);
    const exported = model.toCheckpoint();
    const byName = new Map(exported.tensors.map((tensor) => [tensor.name, tensor]));
    for (const tensor of checkpoint.tensors) {
      expect(byName.get(tensor.name)!.shape).toEqual(tensor.shape);
      expect(Array.from(byName.get(tensor.name)!.data)).toEqual(Array.from(tensor.data));
    }
    expect(model.toWeightSnapshot(3).step).toBe(3);
    model.dispose();
  });

  it('should reject malformed checkpoints and inputs with typed errors', async () => {
    const checkpoint = tinyCheckpoint('gqa-untied', 9);
    const missing = { ...checkpoint, tensors: checkpoint.tensors.slice(1) };
    await expect(createLlamaModel(missing)).rejects.toThrow(/model\.embed_tokens\.weight/);
    const model = await createLlamaModel(checkpoint);
    expect(() => model.logits({ inputIds: [[1, 99]] })).toThrow(/input\.inputIds\[0\]\[1\]/);
    expect(() => model.logits({ inputIds: [[1, 2], [3]] })).toThrow(RlvrError);
    model.dispose();
    expect(() => model.logits({ inputIds: [[1]] })).toThrow(/disposed/);
  });
});
