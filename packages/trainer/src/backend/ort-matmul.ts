import { GraphBuilder, OnnxDataType, valueInfo } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { loadOrtRuntime, type NativeSession, type OrtRuntime } from '../ort/ort-binding.js';

/** Name of the matMul kernel this package registers for wasm when onnxruntime-node is installed. */
export const ORT_MAT_MUL = 'RlvrOrtMatMul';

/** Attributes of {@link ORT_MAT_MUL}: transpose flags of the last two axes. */
export type OrtMatMulAttrs = { transposeA: boolean; transposeB: boolean };

type WasmBackendInternals = {
  wasm: { HEAPU8: Uint8Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
};

let runtime: OrtRuntime | undefined;
let active = false;
/** Threads of the matMul sessions created from now on (0: onnxruntime's default, all cores). */
let threads = 0;
const sessions = new Map<string, NativeSession>();

/**
 * Options of a matMul session: MLAS on `threads` threads, sequential; no spinning between ops
 * unless `spinning` (a whole train step in one run: hundreds of ops back to back, where waking the
 * pool's threads for each one costs more than keeping them spinning).
 */
function sessionOptions(spinning = false): object {
  return {
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    interOpNumThreads: 1,
    intraOpNumThreads: threads,
    ...(spinning ? {} : { extra: { session: { intra_op: { allow_spinning: '0' } } } }),
  };
}

/** Loads onnxruntime-node's binding (`../ort/`) and keeps it for the kernels. */
async function loadRuntime(): Promise<OrtRuntime> {
  runtime ??= await loadOrtRuntime();
  return runtime;
}

/**
 * `op(a) @ op(b)` for rank-2 or rank-3 operands of any size (symbolic dimensions), as a one-node
 * ONNX model: one session per rank and transpose flags serves every shape.
 */
function matMulModel(rank: number, attrs: OrtMatMulAttrs): Uint8Array {
  const graph = new GraphBuilder();
  const perm = rank === 2 ? [1, 0] : [0, 2, 1];
  const a = attrs.transposeA ? graph.op('Transpose', ['a'], { perm }) : 'a';
  const b = attrs.transposeB ? graph.op('Transpose', ['b'], { perm }) : 'b';
  // ORT fuses Transpose + MatMul into one MLAS GEMM with the transpose flags.
  graph.add('MatMul', [a, b], {}, ['y']);
  const dims = (name: string) => Array.from({ length: rank }, (_, axis) => `${name}${axis}`);
  return graph.encode({
    irVersion: 8,
    opset: 17,
    producerName: '@rlvr/trainer',
    graph: {
      name: 'matmul',
      input: [
        valueInfo('a', OnnxDataType.FLOAT, dims('a')),
        valueInfo('b', OnnxDataType.FLOAT, dims('b')),
      ],
      output: [valueInfo('y', OnnxDataType.FLOAT)],
    },
  });
}

function sessionFor(rank: number, attrs: OrtMatMulAttrs): NativeSession {
  const key = `${rank}|${+attrs.transposeA}${+attrs.transposeB}|${threads}`;
  let session = sessions.get(key);
  if (session === undefined) {
    const bytes = matMulModel(rank, attrs);
    session = new runtime!.binding.InferenceSession();
    session.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, sessionOptions());
    sessions.set(key, session);
  }
  return session;
}

function heapView(backend: WasmBackendInternals, info: tf.TensorInfo): Float32Array {
  const offset = backend.dataIdMap.get(info.dataId).memoryOffset;
  const size = info.shape.reduce((product, dimension) => product * dimension, 1);
  return new Float32Array(backend.wasm.HEAPU8.buffer, offset, size);
}

/** One float32 input of {@link runOrtGraph}: a wasm tensor passed under `dims` (same size). */
export type OrtFeed = { name: string; info: tf.TensorInfo; dims: readonly number[] };

/**
 * Runs the one-session ONNX graph `key` (built by `build` on first use, on the matMul threads;
 * `spinning`: see `sessionOptions`) on wasm tensors: the inputs are views of the wasm heap (no copy), each output is copied once into a
 * new wasm tensor of the given shape. For this package's fused kernels. @internal
 */
export function runOrtGraph(
  backendInfo: unknown,
  key: string,
  build: () => Uint8Array,
  feeds: readonly OrtFeed[],
  outputs: readonly { name: string; shape: number[] }[],
  options: { spinning?: boolean } = {},
): tf.TensorInfo[] {
  const backend = backendInfo as WasmBackendInternals;
  const sessionKey = `${key}|${threads}`;
  let session = sessions.get(sessionKey);
  if (session === undefined) {
    const bytes = build();
    session = new runtime!.binding.InferenceSession();
    const sessionSettings = sessionOptions(options.spinning);
    session.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, sessionSettings);
    sessions.set(sessionKey, session);
  }
  // Allocate first: a heap growth detaches views taken before it.
  const outs = outputs.map((output) => backend.makeOutput(output.shape, 'float32'));
  const { Tensor } = runtime!;
  const result = session.run(
    Object.fromEntries(
      feeds.map((feed) => [
        feed.name,
        new Tensor('float32', heapView(backend, feed.info), feed.dims),
      ]),
    ),
    Object.fromEntries(outputs.map((output) => [output.name, null])),
    {},
  );
  outputs.forEach((output, index) => {
    heapView(backend, outs[index]!).set(result[output.name]!.data);
  });
  return outs;
}

/**
 * `op(a) @ op(b)` on onnxruntime's MLAS GEMM (AVX-512, all cores) for float32 tensors on the wasm
 * heap: the operands are passed to ORT as views (no copy), the product is copied once into the
 * output tensor. Shapes `[m, k]`/`[k, n]` or `[batch, m, k]`/`[batch, k, n]` before transposes.
 */
function ortMatMul(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo {
  const backend = args.backend as WasmBackendInternals;
  const a = args.inputs.a!;
  const b = args.inputs.b!;
  const attrs = args.attrs as unknown as OrtMatMulAttrs;
  const rank = a.shape.length;
  const m = a.shape[attrs.transposeA ? rank - 1 : rank - 2]!;
  const n = b.shape[attrs.transposeB ? rank - 2 : rank - 1]!;
  const outShape = rank === 3 ? [a.shape[0]!, m, n] : [m, n];
  const out = backend.makeOutput(outShape, 'float32');
  const session = sessionFor(rank, attrs);
  const { Tensor } = runtime!;
  const result = session.run(
    {
      a: new Tensor('float32', heapView(backend, a), a.shape),
      b: new Tensor('float32', heapView(backend, b), b.shape),
    },
    { y: null },
    {},
  );
  heapView(backend, out).set(result.y!.data);
  return out;
}

/**
 * Loads onnxruntime-node and registers {@link ORT_MAT_MUL} for wasm (idempotent), then makes
 * models created afterwards use it on `threadCount` threads (0: all cores). Called by
 * `selectBackend`.
 * @throws when onnxruntime-node cannot be loaded.
 */
export async function enableOrtMatMul(threadCount = 0): Promise<void> {
  await loadRuntime();
  threads = threadCount;
  if (tf.getKernel(ORT_MAT_MUL, 'wasm') === undefined) {
    tf.registerKernel({
      kernelName: ORT_MAT_MUL,
      backendName: 'wasm',
      kernelFunc: ortMatMul as unknown as tf.KernelFunc,
    });
  }
  active = true;
}

/** Makes models created afterwards use the backend's own matMul again. */
export function disableOrtMatMul(): void {
  active = false;
}

/** True when models created now run their matMuls on onnxruntime (wasm only). @internal */
export function ortMatMulActive(): boolean {
  return active && tf.getKernel(ORT_MAT_MUL, 'wasm') !== undefined;
}

/** `op(a) @ op(b)` through {@link ORT_MAT_MUL} (2-D or batched 3-D). @internal */
export function ortMatMulOp<T extends tf.Tensor2D | tf.Tensor3D>(
  a: T,
  b: T,
  transposeA: boolean,
  transposeB: boolean,
): T {
  const attrs = { transposeA, transposeB } as unknown as tf.NamedAttrMap;
  return tf.engine().runKernel(ORT_MAT_MUL, { a, b }, attrs) as T;
}
