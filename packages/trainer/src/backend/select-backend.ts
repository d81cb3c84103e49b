import { ErrorCode, InvalidArgumentError, RlvrError, validateOptions } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
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

/** Options of {@link selectBackend}. */
export type SelectBackendOptions = {
  /** Backends to try, in order; the first that loads wins. Default {@link BACKEND_NAMES}. */
  candidates?: readonly BackendName[];
};

/** What {@link selectBackend} chose and what it tried before. */
export type SelectedBackend = {
  /** The active tfjs backend. */
  name: BackendName;
  /** The npm package that provides it. */
  module: string;
  /** Every attempt before the winner, with the reason it failed. */
  skipped: { backend: BackendName; module: string; reason: string }[];
};

/**
 * Loads and activates a tfjs backend at run time (importing this package registers nothing): the
 * first of `candidates` whose package can be imported and initialized. For `wasm` it also registers
 * this package's zero-copy batched matMul kernel (under its own kernel name; nothing is overridden).
 *
 * @example
 * ```ts
 * const backend = await selectBackend(); // tfjs-node(-gpu) if installed, else wasm, else cpu
 * console.log(backend.name, backend.skipped);
 * await selectBackend({ candidates: ['cpu'] }); // force the reference backend
 * ```
 * @throws {InvalidArgumentError} for an unknown candidate.
 * @throws {RlvrError} `UNAVAILABLE` when no candidate loads (the message lists each failure).
 */
export async function selectBackend(options?: SelectBackendOptions): Promise<SelectedBackend> {
  const functionName = 'selectBackend';
  const opts = validateOptions<SelectBackendOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['candidates'],
  });
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
        await import(/* @vite-ignore */ module);
        if (tf.findBackendFactory(backend) === null && tf.findBackend(backend) === null) {
          throw new Error(`importing ${module} registered no '${backend}' backend`);
        }
        const ok = await tf.setBackend(backend);
        if (!ok) throw new Error(`tf.setBackend('${backend}') failed to initialize`);
        await tf.ready();
        if (backend === 'wasm') registerWasmKernels();
        return { name: backend, module, skipped };
      } catch (error) {
        skipped.push({
          backend,
          module,
          reason: error instanceof Error ? error.message.split('\n')[0]! : String(error),
        });
      }
    }
  }
  throw new RlvrError(
    ErrorCode.UNAVAILABLE,
    `No tfjs backend could be loaded (tried ${skipped
      .map((attempt) => `${attempt.module}: ${attempt.reason}`)
      .join('; ')}); install @tensorflow/tfjs-backend-wasm or @tensorflow/tfjs-backend-cpu`,
  );
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
