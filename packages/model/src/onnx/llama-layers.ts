import { InvalidArgumentError, type NamedTensor, validateOneOf, validateOptions } from '@rlvr/core';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import {
  type LayerArchitecture,
  type LayerRope,
  type ModelArchitecture,
  modelArchitecture,
} from '../config/architecture.js';
import type { ModelConfig } from '../config/model-config.js';
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
  /**
   * Rotary positions `[B, S]` (int64): each layer's RoPE tables are built from them
   * ({@link LlamaLayers.ropeTables}, once per distinct RoPE and builder). Needed when the model has
   * several RoPE settings (Gemma 3's local and global layers).
   */
  positionIds?: string;
  /** RoPE tables from {@link LlamaLayers.ropeTables}, used by every rotary layer when `positionIds` is not given. */
  cos?: string;
  sin?: string;
  /** The `Reshape` target that splits `count` heads off the last axis (`[.., count·D]` → `[B, S, count, D]`). */
  headsShape: (count: number) => string;
  /**
   * Attention of one layer: `query` `[B, heads, S, D]` (scaled: see {@link LlamaLayers.decoderLayers}),
   * `key` and `value` `[B, kv_heads, S, D]` (q/k norm and RoPE applied) of the new tokens; returns
   * the merged context `[.., heads·D]`, in the layout of the layer's input (see
   * {@link LlamaLayers.mergeHeads}). This is where a KV cache is read and extended, and where the
   * layer's window (`architecture.layers[layer].window`) picks its mask.
   */
  attend: (layer: number, query: string, key: string, value: string) => string;
};

/**
 * The building blocks of a decoder of any family ({@link modelArchitecture}) as ONNX nodes, bound
 * to one checkpoint's weights: RMSNorm (`w` or `1 + w`), RoPE (rotate-half, per-layer tables),
 * q/k norms, grouped-query attention (GQA/MQA: queries are grouped `[B, kv_heads, group, S, D]`
 * and broadcast against the cache, never repeated per head) over a KV cache with causal, padding
 * and sliding-window masks, SwiGLU or GeGLU, Gemma's extra norms, the LM head. Each method adds
 * nodes to the builder `b` it is given (the main graph or a subgraph); weights and constants go to
 * the main graph once, however many subgraphs use them. {@link exportOnnx} and `@rlvr/rollout`'s
 * in-graph sampling loop are both built from these, so they compute the same model.
 *
 * Advanced API (for packages that build their own ONNX graphs); may change in a minor release.
 */
export type LlamaLayers = {
  readonly config: ModelConfig;
  /** The per-layer description every method follows. */
  readonly architecture: ModelArchitecture;
  readonly projection: ProjectionLayout;
  /** Token embeddings: `Gather` of `ids` (any shape) → `[...ids, hidden]` (× the embedding scale). */
  embed(b: GraphBuilder, ids: string): string;
  /**
   * `x / sqrt(mean(x²) + eps) · (offset + w) · scale` over the last axis, with the weight called
   * `weightName` (`offset` is the model's norm offset; `scale` defaults to 1).
   */
  rmsNorm(b: GraphBuilder, x: string, weightName: string, scale?: number): string;
  /**
   * The projection `name` (`model.layers.0.self_attn.q_proj`, …): `x Wᵀ (+ bias)`, all times `scale`.
   */
  linear(
    b: GraphBuilder,
    x: string,
    name: string,
    options?: { bias?: boolean; scale?: number },
  ): string;
  /**
   * cos and sin `[B, 1, S, D]` of the rotate-half RoPE `rope` (default: the first rotary layer's)
   * from `positionIds` `[B, S]` (int64).
   */
  ropeTables(b: GraphBuilder, positionIds: string, rope?: LayerRope): [string, string];
  /** RoPE on `x` `[B, heads, S, D]`. */
  rope(b: GraphBuilder, x: string, cos: string, sin: string): string;
  /** `[.., count·D]` → `[B, count, S, D]` with the `Reshape` target `shape`. */
  splitHeads(b: GraphBuilder, x: string, shape: string): string;
  /**
   * The additive causal + padding bias `[B, 1, 1, S, T]` of a run: key `j` is visible from query
   * `i` when `j ≤ past + i` and `attentionMask[b, j] = 1` (`past = T − S`), and, with a `window`,
   * `past + i − j < window`.
   */
  attentionBias(
    b: GraphBuilder,
    inputIds: string,
    attentionMask: string,
    window?: number | null,
  ): string;
  /** Keys `[B, kv_heads, T, D]` → `[B, kv_heads, 1, D, T]` for {@link LlamaLayers.attention}. */
  prepareKeys(b: GraphBuilder, keys: string): string;
  /** Values `[B, kv_heads, T, D]` → `[B, kv_heads, 1, T, D]`. */
  prepareValues(b: GraphBuilder, values: string): string;
  /**
   * Softmax attention of `query` `[B, heads, S, D]` (already scaled: see
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
  /** The gated MLP of `layer`: `down(act(gate(x)) · up(x))`, act = SiLU or tanh-GELU. */
  mlp(b: GraphBuilder, x: string, layer: number): string;
  /**
   * Every decoder layer over `x` (norms, attention and MLP with residuals, as
   * {@link LayerArchitecture} describes). The attention scale is folded into the queries: into
   * `q_proj` when the layer has no q norm (exact: RoPE is linear), else into the q norm weights.
   * Returns the last hidden state (before the final norm).
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
 * Binds the decoder layer functions ({@link LlamaLayers}, any family) to `checkpoint`'s weights
 * in the model built by `g`. The checkpoint must be valid (see {@link validateCheckpoint}).
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
  const { config } = checkpoint;
  const arch = modelArchitecture(config);
  const tensors = new Map<string, NamedTensor>(checkpoint.tensors.map((t) => [t.name, t]));
  const tensor = (name: string): NamedTensor => tensors.get(name) as NamedTensor;
  const { heads, kvHeads, headDim, biases } = arch;
  const half = headDim / 2;
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
  /** A norm's effective weight `(offset + w) · scale`, computed in the graph (weights may be inputs). */
  const normWeight = (name: string, scale: number): string => {
    if (arch.normOffset === 0 && scale === 1) return weight(name);
    return once(`${name}:norm:${scale}`, () => {
      const shifted =
        arch.normOffset === 0
          ? weight(name)
          : g.op('Add', [weight(name), g.float([arch.normOffset])]);
      return scale === 1 ? shifted : g.op('Mul', [shifted, g.float([scale])]);
    });
  };
  const ropes = new Map<string, LayerRope>();
  for (const layer of arch.layers)
    if (layer.rope.kind === 'rotary') ropes.set(layer.rope.id, layer.rope);
  const ropeIds = [...ropes.keys()];
  const inverseFrequency = (rope: LayerRope & { kind: 'rotary' }): string =>
    once(`inv_freq:${rope.id}`, () => {
      const index = ropeIds.indexOf(rope.id);
      const name = `model.rotary_emb.inv_freq${index === 0 ? '' : `.${index}`}`;
      return g.weight(name, [half], Float32Array.from(rope.inverseFrequencies));
    });
  const tables = new Map<GraphBuilder, Map<string, [string, string]>>();
  const axisLast = g.int64([-1]);
  const groupAxis = g.int64([2]);
  const gelu = (b: GraphBuilder, x: string): string => {
    const cubic = b.op('Mul', [b.op('Mul', [x, x]), x]);
    const inner = b.op('Mul', [
      b.op('Add', [x, b.op('Mul', [cubic, g.float([0.044715])])]),
      g.float([Math.sqrt(2 / Math.PI)]),
    ]);
    return b.op('Mul', [
      b.op('Mul', [x, g.float([0.5])]),
      b.op('Add', [b.op('Tanh', [inner]), g.float([1])]),
    ]);
  };

  const layers: LlamaLayers = {
    config,
    architecture: arch,
    projection,
    embed(b, ids) {
      const embedded = b.op('Gather', [weight(arch.embedding), ids], { axis: 0 });
      return arch.embeddingScale === 1
        ? embedded
        : b.op('Mul', [embedded, g.float([arch.embeddingScale])]);
    },
    rmsNorm(b, x, weightName, scale = 1) {
      const meanSquare = b.op('ReduceMean', [b.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
      const root = b.op('Sqrt', [b.op('Add', [meanSquare, g.float([arch.normEps])])]);
      return b.op('Mul', [b.op('Div', [x, root]), normWeight(weightName, scale)]);
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
    ropeTables(b, positionIds, rope) {
      const chosen = rope ?? ropes.get(ropeIds[0] as string);
      if (chosen === undefined || chosen.kind !== 'rotary') {
        throw new InvalidArgumentError({
          parameter: 'rope',
          functionName: 'LlamaLayers.ropeTables',
          value: rope,
          expected: 'a rotary LayerRope (the model has no rotary layer)',
        });
      }
      const frequencies = b.op('Mul', [
        b.op('Unsqueeze', [b.op('Cast', [positionIds], { to: OnnxDataType.FLOAT }), g.int64([2])]),
        inverseFrequency(chosen),
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
    attentionBias(b, inputIds, attentionMask, window = null) {
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
      let visible = b.op('And', [b.op('LessOrEqual', [keyIndex, queryIndex]), notPadding]);
      if (window !== null) {
        const distance = b.op('Sub', [queryIndex, keyIndex]);
        visible = b.op('And', [visible, b.op('Less', [distance, g.int64([window], [])])]);
      }
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
    mlp(b, x, index) {
      const layer = arch.layers[index] as LayerArchitecture;
      const gate = layers.linear(b, x, layer.gate);
      const up = layers.linear(b, x, layer.up);
      const activated =
        arch.activation === 'silu' ? b.op('Mul', [gate, b.op('Sigmoid', [gate])]) : gelu(b, gate);
      return layers.linear(b, b.op('Mul', [activated, up]), layer.down);
    },
    decoderLayers(b, input, hooks) {
      const ropeOf = (rope: LayerRope): [string, string] => {
        if (hooks.positionIds === undefined) {
          if (hooks.cos === undefined || hooks.sin === undefined || ropeIds.length > 1) {
            throw new InvalidArgumentError({
              parameter: 'hooks.positionIds',
              functionName: 'LlamaLayers.decoderLayers',
              value: hooks.positionIds,
              expected: `position ids (the model has ${ropeIds.length} RoPE settings), or cos and sin for a single one`,
            });
          }
          return [hooks.cos, hooks.sin];
        }
        let perBuilder = tables.get(b);
        if (!perBuilder) {
          perBuilder = new Map();
          tables.set(b, perBuilder);
        }
        let pair = perBuilder.get(rope.id);
        if (!pair) {
          pair = layers.ropeTables(b, hooks.positionIds, rope);
          perBuilder.set(rope.id, pair);
        }
        return pair;
      };
      let x = input;
      for (const layer of arch.layers) {
        const normed = layers.rmsNorm(b, x, layer.attentionNorm);
        const qkv = { bias: biases.qkv };
        // 1/√D (or query_pre_attn_scalar^−½) goes where it is exact: q_proj, or the q norm after it.
        const qScale = layer.qNorm ? 1 : arch.attentionScale;
        const q = layers.linear(b, normed, layer.q, { ...qkv, scale: qScale });
        const k = layers.linear(b, normed, layer.k, qkv);
        const v = layers.linear(b, normed, layer.v, qkv);
        let queries = layers.splitHeads(b, q, hooks.headsShape(heads));
        let keys = layers.splitHeads(b, k, hooks.headsShape(kvHeads));
        if (layer.qNorm && layer.kNorm) {
          queries = layers.rmsNorm(b, queries, layer.qNorm, arch.attentionScale);
          keys = layers.rmsNorm(b, keys, layer.kNorm);
        }
        if (layer.rope.kind === 'rotary') {
          const [cos, sin] = ropeOf(layer.rope);
          queries = layers.rope(b, queries, cos, sin);
          keys = layers.rope(b, keys, cos, sin);
        }
        const values = layers.splitHeads(b, v, hooks.headsShape(kvHeads));
        const context = hooks.attend(layer.index, queries, keys, values);
        let output = layers.linear(b, context, layer.o, { bias: biases.o });
        if (layer.attentionOutputNorm)
          output = layers.rmsNorm(b, output, layer.attentionOutputNorm);
        x = b.op('Add', [x, output]);
        let mlp = layers.mlp(b, layers.rmsNorm(b, x, layer.mlpNorm), layer.index);
        if (layer.mlpOutputNorm) mlp = layers.rmsNorm(b, mlp, layer.mlpOutputNorm);
        x = b.op('Add', [x, mlp]);
      }
      return x;
    },
    logits(b, x, output) {
      const normed = layers.rmsNorm(b, x, arch.finalNorm);
      const head = arch.lmHead;
      const outputs = output === undefined ? 1 : [output];
      if (projection === 'gemm') {
        return b.add('Gemm', [normed, weight(head)], { transB: 1 }, outputs)[0] as string;
      }
      const headT = arch.tiedEmbeddings
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
