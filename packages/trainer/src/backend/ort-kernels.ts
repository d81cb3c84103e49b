import { ORT_ATTENTION } from './ort-attention.js';
import { ORT_RMS_NORM, ORT_SWIGLU } from './ort-elementwise.js';

/** Names of the fused onnxruntime kernels this package registers for wasm (besides matMul). */
export const ORT_FUSED_KERNELS: readonly string[] = [ORT_ATTENTION, ORT_SWIGLU, ORT_RMS_NORM];
