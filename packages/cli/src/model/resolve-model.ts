import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode, validateOneOf } from '@rlvr/core';
import { type Checkpoint, createTokenizer, loadCheckpoint, type Tokenizer } from '@rlvr/model';
import { zod } from '@rlvr/options';
import {
  createOnnxSampler,
  ONNX_SAMPLER_OPTION_KEYS,
  ONNX_SAMPLER_OPTIONS,
  type OnnxSampler,
} from '@rlvr/rollout';
import { type BackendName, selectBackend } from '@rlvr/trainer';
import { omitKeys } from '../config/option-keys.js';
import { ConfigError } from '../errors/config-error.js';

/**
 * `createOnnxSampler` options the CLI sets itself: the model comes from the `model` (or
 * `teacher`) key as a checkpoint, with its own tokenizer.
 */
export const SAMPLER_KEYS_SET_BY_CLI = ['checkpoint', 'onnxPath', 'tokenizer'] as const;
/** Keys of the `sampler` config object: @rlvr/rollout's `createOnnxSampler` options, passed through. */
export const SAMPLER_KEYS = omitKeys(ONNX_SAMPLER_OPTION_KEYS, SAMPLER_KEYS_SET_BY_CLI);
/**
 * What the `sampler` key takes: @rlvr/rollout's `createOnnxSampler` options schema less the keys
 * the CLI sets, for the config's JSON Schema and `--help`.
 */
export const SAMPLER_SCHEMA = zod.omit(
  ONNX_SAMPLER_OPTIONS.schema,
  Object.fromEntries(SAMPLER_KEYS_SET_BY_CLI.map((key) => [key, true] as const)) as Record<
    (typeof SAMPLER_KEYS_SET_BY_CLI)[number],
    true
  >,
);

const isDir = (path: string) => existsSync(path) && statSync(path).isDirectory();

/**
 * The checkpoint folder a `model` path names: a checkpoint folder itself (`config.json`), a run
 * folder written by `rlvr sft|grpo|distill` (`<dir>/model`), a GrpoTrainer checkpoint
 * (`step-N/model`) or a GrpoTrainer output folder (its newest `checkpoints/step-N/model`).
 */
export function resolveModelPath(path: string, key: string, source: string | undefined): string {
  if (existsSync(join(path, 'config.json'))) return path;
  if (existsSync(join(path, 'model', 'config.json'))) return join(path, 'model');
  const checkpoints = join(path, 'checkpoints');
  if (isDir(checkpoints)) {
    const steps = readdirSync(checkpoints)
      .filter((name) => /^step-\d+$/.test(name))
      .sort();
    const newest = steps.at(-1);
    if (newest !== undefined && existsSync(join(checkpoints, newest, 'model', 'config.json'))) {
      return join(checkpoints, newest, 'model');
    }
  }
  throw new ConfigError({
    key,
    source,
    message: `'${path}' is not a model: expected a checkpoint folder with config.json (or a run folder of rlvr sft/grpo/distill)`,
    code: ErrorCode.INVALID_ARGUMENT,
  });
}

/** Loads the checkpoint a `model` config value names (see {@link resolveModelPath}). */
export async function loadModel(
  value: unknown,
  key: string,
  source: string | undefined,
): Promise<{ path: string; checkpoint: Checkpoint; tokenizer: Tokenizer | undefined }> {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ConfigError({
      key,
      source,
      message: 'expected the path of a model folder',
      code: ErrorCode.INVALID_ARGUMENT,
    });
  }
  const path = resolveModelPath(value, key, source);
  const checkpoint = await loadCheckpoint(path);
  const tokenizer = checkpoint.tokenizer ? createTokenizer(checkpoint.tokenizer) : undefined;
  return { path, checkpoint, tokenizer };
}

/** Selects the tfjs backend for training (`backend` config key; default wasm, then cpu). */
export async function selectTrainingBackend(backend: unknown): Promise<string> {
  validateOneOf(backend ?? 'auto', ['auto', 'wasm', 'cpu', 'tensorflow'], { parameter: 'backend' });
  const candidates: BackendName[] =
    backend === undefined || backend === 'auto' ? ['wasm', 'cpu'] : [backend as BackendName];
  const selected = await selectBackend({ candidates });
  return selected.name;
}

/** An ONNX Runtime sampler (@rlvr/rollout) over a checkpoint, with the config's `sampler` options. */
export function createSampler(
  checkpoint: Checkpoint,
  options: Record<string, unknown> | undefined,
): Promise<OnnxSampler> {
  return createOnnxSampler({ checkpoint, ...(options ?? {}) });
}
