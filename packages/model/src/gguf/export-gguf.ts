import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError, OverwriteRefusedError, validateOptions } from '@rlvr/core';
import { type Checkpoint, tensorMap, validateCheckpoint } from '../checkpoint/checkpoint.js';
import { llamaTensorSpecs } from '../checkpoint/tensor-names.js';
import { writeAll, writeFileAtomic } from '../io/atomic-write.js';
import { type GgufTensorPlan, ggufFamilyPlan } from './gguf-architecture.js';
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

/** The ggml type a tensor of `shape` gets under `dtype`. @internal */
export function tensorType(shape: readonly number[], dtype: GgufDtype): number {
  if (shape.length < 2 || dtype === 'f32') return GgmlType.F32;
  if (dtype === 'f16') return GgmlType.F16;
  if (dtype === 'bf16') return GgmlType.BF16;
  return (shape[shape.length - 1] as number) % 32 === 0 ? GgmlType.Q8_0 : GgmlType.F16;
}

/**
 * Encodes a validated checkpoint as GGUF under its family's llama.cpp architecture
 * ({@link ggufFamilyPlan}). `permute: false` skips the q/k row permutation of the adjacent-pair
 * architectures (only to prove, in tests, that it matters). @internal
 */
export function encodeGgufCheckpoint(
  checkpoint: Checkpoint,
  options: { dtype: GgufDtype; name: string; permute: boolean; functionName: string },
): Uint8Array {
  const { config } = checkpoint;
  const plan = ggufFamilyPlan(config, options);
  const metadata: [string, GgufEntry][] = [
    ['general.architecture', { type: GgufValueType.STRING, value: plan.architecture }],
    ['general.name', { type: GgufValueType.STRING, value: options.name }],
    ['general.file_type', { type: GgufValueType.UINT32, value: FILE_TYPE[options.dtype] }],
    ['general.quantization_version', { type: GgufValueType.UINT32, value: 2 }],
    ['general.alignment', { type: GgufValueType.UINT32, value: GGUF_DEFAULT_ALIGNMENT }],
    ...plan.metadata,
    ...tokenizerMetadata(checkpoint, options.functionName),
  ];
  const byName = tensorMap(checkpoint.tensors);
  const tensors: GgufTensorToWrite[] = llamaTensorSpecs(config).map(({ name, shape }) => {
    const tensorPlan = plan.tensors.get(name) as GgufTensorPlan;
    let data = (byName.get(name) as { data: Float32Array }).data;
    const { shift = 0, scale = 1 } = tensorPlan;
    if (shift !== 0 || scale !== 1)
      data = Float32Array.from(data, (value) => (value + shift) * scale);
    if (tensorPlan.permuteHeads !== undefined) {
      data = permuteRotaryRows(data, tensorPlan.permuteHeads, config.head_dim, shape[1] ?? 1);
    }
    const type = tensorType(shape, options.dtype);
    return {
      name: tensorPlan.name,
      dims: [...shape].reverse(),
      type,
      bytes: encodeTensorData(data, type),
    };
  });
  for (const extra of plan.extra) {
    tensors.push({
      name: extra.name,
      dims: [extra.data.length],
      type: GgmlType.F32,
      bytes: encodeTensorData(extra.data, GgmlType.F32),
    });
  }
  return encodeGguf(metadata, tensors);
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
 * family's llama.cpp architecture (`llama`, `qwen2`, `qwen3`, `gemma3`, `smollm3`) with its
 * hyperparameters (Llama 3's `rope_freqs`, Gemma 3's sliding window, pattern and local θ), the
 * weights under llama.cpp's tensor names (q/k rows permuted for `llama` / `smollm3`, Gemma's norms
 * stored as `1 + w`), and the tokenizer as a `gpt2` vocabulary with its chat template and EOS. The
 * checkpoint needs a tokenizer.
 *
 * @example
 * ```ts
 * const bytes = exportGguf(checkpoint, { dtype: 'q8_0' });
 * ```
 * @throws {InvalidArgumentError} for an invalid checkpoint, a missing or oversized tokenizer, a
 * setting llama.cpp's architecture cannot express (naming the config field: e.g. a non-periodic
 * Gemma `layer_types`, SmolLM3 `no_rope_layers` other than every 4th, `llama3` RoPE scaling outside
 * `llama`), or invalid / unknown options (`UNKNOWN_OPTION`).
 */
export function exportGguf(checkpoint: Checkpoint, options?: ExportGgufOptions): Uint8Array {
  const functionName = 'exportGguf';
  const { dtype, name } = parseExportOptions(options, functionName, ['dtype', 'name']);
  const valid = validateCheckpoint(checkpoint, { functionName });
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
