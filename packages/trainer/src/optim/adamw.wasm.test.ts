import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { registerWasmAdamW } from '../backend/wasm-adamw.js';
import { AdamW } from './adamw.js';

describe('AdamW, one-pass kernel (wasm)', () => {
  it('should match a float64 PyTorch-style AdamW with gradient scaling, decay and no-decay names', async () => {
    await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
    registerWasmAdamW();
    const optimizer = new AdamW({ betas: [0.9, 0.95], epsilon: 1e-6, weightDecay: 0.1 });
    const names = ['w.weight', 'model.norm.weight'];
    const start = [0.5, -1.25, 2, 0.75];
    const gradients = [
      [0.1, -0.2, 0.3, 0.02],
      [-0.4, 0.5, 0.05, -1],
      [0.2, 0.2, -0.7, 0.3],
    ];
    const lrs = [1e-2, 5e-3, 2e-2];
    const scales = [1, 0.5, 0.25];
    let params = new Map(names.map((name) => [name, tf.tensor2d(start, [2, 2]) as tf.Tensor]));
    const want = names.map(() => ({ p: [...start], m: [0, 0, 0, 0], v: [0, 0, 0, 0] }));
    gradients.forEach((g, step) => {
      const grads = new Map(names.map((name) => [name, tf.tensor2d(g, [2, 2]) as tf.Tensor]));
      const next = optimizer.apply(params, grads, lrs[step]!, {
        fused: true,
        gradScale: scales[step]!,
      });
      tf.dispose([...params.values(), ...grads.values()]);
      params = next;
      const t = step + 1;
      names.forEach((name, which) => {
        const { p, m, v } = want[which]!;
        const decay = name === 'w.weight' ? 0.1 : 0;
        for (let i = 0; i < 4; i++) {
          const gradient = g[i]! * scales[step]!;
          p[i] = p[i]! * (1 - lrs[step]! * decay);
          m[i] = 0.9 * m[i]! + 0.1 * gradient;
          v[i] = 0.95 * v[i]! + 0.05 * gradient ** 2;
          const mHat = m[i]! / (1 - 0.9 ** t);
          const vHat = v[i]! / (1 - 0.95 ** t);
          p[i] = p[i]! - (lrs[step]! * mHat) / (Math.sqrt(vHat) + 1e-6);
        }
      });
    });
    const state = optimizer.getState();
    expect(state.step).toBe(3);
    names.forEach((name, which) => {
      const got = params.get(name)!.dataSync();
      const moments = state.moments.find((moment) => moment.name === name)!;
      want[which]!.p.forEach((value, index) => {
        expect(got[index]).toBeCloseTo(value, 6);
        expect(moments.m[index]).toBeCloseTo(want[which]!.m[index]!, 7);
        expect(moments.v[index]).toBeCloseTo(want[which]!.v[index]!, 7);
      });
    });
    tf.dispose([...params.values()]);
    optimizer.dispose();
  });
});
