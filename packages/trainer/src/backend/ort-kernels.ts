import { ORT_ATTENTION } from './ort-attention.js';

/** Names of the fused onnxruntime kernels this package registers for wasm (besides matMul). */
export const ORT_FUSED_KERNELS: readonly string[] = [ORT_ATTENTION];
