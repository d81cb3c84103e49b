import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  InvalidArgumentError,
  type NamedTensor,
  OverwriteRefusedError,
  validateInteger,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { parseModelConfig } from '../config/model-config.js';
import { ModelLoadError } from '../errors/model-load-error.js';
import { syncDirectory, writeAll } from '../io/atomic-write.js';
import { inspectTarget, type Ownership, swapInFolder } from '../io/replace-folder.js';
import {
  EXPORT_ONNX_OPTIONS,
  type ExportOnnxOptions,
  exportOnnx,
  isCheckpointFolder,
} from '../onnx/export-onnx.js';
import {
  readSafetensors,
  type SafetensorsWriteDtype,
  writeSafetensors,
} from '../safetensors/safetensors.js';
import { type Checkpoint, type TokenizerFiles, validateCheckpoint } from './checkpoint.js';
import { llamaTensorSpecs } from './tensor-names.js';

/** File names inside a checkpoint folder (Hugging Face layout). */
export const CHECKPOINT_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  weightsIndex: 'model.safetensors.index.json',
  tokenizer: 'tokenizer.json',
  tokenizerConfig: 'tokenizer_config.json',
  generationConfig: 'generation_config.json',
  onnx: 'onnx/model.onnx',
} as const;

/** Options of {@link saveCheckpoint}. */
export type SaveCheckpointOptions = {
  /** Element type of the weights on disk (default `'F32'`). */
  dtype?: SafetensorsWriteDtype;
  /**
   * Split the weights into shards of at most this many bytes (a tensor larger than this gets a shard
   * of its own) with a `model.safetensors.index.json`, as Hugging Face does. Default: one file.
   */
  maxShardBytes?: number;
  /** Also export `onnx/model.onnx` (with these export options when an object). Default false. */
  onnx?: boolean | ExportOnnxOptions;
};

const SHARD_FILE = /^model-\d{5}-of-\d{5}\.safetensors$/;
const OWN_TOP_LEVEL = new Set<string>([
  CHECKPOINT_FILES.config,
  CHECKPOINT_FILES.weights,
  CHECKPOINT_FILES.weightsIndex,
  CHECKPOINT_FILES.tokenizer,
  CHECKPOINT_FILES.tokenizerConfig,
  CHECKPOINT_FILES.generationConfig,
]);

/**
 * The files {@link saveCheckpoint} writes (and so may replace): the names of
 * {@link CHECKPOINT_FILES}, weight shards `model-00001-of-00003.safetensors` and `onnx/model.onnx`.
 * Any other file in a checkpoint folder is the user's.
 */
const CHECKPOINT_OWNERSHIP: Ownership = {
  top: (name) => OWN_TOP_LEVEL.has(name) || SHARD_FILE.test(name),
  folders: { onnx: (name) => name === 'model.onnx' },
};

const TORCH_DTYPE: Record<SafetensorsWriteDtype, string> = {
  F32: 'float32',
  F16: 'float16',
  BF16: 'bfloat16',
};

async function writeTextFile(path: string, text: string): Promise<void> {
  await writeBytesFile(path, new TextEncoder().encode(text));
}

async function writeBytesFile(path: string, bytes: Uint8Array): Promise<void> {
  const handle = await open(path, 'wx');
  try {
    await writeAll(handle, bytes, 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

function bytesOf(tensor: NamedTensor, dtype: SafetensorsWriteDtype): number {
  return tensor.data.length * (dtype === 'F32' ? 4 : 2);
}

/**
 * Saves a checkpoint as a Hugging Face-style folder: `config.json`, `model.safetensors` (or shards
 * plus `model.safetensors.index.json`), `tokenizer.json` + `tokenizer_config.json` and
 * `generation_config.json` when present, and optionally `onnx/model.onnx`.
 *
 * The save is atomic at the folder level: everything is written (and fsynced) into a temporary
 * sibling folder, which then replaces `dir` by rename, so a crash leaves either the old or the new
 * checkpoint (never a mix). `dir` may be missing, empty, or an existing checkpoint folder
 * (`config.json` with `model.safetensors` or `model.safetensors.index.json`): then only the
 * checkpoint's own files are replaced (`config.json`, the weights or shards and their index, the
 * tokenizer files, `generation_config.json`, `onnx/model.onnx`); every other file in it (a README,
 * notes, other ONNX files) is moved into the new folder and survives. A file, or a non-empty folder
 * that is not a checkpoint, is refused before anything is written.
 *
 * @example
 * ```ts
 * await saveCheckpoint('runs/tiny/step-100', checkpoint, { dtype: 'BF16', onnx: true });
 * ```
 * @throws {InvalidArgumentError} | `SHAPE_MISMATCH` | `NON_FINITE` for an invalid checkpoint or
 * options; {@link OverwriteRefusedError} `WOULD_OVERWRITE` when `dir` is a file or a non-empty
 * folder that is not a checkpoint; file-system errors propagate with the temporary folder removed.
 */
export async function saveCheckpoint(
  dir: string,
  checkpoint: Checkpoint,
  options?: SaveCheckpointOptions,
): Promise<void> {
  const functionName = 'saveCheckpoint';
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'dir',
      functionName,
      value: dir,
      expected: 'a folder path',
    });
  }
  const valid = validateCheckpoint(checkpoint, { functionName });
  const opts = validateOptions<SaveCheckpointOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['dtype', 'maxShardBytes', 'onnx'],
  });
  if (opts.onnx !== undefined && typeof opts.onnx !== 'boolean') {
    validateOptions<ExportOnnxOptions>(opts.onnx, {
      parameter: 'options.onnx',
      functionName,
      known: EXPORT_ONNX_OPTIONS,
    });
  }
  const dtype = validateOneOf(opts.dtype ?? 'F32', ['F32', 'F16', 'BF16'] as const, {
    parameter: 'options.dtype',
    functionName,
  });
  const maxShardBytes =
    opts.maxShardBytes === undefined
      ? Number.POSITIVE_INFINITY
      : validateInteger(opts.maxShardBytes, {
          parameter: 'options.maxShardBytes',
          functionName,
          min: 1,
        });
  const onnxBytes =
    opts.onnx === undefined || opts.onnx === false
      ? undefined
      : exportOnnx(valid, opts.onnx === true ? undefined : opts.onnx);

  // Tensors in canonical order, so files are byte-identical for the same weights.
  const byName = new Map(valid.tensors.map((tensor) => [tensor.name, tensor]));
  const ordered = llamaTensorSpecs(valid.config).map(
    (spec) => byName.get(spec.name) as NamedTensor,
  );
  const shards: NamedTensor[][] = [];
  let current: NamedTensor[] = [];
  let currentBytes = 0;
  for (const tensor of ordered) {
    const size = bytesOf(tensor, dtype);
    if (current.length > 0 && currentBytes + size > maxShardBytes) {
      shards.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(tensor);
    currentBytes += size;
  }
  if (current.length > 0) shards.push(current);

  const target = resolve(dir);
  const parent = dirname(target);
  await refuseForeignTarget(target, functionName);
  await mkdir(parent, { recursive: true });
  const suffix = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const temporary = join(parent, `.${basename(target)}.tmp-${suffix}`);
  await mkdir(temporary);
  try {
    const configJson = { ...valid.config, torch_dtype: TORCH_DTYPE[dtype] };
    if (shards.length <= 1) {
      await writeSafetensors(join(temporary, CHECKPOINT_FILES.weights), ordered, { dtype });
    } else {
      const width = String(shards.length).padStart(5, '0');
      const weightMap: Record<string, string> = {};
      let totalSize = 0;
      for (const [index, shard] of shards.entries()) {
        const file = `model-${String(index + 1).padStart(5, '0')}-of-${width}.safetensors`;
        await writeSafetensors(join(temporary, file), shard, { dtype });
        for (const tensor of shard) {
          weightMap[tensor.name] = file;
          totalSize += bytesOf(tensor, dtype);
        }
      }
      await writeTextFile(
        join(temporary, CHECKPOINT_FILES.weightsIndex),
        json({ metadata: { total_size: totalSize }, weight_map: weightMap }),
      );
    }
    await writeTextFile(join(temporary, CHECKPOINT_FILES.config), json(configJson));
    if (valid.tokenizer) {
      await writeTextFile(join(temporary, CHECKPOINT_FILES.tokenizer), json(valid.tokenizer.json));
      if (valid.tokenizer.config) {
        await writeTextFile(
          join(temporary, CHECKPOINT_FILES.tokenizerConfig),
          json(valid.tokenizer.config),
        );
      }
    }
    if (valid.generationConfig) {
      await writeTextFile(
        join(temporary, CHECKPOINT_FILES.generationConfig),
        json(valid.generationConfig),
      );
    }
    if (onnxBytes) {
      await mkdir(join(temporary, 'onnx'));
      await writeBytesFile(join(temporary, CHECKPOINT_FILES.onnx), onnxBytes);
      await syncDirectory(join(temporary, 'onnx'));
    }
    await syncDirectory(temporary);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  await swapInFolder({
    target,
    temporary,
    parent,
    aside: join(parent, `.${basename(target)}.old-${suffix}`),
    owned: CHECKPOINT_OWNERSHIP,
  });
}

/** Refuses a `dir` that is a file or a non-empty folder without a checkpoint (nothing written). */
async function refuseForeignTarget(target: string, functionName: string): Promise<void> {
  const state = await inspectTarget(target);
  if (state === 'missing' || state === 'empty') return;
  if (state === 'not-a-folder') {
    throw new OverwriteRefusedError({
      path: target,
      reason: 'it is a file, not a checkpoint folder',
      functionName,
    });
  }
  if (!(await isCheckpointFolder(target))) {
    throw new OverwriteRefusedError({
      path: target,
      reason: `the folder is not empty and is not a checkpoint (no ${CHECKPOINT_FILES.config} with ${CHECKPOINT_FILES.weights} or ${CHECKPOINT_FILES.weightsIndex}); choose an empty or new folder`,
      functionName,
    });
  }
}

async function readJsonFile(path: string, required: boolean): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (!required && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ModelLoadError({
      path,
      reason: `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      cause: error,
    });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ModelLoadError({ path, reason: 'not valid JSON', cause: error });
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Buffers some Hugging Face checkpoints carry that are not weights (recomputed at run time). */
const IGNORED_TENSOR = /\.rotary_emb\.inv_freq$/;

/** Options of {@link loadCheckpoint}. */
export type LoadCheckpointOptions = {
  /** Skip the tokenizer and generation config files (default false). */
  weightsOnly?: boolean;
};

/**
 * Loads a Hugging Face-style checkpoint folder: `config.json` (validated with
 * {@link parseModelConfig}: any family of {@link MODEL_TYPES}), `model.safetensors` or a sharded `model.safetensors.index.json` (F32,
 * F16, BF16 → float32), and, when present, `tokenizer.json`, `tokenizer_config.json` and
 * `generation_config.json`. A SmolLM2 or Qwen2.5 folder from the Hugging Face Hub loads as is
 * (a stored `lm_head.weight` of a tied model and rotary `inv_freq` buffers are dropped).
 *
 * @example
 * ```ts
 * const checkpoint = await loadCheckpoint('models/SmolLM2-135M');
 * checkpoint.config.hidden_size; // 576
 * ```
 * @throws {ModelLoadError} `MODEL_LOAD_FAILED` naming the file for a missing or malformed file, and
 * (wrapped as the `cause`) for weights that do not match the config.
 */
export async function loadCheckpoint(
  dir: string,
  options?: LoadCheckpointOptions,
): Promise<Checkpoint> {
  const functionName = 'loadCheckpoint';
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'dir',
      functionName,
      value: dir,
      expected: 'a folder path',
    });
  }
  const opts = validateOptions<LoadCheckpointOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['weightsOnly'],
  });
  const configPath = join(dir, CHECKPOINT_FILES.config);
  const configJson = await readJsonFile(configPath, true);
  let config: Checkpoint['config'];
  try {
    config = parseModelConfig(configJson);
  } catch (error) {
    throw new ModelLoadError({
      path: configPath,
      reason: error instanceof Error ? error.message : String(error),
      cause: error,
    });
  }

  let tensors: NamedTensor[];
  const singlePath = join(dir, CHECKPOINT_FILES.weights);
  const indexPath = join(dir, CHECKPOINT_FILES.weightsIndex);
  if (await exists(singlePath)) {
    tensors = (await readSafetensors(singlePath)).tensors;
  } else if (await exists(indexPath)) {
    const index = await readJsonFile(indexPath, true);
    if (!isObject(index) || !isObject(index.weight_map)) {
      throw new ModelLoadError({ path: indexPath, reason: 'missing the weight_map object' });
    }
    const byFile = new Map<string, string[]>();
    for (const [name, file] of Object.entries(index.weight_map)) {
      if (
        typeof file !== 'string' ||
        file.includes('/') ||
        file.includes('\\') ||
        file.startsWith('.')
      ) {
        throw new ModelLoadError({
          path: indexPath,
          reason: `weight_map['${name}'] is not a plain file name in the folder: ${JSON.stringify(file)}`,
        });
      }
      const names = byFile.get(file) ?? [];
      names.push(name);
      byFile.set(file, names);
    }
    tensors = [];
    for (const [file, names] of byFile) {
      const contents = await readSafetensors(join(dir, file), { names });
      tensors.push(...contents.tensors);
    }
  } else {
    throw new ModelLoadError({
      path: dir,
      reason: `no ${CHECKPOINT_FILES.weights} or ${CHECKPOINT_FILES.weightsIndex} in the folder`,
    });
  }
  tensors = tensors.filter(
    (tensor) =>
      !IGNORED_TENSOR.test(tensor.name) &&
      !(config.tie_word_embeddings && tensor.name === 'lm_head.weight'),
  );

  const checkpoint: Checkpoint = { config, tensors };
  if (!opts.weightsOnly) {
    const tokenizerJson = await readJsonFile(join(dir, CHECKPOINT_FILES.tokenizer), false);
    const tokenizerConfig = await readJsonFile(join(dir, CHECKPOINT_FILES.tokenizerConfig), false);
    if (tokenizerJson !== undefined) {
      if (!isObject(tokenizerJson)) {
        throw new ModelLoadError({
          path: join(dir, CHECKPOINT_FILES.tokenizer),
          reason: 'not a JSON object',
        });
      }
      const tokenizer: TokenizerFiles = { json: tokenizerJson };
      if (isObject(tokenizerConfig)) tokenizer.config = tokenizerConfig;
      checkpoint.tokenizer = tokenizer;
    }
    const generationConfig = await readJsonFile(
      join(dir, CHECKPOINT_FILES.generationConfig),
      false,
    );
    if (isObject(generationConfig)) checkpoint.generationConfig = generationConfig;
  }
  try {
    return validateCheckpoint(checkpoint, { functionName });
  } catch (error) {
    throw new ModelLoadError({
      path: dir,
      reason: `the weights do not match config.json: ${error instanceof Error ? error.message : String(error)}`,
      cause: error,
    });
  }
}
