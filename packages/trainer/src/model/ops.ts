import * as tf from '@tensorflow/tfjs-core';
import {
  type AttentionShape,
  ortAttentionActive,
  ortAttentionBackward,
  ortAttentionForward,
} from '../backend/ort-attention.js';
import { ortMatMulActive, ortMatMulOp } from '../backend/ort-matmul.js';
import {
  FAST_BATCH_MAT_MUL,
  FAST_CONCAT_COLUMNS,
  FAST_GATHER_ROWS,
  FAST_ROPE,
  FAST_SPLIT_COLUMNS,
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
  /** a[i] @ b[i]ᵀ for 3-D a `[n, m, k]`, b `[n, p, k]`. */
  bmmNT(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D;
  /** a[i]ᵀ @ b[i] for 3-D a `[n, k, m]`, b `[n, k, p]`. */
  bmmTN(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D;
  /** xᵀ for 2-D x. */
  t(x: tf.Tensor2D): tf.Tensor2D;
  /** x[i]ᵀ for each matrix of a 3-D x (`tf.transpose(x, [0, 2, 1])`). */
  bt(x: tf.Tensor3D): tf.Tensor3D;
  /** Rows `ids` of 2-D x (`tf.gather(x, ids)`); ids must be in range. */
  gatherRows(x: tf.Tensor2D, ids: Int32Array | number[]): tf.Tensor2D;
  /** `tf.sum(x, 0)` for 2-D x. */
  sumRows(x: tf.Tensor2D): tf.Tensor1D;
  /** `tf.split(x, widths, 1)` for 2-D x. */
  splitColumns(x: tf.Tensor2D, widths: number[]): tf.Tensor2D[];
  /** `tf.concat(xs, 1)` for 2-D xs with the same rows (at most 4). */
  concatColumns(xs: tf.Tensor2D[]): tf.Tensor2D;
  /**
   * One-pass rotary embedding of `[n, heads·d]` with `[n, 1, d]` tables: forward
   * `x·cos + rotate_half(x)·sin`, or with `transpose` its adjoint (backward); undefined where the
   * model composes it from tfjs ops.
   */
  rope?: (x: tf.Tensor2D, cos: tf.Tensor3D, sin: tf.Tensor3D, transpose: boolean) => tf.Tensor2D;
  /**
   * Fused causal attention of the q/k/v projection output `[B·T, (H + 2·Hkv)·d]` (RoPE, scaling,
   * mask, softmax, × V): `[attention, p]`, and its backward to d qkv; undefined where the model
   * composes attention from tfjs ops.
   */
  attention?: {
    forward(
      qkv: tf.Tensor2D,
      cos: tf.Tensor,
      sin: tf.Tensor,
      bias: tf.Tensor,
      shape: AttentionShape & { batch: number; seq: number },
    ): [tf.Tensor2D, tf.Tensor];
    backward(
      dAttention: tf.Tensor2D,
      qkv: tf.Tensor2D,
      cos: tf.Tensor,
      sin: tf.Tensor,
      p: tf.Tensor,
      shape: AttentionShape & { batch: number; seq: number },
    ): tf.Tensor2D;
  };
  /** True when transposes are explicit copies (then a transpose shared by products pays off). */
  explicitTranspose: boolean;
  /**
   * True when the input gradient of a fused projection is one product (`[dy₁|dy₂] @ [W₁|W₂]ᵀ`);
   * false: one product per projection summed as before fusion (the summation order, hence the
   * rounding, of the unfused model: kept on cpu, the reference backend, and on XNNPACK).
   */
  fusedInputGradient: boolean;
};

/** The {@link MatMulOps} for a backend name. @internal */
export function matMulOps(backendName: string): MatMulOps {
  const base = backendOps(backendName);
  if (backendName !== 'wasm' || !ortMatMulActive()) return base;
  // wasm with onnxruntime-node: every product runs on MLAS with its transpose flags (no copies).
  return {
    ...base,
    explicitTranspose: false,
    fusedInputGradient: true,
    mm: (a, b) => ortMatMulOp(a, b, false, false),
    mmTN: (a, b) => ortMatMulOp(a, b, true, false),
    mmNT: (a, b) => ortMatMulOp(a, b, false, true),
    bmm: (a, b) => ortMatMulOp(a, b, false, false),
    bmmNT: (a, b) => ortMatMulOp(a, b, false, true),
    bmmTN: (a, b) => ortMatMulOp(a, b, true, false),
    ...(ortAttentionActive()
      ? { attention: { forward: ortAttentionForward, backward: ortAttentionBackward } }
      : {}),
  };
}

function backendOps(backendName: string): MatMulOps {
  const native = backendName === 'tensorflow';
  const has = (kernel: string) =>
    backendName === 'wasm' && tf.getKernel(kernel, 'wasm') !== undefined;
  const t = has(FAST_TRANSPOSE)
    ? (x: tf.Tensor2D) => tf.engine().runKernel(FAST_TRANSPOSE, { x }, {}) as tf.Tensor2D
    : (x: tf.Tensor2D) => tf.transpose(x);
  // tfjs's own 3-D transpose is faster than the tiled copy for attention's small matrices.
  const bt = (x: tf.Tensor3D) => tf.transpose(x, [0, 2, 1]);
  const bmm = has(FAST_BATCH_MAT_MUL)
    ? (a: tf.Tensor3D, b: tf.Tensor3D) =>
        tf.engine().runKernel(FAST_BATCH_MAT_MUL, { a, b }, {}) as tf.Tensor3D
    : (a: tf.Tensor3D, b: tf.Tensor3D) => tf.matMul(a, b) as tf.Tensor3D;
  return {
    explicitTranspose: !native,
    fusedInputGradient: false,
    t,
    bt,
    gatherRows: has(FAST_GATHER_ROWS)
      ? (x, ids) =>
          tf
            .engine()
            .runKernel(
              FAST_GATHER_ROWS,
              { x, indices: tf.tensor1d(ids, 'int32') },
              {},
            ) as tf.Tensor2D
      : (x, ids) => tf.gather(x, tf.tensor1d(ids, 'int32')) as tf.Tensor2D,
    sumRows: has(FAST_SUM_ROWS)
      ? (x) => tf.engine().runKernel(FAST_SUM_ROWS, { x }, {}) as tf.Tensor1D
      : (x) => tf.sum(x, 0),
    splitColumns: has(FAST_SPLIT_COLUMNS)
      ? (x, widths) =>
          tf.engine().runKernel(FAST_SPLIT_COLUMNS, { x }, { widths }) as unknown as tf.Tensor2D[]
      : (x, widths) => tf.split(x, widths, 1),
    concatColumns: has(FAST_CONCAT_COLUMNS)
      ? (xs) =>
          tf
            .engine()
            .runKernel(
              FAST_CONCAT_COLUMNS,
              Object.fromEntries(xs.map((x, index) => [`x${index}`, x])),
              {},
            ) as tf.Tensor2D
      : (xs) => tf.concat(xs, 1),
    ...(has(FAST_ROPE)
      ? {
          rope: (x, cos, sin, transpose) =>
            tf.engine().runKernel(FAST_ROPE, { x, cos, sin }, { transpose }) as tf.Tensor2D,
        }
      : {}),
    mm: (a, b) => tf.matMul(a, b),
    mmTN: native ? (a, b) => tf.matMul(a, b, true, false) : (a, b) => tf.matMul(t(a), b),
    mmNT: native ? (a, b) => tf.matMul(a, b, false, true) : (a, b) => tf.matMul(a, t(b)),
    bmm,
    bmmNT: native ? (a, b) => tf.matMul(a, b, false, true) : (a, b) => bmm(a, bt(b)),
    bmmTN: native ? (a, b) => tf.matMul(a, b, true, false) : (a, b) => bmm(bt(a), b),
  };
}
