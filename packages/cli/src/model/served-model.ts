import { ErrorCode, type Sampler } from '@rlvr/core';
import type { Checkpoint, Tokenizer } from '@rlvr/model';
import {
  createOpenAISampler,
  OPENAI_SAMPLER_OPTION_KEYS,
  OPENAI_SAMPLER_OPTIONS,
  type OpenAISamplerOptions,
} from '@rlvr/openai';
import { zod } from '@rlvr/options';
import type { FlagSpec } from '../commands/command.js';
import { ConfigError } from '../errors/config-error.js';
import { createSampler, loadModel } from './resolve-model.js';

/** Keys of a served `model` (or `teacher`): @rlvr/openai's `createOpenAISampler` options. */
export const SERVED_MODEL_KEYS = OPENAI_SAMPLER_OPTION_KEYS;
/**
 * What a `model` (or `teacher`) config value is, for the config's JSON Schema: a folder or a
 * served model's name, or @rlvr/openai's options (each optional: `--base-url` gives `baseURL`,
 * and `api` defaults to {@link BASE_URL_API} with it).
 */
export const SERVED_MODEL_SCHEMA = zod.union([
  zod.string(),
  zod.partial(OPENAI_SAMPLER_OPTIONS.schema),
]);

/** The `api` a served model given by `--base-url` uses (a `model: {…}` object names its own). */
export const BASE_URL_API = 'completions' as const;

/** The `--base-url` flag of the sampling subcommands. */
export const BASE_URL_FLAG: Readonly<Record<string, FlagSpec>> = {
  'base-url': {
    type: 'string',
    help: `URL  sample from the model served at this OpenAI-compatible URL (the model key names it; api ${BASE_URL_API})`,
  },
};

/** A model a command samples from: a local checkpoint folder, or a served model. */
export type ModelSource =
  | { kind: 'local'; path: string; checkpoint: Checkpoint; tokenizer: Tokenizer | undefined }
  | { kind: 'served'; options: OpenAISamplerOptions };

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The model a `model` / `teacher` config value names: a folder (see `loadModel`), or
 * `{ baseURL, model, api, … }` (@rlvr/openai options) for a served model; `baseURL` (the
 * `--base-url` flag) makes a name string a served model with api `completions`.
 */
export async function resolveModelSource(
  value: unknown,
  key: string,
  source: string | undefined,
  baseURL?: string,
): Promise<ModelSource> {
  if (baseURL !== undefined) {
    if (isPlainObject(value)) {
      if (value.baseURL !== undefined) {
        throw new ConfigError({
          key: `${key}.baseURL`,
          source,
          message: 'given twice: as --base-url and in the config (keep one)',
          code: ErrorCode.INVALID_ARGUMENT,
        });
      }
      return {
        kind: 'served',
        options: { api: BASE_URL_API, ...value, baseURL } as OpenAISamplerOptions,
      };
    }
    if (typeof value !== 'string' || value === '') {
      throw new ConfigError({
        key,
        source,
        message: 'expected the served model name (with --base-url)',
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    return { kind: 'served', options: { baseURL, model: value, api: BASE_URL_API } };
  }
  if (isPlainObject(value)) return { kind: 'served', options: value as OpenAISamplerOptions };
  return { kind: 'local', ...(await loadModel(value, key, source)) };
}

/**
 * The sampler of a model: @rlvr/rollout's ONNX sampler (with the config's `sampler` options) for
 * a local model, @rlvr/openai's for a served one (which takes no `sampler` options: its options
 * are the model object's keys).
 */
export async function samplerOf(
  model: ModelSource,
  samplerOptions: Record<string, unknown> | undefined,
  key: string,
  source: string | undefined,
): Promise<Sampler & { close(): Promise<void> }> {
  if (model.kind === 'local') return createSampler(model.checkpoint, samplerOptions);
  if (samplerOptions !== undefined && Object.keys(samplerOptions).length > 0) {
    throw new ConfigError({
      key: 'sampler',
      source,
      message: `has no effect with a served ${key} (these are @rlvr/rollout options; a served model takes @rlvr/openai's in ${key}: {…})`,
      code: ErrorCode.INEFFECTIVE_OPTION,
    });
  }
  try {
    return createOpenAISampler(model.options);
  } catch (error) {
    throw new ConfigError({
      key,
      source,
      message: (error as Error).message,
      code: (error as { code?: ErrorCode }).code ?? ErrorCode.INVALID_ARGUMENT,
      cause: error,
    });
  }
}

/** A name for a model in messages and fingerprints. */
export function modelName(model: ModelSource): string {
  return model.kind === 'local' ? model.path : `${model.options.baseURL}#${model.options.model}`;
}
