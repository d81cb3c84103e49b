import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, InvalidArgumentError, RlvrError, validateOptions } from '@rlvr/core';
import { type Checkpoint, validateCheckpoint } from '../checkpoint/checkpoint.js';
import { type LlamaConfig, llamaBiases } from '../config/llama-config.js';
import { writeAll, writeFileAtomic } from '../io/atomic-write.js';
import { VERSION } from '../version.js';
import { encodeModel } from './encode-model.js';
import { DataType, GraphBuilder, valueInfo } from './graph-builder.js';

/** Options of {@link exportOnnx}. */
export type ExportOnnxOptions = {
  /** Free text stored as the model's `doc_string`. */
  docString?: string;
};

/** ONNX opset of the exported graph (plain ai.onnx ops only; no contrib ops). */
export const ONNX_OPSET = 17;
const IR_VERSION = 8;
/** Additive attention bias at masked positions (−1e9 rather than −∞: no NaN on all-masked rows). */
export const MASK_VALUE = -1e9;
const MAX_PROTOBUF_BYTES = 2 ** 31 - 2 ** 24;

/** Names of the exported graph's inputs and outputs (Hugging Face Optimum's decoder names). */
export function onnxIoNames(config: Pick<LlamaConfig, 'num_hidden_layers'>): {
  inputs: string[];
  outputs: string[];
} {
  const inputs = ['input_ids', 'attention_mask', 'position_ids'];
  const outputs = ['logits'];
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    inputs.push(`past_key_values.${layer}.key`, `past_key_values.${layer}.value`);
    outputs.push(`present.${layer}.key`, `present.${layer}.value`);
  }
  return { inputs, outputs };
}

/** Writes `[out, in]` (PyTorch Linear) as `[in, out]` (for `MatMul(x, W)`) times `scale`. */
function transposeInto(
  target: Float32Array,
  data: Float32Array,
  rows: number,
  columns: number,
  scale = 1,
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

function copyInto(target: Float32Array, data: Float32Array, scale = 1): void {
  if (scale === 1) {
    target.set(data);
    return;
  }
  for (let index = 0; index < data.length; index++) target[index] = (data[index] as number) * scale;
}

/**
 * Exports a checkpoint as an ONNX decoder graph with a KV cache, using Hugging Face Optimum's I/O
 * names so that onnxruntime, transformers.js and Optimum tooling can run it:
 *
 * - inputs `input_ids` int64 `[batch_size, sequence_length]`, `attention_mask` int64
 *   `[batch_size, total_sequence_length]` (past + new; 0 = padding), `position_ids` int64
 *   `[batch_size, sequence_length]`, `past_key_values.{i}.key|value` float32
 *   `[batch_size, num_key_value_heads, past_sequence_length, head_dim]` (length 0 on the first call);
 * - outputs `logits` float32 `[batch_size, sequence_length, vocab_size]` and
 *   `present.{i}.key|value` `[batch_size, num_key_value_heads, total_sequence_length, head_dim]`.
 *
 * The graph is plain opset-17 ops: RMSNorm, RoPE (rotate-half, angles from `position_ids`),
 * grouped-query attention without copying keys/values per query head (queries are grouped
 * `[B, kv_heads, group, S, D]` and broadcast against the cache), SwiGLU, and one additive
 * causal + padding bias `[B, 1, 1, S, T]` built once per run (a key is visible when its index ≤
 * past + query index and its mask is 1; masked scores get −1e9, never −∞). Left padding and a KV
 * cache are exact: logits match {@link referenceForward} within 1e-4. Weights are embedded in the
 * file (models up to ~2 GiB of float32).
 *
 * @example
 * ```ts
 * const bytes = exportOnnx(checkpoint);
 * const session = await ort.InferenceSession.create(bytes);
 * ```
 * @throws {InvalidArgumentError} for an invalid checkpoint or options; `UNAVAILABLE` when the
 * weights exceed the 2 GiB protobuf limit.
 */
export function exportOnnx(checkpoint: Checkpoint, options?: ExportOnnxOptions): Uint8Array {
  const functionName = 'exportOnnx';
  const { config, tensors } = validateCheckpoint(checkpoint, { functionName });
  const opts = validateOptions<ExportOnnxOptions>(options, { parameter: 'options', functionName });
  if (opts.docString !== undefined && typeof opts.docString !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.docString',
      functionName,
      value: opts.docString,
      expected: 'a string',
    });
  }
  const weights = new Map(tensors.map((tensor) => [tensor.name, tensor.data]));
  const w = (name: string): Float32Array => weights.get(name) as Float32Array;

  const {
    hidden_size: hidden,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    intermediate_size: inter,
    vocab_size: vocab,
    num_hidden_layers: layers,
  } = config;
  const group = heads / kvHeads;
  const half = headDim / 2;
  const biases = llamaBiases(config);
  const g = new GraphBuilder();
  const { inputs: inputNames, outputs: outputNames } = onnxIoNames(config);

  // Shared scalars and shapes.
  const zero = g.int64([0], []);
  const one = g.int64([1], []);
  const epsilon = g.floatScalar(config.rms_norm_eps);

  // Embedding lookup.
  const embedName = g.floatTensor('model.embed_tokens.weight', [vocab, hidden], (target) =>
    copyInto(target, w('model.embed_tokens.weight')),
  );
  let state = g.op('Gather', [embedName, 'input_ids'], { axis: 0 }, '/model/embed_tokens/Gather');

  // Additive causal + padding bias [B, 1, 1, S, T], shared by all layers.
  const idsShape = g.op('Shape', ['input_ids']);
  const maskShape = g.op('Shape', ['attention_mask']);
  const sequenceLength = g.op('Gather', [idsShape, one], { axis: 0 });
  const totalLength = g.op('Gather', [maskShape, one], { axis: 0 });
  const pastLength = g.op('Sub', [totalLength, sequenceLength]);
  const keyIndex = g.op('Range', [zero, totalLength, one]);
  const queryIndex = g.op('Unsqueeze', [
    g.op('Range', [pastLength, totalLength, one]),
    g.int64([1]),
  ]);
  const causal = g.op('LessOrEqual', [keyIndex, queryIndex]);
  const notPadding = g.op('Unsqueeze', [
    g.op('Cast', ['attention_mask'], { to: DataType.BOOL }),
    g.int64([1, 2, 3]),
  ]);
  const visible = g.op('And', [causal, notPadding]);
  const attentionBias = g.op(
    'Where',
    [visible, g.floatScalar(0), g.floatScalar(MASK_VALUE)],
    {},
    '/model/attention_bias',
  );

  // RoPE tables [B, 1, S, D] from position_ids.
  const inverseFrequency = new Float32Array(half);
  for (let i = 0; i < half; i++) inverseFrequency[i] = 1 / config.rope_theta ** ((2 * i) / headDim);
  const positions = g.op('Unsqueeze', [
    g.op('Cast', ['position_ids'], { to: DataType.FLOAT }),
    g.int64([2]),
  ]);
  const frequencies = g.op('Mul', [
    positions,
    g.floatTensor('model.rotary_emb.inv_freq', [half], (target) =>
      copyInto(target, inverseFrequency),
    ),
  ]);
  const angles = g.op('Concat', [frequencies, frequencies], { axis: -1 });
  const cos = g.op('Unsqueeze', [g.op('Cos', [angles]), g.int64([1])], {}, '/model/rotary_emb/cos');
  const sin = g.op('Unsqueeze', [g.op('Sin', [angles]), g.int64([1])], {}, '/model/rotary_emb/sin');
  const halfStart = g.int64([0]);
  const halfMiddle = g.int64([half]);
  const halfEnd = g.int64([headDim]);
  const lastAxis = g.int64([3]);
  const rope = (x: string): string => {
    const first = g.op('Slice', [x, halfStart, halfMiddle, lastAxis]);
    const second = g.op('Slice', [x, halfMiddle, halfEnd, lastAxis]);
    const rotated = g.op('Concat', [g.op('Neg', [second]), first], { axis: 3 });
    return g.op('Add', [g.op('Mul', [x, cos]), g.op('Mul', [rotated, sin])]);
  };

  const rmsNorm = (x: string, weightName: string, label: string): string => {
    const weight = g.floatTensor(weightName, [hidden], (target) => copyInto(target, w(weightName)));
    const meanSquare = g.op('ReduceMean', [g.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
    const root = g.op('Sqrt', [g.op('Add', [meanSquare, epsilon])]);
    return g.op('Mul', [g.op('Div', [x, root]), weight], {}, `${label}/Mul_weight`);
  };

  const linear = (
    x: string,
    name: string,
    rows: number,
    columns: number,
    options: { bias?: boolean; scale?: number } = {},
  ): string => {
    const scale = options.scale ?? 1;
    const weight = g.floatTensor(`${name}.weight.T`, [columns, rows], (target) =>
      transposeInto(target, w(`${name}.weight`), rows, columns, scale),
    );
    const product = g.op('MatMul', [x, weight]);
    if (!options.bias) return product;
    const bias = g.floatTensor(`${name}.bias`, [rows], (target) =>
      copyInto(target, w(`${name}.bias`), scale),
    );
    return g.op('Add', [product, bias]);
  };

  const headsShape = g.int64([0, 0, heads, headDim]);
  const kvHeadsShape = g.int64([0, 0, kvHeads, headDim]);
  const groupedShape = g.int64([0, kvHeads, group, -1, headDim]);
  const ungroupedShape = g.int64([0, heads, -1, headDim]);
  const mergedShape = g.int64([0, 0, heads * headDim]);
  const groupAxis = g.int64([2]);
  const queryScale = 1 / Math.sqrt(headDim);

  for (let layer = 0; layer < layers; layer++) {
    const prefix = `model.layers.${layer}`;
    const label = `/model/layers.${layer}`;
    const normed = rmsNorm(state, `${prefix}.input_layernorm.weight`, `${label}/input_layernorm`);
    // The 1/sqrt(head_dim) score scale is folded into q_proj (RoPE is linear, so this is exact).
    const query = linear(normed, `${prefix}.self_attn.q_proj`, heads * headDim, hidden, {
      bias: biases.qkv,
      scale: queryScale,
    });
    const key = linear(normed, `${prefix}.self_attn.k_proj`, kvHeads * headDim, hidden, {
      bias: biases.qkv,
    });
    const value = linear(normed, `${prefix}.self_attn.v_proj`, kvHeads * headDim, hidden, {
      bias: biases.qkv,
    });
    const toHeads = (x: string, shape: string): string =>
      g.op('Transpose', [g.op('Reshape', [x, shape])], { perm: [0, 2, 1, 3] });
    const queryHeads = rope(toHeads(query, headsShape));
    const keyHeads = rope(toHeads(key, kvHeadsShape));
    const valueHeads = toHeads(value, kvHeadsShape);
    const presentKey = outputNames[1 + 2 * layer] as string;
    const presentValue = outputNames[2 + 2 * layer] as string;
    g.add('Concat', [inputNames[3 + 2 * layer] as string, keyHeads], { axis: 2 }, [presentKey]);
    g.add('Concat', [inputNames[4 + 2 * layer] as string, valueHeads], { axis: 2 }, [presentValue]);
    // Grouped-query attention without repeating the cache: [B, kvH, g, S, D] x [B, kvH, 1, D, T].
    const groupedQuery = g.op('Reshape', [queryHeads, groupedShape]);
    const keyT = g.op('Unsqueeze', [
      g.op('Transpose', [presentKey], { perm: [0, 1, 3, 2] }),
      groupAxis,
    ]);
    const scores = g.op('Add', [g.op('MatMul', [groupedQuery, keyT]), attentionBias]);
    const probabilities = g.op('Softmax', [scores], { axis: -1 });
    const context = g.op('MatMul', [probabilities, g.op('Unsqueeze', [presentValue, groupAxis])]);
    const merged = g.op('Reshape', [
      g.op('Transpose', [g.op('Reshape', [context, ungroupedShape])], { perm: [0, 2, 1, 3] }),
      mergedShape,
    ]);
    const attention = linear(merged, `${prefix}.self_attn.o_proj`, hidden, heads * headDim, {
      bias: biases.o,
    });
    state = g.op('Add', [state, attention], {}, `${label}/attention_residual`);

    const postNormed = rmsNorm(
      state,
      `${prefix}.post_attention_layernorm.weight`,
      `${label}/post_attention_layernorm`,
    );
    const gate = linear(postNormed, `${prefix}.mlp.gate_proj`, inter, hidden);
    const up = linear(postNormed, `${prefix}.mlp.up_proj`, inter, hidden);
    const activated = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    const down = linear(activated, `${prefix}.mlp.down_proj`, hidden, inter);
    state = g.op('Add', [state, down], {}, `${label}/mlp_residual`);
  }

  const finalNormed = rmsNorm(state, 'model.norm.weight', '/model/norm');
  const lmHead = config.tie_word_embeddings
    ? g.op('Transpose', [embedName], { perm: [1, 0] }, '/lm_head/tied_transpose')
    : g.floatTensor('lm_head.weight.T', [hidden, vocab], (target) =>
        transposeInto(target, w('lm_head.weight'), vocab, hidden),
      );
  g.add('MatMul', [finalNormed, lmHead], {}, ['logits'], '/lm_head/MatMul');

  if (g.initializerBytes > MAX_PROTOBUF_BYTES) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `exportOnnx(): the weights take ${g.initializerBytes} bytes, over the 2 GiB protobuf limit of a single-file ONNX model (external data is not supported yet)`,
    );
  }

  const cacheDims = (length: string): (string | number)[] => [
    'batch_size',
    kvHeads,
    length,
    headDim,
  ];
  const graphInputs = [
    valueInfo('input_ids', DataType.INT64, ['batch_size', 'sequence_length']),
    valueInfo('attention_mask', DataType.INT64, ['batch_size', 'total_sequence_length']),
    valueInfo('position_ids', DataType.INT64, ['batch_size', 'sequence_length']),
  ];
  const graphOutputs = [
    valueInfo('logits', DataType.FLOAT, ['batch_size', 'sequence_length', vocab]),
  ];
  for (let layer = 0; layer < layers; layer++) {
    for (const part of ['key', 'value']) {
      graphInputs.push(
        valueInfo(
          `past_key_values.${layer}.${part}`,
          DataType.FLOAT,
          cacheDims('past_sequence_length'),
        ),
      );
      graphOutputs.push(
        valueInfo(`present.${layer}.${part}`, DataType.FLOAT, cacheDims('total_sequence_length')),
      );
    }
  }
  const model = {
    irVersion: IR_VERSION,
    opsetImport: [{ domain: '', version: ONNX_OPSET }],
    producerName: '@rlvr/model',
    producerVersion: VERSION,
    docString:
      opts.docString ?? `${config.model_type} decoder with KV cache exported by @rlvr/model`,
  };
  const graph = {
    name: `${config.model_type}_decoder`,
    node: g.nodes,
    initializer: g.initializers,
    input: graphInputs,
    output: graphOutputs,
  };
  return encodeModel(model, graph, g.rawFloatInitializers);
}

/**
 * Exports a checkpoint (see {@link exportOnnx}) to `<dir>/onnx/model.onnx`, the layout
 * transformers.js and Optimum expect next to `config.json`, atomically (temporary file, fsync,
 * rename). Returns the path written.
 *
 * @example
 * ```ts
 * const path = await writeOnnxModel('models/tiny', checkpoint); // 'models/tiny/onnx/model.onnx'
 * ```
 * @throws like {@link exportOnnx}; file-system errors propagate.
 */
export async function writeOnnxModel(
  dir: string,
  checkpoint: Checkpoint,
  options?: ExportOnnxOptions,
): Promise<string> {
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'dir',
      functionName: 'writeOnnxModel',
      value: dir,
      expected: 'a folder path',
    });
  }
  const bytes = exportOnnx(checkpoint, options);
  await mkdir(join(dir, 'onnx'), { recursive: true });
  const path = join(dir, 'onnx', 'model.onnx');
  await writeFileAtomic(path, async (handle) => {
    await writeAll(handle, bytes, 0);
  });
  return path;
}
