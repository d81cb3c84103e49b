import { type NamedTensor, validateOneOf, validateOptions } from '@rlvr/core';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { type LlamaConfig, llamaBiases, parseLlamaConfig } from '../config/llama-config.js';
import { type GraphBuilder, OnnxDataType } from './graph-builder.js';

/** Additive attention bias at masked positions (−1e9 rather than −∞: no NaN on all-masked rows). */
export const MASK_VALUE = -1e9;

/**
 * How projections are emitted:
 * - `'matmul'`: `MatMul(x, Wᵀ)` with `Wᵀ` stored `[in, out]` (transposed once at encoding, the
 *   layout of Optimum exports); `x` may have any rank (`[B, S, in]`).
 * - `'gemm'`: `Gemm(x, W, transB = 1)` on the checkpoint's `[out, in]` weights as they are (no
 *   transpose: a faster weight sync); `x` must be 2-D (`[B·S, in]`).
 */
export type ProjectionLayout = 'matmul' | 'gemm';

/** Options of {@link createLlamaLayers}. */
export type LlamaLayersOptions = {
  /** Projection layout (default `'matmul'`). */
  projection?: ProjectionLayout;
};

/** A key/value block attended over (see {@link LlamaLayers.attention}). */
export type AttentionBlock = {
  /** Keys from {@link LlamaLayers.prepareKeys}: `[B, kv_heads, 1, D, T]`. */
  keys: string;
  /** Values from {@link LlamaLayers.prepareValues}: `[B, kv_heads, 1, T, D]`. */
  values: string;
  /** Additive bias broadcastable to the scores `[B, kv_heads, group, S, T]` (0 or −1e9). */
  bias?: string;
};

/** What {@link LlamaLayers.decoderLayers} needs from the caller. */
export type DecoderLayerHooks = {
  /** RoPE tables from {@link LlamaLayers.ropeTables}. */
  cos: string;
  sin: string;
  /** The `Reshape` target that splits `count` heads off the last axis (`[.., count·D]` → `[B, S, count, D]`). */
  headsShape: (count: number) => string;
  /**
   * Attention of one layer: `query` `[B, heads, S, D]`, `key` and `value` `[B, kv_heads, S, D]`
   * (RoPE applied) of the new tokens; returns the merged context `[.., heads·D]`, in the layout of
   * the layer's input (see {@link LlamaLayers.mergeHeads}). This is where a KV cache is read and
   * extended.
   */
  attend: (layer: number, query: string, key: string, value: string) => string;
};

/**
 * The building blocks of a Llama-family decoder (Llama, Qwen2) as ONNX nodes, bound to one
 * checkpoint's weights: RMSNorm, RoPE (rotate-half), grouped-query attention (GQA/MQA: queries are
 * grouped `[B, kv_heads, group, S, D]` and broadcast against the cache, never repeated per head)
 * over a KV cache, SwiGLU, the LM head. Each method adds nodes to the builder `b` it is given (the
 * main graph or a subgraph); weights and constants go to the main graph once, however many
 * subgraphs use them. {@link exportOnnx} and `@rlvr/rollout`'s in-graph sampling loop are both
 * built from these, so they compute the same model.
 *
 * Advanced API (for packages that build their own ONNX graphs); may change in a minor release.
 */
export type LlamaLayers = {
  readonly config: LlamaConfig;
  readonly projection: ProjectionLayout;
  /** Token embeddings: `Gather` of `ids` (any shape) → `[...ids, hidden]`. */
  embed(b: GraphBuilder, ids: string): string;
  /** `x / sqrt(mean(x²) + eps) · w` over the last axis, with the weight called `weightName`. */
  rmsNorm(b: GraphBuilder, x: string, weightName: string): string;
  /**
   * The projection `name` (`model.layers.0.self_attn.q_proj`, …): `x Wᵀ (+ bias)`, all times `scale`.
   */
  linear(
    b: GraphBuilder,
    x: string,
    name: string,
    options?: { bias?: boolean; scale?: number },
  ): string;
  /** cos and sin `[B, 1, S, D]` of the rotate-half RoPE from `positionIds` `[B, S]` (int64). */
  ropeTables(b: GraphBuilder, positionIds: string): [string, string];
  /** RoPE on `x` `[B, heads, S, D]`. */
  rope(b: GraphBuilder, x: string, cos: string, sin: string): string;
  /** `[.., count·D]` → `[B, count, S, D]` with the `Reshape` target `shape`. */
  splitHeads(b: GraphBuilder, x: string, shape: string): string;
  /**
   * The additive causal + padding bias `[B, 1, 1, S, T]` of a run: key `j` is visible from query
   * `i` when `j ≤ past + i` and `attentionMask[b, j] = 1` (`past = T − S`).
   */
  attentionBias(b: GraphBuilder, inputIds: string, attentionMask: string): string;
  /** Keys `[B, kv_heads, T, D]` → `[B, kv_heads, 1, D, T]` for {@link LlamaLayers.attention}. */
  prepareKeys(b: GraphBuilder, keys: string): string;
  /** Values `[B, kv_heads, T, D]` → `[B, kv_heads, 1, T, D]`. */
  prepareValues(b: GraphBuilder, values: string): string;
  /**
   * Softmax attention of `query` `[B, heads, S, D]` (already scaled by 1/√D: see `q_proj` in
   * {@link LlamaLayers.decoderLayers}) over one key/value block, or over two blocks under one
   * softmax (a fixed cache and the tokens appended since; `firstLength` = the first block's key
   * count, an int64 `[1]`). Returns the context `[B, kv_heads, group, S, D]`.
   */
  attention(
    b: GraphBuilder,
    query: string,
    blocks: [AttentionBlock] | [AttentionBlock, AttentionBlock],
    firstLength?: string,
  ): string;
  /** Context `[B, kv_heads, group, S, D]` → `[B, S, heads, D]` reshaped to `shape` (e.g. `[0, 0, heads·D]`). */
  mergeHeads(b: GraphBuilder, context: string, shape: string): string;
  /** The SwiGLU MLP of `layer`: `down(silu(gate(x)) · up(x))`. */
  mlp(b: GraphBuilder, x: string, layer: number): string;
  /**
   * Every decoder layer over `x` (pre-norm attention and MLP with residuals); `1/√D` is folded into
   * `q_proj` (exact: RoPE is linear). Returns the last hidden state (before the final norm).
   */
  decoderLayers(b: GraphBuilder, x: string, hooks: DecoderLayerHooks): string;
  /** Final RMSNorm and LM head (the embedding when tied) → logits `[.., vocab]`, named `output` if given. */
  logits(b: GraphBuilder, x: string, output?: string): string;
};

/** Writes `[out, in]` (PyTorch Linear) as `[in, out]` (for `MatMul(x, W)`) times `scale`. */
function transposeInto(
  target: Float32Array,
  data: Float32Array,
  rows: number,
  columns: number,
  scale: number,
): void {
  const tile = 64;
  for (let rowStart = 0; rowStart < rows; rowStart += tile) {
    const rowEnd = Math.min(rows, rowStart + tile);
    for (let columnStart = 0; columnStart < columns; columnStart += tile) {
      const columnEnd = Math.min(columns, columnStart + tile);
      for (let row = rowStart; row < rowEnd; row++) {
        const source = row * columns;
        for (let column = columnStart; column < columnEnd; column++) {
          target[column * rows + row] = (data[source + column] as number) * scale;
        }
      }
    }
  }
}

function scaledInto(target: Float32Array, data: Float32Array, scale: number): void {
  if (scale === 1) {
    target.set(data);
    return;
  }
  for (let index = 0; index < data.length; index++) target[index] = (data[index] as number) * scale;
}

/**
 * Binds the Llama layer functions ({@link LlamaLayers}) to `checkpoint`'s weights in the model
 * built by `g`. The checkpoint must be valid (see {@link validateCheckpoint}).
 *
 * Advanced API (for packages that build their own ONNX graphs); may change in a minor release.
 *
 * @example
 * ```ts
 * const g = new GraphBuilder();
 * const layers = createLlamaLayers(g, validateCheckpoint(checkpoint, { functionName: 'mine' }));
 * const [cos, sin] = layers.ropeTables(g, 'position_ids');
 * ```
 */
export function createLlamaLayers(
  g: GraphBuilder,
  checkpoint: Checkpoint,
  options: LlamaLayersOptions = {},
): LlamaLayers {
  const functionName = 'createLlamaLayers';
  const opts = validateOptions<LlamaLayersOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['projection'],
  });
  const projection =
    opts.projection === undefined
      ? 'matmul'
      : validateOneOf(opts.projection, ['matmul', 'gemm'] as const, {
          parameter: 'options.projection',
          functionName,
        });
  const config = parseLlamaConfig(checkpoint.config); // TODO(families): every family
  const tensors = new Map<string, NamedTensor>(checkpoint.tensors.map((t) => [t.name, t]));
  const tensor = (name: string): NamedTensor => tensors.get(name) as NamedTensor;
  const { num_attention_heads: heads, num_key_value_heads: kvHeads, head_dim: headDim } = config;
  const half = headDim / 2;
  const biases = llamaBiases(config);
  const initializers = new Map<string, string>();
  const once = (key: string, make: () => string): string => {
    let name = initializers.get(key);
    if (name === undefined) {
      name = make();
      initializers.set(key, name);
    }
    return name;
  };
  /** A weight as it is in the checkpoint. */
  const weight = (name: string): string =>
    once(name, () => {
      const { shape, data } = tensor(name);
      return g.weight(name, [...shape], data);
    });
  const inverseFrequency = (): string =>
    once('inv_freq', () => {
      const values = new Float32Array(half);
      for (let i = 0; i < half; i++) values[i] = 1 / config.rope_theta ** ((2 * i) / headDim);
      return g.weight('model.rotary_emb.inv_freq', [half], values);
    });
  const axisLast = g.int64([-1]);
  const groupAxis = g.int64([2]);

  const layers: LlamaLayers = {
    config,
    projection,
    embed: (b, ids) => b.op('Gather', [weight('model.embed_tokens.weight'), ids], { axis: 0 }),
    rmsNorm(b, x, weightName) {
      const meanSquare = b.op('ReduceMean', [b.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
      const root = b.op('Sqrt', [b.op('Add', [meanSquare, g.float([config.rms_norm_eps])])]);
      return b.op('Mul', [b.op('Div', [x, root]), weight(weightName)]);
    },
    linear(b, x, name, { bias = false, scale = 1 } = {}) {
      if (projection === 'gemm') {
        const inputs = [x, weight(`${name}.weight`)];
        if (bias) inputs.push(weight(`${name}.bias`));
        return b.op('Gemm', inputs, { transB: 1, alpha: { float: scale }, beta: { float: scale } });
      }
      const { shape, data } = tensor(`${name}.weight`);
      const [rows, columns] = shape as [number, number];
      const transposed = once(`${name}.weight.T`, () =>
        g.floatTensor(`${name}.weight.T`, [columns, rows], (target) =>
          transposeInto(target, data, rows, columns, scale),
        ),
      );
      const product = b.op('MatMul', [x, transposed]);
      if (!bias) return product;
      const biasData = tensor(`${name}.bias`).data;
      const biasName = once(`${name}.bias`, () =>
        g.floatTensor(`${name}.bias`, [rows], (target) => scaledInto(target, biasData, scale)),
      );
      return b.op('Add', [product, biasName]);
    },
    ropeTables(b, positionIds) {
      const frequencies = b.op('Mul', [
        b.op('Unsqueeze', [b.op('Cast', [positionIds], { to: OnnxDataType.FLOAT }), g.int64([2])]),
        inverseFrequency(),
      ]);
      const angles = b.op('Unsqueeze', [
        b.op('Concat', [frequencies, frequencies], { axis: -1 }),
        g.int64([1]),
      ]);
      return [b.op('Cos', [angles]), b.op('Sin', [angles])];
    },
    rope(b, x, cos, sin) {
      const first = b.op('Slice', [x, g.int64([0]), g.int64([half]), axisLast]);
      const second = b.op('Slice', [x, g.int64([half]), g.int64([headDim]), axisLast]);
      const rotated = b.op('Concat', [b.op('Neg', [second]), first], { axis: -1 });
      return b.op('Add', [b.op('Mul', [x, cos]), b.op('Mul', [rotated, sin])]);
    },
    splitHeads: (b, x, shape) =>
      b.op('Transpose', [b.op('Reshape', [x, shape])], { perm: [0, 2, 1, 3] }),
    attentionBias(b, inputIds, attentionMask) {
      const one = g.int64([1], []);
      const sequenceLength = b.op('Gather', [b.op('Shape', [inputIds]), one], { axis: 0 });
      const totalLength = b.op('Gather', [b.op('Shape', [attentionMask]), one], { axis: 0 });
      const pastLength = b.op('Sub', [totalLength, sequenceLength]);
      const keyIndex = b.op('Range', [g.int64([0], []), totalLength, one]);
      const queryIndex = b.op('Unsqueeze', [
        b.op('Range', [pastLength, totalLength, one]),
        g.int64([1]),
      ]);
      const notPadding = b.op('Unsqueeze', [
        b.op('Cast', [attentionMask], { to: OnnxDataType.BOOL }),
        g.int64([1, 2, 3]),
      ]);
      const visible = b.op('And', [b.op('LessOrEqual', [keyIndex, queryIndex]), notPadding]);
      return b.op('Where', [visible, g.float([0]), g.float([MASK_VALUE])]);
    },
    prepareKeys: (b, keys) =>
      b.op('Unsqueeze', [b.op('Transpose', [keys], { perm: [0, 1, 3, 2] }), groupAxis]),
    prepareValues: (b, values) => b.op('Unsqueeze', [values, groupAxis]),
    attention(b, query, blocks, firstLength) {
      const grouped = b.op('Reshape', [query, g.int64([0, kvHeads, heads / kvHeads, -1, headDim])]);
      const scores = blocks.map((block) => {
        const product = b.op('MatMul', [grouped, block.keys]);
        return block.bias === undefined ? product : b.op('Add', [product, block.bias]);
      });
      if (scores.length === 1) {
        const probabilities = b.op('Softmax', [scores[0] as string], { axis: -1 });
        return b.op('MatMul', [probabilities, blocks[0].values]);
      }
      const probabilities = b.op('Softmax', [b.op('Concat', scores, { axis: -1 })], { axis: -1 });
      const split = firstLength as string;
      const first = b.op('Slice', [probabilities, g.int64([0]), split, axisLast]);
      const second = b.op('Slice', [probabilities, split, g.int64([2 ** 62]), axisLast]);
      return b.op('Add', [
        b.op('MatMul', [first, blocks[0].values]),
        b.op('MatMul', [second, (blocks[1] as AttentionBlock).values]),
      ]);
    },
    mergeHeads: (b, context, shape) =>
      b.op('Reshape', [
        b.op('Transpose', [b.op('Reshape', [context, g.int64([0, heads, -1, headDim])])], {
          perm: [0, 2, 1, 3],
        }),
        shape,
      ]),
    mlp(b, x, layer) {
      const prefix = `model.layers.${layer}.mlp`;
      const gate = layers.linear(b, x, `${prefix}.gate_proj`);
      const up = layers.linear(b, x, `${prefix}.up_proj`);
      const activated = b.op('Mul', [b.op('Mul', [gate, b.op('Sigmoid', [gate])]), up]);
      return layers.linear(b, activated, `${prefix}.down_proj`);
    },
    decoderLayers(b, input, hooks) {
      const queryScale = 1 / Math.sqrt(headDim);
      let x = input;
      for (let layer = 0; layer < config.num_hidden_layers; layer++) {
        const prefix = `model.layers.${layer}`;
        const attentionName = `${prefix}.self_attn`;
        const normed = layers.rmsNorm(b, x, `${prefix}.input_layernorm.weight`);
        const qkv = { bias: biases.qkv };
        const q = layers.linear(b, normed, `${attentionName}.q_proj`, {
          ...qkv,
          scale: queryScale,
        });
        const k = layers.linear(b, normed, `${attentionName}.k_proj`, qkv);
        const v = layers.linear(b, normed, `${attentionName}.v_proj`, qkv);
        const heads_ = (value: string, count: number) =>
          layers.splitHeads(b, value, hooks.headsShape(count));
        const context = hooks.attend(
          layer,
          layers.rope(b, heads_(q, heads), hooks.cos, hooks.sin),
          layers.rope(b, heads_(k, kvHeads), hooks.cos, hooks.sin),
          heads_(v, kvHeads),
        );
        const output = layers.linear(b, context, `${attentionName}.o_proj`, { bias: biases.o });
        x = b.op('Add', [x, output]);
        const postNormed = layers.rmsNorm(b, x, `${prefix}.post_attention_layernorm.weight`);
        x = b.op('Add', [x, layers.mlp(b, postNormed, layer)]);
      }
      return x;
    },
    logits(b, x, output) {
      const normed = layers.rmsNorm(b, x, 'model.norm.weight');
      const head = config.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
      const outputs = output === undefined ? 1 : [output];
      if (projection === 'gemm') {
        return b.add('Gemm', [normed, weight(head)], { transB: 1 }, outputs)[0] as string;
      }
      const headT = config.tie_word_embeddings
        ? b.op('Transpose', [weight(head)], { perm: [1, 0] })
        : once('lm_head.weight.T', () => {
            const { shape, data } = tensor(head);
            const [rows, columns] = shape as [number, number];
            return g.floatTensor('lm_head.weight.T', [columns, rows], (target) =>
              transposeInto(target, data, rows, columns, 1),
            );
          });
      return b.add('MatMul', [normed, headT], {}, outputs)[0] as string;
    },
  };
  return layers;
}
