import { ORT_ATTENTION } from './ort-attention.js';
import { ORT_RMS_NORM, ORT_SWIGLU } from './ort-elementwise.js';
import { FAST_ADAMW } from './wasm-adamw.js';

/**
 * Names of the fused kernels this package registers for wasm when onnxruntime-node drives the
 * matrix products (besides matMul itself).
 */
export const ORT_FUSED_KERNELS: readonly string[] = [
  ORT_ATTENTION,
  ORT_SWIGLU,
  ORT_RMS_NORM,
  FAST_ADAMW,
];
