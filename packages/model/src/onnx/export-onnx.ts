import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError, OverwriteRefusedError, validateOptions } from '@rlvr/core';
import { type Checkpoint, validateCheckpoint } from '../checkpoint/checkpoint.js';
import type { ModelConfig } from '../config/model-config.js';
import { writeAll, writeFileAtomic } from '../io/atomic-write.js';
import { VERSION } from '../version.js';
import { GraphBuilder, OnnxDataType, valueInfo } from './graph-builder.js';
import { createLlamaLayers, MASK_VALUE } from './llama-layers.js';

export { MASK_VALUE };

/** Options of {@link exportOnnx}. */
export type ExportOnnxOptions = {
  /** Free text stored as the model's `doc_string`. */
  docString?: string;
};

/** The keys of {@link ExportOnnxOptions}. @internal */
export const EXPORT_ONNX_OPTIONS = ['docString'] as const;

/** ONNX opset of the exported graph (plain ai.onnx ops only; no contrib ops). */
export const ONNX_OPSET = 17;
const IR_VERSION = 8;

/** Names of the exported graph's inputs and outputs (Hugging Face Optimum's decoder names). */
export function onnxIoNames(config: Pick<ModelConfig, 'num_hidden_layers'>): {
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
 * The graph is plain opset-17 ops following {@link modelArchitecture} for every family: RMSNorm
 * (`w` or `1 + w`), q/k norms, RoPE (rotate-half, per-layer tables from `position_ids`, none on
 * NoPE layers), grouped-query attention without copying keys/values per query head (queries are
 * grouped `[B, kv_heads, group, S, D]` and broadcast against the cache), SwiGLU or GeGLU, Gemma's
 * extra norms, and one additive causal + padding bias `[B, 1, 1, S, T]` per distinct window built
 * once per run (a key is visible when its index ≤ past + query index, its mask is 1 and, on a
 * sliding layer, past + query index − its index < window; masked scores get −1e9, never −∞). A
 * sliding layer's cache is the full-length one (masked), so the I/O shapes are those of every
 * other layer. Left padding and a KV
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
  const opts = validateOptions<ExportOnnxOptions>(options, {
    parameter: 'options',
    functionName,
    known: EXPORT_ONNX_OPTIONS,
  });
  if (opts.docString !== undefined && typeof opts.docString !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.docString',
      functionName,
      value: opts.docString,
      expected: 'a string',
    });
  }
  const {
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    vocab_size: vocab,
    num_hidden_layers: layers,
  } = config;
  const g = new GraphBuilder();
  const llama = createLlamaLayers(g, { config, tensors }, { projection: 'matmul' });

  // One additive causal + padding bias [B, 1, 1, S, T] per distinct window (null: global) and one
  // pair of RoPE tables per distinct RoPE, shared by the layers that use them.
  const biases = new Map<number | null, string>();
  const biasOf = (window: number | null): string => {
    let bias = biases.get(window);
    if (bias === undefined) {
      bias = llama.attentionBias(g, 'input_ids', 'attention_mask', window);
      biases.set(window, bias);
    }
    return bias;
  };
  const mergedShape = g.int64([0, 0, heads * headDim]);
  const state = llama.decoderLayers(g, llama.embed(g, 'input_ids'), {
    positionIds: 'position_ids',
    headsShape: (count) => g.int64([0, 0, count, headDim]),
    attend: (layer, query, key, value) => {
      // present = past + new (Optimum's names); attention over the whole present cache, masked to
      // the layer's window (a sliding layer keeps the full-length cache: the mask does the work).
      const [presentKey, presentValue] = (['key', 'value'] as const).map(
        (part, index) =>
          g.add(
            'Concat',
            [`past_key_values.${layer}.${part}`, index === 0 ? key : value],
            {
              axis: 2,
            },
            [`present.${layer}.${part}`],
          )[0] as string,
      ) as [string, string];
      const context = llama.attention(g, query, [
        {
          keys: llama.prepareKeys(g, presentKey),
          values: llama.prepareValues(g, presentValue),
          bias: biasOf(llama.architecture.layers[layer]?.window ?? null),
        },
      ]);
      return llama.mergeHeads(g, context, mergedShape);
    },
  });
  llama.logits(g, state, 'logits');

  const cacheDims = (length: string): (string | number)[] => [
    'batch_size',
    kvHeads,
    length,
    headDim,
  ];
  const graphInputs = [
    valueInfo('input_ids', OnnxDataType.INT64, ['batch_size', 'sequence_length']),
    valueInfo('attention_mask', OnnxDataType.INT64, ['batch_size', 'total_sequence_length']),
    valueInfo('position_ids', OnnxDataType.INT64, ['batch_size', 'sequence_length']),
  ];
  const graphOutputs = [
    valueInfo('logits', OnnxDataType.FLOAT, ['batch_size', 'sequence_length', vocab]),
  ];
  for (let layer = 0; layer < layers; layer++) {
    for (const part of ['key', 'value']) {
      graphInputs.push(
        valueInfo(
          `past_key_values.${layer}.${part}`,
          OnnxDataType.FLOAT,
          cacheDims('past_sequence_length'),
        ),
      );
      graphOutputs.push(
        valueInfo(
          `present.${layer}.${part}`,
          OnnxDataType.FLOAT,
          cacheDims('total_sequence_length'),
        ),
      );
    }
  }
  return g.encode(
    {
      irVersion: IR_VERSION,
      opset: ONNX_OPSET,
      producerName: '@rlvr/model',
      producerVersion: VERSION,
      docString:
        opts.docString ?? `${config.model_type} decoder with KV cache exported by @rlvr/model`,
      graph: { name: `${config.model_type}_decoder`, input: graphInputs, output: graphOutputs },
    },
    functionName,
  );
}

/**
 * Exports a checkpoint (see {@link exportOnnx}) to `<dir>/onnx/model.onnx`, the layout
 * transformers.js and Optimum expect next to `config.json`, atomically (temporary file, fsync,
 * rename). Returns the path written. An existing `onnx/model.onnx` is replaced only in a checkpoint
 * folder (`config.json` with `model.safetensors` or its index), where it is the checkpoint's own
 * export; elsewhere it is refused (`WOULD_OVERWRITE`), nothing written.
 *
 * @example
 * ```ts
 * const path = await writeOnnxModel('models/tiny', checkpoint); // 'models/tiny/onnx/model.onnx'
 * ```
 * @throws like {@link exportOnnx}; {@link OverwriteRefusedError} as above; file-system errors
 * propagate.
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
  const path = join(dir, 'onnx', 'model.onnx');
  if ((await exists(path)) && !(await isCheckpointFolder(dir))) {
    throw new OverwriteRefusedError({
      path,
      reason:
        'the file exists and its folder is not a checkpoint (config.json with model.safetensors or model.safetensors.index.json)',
      functionName: 'writeOnnxModel',
    });
  }
  await mkdir(join(dir, 'onnx'), { recursive: true });
  await writeFileAtomic(path, async (handle) => {
    await writeAll(handle, bytes, 0);
  });
  return path;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** `config.json` with `model.safetensors` or `model.safetensors.index.json`. @internal */
export async function isCheckpointFolder(dir: string): Promise<boolean> {
  return (
    (await exists(join(dir, 'config.json'))) &&
    ((await exists(join(dir, 'model.safetensors'))) ||
      (await exists(join(dir, 'model.safetensors.index.json'))))
  );
}
