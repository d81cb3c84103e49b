import { createRng } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { attentionBias, prepareInput } from '../batch/prepared-input.js';
import { ropeTables } from '../batch/rope.js';
import { ortAttentionBackward, ortAttentionForward } from './ort-attention.js';
import { selectBackend } from './select-backend.js';

type Case = { heads: number; kvHeads: number; headDim: number };
const B = 2;
const T = 5;
const segmentIds = [
  [1, 1, 2, 2, 0],
  [1, 1, 1, 1, 1],
];

/**
 * Float64 attention of a fused projection, written out with loops: RoPE (rotate_half), scaling,
 * additive mask, softmax, × V; returns the output `[B·T, H·d]` and the probabilities.
 */
function reference(
  qkv: Float64Array,
  cos: Float32Array,
  sin: Float32Array,
  bias: Float32Array,
  { heads, kvHeads, headDim: d }: Case,
): { out: Float64Array; p: Float64Array } {
  const width = (heads + 2 * kvHeads) * d;
  const group = heads / kvHeads;
  const half = d / 2;
  const at = (token: number, column: number) => qkv[token * width + column]!;
  const rope = (token: number, start: number) =>
    Array.from({ length: d }, (_, i) => {
      const rotated = i < half ? -at(token, start + i + half) : at(token, start + i - half);
      return at(token, start + i) * cos[token * d + i]! + rotated * sin[token * d + i]!;
    });
  const out = new Float64Array(B * T * heads * d);
  const p = new Float64Array(B * heads * T * T);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < heads; h++) {
      const kv = Math.floor(h / group);
      for (let i = 0; i < T; i++) {
        const q = rope(b * T + i, h * d).map((value) => value / Math.sqrt(d));
        const scores = Array.from({ length: T }, (_, j) => {
          const k = rope(b * T + j, (heads + kv) * d);
          const dot = q.reduce((sum, value, index) => sum + value * k[index]!, 0);
          return dot + bias[(b * T + i) * T + j]!;
        });
        const max = Math.max(...scores);
        const exps = scores.map((score) => Math.exp(score - max));
        const total = exps.reduce((sum, value) => sum + value, 0);
        exps.forEach((value, j) => {
          const prob = value / total;
          // Layout of the kernel's p: [B, Hkv, g·T, T].
          p[((b * kvHeads + kv) * group * T + (h % group) * T + i) * T + j] = prob;
          for (let index = 0; index < d; index++) {
            const v = at(b * T + j, (heads + kvHeads + kv) * d + index);
            out[(b * T + i) * heads * d + h * d + index]! += prob * v;
          }
        });
      }
    }
  }
  return { out, p };
}

function maxError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let error = 0;
  let scale = 0;
  for (let index = 0; index < want.length; index++) {
    error = Math.max(error, Math.abs(got[index]! - want[index]!));
    scale = Math.max(scale, Math.abs(want[index]!));
  }
  return error / Math.max(1, scale);
}

const CASES: [string, Case][] = [
  ['grouped-query', { heads: 4, kvHeads: 2, headDim: 4 }],
  ['multi-query, head width 6', { heads: 3, kvHeads: 1, headDim: 6 }],
  ['multi-head', { heads: 2, kvHeads: 2, headDim: 8 }],
];

describe('fused onnxruntime attention (wasm)', () => {
  it.each(CASES)(
    'should match a float64 reference forward and its finite-difference gradient (%s)',
    async (_, shape) => {
      const selected = await selectBackend({ candidates: ['wasm'], matMul: 'onnxruntime' });
      expect(selected.matMul).toBe('onnxruntime');
      const { heads, kvHeads, headDim: d } = shape;
      const width = (heads + 2 * kvHeads) * d;
      const rng = createRng(11);
      const qkvData = Float32Array.from({ length: B * T * width }, () => 2 * rng.next() - 1);
      const dOutData = Float32Array.from({ length: B * T * heads * d }, () => 2 * rng.next() - 1);
      const input = prepareInput(
        {
          inputIds: [
            [1, 2, 3, 4, 5],
            [5, 4, 3, 2, 1],
          ],
          segmentIds,
        },
        8,
        'test',
      );
      const rope = ropeTables(input.positions, d, 10000);
      const biasData = attentionBias(input);
      const qkv = tf.tensor2d(qkvData, [B * T, width]);
      const cos = tf.tensor3d(rope.cos, [B * T, 1, d]);
      const sin = tf.tensor3d(rope.sin, [B * T, 1, d]);
      const bias = tf.tensor4d(biasData, [B, 1, T, T]);
      const dOut = tf.tensor2d(dOutData, [B * T, heads * d]);
      const dims = { ...shape, batch: B, seq: T };
      const [out, p] = ortAttentionForward(qkv, cos, sin, bias, dims);
      const dQkv = ortAttentionBackward(dOut, qkv, cos, sin, p, dims);

      const qkv64 = Float64Array.from(qkvData);
      const want = reference(qkv64, rope.cos, rope.sin, biasData, shape);
      expect(out.shape).toEqual([B * T, heads * d]);
      expect(maxError(out.dataSync(), want.out)).toBeLessThan(1e-5);
      expect(maxError(p.dataSync(), want.p)).toBeLessThan(1e-5);

      // d Σ(dOut ⊙ out) / d qkv by central differences of the float64 reference.
      const loss = (values: Float64Array) =>
        reference(values, rope.cos, rope.sin, biasData, shape).out.reduce(
          (sum, value, index) => sum + value * dOutData[index]!,
          0,
        );
      const numeric = new Float64Array(qkv64.length);
      const step = 1e-6;
      for (let index = 0; index < qkv64.length; index++) {
        const original = qkv64[index]!;
        qkv64[index] = original + step;
        const up = loss(qkv64);
        qkv64[index] = original - step;
        numeric[index] = (up - loss(qkv64)) / (2 * step);
        qkv64[index] = original;
      }
      expect(dQkv.shape).toEqual([B * T, width]);
      expect(maxError(dQkv.dataSync(), numeric)).toBeLessThan(1e-4);
      tf.dispose([qkv, cos, sin, bias, dOut, out, p, dQkv]);
    },
  );
});
