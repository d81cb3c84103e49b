import * as tf from '@tensorflow/tfjs-core';
import {
  FAST_BATCH_MAT_MUL,
  FAST_GATHER_ROWS,
  FAST_SUM_ROWS,
  FAST_TRANSPOSE,
} from '../backend/wasm-kernels.js';

/**
 * Matrix products laid out for each backend's fast path. On wasm only a plain (non-transposed)
 * 2-D matMul reaches XNNPACK, so transposes are explicit copies and batched products go through
 * this package's zero-copy kernel; native TensorFlow takes the transpose flags directly.
 * @internal
 */
export type MatMulOps = {
  /** a @ b for 2-D a, b. */
  mm(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D;
  /** aᵀ @ b for 2-D a, b. */
  mmTN(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D;
  /** a @ bᵀ for 2-D a, b. */
  mmNT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D;
  /** a[i] @ b[i] for 3-D a `[n, m, k]`, b `[n, k, p]`. */
  bmm(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D;
  /** xᵀ for 2-D x. */
  t(x: tf.Tensor2D): tf.Tensor2D;
  /** x[i]ᵀ for each matrix of a 3-D x (`tf.transpose(x, [0, 2, 1])`). */
  bt(x: tf.Tensor3D): tf.Tensor3D;
  /** Rows `ids` of 2-D x (`tf.gather(x, ids)`); ids must be in range. */
  gatherRows(x: tf.Tensor2D, ids: Int32Array | number[]): tf.Tensor2D;
  /** `tf.sum(x, 0)` for 2-D x. */
  sumRows(x: tf.Tensor2D): tf.Tensor1D;
  /** True when transposes are explicit copies (then a transpose shared by products pays off). */
  explicitTranspose: boolean;
};

/** The {@link MatMulOps} for a backend name. @internal */
export function matMulOps(backendName: string): MatMulOps {
  const native = backendName === 'tensorflow';
  const fastBatched =
    backendName === 'wasm' && tf.getKernel(FAST_BATCH_MAT_MUL, 'wasm') !== undefined;
  const fastTranspose =
    backendName === 'wasm' && tf.getKernel(FAST_TRANSPOSE, 'wasm') !== undefined;
  const fastGather = backendName === 'wasm' && tf.getKernel(FAST_GATHER_ROWS, 'wasm') !== undefined;
  const fastSum = backendName === 'wasm' && tf.getKernel(FAST_SUM_ROWS, 'wasm') !== undefined;
  const t = fastTranspose
    ? (x: tf.Tensor2D) => tf.engine().runKernel(FAST_TRANSPOSE, { x }, {}) as tf.Tensor2D
    : (x: tf.Tensor2D) => tf.transpose(x);
  return {
    explicitTranspose: !native,
    t,
    // tfjs's own 3-D transpose is faster than the tiled copy for attention's small matrices.
    bt: (x) => tf.transpose(x, [0, 2, 1]),
    gatherRows: fastGather
      ? (x, ids) =>
          tf
            .engine()
            .runKernel(
              FAST_GATHER_ROWS,
              { x, indices: tf.tensor1d(ids, 'int32') },
              {},
            ) as tf.Tensor2D
      : (x, ids) => tf.gather(x, tf.tensor1d(ids, 'int32')) as tf.Tensor2D,
    sumRows: fastSum
      ? (x) => tf.engine().runKernel(FAST_SUM_ROWS, { x }, {}) as tf.Tensor1D
      : (x) => tf.sum(x, 0),
    mm: (a, b) => tf.matMul(a, b),
    mmTN: native ? (a, b) => tf.matMul(a, b, true, false) : (a, b) => tf.matMul(t(a), b),
    mmNT: native ? (a, b) => tf.matMul(a, b, false, true) : (a, b) => tf.matMul(a, t(b)),
    bmm: fastBatched
      ? (a, b) => tf.engine().runKernel(FAST_BATCH_MAT_MUL, { a, b }, {}) as tf.Tensor3D
      : (a, b) => tf.matMul(a, b),
  };
}
