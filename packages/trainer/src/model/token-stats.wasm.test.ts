import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { tokenStats } from './token-stats.js';

describe('tokenStats (wasm)', () => {
  it('should give the same logprobs and entropies as float64 math on wasm (oneHot dtype trap)', async () => {
    const selected = await selectBackend({ candidates: ['wasm'] });
    expect(selected.name).toBe('wasm');
    const logits = [
      [2, 0, -1, 0.5],
      [0, 0, 0, 0],
    ];
    const targets = Int32Array.from([0, 3]);
    const { logprobs, entropy } = tf.tidy(() => {
      const stats = tokenStats(tf.tensor2d(logits), targets);
      return {
        logprobs: Array.from(stats.logprobs.dataSync()),
        entropy: Array.from(stats.entropy.dataSync()),
      };
    });
    logits.forEach((row, index) => {
      const max = Math.max(...row);
      const logZ = max + Math.log(row.reduce((sum, x) => sum + Math.exp(x - max), 0));
      expect(logprobs[index]).toBeCloseTo(row[targets[index]!]! - logZ, 5);
      const h = -row.reduce((sum, x) => sum + Math.exp(x - logZ) * (x - logZ), 0);
      expect(entropy[index]).toBeCloseTo(h, 5);
    });
  });
});
