import { RlvrError } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { rotateHalfMatrix } from '../batch/rope.js';
import { ORT_MAT_MUL, ortMatMulOp } from './ort-matmul.js';
import { activeBackend, selectBackend } from './select-backend.js';
import {
  FAST_BATCH_MAT_MUL,
  FAST_CONCAT_COLUMNS,
  FAST_GATHER_ROWS,
  FAST_ROPE,
  FAST_SPLIT_COLUMNS,
  FAST_SUM_ROWS,
  FAST_TRANSPOSE,
} from './wasm-kernels.js';

describe('selectBackend', () => {
  it('should register nothing at import time', () => {
    expect(tf.getKernel(FAST_BATCH_MAT_MUL, 'wasm')).toBeUndefined();
  });

  it('should skip native TensorFlow when it is not installed and take wasm', async () => {
    const selected = await selectBackend();
    // tfjs-node(-gpu) cannot be installed on the CI machine: both attempts are reported.
    expect(selected.skipped.map((attempt) => attempt.module)).toEqual([
      '@tensorflow/tfjs-node-gpu',
      '@tensorflow/tfjs-node',
    ]);
    expect(selected.name).toBe('wasm');
    expect(activeBackend()).toBe('wasm');
    expect(tf.getKernel(FAST_BATCH_MAT_MUL, 'wasm')).toBeDefined();
    // onnxruntime-node (a dev dependency here) takes the matrix products by default.
    expect(selected.matMul).toBe('onnxruntime');
    expect(tf.getKernel(ORT_MAT_MUL, 'wasm')).toBeDefined();
  });

  it('should choose the matMul engine on wasm and validate the option', async () => {
    expect((await selectBackend({ candidates: ['wasm'], matMul: 'backend' })).matMul).toBe(
      'backend',
    );
    expect((await selectBackend({ candidates: ['wasm'], matMul: 'onnxruntime' })).matMul).toBe(
      'onnxruntime',
    );
    expect((await selectBackend({ candidates: ['cpu'] })).matMul).toBe('backend');
    await expect(selectBackend({ matMul: 'mlas' as never })).rejects.toThrow(/options\.matMul/);
    await expect(selectBackend({ matmul: 'backend' } as never)).rejects.toThrow(/matMul/);
    await expect(selectBackend({ matMulThreads: 0 })).rejects.toThrow(/options\.matMulThreads/);
    expect((await selectBackend({ candidates: ['wasm'], matMulThreads: 1 })).matMul).toBe(
      'onnxruntime',
    );
  });

  it('should multiply like tf.matMul on onnxruntime (2-D and batched, every transpose)', async () => {
    await selectBackend({ candidates: ['wasm'] });
    for (const [transposeA, transposeB] of [
      [false, false],
      [true, false],
      [false, true],
      [true, true],
    ] as const) {
      for (const [aShape, bShape] of <number[][][]>[
        [transposeA ? [7, 5] : [5, 7], transposeB ? [4, 7] : [7, 4]],
        [transposeA ? [3, 7, 5] : [3, 5, 7], transposeB ? [3, 4, 7] : [3, 7, 4]],
      ]) {
        const a = tf.randomNormal<tf.Rank>(aShape!, 0, 1, 'float32', 4) as tf.Tensor2D;
        const b = tf.randomNormal<tf.Rank>(bShape!, 0, 1, 'float32', 5) as tf.Tensor2D;
        const fast = ortMatMulOp(a, b, transposeA, transposeB);
        const slow = tf.matMul(a, b, transposeA, transposeB);
        expect(fast.shape).toEqual(slow.shape);
        expect(tf.max(tf.abs(tf.sub(fast, slow))).dataSync()[0]).toBeLessThan(1e-5);
        tf.dispose([a, b, fast, slow]);
      }
    }
  });

  it('should fall through to the next candidate and honour the order', async () => {
    const selected = await selectBackend({ candidates: ['tensorflow', 'cpu', 'wasm'] });
    expect(selected.name).toBe('cpu');
    expect(tf.getBackend()).toBe('cpu');
  });

  it('should throw UNAVAILABLE when nothing loads, and validate candidates', async () => {
    const error = await selectBackend({ candidates: ['tensorflow'] }).catch((caught) => caught);
    expect(RlvrError.isInstance(error) && error.code).toBe('UNAVAILABLE');
    expect(String(error.message)).toMatch(/tfjs-node/);
    await expect(selectBackend({ candidates: ['webgl' as never] })).rejects.toThrow(
      /options\.candidates\[0\]/,
    );
    await expect(selectBackend({ candidates: [] })).rejects.toThrow(/options\.candidates/);
  });

  it('should run the zero-copy batched matMul like tf.matMul', async () => {
    await selectBackend({ candidates: ['wasm'] });
    const a = tf.randomNormal([5, 7, 3], 0, 1, 'float32', 1);
    const b = tf.randomNormal([5, 3, 4], 0, 1, 'float32', 2);
    const fast = tf.engine().runKernel(FAST_BATCH_MAT_MUL, { a, b }, {}) as tf.Tensor;
    const slow = tf.matMul(a, b);
    expect(tf.max(tf.abs(tf.sub(fast, slow))).dataSync()[0]).toBeLessThan(1e-5);
    tf.dispose([a, b, fast, slow]);
  });

  it('should transpose, sum rows and gather rows bit-identically to tfjs', async () => {
    await selectBackend({ candidates: ['wasm'] });
    const same = (fast: tf.Tensor, slow: tf.Tensor) => {
      expect(fast.shape).toEqual(slow.shape);
      expect(Array.from(fast.dataSync())).toEqual(Array.from(slow.dataSync()));
      tf.dispose([fast, slow]);
    };
    for (const shape of [
      [70, 45],
      [1, 9],
      [3, 33, 65],
    ]) {
      const x = tf.randomNormal(shape, 0, 1, 'float32', 3);
      const perm = shape.length === 3 ? [0, 2, 1] : [1, 0];
      same(tf.engine().runKernel(FAST_TRANSPOSE, { x }, {}) as tf.Tensor, tf.transpose(x, perm));
      if (shape.length === 2) {
        same(tf.engine().runKernel(FAST_SUM_ROWS, { x }, {}) as tf.Tensor, tf.sum(x, 0));
        const indices = tf.tensor1d([0, shape[0]! - 1, 0, 1 % shape[0]!], 'int32');
        same(
          tf.engine().runKernel(FAST_GATHER_ROWS, { x, indices }, {}) as tf.Tensor,
          tf.gather(x, indices),
        );
        indices.dispose();
      }
      x.dispose();
    }
  });

  it('should split and concatenate columns bit-identically to tfjs', async () => {
    await selectBackend({ candidates: ['wasm'] });
    const x = tf.randomNormal([9, 11], 0, 1, 'float32', 6) as tf.Tensor2D;
    const widths = [4, 2, 5];
    const fast = tf
      .engine()
      .runKernel(FAST_SPLIT_COLUMNS, { x }, { widths }) as unknown as tf.Tensor[];
    const slow = tf.split(x, widths, 1);
    fast.forEach((part, index) => {
      expect(part.shape).toEqual(slow[index]!.shape);
      expect(Array.from(part.dataSync())).toEqual(Array.from(slow[index]!.dataSync()));
    });
    const joined = tf
      .engine()
      .runKernel(
        FAST_CONCAT_COLUMNS,
        { x0: fast[0]!, x1: fast[1]!, x2: fast[2]! },
        {},
      ) as tf.Tensor;
    expect(Array.from(joined.dataSync())).toEqual(Array.from(x.dataSync()));
    tf.dispose([x, joined, ...fast, ...slow]);
  });

  it('should apply RoPE and its adjoint like the tfjs composition (rotate_half as a matMul)', async () => {
    await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
    const [n, heads, d] = [5, 3, 8];
    const x = tf.randomNormal([n, heads * d], 0, 1, 'float32', 7) as tf.Tensor2D;
    const cos = tf.randomUniform([n, 1, d], -1, 1, 'float32', 8) as tf.Tensor3D;
    const sin = tf.randomUniform([n, 1, d], -1, 1, 'float32', 9) as tf.Tensor3D;
    const rotate = tf.tensor2d(rotateHalfMatrix(d), [d, d]);
    const x3 = tf.reshape(x, [n, heads, d]);
    const rotated = tf.reshape(tf.matMul(tf.reshape(x, [n * heads, d]), rotate), [n, heads, d]);
    const forward = tf.add(tf.mul(x3, cos), tf.mul(rotated, sin));
    const viaRotate = tf.matMul(tf.reshape(tf.mul(x3, sin), [n * heads, d]), tf.transpose(rotate));
    const adjoint = tf.add(tf.mul(x3, cos), tf.reshape(viaRotate, [n, heads, d]));
    for (const [transpose, want] of [
      [false, forward],
      [true, adjoint],
    ] as const) {
      const got = tf.engine().runKernel(FAST_ROPE, { x, cos, sin }, { transpose }) as tf.Tensor;
      expect(Array.from(got.dataSync())).toEqual(Array.from(want.dataSync()));
      got.dispose();
    }
    tf.dispose([x, cos, sin, rotate, x3, rotated, forward, viaRotate, adjoint]);
  });
});
