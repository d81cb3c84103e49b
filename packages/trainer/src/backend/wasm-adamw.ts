import * as tf from '@tensorflow/tfjs-core';

/** Name of the one-pass AdamW update kernel this package registers for wasm. */
export const FAST_ADAMW = 'RlvrAdamW';

/** Attributes of {@link FAST_ADAMW}. */
export type AdamWKernelAttrs = {
  learningRate: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
  /** 1 − β₁ᵗ and 1 − β₂ᵗ of this step. */
  correction1: number;
  correction2: number;
  /** Factor applied to the gradient first (global-norm clipping; 1: none). */
  gradScale: number;
};

type WasmBackendInternals = {
  wasm: { HEAPU8: Uint8Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
};

function view(backend: WasmBackendInternals, info: tf.TensorInfo, size: number): Float32Array {
  const offset = backend.dataIdMap.get(info.dataId).memoryOffset;
  return new Float32Array(backend.wasm.HEAPU8.buffer, offset, size);
}

/**
 * One AdamW step of one parameter in a single pass over float32 data (the tfjs ops it replaces
 * take ~12 passes): returns the new parameter and updates the moments `m` and `v` IN PLACE (they
 * belong to the optimizer alone). Arithmetic in float64, rounded once per stored value.
 */
function fastAdamW(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo {
  const backend = args.backend as WasmBackendInternals;
  const { param, grad, m: mInfo, v: vInfo } = args.inputs;
  const a = args.attrs as unknown as AdamWKernelAttrs;
  const size = param!.shape.reduce((product, dimension) => product * dimension, 1);
  const out = backend.makeOutput([...param!.shape], 'float32');
  const p = view(backend, param!, size);
  const g = view(backend, grad!, size);
  const m = view(backend, mInfo!, size);
  const v = view(backend, vInfo!, size);
  const y = view(backend, out, size);
  const decay = 1 - a.learningRate * a.weightDecay;
  const step = a.learningRate / a.correction1;
  const { beta1, beta2, epsilon, correction2, gradScale } = a;
  for (let index = 0; index < size; index++) {
    const gradient = g[index]! * gradScale;
    const mNext = beta1 * m[index]! + (1 - beta1) * gradient;
    const vNext = beta2 * v[index]! + (1 - beta2) * gradient * gradient;
    m[index] = mNext;
    v[index] = vNext;
    y[index] = p[index]! * decay - (step * mNext) / (Math.sqrt(vNext / correction2) + epsilon);
  }
  return out;
}

/** Registers {@link FAST_ADAMW} for wasm (idempotent). @internal */
export function registerWasmAdamW(): void {
  if (tf.getKernel(FAST_ADAMW, 'wasm') !== undefined) return;
  tf.registerKernel({
    kernelName: FAST_ADAMW,
    backendName: 'wasm',
    kernelFunc: fastAdamW as unknown as tf.KernelFunc,
  });
}

/** The updated parameter; `m` and `v` are updated in place. @internal */
export function fastAdamWOp(
  param: tf.Tensor,
  grad: tf.Tensor,
  m: tf.Tensor,
  v: tf.Tensor,
  attrs: AdamWKernelAttrs,
): tf.Tensor {
  return tf
    .engine()
    .runKernel(FAST_ADAMW, { param, grad, m, v }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor;
}
