/**
 * onnxruntime-node's native binding, used synchronously: its `session.run` is synchronous under
 * the Promise of the public API, which is what the trainer's synchronous steps need. Inputs are
 * passed as views of the caller's buffers (the binding wraps them without a copy); each output
 * comes back as a new buffer (the 1.30 binding copies outputs, preallocated or not: measured).
 * @internal
 */

export type OrtTensor = { data: Float32Array; dims: readonly number[] };
export type OrtTensorConstructor = new (
  type: 'float32',
  data: Float32Array,
  dims: readonly number[],
) => OrtTensor;
/** The synchronous session of the native binding. */
export type NativeSession = {
  loadModel(buffer: ArrayBufferLike, offset: number, length: number, options: object): void;
  run(
    feeds: Record<string, OrtTensor>,
    fetches: Record<string, null>,
    options: object,
  ): Record<string, OrtTensor>;
  dispose(): void;
};
export type NativeBinding = { InferenceSession: new () => NativeSession };

/** The loaded binding and the public Tensor class. @internal */
export type OrtRuntime = { binding: NativeBinding; Tensor: OrtTensorConstructor };

let runtime: OrtRuntime | undefined;

/**
 * Loads onnxruntime-node's native binding (an optional peer dependency) once.
 * @throws when onnxruntime-node is not installed or its binding does not load.
 * @internal
 */
export async function loadOrtRuntime(): Promise<OrtRuntime> {
  if (runtime !== undefined) return runtime;
  const moduleName = 'onnxruntime-node';
  const ort = (await import(/* @vite-ignore */ moduleName)) as {
    Tensor?: OrtTensorConstructor;
    default?: { Tensor?: OrtTensorConstructor };
  };
  const bindingModule = (await import(/* @vite-ignore */ `${moduleName}/dist/binding.js`)) as {
    binding?: NativeBinding;
    initOrt?: () => void;
    default?: { binding?: NativeBinding; initOrt?: () => void };
  };
  const Tensor = ort.Tensor ?? ort.default?.Tensor;
  const binding = bindingModule.binding ?? bindingModule.default?.binding;
  const initOrt = bindingModule.initOrt ?? bindingModule.default?.initOrt;
  if (Tensor === undefined || binding === undefined || initOrt === undefined) {
    throw new Error('onnxruntime-node has no native binding at dist/binding.js (expected 1.30)');
  }
  initOrt();
  runtime = { binding, Tensor };
  return runtime;
}

/** The runtime once {@link loadOrtRuntime} has resolved, else undefined. @internal */
export function loadedOrtRuntime(): OrtRuntime | undefined {
  return runtime;
}
