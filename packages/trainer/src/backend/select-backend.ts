import { ErrorCode, InvalidArgumentError, RlvrError } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { withoutUnsetNulls } from '../null-as-unset.js';
import { registerOrtAttention } from './ort-attention.js';
import { disableOrtMatMul, enableOrtMatMul } from './ort-matmul.js';
import { SELECT_BACKEND_OPTIONS, type SelectBackendOptions } from './select-backend-options.js';
import { registerWasmKernels } from './wasm-kernels.js';

/**
 * A tfjs backend this package can train on, fastest first:
 * - `tensorflow`: native TensorFlow through `@tensorflow/tfjs-node-gpu` (CUDA) or
 *   `@tensorflow/tfjs-node` (CPU), when the user installed one (optional peer dependencies),
 * - `wasm`: `@tensorflow/tfjs-backend-wasm` (SIMD + XNNPACK; loads offline from the npm package),
 * - `cpu`: `@tensorflow/tfjs-backend-cpu` (pure JavaScript, ~1 GFLOP/s: for correctness checks).
 */
export type BackendName = 'tensorflow' | 'wasm' | 'cpu';

/** Every {@link BackendName}, in the default order of preference. */
export const BACKEND_NAMES: readonly BackendName[] = ['tensorflow', 'wasm', 'cpu'];

const MODULES: Record<BackendName, readonly string[]> = {
  tensorflow: ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'],
  wasm: ['@tensorflow/tfjs-backend-wasm'],
  cpu: ['@tensorflow/tfjs-backend-cpu'],
};

/**
 * Where the matrix products of a model run on the `wasm` backend:
 * - `onnxruntime`: onnxruntime-node's MLAS GEMM (AVX2/AVX-512, all cores), called synchronously
 *   from a tfjs kernel on the wasm heap; needs the optional peer dependency `onnxruntime-node`,
 * - `backend`: tfjs-backend-wasm's own XNNPACK matMul (SIMD-128, one thread).
 */
export type MatMulEngine = 'onnxruntime' | 'backend';

export type { SelectBackendOptions } from './select-backend-options.js';

/** What {@link selectBackend} chose and what it tried before. */
export type SelectedBackend = {
  /** The active tfjs backend. */
  name: BackendName;
  /** The npm package that provides it. */
  module: string;
  /** Every attempt before the winner, with the reason it failed. */
  skipped: { backend: BackendName; module: string; reason: string }[];
  /** Where models created from now on run their matrix products (`backend` off wasm). */
  matMul: MatMulEngine;
  /** Why `matMul: 'auto'` did not take onnxruntime on wasm (absent otherwise). */
  matMulFallback?: string;
};

/**
 * Loads and activates a tfjs backend at run time (importing this package registers nothing): the
 * first of `candidates` whose package can be imported and initialized. For `wasm` it also registers
 * this package's kernels (under their own names; nothing is overridden) and, unless
 * `matMul: 'backend'`, routes every matrix product of models created afterwards to onnxruntime-node's
 * MLAS GEMM when onnxruntime-node is installed (2–3× tfjs-backend-wasm's XNNPACK on the trainer's
 * shapes, and it uses every core).
 *
 * @example
 * ```ts
 * const backend = await selectBackend(); // tfjs-node(-gpu) if installed, else wasm, else cpu
 * console.log(backend.name, backend.matMul, backend.skipped); // e.g. 'wasm' 'onnxruntime' [...]
 * await selectBackend({ candidates: ['cpu'] }); // force the reference backend
 * ```
 * @throws {InvalidArgumentError} for an unknown candidate.
 * @throws {RlvrError} `UNAVAILABLE` when no candidate loads (the message lists each failure).
 */
export async function selectBackend(options?: SelectBackendOptions): Promise<SelectedBackend> {
  const functionName = 'selectBackend';
  const opts = SELECT_BACKEND_OPTIONS.parse(
    withoutUnsetNulls(SELECT_BACKEND_OPTIONS.schema, options),
  );
  const matMul = opts.matMul;
  if (!['auto', 'onnxruntime', 'backend'].includes(matMul)) {
    throw new InvalidArgumentError({
      parameter: 'options.matMul',
      functionName,
      value: matMul,
      expected: "'auto', 'onnxruntime' or 'backend'",
    });
  }
  const threads = opts.matMulThreads ?? 0;
  if (
    opts.matMulThreads !== undefined &&
    !(Number.isInteger(threads) && threads >= 1 && threads <= 1024)
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.matMulThreads',
      functionName,
      value: opts.matMulThreads,
      expected: 'an integer from 1 to 1024',
    });
  }
  const candidates: readonly BackendName[] = opts.candidates ?? BACKEND_NAMES;
  if (!Array.isArray(candidates) || candidates.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.candidates',
      functionName,
      value: candidates,
      expected: `a non-empty array of ${BACKEND_NAMES.map((name) => `'${name}'`).join(', ')}`,
    });
  }
  candidates.forEach((candidate, index) => {
    if (!BACKEND_NAMES.includes(candidate)) {
      throw new InvalidArgumentError({
        parameter: `options.candidates[${index}]`,
        functionName,
        value: candidate,
        expected: `one of ${BACKEND_NAMES.map((name) => `'${name}'`).join(', ')}`,
      });
    }
  });
  const skipped: SelectedBackend['skipped'] = [];
  for (const backend of candidates as readonly BackendName[]) {
    for (const module of MODULES[backend]) {
      try {
        await activate(backend, module);
      } catch (error) {
        skipped.push({
          backend,
          module,
          reason: error instanceof Error ? error.message.split('\n')[0]! : String(error),
        });
        continue;
      }
      if (backend !== 'wasm') {
        disableOrtMatMul();
        return { name: backend, module, skipped, matMul: 'backend' };
      }
      registerWasmKernels();
      return { name: backend, module, skipped, ...(await chooseMatMul(matMul, threads)) };
    }
  }
  throw new RlvrError(
    ErrorCode.UNAVAILABLE,
    `No tfjs backend could be loaded (tried ${skipped
      .map((attempt) => `${attempt.module}: ${attempt.reason}`)
      .join('; ')}); install @tensorflow/tfjs-backend-wasm or @tensorflow/tfjs-backend-cpu`,
  );
}

async function activate(backend: BackendName, module: string): Promise<void> {
  await import(/* @vite-ignore */ module);
  if (tf.findBackendFactory(backend) === null && tf.findBackend(backend) === null) {
    throw new Error(`importing ${module} registered no '${backend}' backend`);
  }
  const ok = await tf.setBackend(backend);
  if (!ok) throw new Error(`tf.setBackend('${backend}') failed to initialize`);
  await tf.ready();
}

async function chooseMatMul(
  matMul: 'auto' | MatMulEngine,
  threads: number,
): Promise<{ matMul: MatMulEngine; matMulFallback?: string }> {
  disableOrtMatMul();
  if (matMul === 'backend') return { matMul };
  try {
    await enableOrtMatMul(threads);
    registerOrtAttention();
    return { matMul: 'onnxruntime' };
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    if (matMul === 'auto') return { matMul: 'backend', matMulFallback: reason };
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `selectBackend(): options.matMul is 'onnxruntime' but onnxruntime-node could not be loaded (${reason}); install onnxruntime-node 1.30 or pass matMul: 'auto'`,
    );
  }
}

/**
 * The name of the active tfjs backend as a {@link BackendName}.
 * @throws {RlvrError} `UNAVAILABLE` when the active backend is not one this package trains on.
 */
export function activeBackend(): BackendName {
  const name = tf.getBackend();
  if (!BACKEND_NAMES.includes(name as BackendName)) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `The active tfjs backend '${name}' is not supported for training; call selectBackend() first`,
    );
  }
  return name as BackendName;
}
