import { createHash } from 'node:crypto';
import {
  ErrorCode,
  InvalidArgumentError,
  type NamedTensor,
  RlvrError,
  ShapeMismatchError,
  type WeightSnapshot,
} from '@rlvr/core';
import {
  type Checkpoint,
  type LoraAdapter,
  type ModelConfig,
  parseLlamaConfig,
  parseModelConfig,
} from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { ortMatMulActive } from '../backend/ort-matmul.js';
import { activeBackend, type BackendName } from '../backend/select-backend.js';
import { type ModelInput, type PreparedInput, prepareInput } from '../batch/prepared-input.js';
import {
  baseParts,
  cloneNativeParts,
  createNativeParts,
  type NativeParts,
  nativeLogits,
} from '../native/native-model.js';
import { withoutUnsetNulls } from '../null-as-unset.js';
import { expectedShapes, validatedTensors } from './checkpoint-tensors.js';
import { llamaBackward } from './llama-backward.js';
import { llamaForward } from './llama-forward.js';
import { CREATE_LLAMA_MODEL_OPTIONS, type CreateLlamaModelOptions } from './llama-model-options.js';
import { type MatMulOps, matMulOps } from './ops.js';
import type { NormCache } from './rms-norm.js';

/**
 * Where a model's weights live and what computes with them: `native` — native memory (outside
 * any wasm heap), onnxruntime graphs per layer (the default where onnxruntime-node is installed);
 * `tfjs` — TensorFlow.js tensors on the active tfjs backend (cpu, wasm, tfjs-node(-gpu)).
 */
export type ModelEngine = 'native' | 'tfjs';

/** Parameter tensors by Hugging Face name. Linear weights are held transposed (`[in, out]`). */
type Params = Map<string, tf.Tensor>;

/** A fused projection: the column-concatenated weights (and biases) of several linears. */
export type FusedWeight = { names: string[]; widths: number[]; weight: tf.Tensor2D };

/**
 * What attention's backward needs: the head layouts and probabilities when attention is composed
 * from tfjs ops, or the fused projection output and probabilities for `MatMulOps.attention`.
 * @internal
 */
export type AttentionCore =
  | { kind: 'ops'; qg: tf.Tensor3D; kt: tf.Tensor3D; vb: tf.Tensor3D; p: tf.Tensor3D }
  | { kind: 'fused'; qkv: tf.Tensor2D; p: tf.Tensor };

/** @internal */
export type LayerCache = {
  norm1: NormCache;
  h1: tf.Tensor2D;
  qkv: FusedWeight;
  gateUp: FusedWeight;
  core: AttentionCore;
  attention: tf.Tensor2D;
  norm2: NormCache;
  h2: tf.Tensor2D;
  gate: tf.Tensor2D;
  up: tf.Tensor2D;
  sigmoid: tf.Tensor2D;
  silu: tf.Tensor2D;
  act: tf.Tensor2D;
};

/** Everything the backward pass needs from a forward pass. @internal */
export type ForwardCache = {
  layers: LayerCache[];
  normF: NormCache;
  hf: tf.Tensor2D;
  cos: tf.Tensor3D;
  sin: tf.Tensor3D;
  rotate: tf.Tensor2D;
};

/** Result of {@link LlamaModel.forwardWithCache}. @internal */
export type ForwardResult = { logits: tf.Tensor2D; cache: ForwardCache };

const isLinear = (name: string) => name.endsWith('_proj.weight') || name === 'lm_head.weight';

/**
 * A Llama-family decoder (RMSNorm, RoPE, SwiGLU, grouped-query attention, tied or untied head,
 * optional q/k/v(/o) bias) in TensorFlow.js with a hand-written backward pass: every product is
 * laid out for the backend's fast path (plain 2-D matMuls on wasm), no autodiff tape is recorded,
 * and the same code runs on cpu, wasm and native TensorFlow. Create it with
 * {@link createLlamaModel}; free it with {@link LlamaModel.dispose}.
 */
export class LlamaModel {
  /** The resolved Hugging Face config. */
  readonly config: ModelConfig;
  /** The tfjs backend the model's tensors live on (`tfjs` engine; the active one for `native`). */
  readonly backend: BackendName;
  /** Where the weights live and what computes with them ({@link ModelEngine}). */
  readonly engine: ModelEngine;
  /** @internal tfjs tensors (`tfjs` engine; empty for `native`). */
  params: Params;
  /** @internal the native engine's parts (`native` engine). */
  readonly native: NativeParts | undefined;
  /** @internal */
  readonly ops: MatMulOps;
  private disposed = false;

  /** @internal use {@link createLlamaModel}. */
  constructor(config: ModelConfig, params: Params, backend: BackendName, native?: NativeParts) {
    this.config = config;
    this.params = params;
    this.backend = backend;
    this.native = native;
    this.engine = native ? 'native' : 'tfjs';
    this.ops = matMulOps(backend);
  }

  /** Names of the trainable tensors (Hugging Face names, in checkpoint order). */
  get parameterNames(): string[] {
    if (this.native) return this.native.store.weights.toNamedTensors().map((t) => t.name);
    return [...this.params.keys()];
  }

  /** Number of trainable parameters. */
  get parameterCount(): number {
    if (this.native) return this.native.store.weights.size;
    let count = 0;
    for (const tensor of this.params.values()) count += tensor.size;
    return count;
  }

  /** @internal */
  assertLive(functionName: string): void {
    if (this.disposed) {
      throw new RlvrError(
        ErrorCode.INVALID_ARGUMENT,
        `${functionName}() was called on a disposed LlamaModel`,
      );
    }
  }

  /** @internal */
  param(name: string): tf.Tensor {
    return this.params.get(name)!;
  }

  /**
   * Logits for every position: `result[b][t]` is the distribution of the token after
   * `inputIds[b][t]` (length `vocab_size`).
   *
   * @example
   * ```ts
   * const model = await createLlamaModel(checkpoint);
   * const logits = model.logits({ inputIds: [[1, 5, 7]] }); // [1][3][vocab]
   * ```
   * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for malformed input.
   */
  logits(input: ModelInput): Float32Array[][] {
    this.assertLive('logits');
    const prepared = prepareInput(input, this.config.vocab_size, 'LlamaModel.logits');
    let data: Float32Array;
    if (this.native) data = nativeLogits(this.native, prepared);
    else {
      const flat = tf.tidy(() => this.forwardWithCache(prepared, false).logits);
      data = flat.dataSync() as Float32Array;
      flat.dispose();
    }
    const vocab = this.config.vocab_size;
    const out: Float32Array[][] = [];
    for (let row = 0; row < prepared.batchSize; row++) {
      const rowOut: Float32Array[] = [];
      for (let column = 0; column < prepared.seqLen; column++) {
        const start = (row * prepared.seqLen + column) * vocab;
        rowOut.push(data.slice(start, start + vocab));
      }
      out.push(rowOut);
    }
    return out;
  }

  /**
   * Forward pass on a prepared batch: logits `[B·T, vocab]` and, when `keepCache`, the
   * activations for {@link LlamaModel.backward}. Call inside `tf.tidy`. @internal
   */
  forwardWithCache(input: PreparedInput, keepCache: boolean): ForwardResult {
    return llamaForward(this, input, keepCache);
  }

  /**
   * Backward pass: gradients of every parameter (same names and layouts as the parameters) given
   * d loss / d logits `[B·T, vocab]`. Call inside `tf.tidy`. @internal
   */
  backward(
    input: PreparedInput,
    cache: ForwardCache,
    dLogits: tf.Tensor2D,
  ): Map<string, tf.Tensor> {
    return llamaBackward(this, input, cache, dLogits);
  }

  /** The column-concatenated `[in, Σ out]` weights of `suffixes` in layer `prefix`. @internal */
  fusedWeight(prefix: string, suffixes: string[]): FusedWeight {
    const names = suffixes.map((suffix) => `${prefix}.${suffix}`);
    const weights = names.map((name) => this.param(`${name}.weight`) as tf.Tensor2D);
    return {
      names,
      widths: weights.map((weight) => weight.shape[1]),
      weight: this.ops.concatColumns(weights),
    };
  }

  /**
   * The weights as a Hugging Face-named checkpoint (linear weights back in `[out, in]` layout;
   * with LoRA adapters attached by a trainer, the merged weights `W + s·B·A`: PEFT's
   * `merge_and_unload`).
   *
   * @example
   * ```ts
   * await saveCheckpoint(directory, model.toCheckpoint());
   * ```
   */
  toCheckpoint(): Checkpoint {
    this.assertLive('toCheckpoint');
    return { config: structuredClone(this.config), tensors: this.exportTensors() };
  }

  /**
   * The weights as a {@link WeightSnapshot} for `Sampler.updateWeights`. On the `native` engine
   * the tensors are views of the live weights (no copy): valid until the next optimizer step,
   * which is what core's Sampler contract allows (a sampler copies what it keeps).
   * @throws {InvalidArgumentError} for a negative or non-integer step.
   */
  toWeightSnapshot(step: number): WeightSnapshot {
    this.assertLive('toWeightSnapshot');
    if (!Number.isInteger(step) || step < 0) {
      throw new InvalidArgumentError({
        parameter: 'step',
        functionName: 'LlamaModel.toWeightSnapshot',
        value: step,
        expected: 'an integer >= 0',
      });
    }
    if (this.native) {
      const tensors = this.native.store.weights.toNamedTensors();
      // a sampler samples from the merged weights W + s·B·A (the targeted projections are new arrays)
      const { lora } = this.native;
      return { step, tensors: lora ? lora.merged(tensors, this.native.sessions) : tensors };
    }
    return { step, tensors: this.exportTensors() };
  }

  /**
   * A frozen copy of the weights (or of `checkpoint`'s, same config) on the same engine, sharing
   * the native engine's sessions: a reference policy. @internal
   */
  async frozenCopy(checkpoint?: Checkpoint): Promise<LlamaModel> {
    if (this.native) {
      const copy = cloneNativeParts(this.native);
      if (checkpoint) {
        const functionName = 'createPolicyTrainer';
        copy.store.weights.load(validatedTensors(this.config, checkpoint, { functionName }));
      }
      return new LlamaModel(this.config, new Map(), this.backend, copy);
    }
    return createLlamaModel(checkpoint ?? this.toCheckpoint(), { engine: 'tfjs' });
  }

  /**
   * The LoRA adapters a trainer attached (`lora` option) as a PEFT adapter (copies; save it with
   * @rlvr/model's `saveLoraAdapter`), or undefined when the model has none.
   */
  toLoraAdapter(): LoraAdapter | undefined {
    this.assertLive('toLoraAdapter');
    const lora = this.native?.lora;
    if (!lora) return undefined;
    const { r, alpha, dropout, rslora } = lora.settings;
    return {
      config: {
        r,
        alpha,
        dropout,
        targetModules: lora.layer.modules.map((module) => `${module}_proj`),
        rslora,
        baseModel: null,
      },
      tensors: lora
        .toNamedTensors()
        .map((t) => ({ name: t.name, shape: [...t.shape], data: Float32Array.from(t.data) })),
    };
  }

  /** The model without its LoRA adapters (same weights and sessions): LoRA's reference. @internal */
  baseModel(): LlamaModel {
    return new LlamaModel(this.config, new Map(), this.backend, baseParts(this.native!));
  }

  private exportTensors(): NamedTensor[] {
    if (this.native) {
      const tensors = this.native.store.weights.toNamedTensors();
      const { lora } = this.native;
      const merged = lora ? lora.merged(tensors, this.native.sessions) : tensors;
      // copies: a checkpoint outlives the next optimizer step
      return merged.map((t) => ({
        name: t.name,
        shape: t.shape,
        data: tensors.includes(t) ? Float32Array.from(t.data) : t.data,
      }));
    }
    const out: NamedTensor[] = [];
    for (const [name, tensor] of this.params) {
      const exported = isLinear(name) ? tf.transpose(tensor) : tensor;
      const data = Float32Array.from(exported.dataSync() as Float32Array);
      if (exported !== tensor) exported.dispose();
      out.push({
        name,
        shape: isLinear(name) ? [...tensor.shape].reverse() : [...tensor.shape],
        data,
      });
    }
    return out;
  }

  /**
   * Loads validated Hugging Face tensors (`validatedTensors`: every name of the config, right
   * shapes) into the model's weights. @internal
   */
  loadWeights(tensors: ReadonlyMap<string, Float32Array>): void {
    if (this.native) {
      this.native.store.weights.load(tensors);
      return;
    }
    const next = new Map<string, tf.Tensor>();
    for (const [name, data] of tensors) {
      const shape = [...this.params.get(name)!.shape].reverse();
      next.set(
        name,
        tf.tidy(() => {
          const loaded = tf.tensor(
            data,
            isLinear(name) ? shape : [...this.params.get(name)!.shape],
          );
          return isLinear(name) ? tf.transpose(loaded) : loaded;
        }),
      );
    }
    this.replaceParams(next);
  }

  /** sha256 of the weights (Hugging Face layout, checkpoint order): a base model's identity. @internal */
  weightsFingerprint(): string {
    const hash = createHash('sha256');
    const tensors = this.native ? this.native.store.weights.toNamedTensors() : this.exportTensors();
    for (const tensor of tensors) {
      hash.update(tensor.name);
      hash.update(
        new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength),
      );
    }
    return hash.digest('hex');
  }

  /**
   * Replaces the parameter tensors (same names and shapes); the old ones are disposed. @internal
   */
  replaceParams(next: Map<string, tf.Tensor>): void {
    for (const [name, tensor] of next) {
      const old = this.params.get(name)!;
      if (old !== tensor) old.dispose();
      this.params.set(name, tensor);
    }
  }

  /** Frees every tensor of the model. Further calls throw. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.native?.ownsSessions) this.native.sessions.dispose();
    for (const tensor of this.params.values()) tensor.dispose();
    this.params.clear();
  }
}

/**
 * The tfjs engine implements Llama and Qwen2 without RoPE scaling: a config it would compute wrong
 * (another family, a scaled RoPE) is refused, naming the field (`parseLlamaConfig`'s rules).
 */
function refuseOnTfjs(config: ModelConfig, functionName: string): void {
  try {
    parseLlamaConfig(config);
  } catch (error) {
    if (!InvalidArgumentError.isInstance(error)) throw error;
    throw new InvalidArgumentError({
      parameter: error.parameter.replace(/^config/, 'checkpoint.config'),
      functionName,
      value: error.value,
      expected: `what the tfjs engine implements (llama and qwen2 without rope_scaling); the native engine trains every family: install onnxruntime-node and call selectBackend(), or pass { engine: 'native' }`,
      cause: error,
    });
  }
}

export type { CreateLlamaModelOptions } from './llama-model-options.js';

/**
 * Builds a trainable tfjs {@link LlamaModel} from an @rlvr/model {@link Checkpoint} on the active
 * backend (call {@link selectBackend} first). Every tensor named by the config must be present with
 * its Hugging Face shape; extra tensors are rejected.
 *
 * @example
 * ```ts
 * await selectBackend();
 * const checkpoint = createRandomCheckpoint(parseLlamaConfig({ hidden_size: 64,
 *   num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 128, vocab_size: 32 }), { seed: 1 });
 * const model = await createLlamaModel(checkpoint);
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for a malformed checkpoint;
 * {@link RlvrError} `UNAVAILABLE` when no supported backend is active.
 */
export async function createLlamaModel(
  checkpoint: Checkpoint,
  options?: CreateLlamaModelOptions,
): Promise<LlamaModel> {
  const functionName = 'createLlamaModel';
  if (checkpoint === null || typeof checkpoint !== 'object' || !Array.isArray(checkpoint.tensors)) {
    throw new InvalidArgumentError({
      parameter: 'checkpoint',
      functionName,
      value: checkpoint,
      expected: 'a Checkpoint ({ config, tensors })',
    });
  }
  const { checkFinite, engine: requested } = CREATE_LLAMA_MODEL_OPTIONS.parse(
    withoutUnsetNulls(CREATE_LLAMA_MODEL_OPTIONS.schema, options),
  );
  // every family the model package describes (modelArchitecture); the tfjs engine implements the
  // Llama/Qwen2 rules only: anything else is refused there, by field, before anything is built
  const config = parseModelConfig(checkpoint.config);
  await tf.ready();
  const backend = activeBackend();
  const engine: ModelEngine =
    requested === 'auto' ? (ortMatMulActive() ? 'native' : 'tfjs') : requested;
  if (engine === 'tfjs') refuseOnTfjs(config, functionName);
  const tensors = validatedTensors(config, checkpoint, { functionName, checkFinite });
  const params: Params = new Map();
  if (engine === 'tfjs') {
    const shapes = expectedShapes(config);
    try {
      for (const [name, data] of tensors) {
        const shape = shapes.get(name)!;
        const value = tf.tidy(() => {
          const loaded = tf.tensor(data, shape);
          return isLinear(name) ? tf.transpose(loaded) : loaded;
        });
        params.set(name, value);
      }
    } catch (error) {
      for (const tensor of params.values()) tensor.dispose();
      throw new RlvrError(ErrorCode.MODEL_LOAD_FAILED, `Could not load the checkpoint into tfjs`, {
        cause: error,
      });
    }
  }
  if (engine === 'tfjs') return new LlamaModel(config, params, backend);
  let native: NativeParts;
  try {
    native = await createNativeParts(config, tensors);
  } catch (error) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `createLlamaModel(): the native engine needs onnxruntime-node 1.30 (an optional peer dependency of @rlvr/trainer): ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  return new LlamaModel(config, params, backend, native);
}
