import { createRng } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { buildTokenBatch } from './src/train/batch.js';
import { NativeEngine } from './src/native/native-engine.js';
import { loadOrtRuntime, SessionCache } from './src/native/ort-runtime.js';
import { SlotBuffers } from './src/native/param-store.js';
const shapes: Record<string, any> = {
  '135M': { hidden_size: 576, num_hidden_layers: 30, num_attention_heads: 9, num_key_value_heads: 3, intermediate_size: 1536, vocab_size: 49152, tie_word_embeddings: true, B: 4 },
  '360M': { hidden_size: 960, num_hidden_layers: 32, num_attention_heads: 15, num_key_value_heads: 5, intermediate_size: 2560, vocab_size: 49152, tie_word_embeddings: true, B: 2 },
  '0.5B': { hidden_size: 896, num_hidden_layers: 24, num_attention_heads: 14, num_key_value_heads: 2, intermediate_size: 4864, vocab_size: 151936, tie_word_embeddings: true, model_type: 'qwen2', B: 2 },
};
const which = process.argv[2] ?? '135M'; const keep = (process.argv[3] ?? 'cache') as any;
const { B, ...fields } = shapes[which];
const config = parseLlamaConfig({ ...fields, max_position_embeddings: 512 });
const t0 = performance.now();
const ckpt = createRandomCheckpoint(config, { seed: 1, std: 0.02 });
const ort = await loadOrtRuntime();
const sessions = new SessionCache(ort, { threads: 2, spinning: true });
const engine = new NativeEngine(config, sessions);
const weights = new SlotBuffers(engine.slots);
weights.load(new Map(ckpt.tensors.map((t) => [t.name, t.data])));
(ckpt as any).tensors = null;
const m = new SlotBuffers(engine.slots), v = new SlotBuffers(engine.slots);
console.log('setup s', ((performance.now() - t0) / 1000).toFixed(1), 'rss GB', (process.memoryUsage().rss / 2 ** 30).toFixed(2));
const rng = createRng(1);
const seqs = Array.from({ length: B }, () => ({ promptIds: [1], completionIds: Array.from({ length: 128 }, () => Math.floor(rng.next() * config.vocab_size)) }));
const batch = buildTokenBatch(seqs, { functionName: 'x', vocabSize: config.vocab_size, maxLength: 512 });
let peak = 0;
for (let step = 0; step < 4; step++) {
  const a = performance.now();
  const state = engine.forward(batch, weights, keep);
  const b = performance.now();
  const stats = engine.stats(state, weights, 1);
  const c = performance.now();
  const tokens = state.positions.length;
  const grads = engine.backward(state, weights, { temperature: 1, lossWeights: new Float32Array(tokens).fill(1 / tokens), stats }, undefined);
  const d = performance.now();
  // norm + AdamW in JS
  let sq = 0;
  for (const g of grads.buffers.values()) for (let i = 0; i < g.length; i++) sq += g[i]! * g[i]!;
  const clip = Math.min(1, 1 / (Math.sqrt(sq) + 1e-6));
  const t = step + 1, c1 = 1e-4 / (1 - 0.9 ** t), c2 = 1 / (1 - 0.999 ** t);
  for (const slot of engine.slots) {
    const w = weights.get(slot.key), g = grads.get(slot.key), mm = m.get(slot.key), vv = v.get(slot.key);
    for (let i = 0; i < w.length; i++) {
      const gi = g[i]! * clip; const mi = 0.9 * mm[i]! + 0.1 * gi; const vi = 0.999 * vv[i]! + 0.001 * gi * gi;
      mm[i] = mi; vv[i] = vi; w[i] = w[i]! - (c1 * mi) / (Math.sqrt(vi * c2) + 1e-8);
    }
  }
  const e = performance.now();
  peak = Math.max(peak, process.memoryUsage().rss);
  console.log(`step ${step}: fwd ${(b - a).toFixed(0)} stats ${(c - b).toFixed(0)} bwd ${(d - c).toFixed(0)} adamw ${(e - d).toFixed(0)} total ${(e - a).toFixed(0)} ms; ${(B * 128 / ((e - a) / 1000)).toFixed(1)} tok/s; loss ${(-stats.logprobs.reduce((p, q) => p + q, 0) / tokens).toFixed(3)}; rss ${(process.memoryUsage().rss / 2 ** 30).toFixed(2)} GB`);
}
