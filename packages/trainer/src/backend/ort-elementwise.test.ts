import { createRng } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import {
  ortRmsNormBackward,
  ortRmsNormForward,
  ortSwiGluBackward,
  ortSwiGluForward,
} from './ort-elementwise.js';
import { selectBackend } from './select-backend.js';

function maxError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let error = 0;
  let scale = 0;
  for (let index = 0; index < want.length; index++) {
    error = Math.max(error, Math.abs(got[index]! - want[index]!));
    scale = Math.max(scale, Math.abs(want[index]!));
  }
  return error / Math.max(1, scale);
}

/** Central differences (float64) of `loss` at `x`. */
function numericGradient(x: Float64Array, loss: (values: Float64Array) => number): Float64Array {
  const out = new Float64Array(x.length);
  const step = 1e-6;
  for (let index = 0; index < x.length; index++) {
    const original = x[index]!;
    x[index] = original + step;
    const up = loss(x);
    x[index] = original - step;
    out[index] = (up - loss(x)) / (2 * step);
    x[index] = original;
  }
  return out;
}

const random = (rng: { next(): number }, length: number) =>
  Float32Array.from({ length }, () => 2 * rng.next() - 1);

describe('fused onnxruntime SwiGLU and RMSNorm (wasm)', () => {
  it('should compute silu(gate)·up and its gradient like a float64 reference', async () => {
    await selectBackend({ candidates: ['wasm'], matMul: 'onnxruntime' });
    const [n, m] = [5, 3];
    const rng = createRng(3);
    const gateUp = random(rng, n * 2 * m).map((value) => 4 * value);
    const dAct = random(rng, n * m);
    const forward = (values: ArrayLike<number>) =>
      Float64Array.from({ length: n * m }, (_, index) => {
        const row = Math.floor(index / m);
        const gate = values[row * 2 * m + (index % m)]!;
        const up = values[row * 2 * m + m + (index % m)]!;
        return (gate / (1 + Math.exp(-gate))) * up;
      });
    const input = tf.tensor2d(gateUp, [n, 2 * m]);
    const act = ortSwiGluForward(input);
    const dGateUp = ortSwiGluBackward(tf.tensor2d(dAct, [n, m]), input);
    expect(act.shape).toEqual([n, m]);
    expect(maxError(act.dataSync(), forward(gateUp))).toBeLessThan(1e-6);
    const numeric = numericGradient(Float64Array.from(gateUp), (values) =>
      forward(values).reduce((sum, value, index) => sum + value * dAct[index]!, 0),
    );
    expect(dGateUp.shape).toEqual([n, 2 * m]);
    expect(maxError(dGateUp.dataSync(), numeric)).toBeLessThan(1e-5);
    tf.dispose([input, act, dGateUp]);
  });

  it('should compute RMSNorm with gain and its gradients like a float64 reference', async () => {
    await selectBackend({ candidates: ['wasm'], matMul: 'onnxruntime' });
    const [n, d, epsilon] = [4, 6, 1e-5];
    const rng = createRng(4);
    const x = random(rng, n * d);
    const gain = random(rng, d).map((value) => 1 + value / 2);
    const dh = random(rng, n * d);
    const forward = (xs: ArrayLike<number>, gains: ArrayLike<number>) =>
      Float64Array.from({ length: n * d }, (_, index) => {
        const row = Math.floor(index / d);
        let meanSquare = 0;
        for (let column = 0; column < d; column++) meanSquare += xs[row * d + column]! ** 2 / d;
        return (xs[index]! / Math.sqrt(meanSquare + epsilon)) * gains[index % d]!;
      });
    const dot = (values: Float64Array) =>
      values.reduce((sum, value, index) => sum + value * dh[index]!, 0);
    const [h, xhat, r] = ortRmsNormForward(tf.tensor2d(x, [n, d]), tf.tensor1d(gain), epsilon);
    expect(maxError(h.dataSync(), forward(x, gain))).toBeLessThan(1e-6);
    const [dx, dGain] = ortRmsNormBackward(tf.tensor2d(dh, [n, d]), xhat, r, tf.tensor1d(gain));
    const wantDx = numericGradient(Float64Array.from(x), (values) => dot(forward(values, gain)));
    const wantDGain = numericGradient(Float64Array.from(gain), (values) => dot(forward(x, values)));
    expect(dx.shape).toEqual([n, d]);
    expect(maxError(dx.dataSync(), wantDx)).toBeLessThan(1e-5);
    expect(dGain.shape).toEqual([d]);
    expect(maxError(dGain.dataSync(), wantDGain)).toBeLessThan(1e-5);
    tf.dispose([h, xhat, r, dx, dGain]);
  });
});
