import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError, OverwriteRefusedError, validateOptions } from '@rlvr/core';
import { type Checkpoint, tensorMap, validateCheckpoint } from '../checkpoint/checkpoint.js';
import { llamaTensorSpecs } from '../checkpoint/tensor-names.js';
import { parseLlamaConfig } from '../config/llama-config.js';
import type { ModelConfig } from '../config/model-config.js';
import { writeAll, writeFileAtomic } from '../io/atomic-write.js';
import { encodeGguf, type GgufEntry, type GgufTensorToWrite } from './gguf-encode.js';
import { FILE_TYPE, GGUF_DEFAULT_ALIGNMENT, GgmlType, GgufValueType } from './gguf-format.js';
import { encodeTensorData } from './gguf-tensor-data.js';
import { tokenizerMetadata } from './gguf-tokenizer.js';

/** Weight type of the 2-D tensors of an exported GGUF (norms and biases are always F32). */
export type GgufDtype = 'f32' | 'f16' | 'bf16' | 'q8_0';

/** Options of {@link exportGguf} and {@link writeGgufModel}. */
export type ExportGgufOptions = {
  /**
   * Weight type of the matrices (default `'f32'`, exact). `'q8_0'` quantizes as llama.cpp does
   * (blocks of 32); a matrix whose rows are not a multiple of 32 long is written F16 instead.
   */
  dtype?: GgufDtype;
  /** `general.name` (default `'rlvr <model_type>'`), shown by Ollama / LM Studio. */
  name?: string;
};

/** Options of {@link writeGgufModel}. */
export type WriteGgufOptions = ExportGgufOptions & {
  /** Replace an existing `<dir>/model.gguf` (default false: refused with `WOULD_OVERWRITE`). */
  overwrite?: boolean;
};

const DTYPES: readonly GgufDtype[] = ['f32', 'f16', 'bf16', 'q8_0'];

/** Hugging Face tensor name → GGUF tensor name (llama.cpp's `tensor_mapping.py`). */
function ggufName(name: string): string {
  const layer = /^model\.layers\.(\d+)\.(.+)$/.exec(name);
  if (!layer) {
    if (name === 'model.embed_tokens.weight') return 'token_embd.weight';
    if (name === 'model.norm.weight') return 'output_norm.weight';
    return 'output.weight'; // lm_head.weight
  }
  const parts: Record<string, string> = {
    'self_attn.q_proj': 'attn_q',
    'self_attn.k_proj': 'attn_k',
    'self_attn.v_proj': 'attn_v',
    'self_attn.o_proj': 'attn_output',
    'mlp.gate_proj': 'ffn_gate',
    'mlp.up_proj': 'ffn_up',
    'mlp.down_proj': 'ffn_down',
    input_layernorm: 'attn_norm',
    post_attention_layernorm: 'ffn_norm',
  };
  const rest = layer[2] as string;
  const suffix = rest.endsWith('.bias') ? 'bias' : 'weight';
  const module = rest.slice(0, rest.length - suffix.length - 1);
  return `blk.${layer[1]}.${parts[module]}.${suffix}`;
}

/**
 * llama.cpp's `LlamaModel.permute`: within each head, rows `[half0 | half1]` (Hugging Face rotates
 * halves) become interleaved pairs `(half0[i], half1[i])` (llama.cpp's `llama` rotates adjacent
 * pairs). `data` is `[heads * headDim, columns]` row-major (columns 1 for a bias).
 */
export function permuteRotaryRows(
  data: Float32Array,
  heads: number,
  headDim: number,
  columns: number,
): Float32Array {
  const out = new Float32Array(data.length);
  const half = headDim / 2;
  for (let head = 0; head < heads; head++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const from = (head * headDim + j * half + i) * columns;
        const to = (head * headDim + 2 * i + j) * columns;
        out.set(data.subarray(from, from + columns), to);
      }
    }
  }
  return out;
}

function architectureMetadata(config: ModelConfig, dtype: GgufDtype, name: string) {
  const arch = config.model_type;
  const u32 = (value: number): GgufEntry => ({ type: GgufValueType.UINT32, value });
  const f32 = (value: number): GgufEntry => ({ type: GgufValueType.FLOAT32, value });
  const entries: [string, GgufEntry][] = [
    ['general.architecture', { type: GgufValueType.STRING, value: arch }],
    ['general.name', { type: GgufValueType.STRING, value: name }],
    ['general.file_type', u32(FILE_TYPE[dtype])],
    ['general.quantization_version', u32(2)],
    ['general.alignment', u32(GGUF_DEFAULT_ALIGNMENT)],
    [`${arch}.vocab_size`, u32(config.vocab_size)],
    [`${arch}.context_length`, u32(config.max_position_embeddings)],
    [`${arch}.embedding_length`, u32(config.hidden_size)],
    [`${arch}.block_count`, u32(config.num_hidden_layers)],
    [`${arch}.feed_forward_length`, u32(config.intermediate_size)],
    [`${arch}.attention.head_count`, u32(config.num_attention_heads)],
    [`${arch}.attention.head_count_kv`, u32(config.num_key_value_heads)],
    [`${arch}.attention.key_length`, u32(config.head_dim)],
    [`${arch}.attention.value_length`, u32(config.head_dim)],
    [`${arch}.rope.dimension_count`, u32(config.head_dim)],
    [`${arch}.rope.freq_base`, f32(config.rope_theta)],
    [`${arch}.attention.layer_norm_rms_epsilon`, f32(config.rms_norm_eps)],
  ];
  return entries;
}

/** The ggml type a tensor of `shape` gets under `dtype`. @internal */
export function tensorType(shape: readonly number[], dtype: GgufDtype): number {
  if (shape.length < 2 || dtype === 'f32') return GgmlType.F32;
  if (dtype === 'f16') return GgmlType.F16;
  if (dtype === 'bf16') return GgmlType.BF16;
  return (shape[shape.length - 1] as number) % 32 === 0 ? GgmlType.Q8_0 : GgmlType.F16;
}

/**
 * Encodes a validated checkpoint as GGUF. `permute: false` skips the q/k row permutation of the
 * `llama` architecture (only to prove, in tests, that it matters). @internal
 */
export function encodeGgufCheckpoint(
  checkpoint: Checkpoint,
  options: { dtype: GgufDtype; name: string; permute: boolean; functionName: string },
): Uint8Array {
  const { config } = checkpoint;
  const metadata = [
    ...architectureMetadata(config, options.dtype, options.name),
    ...tokenizerMetadata(checkpoint, options.functionName),
  ];
  const byName = tensorMap(checkpoint.tensors);
  const permute = options.permute && config.model_type === 'llama';
  const tensors: GgufTensorToWrite[] = llamaTensorSpecs(config).map(({ name, shape }) => {
    let data = (byName.get(name) as { data: Float32Array }).data;
    const rotary = /self_attn\.(q|k)_proj\./.exec(name);
    if (permute && rotary) {
      const heads = rotary[1] === 'q' ? config.num_attention_heads : config.num_key_value_heads;
      data = permuteRotaryRows(data, heads, config.head_dim, shape[1] ?? 1);
    }
    const type = tensorType(shape, options.dtype);
    return {
      name: ggufName(name),
      dims: [...shape].reverse(),
      type,
      bytes: encodeTensorData(data, type),
    };
  });
  return encodeGguf(metadata, tensors);
}

/** Rejects configs llama.cpp cannot run under their architecture. */
function checkSupported(model: ModelConfig, functionName: string): void {
  const config = parseLlamaConfig(model); // TODO(families): every family
  if (
    config.model_type === 'qwen2' &&
    config.head_dim * config.num_attention_heads !== config.hidden_size
  ) {
    throw new InvalidArgumentError({
      parameter: 'checkpoint.config.head_dim',
      functionName,
      value: config.head_dim,
      expected: `hidden_size / num_attention_heads (${config.hidden_size / config.num_attention_heads}) for qwen2: llama.cpp's qwen2 architecture has no separate head width`,
    });
  }
}

function parseExportOptions(
  options: unknown,
  functionName: string,
  known: readonly string[],
): { dtype: GgufDtype; name: string | undefined; overwrite: boolean } {
  const opts = validateOptions<WriteGgufOptions>(options ?? {}, {
    parameter: 'options',
    functionName,
    known,
  });
  const dtype = opts.dtype ?? 'f32';
  if (!DTYPES.includes(dtype)) {
    throw new InvalidArgumentError({
      parameter: 'options.dtype',
      functionName,
      value: dtype,
      expected: `one of ${DTYPES.map((item) => `'${item}'`).join(', ')}`,
    });
  }
  if (opts.name !== undefined && (typeof opts.name !== 'string' || opts.name.length === 0)) {
    throw new InvalidArgumentError({
      parameter: 'options.name',
      functionName,
      value: opts.name,
      expected: 'a non-empty string',
    });
  }
  if (opts.overwrite !== undefined && typeof opts.overwrite !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'options.overwrite',
      functionName,
      value: opts.overwrite,
      expected: 'a boolean',
    });
  }
  return { dtype, name: opts.name, overwrite: opts.overwrite ?? false };
}

/**
 * Encodes a checkpoint as a GGUF v3 file (llama.cpp, Ollama, LM Studio, node-llama-cpp): the
 * `llama` or `qwen2` architecture with its hyperparameters, the weights under llama.cpp's tensor
 * names (q/k rows permuted for `llama`), and the tokenizer as a `gpt2` vocabulary with its chat
 * template and EOS. The checkpoint needs a tokenizer.
 *
 * @example
 * ```ts
 * const bytes = exportGguf(checkpoint, { dtype: 'q8_0' });
 * ```
 * @throws {InvalidArgumentError} for an invalid checkpoint, a missing or oversized tokenizer, or
 * invalid / unknown options (`UNKNOWN_OPTION`).
 */
export function exportGguf(checkpoint: Checkpoint, options?: ExportGgufOptions): Uint8Array {
  const functionName = 'exportGguf';
  const { dtype, name } = parseExportOptions(options, functionName, ['dtype', 'name']);
  const valid = validateCheckpoint(checkpoint, { functionName });
  checkSupported(valid.config, functionName);
  return encodeGgufCheckpoint(valid, {
    dtype,
    name: name ?? `rlvr ${valid.config.model_type}`,
    permute: true,
    functionName,
  });
}

/**
 * Exports a checkpoint (see {@link exportGguf}) to `<dir>/model.gguf` atomically (temporary file,
 * fsync, rename) and returns the path. Everything is validated and encoded before anything is
 * written; an existing `model.gguf` is replaced only with `overwrite: true`.
 *
 * @example
 * ```ts
 * const path = await writeGgufModel('student', checkpoint, { dtype: 'f16' }); // 'student/model.gguf'
 * // llama-cli -m student/model.gguf   |   ollama create student -f Modelfile
 * ```
 * @throws like {@link exportGguf}; {@link OverwriteRefusedError} `WOULD_OVERWRITE` when the file
 * exists and `overwrite` is not true; file-system errors propagate.
 */
export async function writeGgufModel(
  dir: string,
  checkpoint: Checkpoint,
  options?: WriteGgufOptions,
): Promise<string> {
  const functionName = 'writeGgufModel';
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'dir',
      functionName,
      value: dir,
      expected: 'a folder path',
    });
  }
  const { dtype, name, overwrite } = parseExportOptions(options, functionName, [
    'dtype',
    'name',
    'overwrite',
  ]);
  const valid = validateCheckpoint(checkpoint, { functionName });
  checkSupported(valid.config, functionName);
  const bytes = encodeGgufCheckpoint(valid, {
    dtype,
    name: name ?? `rlvr ${valid.config.model_type}`,
    permute: true,
    functionName,
  });
  const path = join(dir, 'model.gguf');
  const existing = await stat(path).catch(() => undefined);
  if (existing && !overwrite) {
    throw new OverwriteRefusedError({
      path,
      reason: 'the file exists',
      allowWith: 'options.overwrite: true',
      functionName,
    });
  }
  await mkdir(dir, { recursive: true });
  await writeFileAtomic(path, async (handle) => {
    await writeAll(handle, bytes, 0);
  });
  return path;
}
