import { createRng } from '@rlvr/core';
import {
  type Checkpoint,
  createRandomCheckpoint,
  modelArchitecture,
  parseModelConfig,
  referenceForward,
} from '@rlvr/model';
import { TINY_FAMILY_CONFIGS } from '@rlvr/model/test';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { buildTokenBatch, type TokenSequence } from '../batch/token-batch.js';
import { createLlamaModel } from '../model/llama-model.js';
import { createPolicyTrainer } from '../train/policy-trainer.js';
import { ArrayGradSink, lossPositions, NativeEngine } from './native-engine.js';
import { loadOrtRuntime, SessionCache } from './ort-runtime.js';
import { SlotBuffers } from './param-store.js';

type Family = keyof typeof TINY_FAMILY_CONFIGS;
const FAMILIES = Object.keys(TINY_FAMILY_CONFIGS) as Family[];

function checkpointOf(family: Family): Checkpoint {
  const config = parseModelConfig({
    ...TINY_FAMILY_CONFIGS[family],
    vocab_size: 37,
    max_position_embeddings: 64,
  });
  const checkpoint = createRandomCheckpoint(config, { seed: 3, std: 0.2 });
  // norm weights away from their init (Gemma's 1 + w starts at w = 0): every rule matters
  const rng = createRng(9);
  for (const tensor of checkpoint.tensors) {
    if (tensor.name.endsWith('norm.weight')) {
      for (let i = 0; i < tensor.data.length; i++) tensor.data[i]! += (rng.next() - 0.5) * 0.6;
    }
  }
  return checkpoint;
}

/** Sequences longer than Gemma's tiny sliding window (3) and SmolLM3's RoPE period. */
function sequences(vocab: number): TokenSequence[] {
  const rng = createRng(5);
  const ids = (count: number) =>
    Array.from({ length: count }, () => Math.floor(rng.next() * vocab));
  return Array.from({ length: 3 }, (_, i) => ({
    promptIds: ids(2 + i),
    completionIds: ids(5 + i),
  }));
}

/** The token-mean cross-entropy of the completions under the float64 reference forward. */
function referenceLoss(checkpoint: Checkpoint, seqs: TokenSequence[]): number {
  let loss = 0;
  let tokens = 0;
  const vocab = checkpoint.config.vocab_size;
  for (const sequence of seqs) {
    const ids = [...sequence.promptIds, ...sequence.completionIds];
    const { logits } = referenceForward(checkpoint, { inputIds: [ids.slice(0, -1)] });
    sequence.completionIds.forEach((target, j) => {
      const row = sequence.promptIds.length - 1 + j;
      const values = logits.data.subarray(row * vocab, (row + 1) * vocab);
      let max = -Infinity;
      for (const value of values) max = Math.max(max, value);
      let sum = 0;
      for (const value of values) sum += Math.exp(value - max);
      loss -= values[target]! - max - Math.log(sum);
      tokens += 1;
    });
  }
  return loss / tokens;
}

/** The tensors whose gradient each family's own rule shapes (checked by central differences). */
function probedTensors(family: Family, checkpoint: Checkpoint): string[] {
  const arch = modelArchitecture(parseModelConfig(checkpoint.config));
  const layer = (index: number) => arch.layers[index]!;
  const names: string[] = [arch.embedding, layer(0).attentionNorm, `${layer(1).gate}.weight`];
  if (layer(0).qNorm) names.push(layer(0).qNorm!, layer(1).kNorm!);
  if (layer(0).attentionOutputNorm)
    names.push(layer(0).attentionOutputNorm!, layer(1).mlpOutputNorm!);
  if (family === 'gemma3') names.push(`${layer(0).k}.weight`, `${layer(1).k}.weight`); // sliding, global
  if (family === 'smollm3') names.push(`${layer(3).q}.weight`); // a NoPE layer
  if (family === 'llama3') names.push(`${layer(1).q}.weight`);
  return names;
}

describe('the model families on the native engine (modelArchitecture)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
  });

  for (const family of FAMILIES) {
    it(`${family}: logprobs = the float64 reference; gradients = central differences of its loss`, async () => {
      const checkpoint = checkpointOf(family);
      const config = parseModelConfig(checkpoint.config);
      const seqs = sequences(config.vocab_size);
      const batch = buildTokenBatch(seqs, {
        functionName: 'test',
        vocabSize: config.vocab_size,
        maxLength: 64,
      });
      const ort = await loadOrtRuntime();
      const sessions = new SessionCache(ort, { threads: 1, spinning: false });
      const engine = new NativeEngine(config, sessions, { chunkElements: 2000 });
      const weights = new SlotBuffers(engine.slots);
      weights.load(new Map(checkpoint.tensors.map((t) => [t.name, t.data])));
      for (const keep of ['cache', 'recompute'] as const) {
        const state = engine.forward(batch, weights, keep);
        const stats = engine.stats(state, weights, 1);
        const loss = -stats.logprobs.reduce((a, b) => a + b, 0) / stats.logprobs.length;
        expect(Math.abs(loss - referenceLoss(checkpoint, seqs)), `${keep} loss`).toBeLessThan(1e-5);
        // per token too
        let index = 0;
        for (const sequence of seqs) {
          const ids = [...sequence.promptIds, ...sequence.completionIds];
          const { logits } = referenceForward(checkpoint, { inputIds: [ids.slice(0, -1)] });
          const vocab = config.vocab_size;
          sequence.completionIds.forEach((target, j) => {
            const row = logits.data
              .subarray((sequence.promptIds.length - 1 + j) * vocab)
              .subarray(0, vocab);
            let max = -Infinity;
            for (const value of row) max = Math.max(max, value);
            let sum = 0;
            for (const value of row) sum += Math.exp(value - max);
            const want = row[target]! - max - Math.log(sum);
            expect(Math.abs(stats.logprobs[index]! - want)).toBeLessThan(1e-4);
            index += 1;
          });
        }
      }
      const state = engine.forward(batch, weights, 'cache');
      const stats = engine.stats(state, weights, 1);
      const tokens = lossPositions(batch).length;
      const sink = new ArrayGradSink(engine.slots);
      engine.backward(
        state,
        weights,
        { temperature: 1, lossWeights: new Float32Array(tokens).fill(1 / tokens), stats },
        sink,
      );
      const grads = new Map(sink.grads.toNamedTensors().map((t) => [t.name, t.data]));
      const rng = createRng(17);
      const h = 1e-3;
      for (const name of probedTensors(family, checkpoint)) {
        const tensor = checkpoint.tensors.find((t) => t.name === name)!;
        for (let trial = 0; trial < 2; trial++) {
          const i = Math.floor(rng.next() * tensor.data.length);
          const saved = tensor.data[i]!;
          tensor.data[i] = saved + h;
          const plus = referenceLoss(checkpoint, seqs);
          tensor.data[i] = saved - h;
          const minus = referenceLoss(checkpoint, seqs);
          tensor.data[i] = saved;
          const numeric = (plus - minus) / (2 * h);
          expect(Math.abs(grads.get(name)![i]! - numeric), `${family} ${name}[${i}]`).toBeLessThan(
            3e-5 + 3e-3 * Math.abs(numeric),
          );
        }
      }
      sessions.dispose();
    });
  }

  it('trains every family through the public API (the loss falls); the tfjs engine refuses them by field', async () => {
    for (const family of FAMILIES) {
      const checkpoint = checkpointOf(family);
      const model = await createLlamaModel(checkpoint, { engine: 'native' });
      const trainer = await createPolicyTrainer(model, { schedule: { learningRate: 1e-2 } });
      const seqs = sequences(checkpoint.config.vocab_size);
      const first = trainer.sftStep(seqs).loss;
      let last = first;
      for (let step = 0; step < 8; step++) last = trainer.sftStep(seqs).loss;
      expect(last, family).toBeLessThan(first - 0.05);
      trainer.dispose();
      model.dispose();
      await expect(createLlamaModel(checkpoint, { engine: 'tfjs' }), family).rejects.toThrow(
        /checkpoint\.config\.(model_type|rope_scaling).*native engine/s,
      );
    }
  });
});
