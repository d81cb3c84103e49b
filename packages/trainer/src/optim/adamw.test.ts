import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { beforeAll, describe, expect, it } from 'vitest';
import { AdamW, isNoDecayParameter } from './adamw.js';

describe('AdamW', () => {
  beforeAll(async () => {
    await tf.setBackend('cpu');
  });

  it('should match a float64 PyTorch-style AdamW over several steps', () => {
    const optimizer = new AdamW({ betas: [0.9, 0.95], epsilon: 1e-6, weightDecay: 0.1 });
    const start = [0.5, -1.25, 2];
    const gradients = [
      [0.1, -0.2, 0.3],
      [-0.4, 0.5, 0.05],
      [0.2, 0.2, -0.7],
    ];
    const lrs = [1e-2, 5e-3, 2e-2];
    let param: tf.Tensor = tf.tensor1d(start);
    const p = [...start];
    const m = [0, 0, 0];
    const v = [0, 0, 0];
    gradients.forEach((g, step) => {
      const next = optimizer.apply(
        new Map([['w.weight', param]]),
        new Map([['w.weight', tf.tensor1d(g)]]),
        lrs[step]!,
      );
      param.dispose();
      param = next.get('w.weight')!;
      const t = step + 1;
      for (let i = 0; i < 3; i++) {
        p[i] = p[i]! * (1 - lrs[step]! * 0.1);
        m[i] = 0.9 * m[i]! + 0.1 * g[i]!;
        v[i] = 0.95 * v[i]! + 0.05 * g[i]! ** 2;
        const mHat = m[i]! / (1 - 0.9 ** t);
        const vHat = v[i]! / (1 - 0.95 ** t);
        p[i] = p[i]! - (lrs[step]! * mHat) / (Math.sqrt(vHat) + 1e-6);
      }
    });
    const got = param.dataSync();
    p.forEach((value, index) => {
      expect(got[index]).toBeCloseTo(value, 6);
    });
    const state = optimizer.getState();
    expect(state.step).toBe(3);
    expect(state.moments[0]!.m[0]).toBeCloseTo(m[0]!, 6);
    optimizer.dispose();
  });

  it('should not decay biases and norm weights', () => {
    expect(isNoDecayParameter('model.layers.0.self_attn.q_proj.bias')).toBe(true);
    expect(isNoDecayParameter('model.layers.0.input_layernorm.weight')).toBe(true);
    expect(isNoDecayParameter('model.norm.weight')).toBe(true);
    expect(isNoDecayParameter('model.layers.0.mlp.up_proj.weight')).toBe(false);
  });
});
