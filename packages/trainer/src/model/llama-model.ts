import {
  ErrorCode,
  InvalidArgumentError,
  type NamedTensor,
  RlvrError,
  ShapeMismatchError,
  validateOptions,
  type WeightSnapshot,
} from '@rlvr/core';
import { type Checkpoint, type LlamaConfig, parseLlamaConfig } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { activeBackend, type BackendName } from '../backend/select-backend.js';
import { llamaBackward } from './llama-backward.js';
import { type MatMulOps, matMulOps } from './ops.js';
import {
  attentionBias,
  type ModelInput,
  type PreparedInput,
  prepareInput,
} from './prepared-input.js';
import { type NormCache, rmsNormForward } from './rms-norm.js';
import { ropeTables, rotateHalfMatrix } from './rope.js';

/** Parameter tensors by Hugging Face name. Linear weights are held transposed (`[in, out]`). */
type Params = Map<string, tf.Tensor>;

/** A fused projection: the column-concatenated weights (and biases) of several linears. */
export type FusedWeight = { names: string[]; widths: number[]; weight: tf.Tensor2D };

/** @internal */
export type LayerCache = {
  norm1: NormCache;
  h1: tf.Tensor2D;
  qkv: FusedWeight;
  gateUp: FusedWeight;
  qg: tf.Tensor3D;
  kt: tf.Tensor3D;
  vb: tf.Tensor3D;
  p: tf.Tensor3D;
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
  readonly config: LlamaConfig;
  /** The tfjs backend the model's tensors live on. */
  readonly backend: BackendName;
  /** @internal */
  params: Params;
  /** @internal */
  readonly ops: MatMulOps;
  private disposed = false;

  /** @internal use {@link createLlamaModel}. */
  constructor(config: LlamaConfig, params: Params, backend: BackendName) {
    this.config = config;
    this.params = params;
    this.backend = backend;
    this.ops = matMulOps(backend);
  }

  /** Names of the trainable tensors (Hugging Face names, in checkpoint order). */
  get parameterNames(): string[] {
    return [...this.params.keys()];
  }

  /** Number of trainable parameters. */
  get parameterCount(): number {
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
    const flat = tf.tidy(() => this.forwardWithCache(prepared, false).logits);
    const data = flat.dataSync() as Float32Array;
    flat.dispose();
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
    const config = this.config;
    const { batchSize: b, seqLen: t } = input;
    const n = b * t;
    const heads = config.num_attention_heads;
    const kvHeads = config.num_key_value_heads;
    const group = heads / kvHeads;
    const headDim = config.head_dim;
    const ops = this.ops;
    const rope = ropeTables(input.positions, headDim, config.rope_theta);
    const cos = tf.tensor3d(rope.cos, [n, 1, headDim]);
    const sin = tf.tensor3d(rope.sin, [n, 1, headDim]);
    const rotate = tf.tensor2d(rotateHalfMatrix(headDim), [headDim, headDim]);
    const bias = tf.tensor4d(attentionBias(input), [b, 1, t, t]);
    const scale = 1 / Math.sqrt(headDim);
    const applyRope = (x: tf.Tensor2D, count: number): tf.Tensor2D => {
      if (ops.rope) return ops.rope(x, cos, sin, false);
      const rotated = ops.mm(tf.reshape(x, [n * count, headDim]), rotate);
      const x3 = tf.reshape(x, [n, count, headDim]);
      const r3 = tf.reshape(rotated, [n, count, headDim]);
      return tf.reshape(tf.add(tf.mul(x3, cos), tf.mul(r3, sin)), [n, count * headDim]);
    };
    const linear = (x: tf.Tensor2D, name: string): tf.Tensor2D => {
      const out = ops.mm(x, this.param(`${name}.weight`) as tf.Tensor2D);
      const biasName = `${name}.bias`;
      return this.params.has(biasName) ? tf.add(out, this.param(biasName)) : out;
    };
    /** One product for projections of the same input (q/k/v, gate/up), split by columns. */
    const fusedLinear = (x: tf.Tensor2D, fused: FusedWeight): tf.Tensor2D[] => {
      let out = ops.mm(x, fused.weight);
      const biases = fused.names.map((name) => this.params.get(`${name}.bias`));
      if (biases.every((bias) => bias !== undefined)) out = tf.add(out, tf.concat(biases, 0));
      return ops.splitColumns(out, fused.widths);
    };

    let x: tf.Tensor = ops.gatherRows(
      this.param('model.embed_tokens.weight') as tf.Tensor2D,
      input.ids,
    );
    const layers: LayerCache[] = [];
    for (let layer = 0; layer < config.num_hidden_layers; layer++) {
      const prefix = `model.layers.${layer}`;
      const norm1 = rmsNormForward(x as tf.Tensor2D, config.rms_norm_eps);
      const h1 = tf.mul(norm1.xhat, this.param(`${prefix}.input_layernorm.weight`)) as tf.Tensor2D;
      const qkv = this.fusedWeight(prefix, [
        'self_attn.q_proj',
        'self_attn.k_proj',
        'self_attn.v_proj',
      ]);
      const [qRaw, kRaw, v] = fusedLinear(h1, qkv) as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
      const q = applyRope(qRaw, heads);
      const k = applyRope(kRaw, kvHeads);
      const qg = tf.reshape(
        tf.transpose(tf.reshape(tf.mul(q, scale), [b, t, heads, headDim]), [0, 2, 1, 3]),
        [b * kvHeads, group * t, headDim],
      ) as tf.Tensor3D;
      const kt = tf.reshape(tf.transpose(tf.reshape(k, [b, t, kvHeads, headDim]), [0, 2, 3, 1]), [
        b * kvHeads,
        headDim,
        t,
      ]) as tf.Tensor3D;
      const vb = tf.reshape(tf.transpose(tf.reshape(v, [b, t, kvHeads, headDim]), [0, 2, 1, 3]), [
        b * kvHeads,
        t,
        headDim,
      ]) as tf.Tensor3D;
      const scores = tf.add(tf.reshape(ops.bmm(qg, kt), [b, heads, t, t]), bias);
      const p = tf.reshape(tf.softmax(scores), [b * kvHeads, group * t, t]) as tf.Tensor3D;
      const o = ops.bmm(p, vb);
      const attention = tf.reshape(
        tf.transpose(tf.reshape(o, [b, heads, t, headDim]), [0, 2, 1, 3]),
        [n, heads * headDim],
      ) as tf.Tensor2D;
      x = tf.add(x, linear(attention, `${prefix}.self_attn.o_proj`));
      const norm2 = rmsNormForward(x as tf.Tensor2D, config.rms_norm_eps);
      const h2 = tf.mul(
        norm2.xhat,
        this.param(`${prefix}.post_attention_layernorm.weight`),
      ) as tf.Tensor2D;
      const gateUp = this.fusedWeight(prefix, ['mlp.gate_proj', 'mlp.up_proj']);
      const [gate, up] = fusedLinear(h2, gateUp) as [tf.Tensor2D, tf.Tensor2D];
      const sigmoid = tf.sigmoid(gate) as tf.Tensor2D;
      const silu = tf.mul(gate, sigmoid) as tf.Tensor2D;
      const act = tf.mul(silu, up) as tf.Tensor2D;
      x = tf.add(x, linear(act, `${prefix}.mlp.down_proj`));
      if (keepCache) {
        layers.push({
          norm1,
          h1,
          qkv,
          gateUp,
          qg,
          kt,
          vb,
          p,
          attention,
          norm2,
          h2,
          gate,
          up,
          sigmoid,
          silu,
          act,
        });
      }
    }
    const normF = rmsNormForward(x as tf.Tensor2D, config.rms_norm_eps);
    const hf = tf.mul(normF.xhat, this.param('model.norm.weight')) as tf.Tensor2D;
    const logits = config.tie_word_embeddings
      ? ops.mmNT(hf, this.param('model.embed_tokens.weight') as tf.Tensor2D)
      : ops.mm(hf, this.param('lm_head.weight') as tf.Tensor2D);
    return { logits, cache: { layers, normF, hf, cos, sin, rotate } };
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
   * The weights as a Hugging Face-named checkpoint (linear weights back in `[out, in]` layout).
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
   * The weights as a {@link WeightSnapshot} for `Sampler.updateWeights`.
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
    return { step, tensors: this.exportTensors() };
  }

  private exportTensors(): NamedTensor[] {
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
    for (const tensor of this.params.values()) tensor.dispose();
    this.params.clear();
  }
}

/** Options of {@link createLlamaModel}. */
export type CreateLlamaModelOptions = {
  /**
   * Reject a checkpoint whose config or tensors do not match (default true). Always checks names
   * and shapes; this flag only skips the finite-value scan.
   */
  checkFinite?: boolean;
};

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
  const opts = validateOptions<CreateLlamaModelOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['checkFinite'],
  });
  const checkFinite = opts.checkFinite ?? true;
  const config = parseLlamaConfig(checkpoint.config);
  await tf.ready();
  const backend = activeBackend();
  const expected = expectedShapes(config);
  const byName = new Map<string, NamedTensor>();
  for (const tensor of checkpoint.tensors) {
    if (!expected.has(tensor.name)) {
      throw new InvalidArgumentError({
        parameter: `checkpoint.tensors['${tensor.name}']`,
        functionName,
        value: tensor.name,
        expected: `a tensor name of this config (${expected.size} names, e.g. 'model.embed_tokens.weight')`,
      });
    }
    byName.set(tensor.name, tensor);
  }
  const params: Params = new Map();
  try {
    for (const [name, shape] of expected) {
      const tensor = byName.get(name);
      if (tensor === undefined) {
        throw new InvalidArgumentError({
          parameter: `checkpoint.tensors['${name}']`,
          functionName,
          value: undefined,
          expected: `a tensor of shape [${shape.join(', ')}]`,
        });
      }
      const size = shape.reduce((a, c) => a * c, 1);
      if (
        tensor.shape.length !== shape.length ||
        tensor.shape.some((dimension, index) => dimension !== shape[index]) ||
        !(tensor.data instanceof Float32Array) ||
        tensor.data.length !== size
      ) {
        throw new ShapeMismatchError({
          parameter: `checkpoint.tensors['${name}']`,
          functionName,
          expected: `shape [${shape.join(', ')}] with ${size} float32 values`,
          actual: `shape [${tensor.shape.join(', ')}] with ${tensor.data?.length} values`,
        });
      }
      if (checkFinite) {
        for (let index = 0; index < tensor.data.length; index++) {
          if (!Number.isFinite(tensor.data[index]!)) {
            throw new InvalidArgumentError({
              parameter: `checkpoint.tensors['${name}'].data[${index}]`,
              functionName,
              value: tensor.data[index],
              expected: 'a finite weight',
            });
          }
        }
      }
      const value = tf.tidy(() => {
        const loaded = tf.tensor(tensor.data, shape);
        return isLinear(name) ? tf.transpose(loaded) : loaded;
      });
      params.set(name, value);
    }
  } catch (error) {
    for (const tensor of params.values()) tensor.dispose();
    if (RlvrError.isInstance(error)) throw error;
    throw new RlvrError(ErrorCode.MODEL_LOAD_FAILED, `Could not load the checkpoint into tfjs`, {
      cause: error,
    });
  }
  return new LlamaModel(config, params, backend);
}

function expectedShapes(config: LlamaConfig): Map<string, number[]> {
  const h = config.hidden_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = config.num_key_value_heads * config.head_dim;
  const m = config.intermediate_size;
  const qkvBias = config.attention_bias;
  const oBias = config.attention_bias && config.model_type === 'llama';
  const shapes = new Map<string, number[]>([['model.embed_tokens.weight', [config.vocab_size, h]]]);
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const prefix = `model.layers.${layer}`;
    shapes.set(`${prefix}.self_attn.q_proj.weight`, [q, h]);
    if (qkvBias) shapes.set(`${prefix}.self_attn.q_proj.bias`, [q]);
    shapes.set(`${prefix}.self_attn.k_proj.weight`, [kv, h]);
    if (qkvBias) shapes.set(`${prefix}.self_attn.k_proj.bias`, [kv]);
    shapes.set(`${prefix}.self_attn.v_proj.weight`, [kv, h]);
    if (qkvBias) shapes.set(`${prefix}.self_attn.v_proj.bias`, [kv]);
    shapes.set(`${prefix}.self_attn.o_proj.weight`, [h, q]);
    if (oBias) shapes.set(`${prefix}.self_attn.o_proj.bias`, [h]);
    shapes.set(`${prefix}.mlp.gate_proj.weight`, [m, h]);
    shapes.set(`${prefix}.mlp.up_proj.weight`, [m, h]);
    shapes.set(`${prefix}.mlp.down_proj.weight`, [h, m]);
    shapes.set(`${prefix}.input_layernorm.weight`, [h]);
    shapes.set(`${prefix}.post_attention_layernorm.weight`, [h]);
  }
  shapes.set('model.norm.weight', [h]);
  if (!config.tie_word_embeddings) shapes.set('lm_head.weight', [config.vocab_size, h]);
  return shapes;
}
