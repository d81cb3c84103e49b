import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createRandomCheckpoint,
  loadCheckpoint,
  parseLlamaConfig,
  referenceForward,
  saveCheckpoint,
} from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { prepareInput } from '../batch/prepared-input.js';
import { TINY_CONFIGS, tinyCheckpoint } from '../testing/fixtures.js';
import { createLlamaModel } from './llama-model.js';

const inputIds = [
  [1, 5, 7, 3, 2, 9, 4, 11, 13, 2],
  [0, 2, 4, 6, 8, 10, 12, 14, 16, 18],
  [3, 3, 3, 3, 3, 3, 3, 3, 3, 3],
];

function maxAbsDiff(got: Float32Array[][], want: Float64Array, vocab: number) {
  let max = 0;
  got.forEach((row, b) => {
    row.forEach((logits, t) => {
      logits.forEach((value, index) => {
        max = Math.max(max, Math.abs(value - want[(b * row.length + t) * vocab + index]!));
      });
    });
  });
  return max;
}

// Both matrix-product engines of the wasm backend: onnxruntime-node's MLAS (the default where it is
// installed) and tfjs-backend-wasm's XNNPACK.
const ENGINES = ['onnxruntime', 'backend'] as const;
const CASES = ENGINES.flatMap((matMul) =>
  Object.keys(TINY_CONFIGS).map((name) => [name, matMul] as const),
);

describe('LlamaModel (wasm)', () => {
  it.each(CASES)(
    'should match the float64 reference within 1e-4 on wasm (%s, matMul %s)',
    async (name, matMul) => {
      const selected = await selectBackend({ candidates: ['wasm'], matMul });
      expect(selected.name).toBe('wasm');
      expect(selected.matMul).toBe(matMul);
      const checkpoint = tinyCheckpoint(name, 21);
      const model = await createLlamaModel(checkpoint);
      const want = referenceForward(checkpoint, { inputIds });
      expect(
        maxAbsDiff(model.logits({ inputIds }), want.logits.data, checkpoint.config.vocab_size),
      ).toBeLessThan(1e-4);
      model.dispose();
    },
  );

  it.each(CASES)(
    'should compute the same gradients as on cpu (%s, wasm matMul %s)',
    async (name, matMul) => {
      const checkpoint = tinyCheckpoint(name, 22);
      const gradients = async (backend: 'cpu' | 'wasm') => {
        await selectBackend({ candidates: [backend], matMul });
        // the tfjs model's own backward (with onnxruntime matMul: its kernels), not the native engine
        const model = await createLlamaModel(checkpoint, { engine: 'tfjs' });
        const input = prepareInput(
          {
            inputIds,
            segmentIds: [
              [1, 1, 1, 1, 2, 2, 2, 2, 0, 0],
              [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
              [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
            ],
          },
          checkpoint.config.vocab_size,
          'test',
        );
        const weights = tf.randomNormal([30, checkpoint.config.vocab_size], 0, 1, 'float32', 3);
        const grads = tf.tidy(() => {
          const { cache } = model.forwardWithCache(input, true);
          return Object.fromEntries(model.backward(input, cache, weights as tf.Tensor2D));
        });
        const out = new Map(Object.entries(grads).map(([key, t]) => [key, t.dataSync().slice()]));
        tf.dispose([weights, ...Object.values(grads)]);
        model.dispose();
        return out;
      };
      const cpu = await gradients('cpu');
      const wasm = await gradients('wasm');
      for (const [key, want] of cpu) {
        const got = wasm.get(key)!;
        let scale = 0;
        let error = 0;
        want.forEach((value, index) => {
          scale = Math.max(scale, Math.abs(value));
          error = Math.max(error, Math.abs(value - got[index]!));
        });
        expect(error, key).toBeLessThan(1e-4 * Math.max(1, scale));
      }
    },
  );

  it('should give the same logits after save → load', async () => {
    await selectBackend({ candidates: ['wasm'] });
    const config = parseLlamaConfig({ ...TINY_CONFIGS['gqa-untied'] });
    const checkpoint = createRandomCheckpoint(config, { seed: 5, perturbStd: 0.1 });
    const model = await createLlamaModel(checkpoint);
    const directory = await mkdtemp(join(tmpdir(), 'rlvr-trainer-'));
    try {
      await saveCheckpoint(directory, model.toCheckpoint());
      const reloaded = await createLlamaModel(await loadCheckpoint(directory));
      expect(reloaded.logits({ inputIds })).toEqual(model.logits({ inputIds }));
      reloaded.dispose();
    } finally {
      await rm(directory, { recursive: true, force: true });
      model.dispose();
    }
  });
});
