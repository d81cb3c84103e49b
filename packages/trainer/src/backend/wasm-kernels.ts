import * as tf from '@tensorflow/tfjs-core';

/** Name of the batched matMul kernel this package registers for the wasm backend. */
export const FAST_BATCH_MAT_MUL = 'RlvrBatchMatMul';
/** Name of the (batched) last-two-axes transpose kernel this package registers for wasm. */
export const FAST_TRANSPOSE = 'RlvrTransposeLast2';
/** Name of the row-gather (`tf.gather(x, indices)` on axis 0 of a 2-D tensor) kernel for wasm. */
export const FAST_GATHER_ROWS = 'RlvrGatherRows';
/** Name of the sum-over-rows (axis 0 of a 2-D tensor) kernel this package registers for wasm. */
export const FAST_SUM_ROWS = 'RlvrSumRows';
/** Name of the column split (`tf.split(x, widths, 1)` of a 2-D tensor) kernel for wasm. */
export const FAST_SPLIT_COLUMNS = 'RlvrSplitColumns';
/** Name of the column concat (`tf.concat(xs, 1)` of 2-D tensors, up to 4) kernel for wasm. */
export const FAST_CONCAT_COLUMNS = 'RlvrConcatColumns';
/** Name of the rotary embedding kernel (`x·cos + rotate_half(x)·sin` and its transpose) for wasm. */
export const FAST_ROPE = 'RlvrRope';

type WasmModule = {
  HEAPU8: Uint8Array;
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

/** A float32 view of a tensor's data on the wasm heap (take it after any allocation). */
function heapView(backend: WasmBackendInternals, info: tf.TensorInfo, size: number): Float32Array {
  const offset = backend.dataIdMap.get(info.dataId).memoryOffset;
  return new Float32Array(backend.wasm.HEAPU8.buffer, offset, size);
}

const TILE = 32;

/**
 * `x[i]ᵀ` for each `x[i]` of a `[batch, rows, cols]` (or `[rows, cols]`) float32 tensor, copied in
 * cache-sized tiles (tfjs's wasm Transpose walks the output with a large stride). A pure copy, so
 * the values are identical to `tf.transpose`.
 */
function fastTranspose(args: { inputs: tf.NamedTensorInfoMap; backend: unknown }): tf.TensorInfo {
  const backend = args.backend as WasmBackendInternals;
  const x = args.inputs.x!;
  const shape = x.shape;
  const rows = shape[shape.length - 2]!;
  const cols = shape[shape.length - 1]!;
  const batch = shape.length === 3 ? shape[0]! : 1;
  const outShape = shape.length === 3 ? [batch, cols, rows] : [cols, rows];
  const out = backend.makeOutput(outShape, 'float32');
  const size = batch * rows * cols;
  const source = heapView(backend, x, size);
  const target = heapView(backend, out, size);
  for (let item = 0; item < batch; item++) {
    const base = item * rows * cols;
    for (let r0 = 0; r0 < rows; r0 += TILE) {
      const r1 = Math.min(r0 + TILE, rows);
      for (let c0 = 0; c0 < cols; c0 += TILE) {
        const c1 = Math.min(c0 + TILE, cols);
        for (let c = c0; c < c1; c++) {
          let o = base + c * rows + r0;
          let i = base + r0 * cols + c;
          for (let r = r0; r < r1; r++) {
            target[o++] = source[i]!;
            i += cols;
          }
        }
      }
    }
  }
  return out;
}

/**
 * Column sums of a 2-D float32 tensor (`tf.sum(x, 0)`), accumulated row after row in float32 — the
 * same order and rounding as tfjs's wasm Sum (which transposes first and sums each column
 * sequentially), without the transpose.
 */
function fastSumRows(args: { inputs: tf.NamedTensorInfoMap; backend: unknown }): tf.TensorInfo {
  const backend = args.backend as WasmBackendInternals;
  const x = args.inputs.x!;
  const [rows, cols] = x.shape as [number, number];
  const out = backend.makeOutput([cols], 'float32');
  const source = heapView(backend, x, rows * cols);
  const target = heapView(backend, out, cols);
  target.fill(0);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) target[c] = target[c]! + source[base + c]!;
  }
  return out;
}

/**
 * Rows `indices[i]` of a 2-D float32 tensor (`tf.gather(x, indices)`), copied with one memcpy per
 * row (tfjs's wasm GatherV2 is ~10× slower for an embedding lookup). Indices are int32 and must be
 * in range (the caller validates token ids).
 */
function fastGatherRows(args: { inputs: tf.NamedTensorInfoMap; backend: unknown }): tf.TensorInfo {
  const backend = args.backend as WasmBackendInternals;
  const x = args.inputs.x!;
  const indices = args.inputs.indices!;
  const cols = x.shape[1]!;
  const count = indices.shape[0]!;
  const out = backend.makeOutput([count, cols], 'float32');
  const heap = new Float32Array(backend.wasm.HEAPU8.buffer);
  const source = backend.dataIdMap.get(x.dataId).memoryOffset / 4;
  const target = backend.dataIdMap.get(out.dataId).memoryOffset / 4;
  const indexOffset = backend.dataIdMap.get(indices.dataId).memoryOffset;
  const index = new Int32Array(backend.wasm.HEAPU8.buffer, indexOffset, count);
  for (let row = 0; row < count; row++) {
    const start = source + index[row]! * cols;
    heap.copyWithin(target + row * cols, start, start + cols);
  }
  return out;
}

/**
 * Column blocks of a 2-D float32 tensor (`tf.split(x, widths, 1)`), one row copy per block (tfjs's
 * wasm SplitV slices ~50× slower for `[2048, 704]`). Pure copies: identical values.
 */
function fastSplitColumns(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo[] {
  const backend = args.backend as WasmBackendInternals;
  const x = args.inputs.x!;
  const widths = args.attrs!.widths as number[];
  const [rows, cols] = x.shape as [number, number];
  const outs = widths.map((width) => backend.makeOutput([rows, width], 'float32'));
  const heap = new Float32Array(backend.wasm.HEAPU8.buffer);
  const source = backend.dataIdMap.get(x.dataId).memoryOffset / 4;
  let start = 0;
  widths.forEach((width, index) => {
    const target = backend.dataIdMap.get(outs[index]!.dataId).memoryOffset / 4;
    for (let row = 0; row < rows; row++) {
      const from = source + row * cols + start;
      heap.copyWithin(target + row * width, from, from + width);
    }
    start += width;
  });
  return outs;
}

/** `tf.concat([x0, x1, …], 1)` of 2-D float32 tensors with the same rows (pure copies). */
function fastConcatColumns(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
}): tf.TensorInfo {
  const backend = args.backend as WasmBackendInternals;
  const parts = ['x0', 'x1', 'x2', 'x3']
    .map((name) => args.inputs[name])
    .filter((part): part is tf.TensorInfo => part !== undefined);
  const rows = parts[0]!.shape[0]!;
  const cols = parts.reduce((sum, part) => sum + part.shape[1]!, 0);
  const out = backend.makeOutput([rows, cols], 'float32');
  const heap = new Float32Array(backend.wasm.HEAPU8.buffer);
  const target = backend.dataIdMap.get(out.dataId).memoryOffset / 4;
  let start = 0;
  for (const part of parts) {
    const width = part.shape[1]!;
    const source = backend.dataIdMap.get(part.dataId).memoryOffset / 4;
    for (let row = 0; row < rows; row++) {
      const from = source + row * width;
      heap.copyWithin(target + row * cols + start, from, from + width);
    }
    start += width;
  }
  return out;
}

/**
 * Rotary embedding of `x` `[n, heads·d]` with tables `cos`, `sin` `[n, d]` in one pass:
 * `x·cos + rotate_half(x)·sin` (forward) or, with `transpose`, its adjoint
 * `x·cos + rotate_halfᵀ(x·sin)` (backward). Each product and the sum are rounded to float32 as the
 * tfjs ops they replace (mul, matMul by the ±1 permutation matrix, add).
 */
function fastRope(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo {
  const backend = args.backend as WasmBackendInternals;
  const { x: xInfo, cos: cosInfo, sin: sinInfo } = args.inputs;
  const transpose = args.attrs!.transpose as boolean;
  const [n, width] = xInfo!.shape as [number, number];
  const d = cosInfo!.shape[cosInfo!.shape.length - 1]!;
  const half = d / 2;
  const out = backend.makeOutput([n, width], 'float32');
  const x = heapView(backend, xInfo!, n * width);
  const cos = heapView(backend, cosInfo!, n * d);
  const sin = heapView(backend, sinInfo!, n * d);
  const y = heapView(backend, out, n * width);
  const round = Math.fround;
  for (let token = 0; token < n; token++) {
    const table = token * d;
    for (let base = token * width; base < (token + 1) * width; base += d) {
      for (let i = 0; i < half; i++) {
        const low = base + i;
        const high = low + half;
        const c0 = cos[table + i]!;
        const c1 = cos[table + half + i]!;
        const s0 = sin[table + i]!;
        const s1 = sin[table + half + i]!;
        if (transpose) {
          // adjoint of rotate_half: [a, b] -> [b, -a], applied to x·sin
          y[low] = round(x[low]! * c0) + round(x[high]! * s1);
          y[high] = round(x[high]! * c1) - round(x[low]! * s0);
        } else {
          y[low] = round(x[low]! * c0) + round(-x[high]! * s0);
          y[high] = round(x[high]! * c1) + round(x[low]! * s1);
        }
      }
    }
  }
  return out;
}

/**
 * Registers this package's wasm kernels (idempotent). Called by {@link selectBackend} when it picks
 * wasm; it adds a kernel under a new name and overrides nothing.
 */
export function registerWasmKernels(): void {
  const kernels: [string, unknown][] = [
    [FAST_BATCH_MAT_MUL, fastBatchMatMul],
    [FAST_TRANSPOSE, fastTranspose],
    [FAST_SUM_ROWS, fastSumRows],
    [FAST_GATHER_ROWS, fastGatherRows],
    [FAST_SPLIT_COLUMNS, fastSplitColumns],
    [FAST_CONCAT_COLUMNS, fastConcatColumns],
    [FAST_ROPE, fastRope],
  ];
  for (const [kernelName, kernelFunc] of kernels) {
    if (tf.getKernel(kernelName, 'wasm') !== undefined) continue;
    tf.registerKernel({
      kernelName,
      backendName: 'wasm',
      kernelFunc: kernelFunc as tf.KernelFunc,
    });
  }
}
