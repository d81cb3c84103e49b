import { readFileSync } from 'node:fs';
import { createRng } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import type { Slot } from './param-store.js';
import { TrainStore } from './train-store.js';
import { OPTIMIZER_WASM } from './wasm/optimizer-wasm.js';

const slot = (key: string, size: number, decay: boolean): Slot => ({
  key,
  shape: [size],
  size,
  views: [{ name: key, shape: [size], offset: 0, size }],
  decay,
});
// sizes not multiples of 4 (padding), decayed and not
const SLOTS = [slot('a', 37, true), slot('b', 8, false), slot('c', 101, true)];

/** PyTorch's AdamW in float64 (the reference). */
function reference(
  w: Float64Array,
  grads: Float64Array[],
  settings: {
    lr: number;
    b1: number;
    b2: number;
    eps: number;
    wd: number;
    decay: boolean;
    clips: number[];
  },
) {
  const m = new Float64Array(w.length);
  const v = new Float64Array(w.length);
  grads.forEach((g, index) => {
    const t = index + 1;
    const clip = settings.clips[index]!;
    for (let i = 0; i < w.length; i++) {
      const gi = g[i]! * clip;
      if (settings.decay) w[i] = w[i]! * (1 - settings.lr * settings.wd);
      m[i] = settings.b1 * m[i]! + (1 - settings.b1) * gi;
      v[i] = settings.b2 * v[i]! + (1 - settings.b2) * gi * gi;
      const mHat = m[i]! / (1 - settings.b1 ** t);
      const vHat = v[i]! / (1 - settings.b2 ** t);
      w[i] = w[i]! - (settings.lr * mHat) / (Math.sqrt(vHat) + settings.eps);
    }
  });
  return w;
}

describe('TrainStore (AdamW and the gradient norm in WebAssembly SIMD)', () => {
  it('the committed kernel bytes are optimizer.wat assembled (scripts/build-optimizer-wasm.mjs)', async () => {
    const { assembleOptimizer } = (await import('../../scripts/build-optimizer-wasm.mjs')) as {
      assembleOptimizer: () => Promise<string>;
    };
    expect(await assembleOptimizer()).toBe(OPTIMIZER_WASM);
    expect(readFileSync(new URL('./wasm/optimizer.wat', import.meta.url), 'utf8')).toContain(
      'adamw',
    );
  });

  for (const [name, shardBytes] of [
    ['in shards (two: the slots do not fit one)', 3000],
    ['in plain arrays (slots over the shard limit: the JS rule)', 16],
  ] as const) {
    it(`3 AdamW steps = PyTorch's rule in float64, ${name}`, () => {
      const store = new TrainStore(SLOTS, { shardBytes });
      const rng = createRng(4);
      const settings = { lr: 0.05, b1: 0.9, b2: 0.95, eps: 1e-6, wd: 0.1 };
      const clips = [1, 0.5, 0.25];
      const expected = new Map<string, Float64Array>();
      const grads = new Map<string, Float64Array[]>();
      for (const s of SLOTS) {
        const w = Float64Array.from({ length: s.size }, () => rng.next() * 2 - 1);
        store.weights.get(s.key).set(w);
        grads.set(
          s.key,
          [0, 1, 2].map(() => Float64Array.from({ length: s.size }, () => rng.next() - 0.5)),
        );
        expected.set(s.key, Float64Array.from(store.weights.get(s.key)));
      }
      for (let t = 1; t <= 3; t++) {
        store.clearGrads();
        let sum = 0;
        for (const s of SLOTS) {
          const g = Float32Array.from(grads.get(s.key)![t - 1]!);
          store.setGrad(s.key, g);
          for (const value of g) sum += value * value;
        }
        expect(store.gradNorm()).toBeCloseTo(Math.sqrt(sum), 10);
        store.adamW({
          learningRate: settings.lr,
          beta1: settings.b1,
          beta2: settings.b2,
          epsilon: settings.eps,
          weightDecay: settings.wd,
          clip: clips[t - 1]!,
          t,
        });
      }
      for (const s of SLOTS) {
        const want = reference(
          expected.get(s.key)!,
          grads.get(s.key)!.map((g) => Float64Array.from(Float32Array.from(g))),
          { ...settings, decay: s.decay, clips },
        );
        const have = store.weights.get(s.key);
        for (let i = 0; i < s.size; i++) expect(Math.abs(have[i]! - want[i]!)).toBeLessThan(2e-6);
        // the padding lanes stay zero
      }
    });
  }

  it('a slot without a gradient this step is updated with a zero one (moments decay)', () => {
    const store = new TrainStore([SLOTS[0]!]);
    store.weights.get('a').fill(1);
    store.setGrad('a', new Float32Array(37).fill(0.5));
    store.adamW({
      learningRate: 0.1,
      beta1: 0.9,
      beta2: 0.999,
      epsilon: 1e-8,
      weightDecay: 0,
      clip: 1,
      t: 1,
    });
    const after1 = store.weights.get('a')[0]!;
    store.clearGrads();
    store.adamW({
      learningRate: 0.1,
      beta1: 0.9,
      beta2: 0.999,
      epsilon: 1e-8,
      weightDecay: 0,
      clip: 1,
      t: 2,
    });
    expect(store.grads.get('a')[0]).toBe(0);
    expect(store.weights.get('a')[0]).toBeLessThan(after1); // the first moment still moves it
  });
});
