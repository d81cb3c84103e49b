import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { createRng } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { buildTokenBatch, type TokenSequence } from '../batch/token-batch.js';
import { createLlamaModel } from '../model/llama-model.js';
import { logitsGradient, tokenStats } from '../model/token-stats.js';
import { backpropagate } from '../train/gradient-engine.js';
import { ArrayGradSink, lossPositions, NativeEngine } from './native-engine.js';
import { loadOrtRuntime, SessionCache } from './ort-runtime.js';
import { SlotBuffers } from './param-store.js';

type Case = { name: string; kvHeads: number; headDim?: number; tied?: boolean; extra?: object };
const CASES: Case[] = [
  { name: 'GQA, untied', kvHeads: 2 },
  { name: 'MQA, tied, head_dim 12', kvHeads: 1, headDim: 12, tied: true },
  { name: 'Qwen2 q/k/v biases', kvHeads: 2, extra: { model_type: 'qwen2' } },
  { name: 'Llama attention_bias (q/k/v/o), MHA', kvHeads: 4, extra: { attention_bias: true } },
];

function sequences(vocab: number): TokenSequence[] {
  const rng = createRng(5);
  const ids = (count: number) =>
    Array.from({ length: count }, () => Math.floor(rng.next() * vocab));
  return Array.from({ length: 5 }, (_, i) => ({
    promptIds: ids(1 + (i % 3)),
    completionIds: ids(2 + ((i * 3) % 8)),
  }));
}

function checkpointOf(c: Case) {
  const config = parseLlamaConfig({
    hidden_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: c.kvHeads,
    ...(c.headDim ? { head_dim: c.headDim } : {}),
    intermediate_size: 40,
    vocab_size: 601, // several head chunks at the test's chunk size below
    tie_word_embeddings: c.tied === true,
    max_position_embeddings: 64,
    ...(c.extra ?? {}),
  });
  const checkpoint = createRandomCheckpoint(config, { seed: 3, std: 0.2 });
  // biases random from the start (createRandomCheckpoint zeroes them)
  const rng = createRng(9);
  for (const tensor of checkpoint.tensors) {
    if (tensor.name.endsWith('.bias')) {
      for (let i = 0; i < tensor.data.length; i++) tensor.data[i] = rng.next() - 0.5;
    }
  }
  return checkpoint;
}

const isLinear = (name: string) => name.endsWith('_proj.weight') || name === 'lm_head.weight';

describe('NativeEngine (onnxruntime, weights in native memory)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  for (const c of CASES) {
    for (const keep of ['recompute', 'cache'] as const) {
      it(`${c.name}, ${keep}: logprobs, entropies and SFT gradients = the tfjs path`, async () => {
        const checkpoint = checkpointOf(c);
        const config = parseLlamaConfig(checkpoint.config);
        const seqs = sequences(config.vocab_size);
        const batch = buildTokenBatch(seqs, {
          functionName: 'test',
          vocabSize: config.vocab_size,
          maxLength: config.max_position_embeddings,
        });
        const temperature = 0.7;
        // tfjs (cpu) reference: logprobs and entropies at T, and the SFT gradient at T = 1
        const model = await createLlamaModel(checkpoint);
        const positions = lossPositions(batch);
        const [lpRef, enRef] = tf.tidy(() => {
          const { logits } = model.forwardWithCache(batch.input, false);
          const s = tokenStats(logits, batch.targets, temperature);
          return [s.logprobs.dataSync(), s.entropy.dataSync()];
        });
        const tokens = positions.length;
        const members = new Set(seqs.map((_, i) => i));
        const micro = [{ indices: [...members], batch }];
        const refGrads = backpropagate(model, micro, members, (logits) => {
          const grad = new Float32Array(logits.shape[0]);
          for (const position of positions) grad[position] = -1 / tokens;
          return logitsGradient(tokenStats(logits, batch.targets, 1), grad, null);
        });
        const expected = new Map<string, Float32Array>();
        for (const [name, grad] of refGrads) {
          const t = isLinear(name) ? tf.transpose(grad) : grad;
          expected.set(name, t.dataSync() as Float32Array);
          if (t !== grad) t.dispose();
          grad.dispose();
        }
        model.dispose();

        // native engine
        const ort = await loadOrtRuntime();
        const sessions = new SessionCache(ort, { threads: 1, spinning: false });
        const engine = new NativeEngine(config, sessions, { chunkElements: 2000 });
        const weights = new SlotBuffers(engine.slots);
        weights.load(new Map(checkpoint.tensors.map((t) => [t.name, t.data])));
        const state = engine.forward(batch, weights, keep);
        const stats = engine.stats(state, weights, temperature);
        positions.forEach((position, i) => {
          expect(stats.logprobs[i]).toBeCloseTo(lpRef![position]!, 4);
          expect(stats.entropy[i]).toBeCloseTo(enRef![position]!, 4);
        });
        const stats1 = engine.stats(state, weights, 1);
        const grads = new ArrayGradSink(engine.slots);
        engine.backward(
          state,
          weights,
          { temperature: 1, lossWeights: new Float32Array(tokens).fill(1 / tokens), stats: stats1 },
          grads,
        );
        const got = new Map(grads.grads.toNamedTensors().map((t) => [t.name, t.data]));
        expect([...got.keys()].sort()).toEqual([...expected.keys()].sort());
        for (const [name, want] of expected) {
          const have = got.get(name)!;
          let scale = 0;
          for (const value of want) scale = Math.max(scale, Math.abs(value));
          for (let i = 0; i < want.length; i++) {
            expect(Math.abs(have[i]! - want[i]!), `${name}[${i}]`).toBeLessThan(
              1e-5 + 1e-4 * scale,
            );
          }
        }
        sessions.dispose();
      });
    }
  }
});
