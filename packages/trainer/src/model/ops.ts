import * as tf from '@tensorflow/tfjs-core';
import { FAST_BATCH_MAT_MUL } from '../backend/wasm-kernels.js';

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
  /** True when transposes are explicit copies (then a transpose shared by products pays off). */
  explicitTranspose: boolean;
};

/** The {@link MatMulOps} for a backend name. @internal */
export function matMulOps(backendName: string): MatMulOps {
  const native = backendName === 'tensorflow';
  const fastBatched =
    backendName === 'wasm' && tf.getKernel(FAST_BATCH_MAT_MUL, 'wasm') !== undefined;
  return {
    explicitTranspose: !native,
    mm: (a, b) => tf.matMul(a, b),
    mmTN: native ? (a, b) => tf.matMul(a, b, true, false) : (a, b) => tf.matMul(tf.transpose(a), b),
    mmNT: native ? (a, b) => tf.matMul(a, b, false, true) : (a, b) => tf.matMul(a, tf.transpose(b)),
    bmm: fastBatched
      ? (a, b) => tf.engine().runKernel(FAST_BATCH_MAT_MUL, { a, b }, {}) as tf.Tensor3D
      : (a, b) => tf.matMul(a, b),
  };
}
