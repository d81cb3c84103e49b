import { createRng } from '@rlvr/core';
import {
  type Checkpoint,
  createRandomCheckpoint,
  parseLlamaConfig,
  referenceForward,
} from '@rlvr/model';
import { describe, expect, it } from 'vitest';
import { buildTokenBatch, type TokenSequence } from '../batch/token-batch.js';
import { LORA_MODULES, type LoraModule } from './layer-graph.js';
import { LoraAdapters, loraSlot, modulePath } from './lora-adapters.js';
import { ArrayGradSink, NativeEngine } from './native-engine.js';
import { loadOrtRuntime, SessionCache } from './ort-runtime.js';
import { layerSpecOf, SlotBuffers } from './param-store.js';

const config = parseLlamaConfig({
  model_type: 'qwen2',
  hidden_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 40,
  vocab_size: 97,
  max_position_embeddings: 64,
});

function sequences(): TokenSequence[] {
  const rng = createRng(5);
  const ids = (count: number) =>
    Array.from({ length: count }, () => Math.floor(rng.next() * config.vocab_size));
  return Array.from({ length: 4 }, (_, i) => ({
    promptIds: ids(1 + (i % 3)),
    completionIds: ids(2 + ((i * 3) % 7)),
  }));
}

async function setup(targets: LoraModule[], dropout = 0) {
  const checkpoint = createRandomCheckpoint(config, { seed: 3, std: 0.2, perturbStd: 0.2 });
  const ort = await loadOrtRuntime();
  const sessions = new SessionCache(ort, { threads: 1, spinning: false });
  const engine = new NativeEngine(config, sessions, { chunkElements: 2000 });
  const base = new SlotBuffers(engine.slots);
  base.load(new Map(checkpoint.tensors.map((t) => [t.name, t.data])));
  const adapters = new LoraAdapters(layerSpecOf(config), config.num_hidden_layers, {
    r: 4,
    alpha: 8,
    dropout,
    targetModules: targets,
    rslora: false,
    seed: 7,
  });
  // B is zero at PEFT's init (the gradient of A would then be 0): random B for the test
  const rng = createRng(11);
  for (const slot of adapters.slots) {
    if (!slot.key.endsWith('.b')) continue;
    const data = adapters.store.weights.get(slot.key);
    for (let i = 0; i < data.length; i++) data[i] = (rng.next() - 0.5) * 0.4;
  }
  const batch = buildTokenBatch(sequences(), {
    functionName: 'test',
    vocabSize: config.vocab_size,
    maxLength: 64,
  });
  return { checkpoint, sessions, engine, base, adapters, batch };
}

type Setup = Awaited<ReturnType<typeof setup>>;

/** The SFT (token-mean cross-entropy) gradient of the adapters on the native engine. */
function adapterGradients(s: Setup, keep: 'cache' | 'recompute', maskSeed = 1) {
  const lora = { adapters: s.adapters, weights: s.adapters.store.weights, maskSeed };
  const state = s.engine.forward(s.batch, s.base, keep, undefined, lora);
  const stats = s.engine.stats(state, s.base, 1);
  const tokens = state.positions.length;
  const sink = new ArrayGradSink(s.adapters.slots);
  s.engine.backward(
    state,
    s.base,
    { temperature: 1, lossWeights: new Float32Array(tokens).fill(1 / tokens), stats },
    sink,
  );
  const loss = -stats.logprobs.reduce((a, b) => a + b, 0) / tokens;
  return { grads: sink.grads, loss };
}

/** The merged checkpoint W + s·B·A in float64, rounded to float32. */
function mergedCheckpoint(s: Setup, override?: { key: string; index: number; delta: number }) {
  const weight = (key: string) => {
    const data = Float64Array.from(s.adapters.store.weights.get(key));
    if (override?.key === key) data[override.index]! += override.delta;
    return data;
  };
  const { r, scale, modules } = s.adapters.layer;
  const tensors = s.checkpoint.tensors.map((tensor) => {
    const match = /^model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)_proj\.weight$/.exec(tensor.name);
    const module = match?.[3] as LoraModule | undefined;
    if (!match || !module || !modules.includes(module)) return tensor;
    const layer = Number(match[1]);
    const a = weight(loraSlot(layer, module, 'a'));
    const b = weight(loraSlot(layer, module, 'b'));
    const [out, input] = tensor.shape as [number, number];
    const data = new Float32Array(tensor.data.length);
    for (let row = 0; row < out; row++) {
      for (let col = 0; col < input; col++) {
        let sum = tensor.data[row * input + col]!;
        for (let k = 0; k < r; k++) sum += scale * b[row * r + k]! * a[k * input + col]!;
        data[row * input + col] = sum;
      }
    }
    return { ...tensor, data };
  });
  return { config: s.checkpoint.config, tensors } as Checkpoint;
}

/** The token-mean cross-entropy of the completions under the float64 reference forward. */
function referenceLoss(checkpoint: Checkpoint): number {
  let loss = 0;
  let tokens = 0;
  for (const sequence of sequences()) {
    const ids = [...sequence.promptIds, ...sequence.completionIds];
    const { logits } = referenceForward(checkpoint, { inputIds: [ids.slice(0, -1)] });
    const vocab = config.vocab_size;
    sequence.completionIds.forEach((target, j) => {
      const row = sequence.promptIds.length - 1 + j;
      const values = logits.data.subarray(row * vocab, (row + 1) * vocab);
      const max = Math.max(...values);
      let sum = 0;
      for (const value of values) sum += Math.exp(value - max);
      loss -= values[target]! - max - Math.log(sum);
      tokens += 1;
    });
  }
  return loss / tokens;
}

describe('LoRA on the native engine (PEFT adapters, base frozen)', () => {
  it('gives the loss of the merged weights W + s·B·A (float64 reference forward)', async () => {
    const s = await setup([...LORA_MODULES]);
    const { loss } = adapterGradients(s, 'recompute');
    expect(Math.abs(loss - referenceLoss(mergedCheckpoint(s)))).toBeLessThan(1e-5);
    s.sessions.dispose();
  });

  it('gives the adapters the chain rule of the full gradient at the merged weights (every entry, both activation modes)', async () => {
    const s = await setup(['q', 'v', 'o', 'gate', 'down']);
    // the full gradient at W' = W + s·B·A: dA = s·Bᵀ·dW', dB = s·dW'·Aᵀ
    const merged = mergedCheckpoint(s);
    const full = new SlotBuffers(s.engine.slots);
    full.load(new Map(merged.tensors.map((t) => [t.name, t.data])));
    const state = s.engine.forward(s.batch, full, 'recompute');
    const stats = s.engine.stats(state, full, 1);
    const tokens = state.positions.length;
    const sink = new ArrayGradSink(s.engine.slots);
    s.engine.backward(
      state,
      full,
      { temperature: 1, lossWeights: new Float32Array(tokens).fill(1 / tokens), stats },
      sink,
    );
    const fullGrads = new Map(sink.grads.toNamedTensors().map((t) => [t.name, t.data]));
    const { r, scale, modules } = s.adapters.layer;
    for (const keep of ['recompute', 'cache'] as const) {
      const { grads } = adapterGradients(s, keep);
      for (let layer = 0; layer < config.num_hidden_layers; layer++) {
        for (const module of modules) {
          const dW = fullGrads.get(`model.layers.${layer}.${modulePath(module)}.weight`)!;
          const a = s.adapters.store.weights.get(loraSlot(layer, module, 'a'));
          const b = s.adapters.store.weights.get(loraSlot(layer, module, 'b'));
          const dA = grads.get(loraSlot(layer, module, 'a'));
          const dB = grads.get(loraSlot(layer, module, 'b'));
          const input = a.length / r;
          const out = b.length / r;
          let worst = 0;
          let scaleOf = 0;
          for (let k = 0; k < r; k++) {
            for (let col = 0; col < input; col++) {
              let want = 0;
              for (let row = 0; row < out; row++)
                want += scale * b[row * r + k]! * dW[row * input + col]!;
              worst = Math.max(worst, Math.abs(dA[k * input + col]! - want));
              scaleOf = Math.max(scaleOf, Math.abs(want));
            }
          }
          for (let row = 0; row < out; row++) {
            for (let k = 0; k < r; k++) {
              let want = 0;
              for (let col = 0; col < input; col++)
                want += scale * dW[row * input + col]! * a[k * input + col]!;
              worst = Math.max(worst, Math.abs(dB[row * r + k]! - want));
              scaleOf = Math.max(scaleOf, Math.abs(want));
            }
          }
          expect(worst, `${keep} layer ${layer} ${module}`).toBeLessThan(1e-6 + 1e-4 * scaleOf);
          expect(scaleOf).toBeGreaterThan(1e-4);
        }
      }
    }
    s.sessions.dispose();
  });

  it('matches central finite differences of the float64 reference loss', async () => {
    const s = await setup(['q', 'k', 'up']);
    const { grads } = adapterGradients(s, 'recompute');
    const rng = createRng(21);
    const h = 1e-3;
    for (let trial = 0; trial < 6; trial++) {
      const slot = s.adapters.slots[Math.floor(rng.next() * s.adapters.slots.length)]!;
      const index = Math.floor(rng.next() * slot.size);
      const plus = referenceLoss(mergedCheckpoint(s, { key: slot.key, index, delta: h }));
      const minus = referenceLoss(mergedCheckpoint(s, { key: slot.key, index, delta: -h }));
      const numeric = (plus - minus) / (2 * h);
      const analytic = grads.get(slot.key)[index]!;
      expect(Math.abs(analytic - numeric), `${slot.key}[${index}]`).toBeLessThan(
        2e-5 + 2e-3 * Math.abs(numeric),
      );
    }
    s.sessions.dispose();
  });

  it('dropout: the backward draws the forward’s masks (cache = recompute), a seed gives the same masks, another seed others', async () => {
    const s = await setup([...LORA_MODULES], 0.3);
    const cached = adapterGradients(s, 'cache', 5);
    const recomputed = adapterGradients(s, 'recompute', 5);
    const other = adapterGradients(s, 'recompute', 6);
    let same = 0;
    let differs = 0;
    for (const slot of s.adapters.slots) {
      const x = cached.grads.get(slot.key);
      const y = recomputed.grads.get(slot.key);
      const z = other.grads.get(slot.key);
      for (let i = 0; i < x.length; i++) {
        same = Math.max(same, Math.abs(x[i]! - y[i]!));
        differs = Math.max(differs, Math.abs(y[i]! - z[i]!));
      }
    }
    expect(same).toBeLessThan(1e-6);
    expect(differs).toBeGreaterThan(1e-3);
    expect(cached.loss).toBe(recomputed.loss);
    expect(recomputed.loss).not.toBe(other.loss);
    // keep probability 0.7, scaled by 1 / 0.7
    const masks = s.adapters.masks(5, 0, 100);
    const values = masks.mask_q!.data;
    const kept = values.filter((v) => v !== 0);
    expect(kept.length / values.length).toBeGreaterThan(0.65);
    expect(kept.length / values.length).toBeLessThan(0.75);
    expect(kept[0]).toBeCloseTo(1 / 0.7, 6);
    expect(s.adapters.masks(5, 0, 100).mask_q!.data).toEqual(values);
    expect(s.adapters.masks(5, 1, 100).mask_q!.data).not.toEqual(values);
    s.sessions.dispose();
  });
});

describe('LoRA dropout gradients', () => {
  it('match central finite differences of the engine loss at fixed masks (lower layer: d x goes through the masks)', async () => {
    const s = await setup(['q', 'gate', 'down'], 0.3);
    const { grads } = adapterGradients(s, 'recompute', 9);
    const lossAt = () => adapterGradients(s, 'recompute', 9).loss;
    const rng = createRng(4);
    const h = 1e-2;
    for (const key of [loraSlot(0, 'q', 'a'), loraSlot(0, 'gate', 'b'), loraSlot(0, 'down', 'a')]) {
      const data = s.adapters.store.weights.get(key);
      for (let trial = 0; trial < 3; trial++) {
        const index = Math.floor(rng.next() * data.length);
        const saved = data[index]!;
        data[index] = saved + h;
        const plus = lossAt();
        data[index] = saved - h;
        const minus = lossAt();
        data[index] = saved;
        const numeric = (plus - minus) / (2 * h);
        expect(Math.abs(grads.get(key)[index]! - numeric), `${key}[${index}]`).toBeLessThan(
          1e-4 + 3e-2 * Math.abs(numeric),
        );
      }
    }
    s.sessions.dispose();
  });
});
