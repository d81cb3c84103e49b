import * as tf from '@tensorflow/tfjs-core';

/** Name of the batched matMul kernel this package registers for the wasm backend. */
export const FAST_BATCH_MAT_MUL = 'RlvrBatchMatMul';

type WasmModule = {
  cwrap: (name: string, ret: null, args: string[]) => (...args: unknown[]) => void;
  tfjs: {
    registerTensor: (id: number, size: number, memoryOffset: number) => void;
    disposeData: (id: number) => void;
  };
};

type WasmBackendInternals = {
  wasm: WasmModule;
  dataIdNextNumber: number;
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
};

let batchMatMulCall: ((...args: unknown[]) => void) | undefined;

/**
 * A batched `a[i] @ b[i]` (no transposes) that runs each batch item through the wasm backend's
 * single-matrix XNNPACK path on zero-copy views of the operands (tfjs's own BatchMatMul takes a slow
 * reference loop for batch > 1, and slicing copies). Operands are `[batch, m, k]` and
 * `[batch, k, n]`, float32.
 */
function fastBatchMatMul(args: { inputs: tf.NamedTensorInfoMap; backend: unknown }): tf.TensorInfo {
  const backend = args.backend as WasmBackendInternals;
  const a = args.inputs.a!;
  const b = args.inputs.b!;
  const [batch, m, k] = a.shape as [number, number, number];
  const n = b.shape[2]!;
  const out = backend.makeOutput([batch, m, n], 'float32');
  if (batchMatMulCall === undefined) {
    batchMatMulCall = backend.wasm.cwrap('BatchMatMul', null, [
      'number',
      'array',
      'number',
      'number',
      'array',
      'number',
      'number',
      'number',
      'number',
    ]);
  }
  const aOffset = backend.dataIdMap.get(a.dataId).memoryOffset;
  const bOffset = backend.dataIdMap.get(b.dataId).memoryOffset;
  const outOffset = backend.dataIdMap.get(out.dataId).memoryOffset;
  const aShape = new Uint8Array(new Int32Array([1, m, k]).buffer);
  const bShape = new Uint8Array(new Int32Array([1, k, n]).buffer);
  const { tfjs } = backend.wasm;
  const view = (offset: number, size: number) => {
    const id = backend.dataIdNextNumber++;
    tfjs.registerTensor(id, size, offset);
    return id;
  };
  for (let index = 0; index < batch; index++) {
    const aId = view(aOffset + 4 * index * m * k, m * k);
    const bId = view(bOffset + 4 * index * k * n, k * n);
    const outId = view(outOffset + 4 * index * m * n, m * n);
    batchMatMulCall(aId, aShape, 3, bId, bShape, 3, false, false, outId);
    tfjs.disposeData(aId);
    tfjs.disposeData(bId);
    tfjs.disposeData(outId);
  }
  return out;
}

/**
 * Registers this package's wasm kernels (idempotent). Called by {@link selectBackend} when it picks
 * wasm; it adds a kernel under a new name and overrides nothing.
 */
export function registerWasmKernels(): void {
  if (tf.getKernel(FAST_BATCH_MAT_MUL, 'wasm') !== undefined) return;
  tf.registerKernel({
    kernelName: FAST_BATCH_MAT_MUL,
    backendName: 'wasm',
    kernelFunc: fastBatchMatMul as unknown as tf.KernelFunc,
  });
}
