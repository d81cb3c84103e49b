import { existsSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type Completion,
  OverwriteRefusedError,
  SAMPLE_REQUEST_DEFAULTS,
  SAMPLE_REQUEST_KEYS,
  type Sampler,
} from '@rlvr/core';
import {
  integer,
  object,
  parseOptions,
  type Schema,
  sampleRequestFields,
  withDefault,
} from '@rlvr/options';
import { omitKeys } from '../config/option-keys.js';
import { startProgress } from '../logging/progress.js';

/**
 * `SampleRequest` keys a `generate` / `eval` config does not set: `prompts` come from the dataset
 * and `n` is the command's own key (with its default); the outputs keep the completion text only,
 * so `returnModelLogprobs` and `topLogprobs` would be computed and dropped, and `confidenceStop`
 * needs `topLogprobs`.
 */
export const SAMPLING_KEYS_NOT_IN_CONFIG = [
  'prompts',
  'n',
  'returnModelLogprobs',
  'topLogprobs',
  'confidenceStop',
] as const;
/** SampleRequest keys a `generate` / `eval` config may set (@rlvr/core's `SAMPLE_REQUEST_KEYS`). */
export const SAMPLING_KEYS = omitKeys(SAMPLE_REQUEST_KEYS, SAMPLING_KEYS_NOT_IN_CONFIG);
/** The declarations of {@link SAMPLING_KEYS} (@rlvr/options' `SampleRequest` fields, passed through). */
export const SAMPLING_REQUEST_SCHEMAS = sampleRequestFields(SAMPLING_KEYS_NOT_IN_CONFIG);

/**
 * The CLI's own defaults of `generate` and `eval`, defined once and shown by `--help`, the README
 * and `--print-config`: `n` (completions per prompt) 4 and `batchSize` (prompts per sampler call)
 * 8, which a sampler call needs and has no default for, and the base `seed` 0 (batch b samples
 * with seed `seed + b`): core's `SampleRequest` has no seed default (the ONNX sampler would draw a
 * fresh one per call), and the CLI's outputs must repeat.
 */
export const CLI_SAMPLING_DEFAULTS = Object.freeze({ n: 4, batchSize: 8, seed: 0 } as const);

/** The CLI's `n` and `batchSize` keys, for the configs' JSON Schemas (with their defaults). */
export const SAMPLING_COMMAND_SCHEMAS = {
  n: withDefault(
    integer({ min: 1 }),
    CLI_SAMPLING_DEFAULTS.n,
    "Completions per prompt (the CLI's default).",
  ),
  batchSize: withDefault(
    integer({ min: 1 }),
    CLI_SAMPLING_DEFAULTS.batchSize,
    "Prompts per sampler call (the CLI's default).",
  ),
};

/**
 * A config's `n` and `batchSize` (and `more` of the command's own keys), checked against their
 * schemas: `Invalid argument for parameter 'n': expected an integer >= 1, got 0`.
 */
export function readSampleCounts<const More extends Record<string, Schema>>(
  values: Readonly<Record<string, unknown>>,
  more: More = {} as More,
) {
  const shape = { ...SAMPLING_COMMAND_SCHEMAS, ...more };
  const picked = Object.fromEntries(Object.keys(shape).map((key) => [key, values[key]]));
  return parseOptions(object(shape), picked, { parameter: '' });
}

/**
 * The defaults a `generate` / `eval` config starts from: {@link CLI_SAMPLING_DEFAULTS} and core's
 * `SAMPLE_REQUEST_DEFAULTS.temperature` (shown, not a CLI value); the other sampling fields are
 * left to the sampler (core's defaults: no top-k / top-p / min-p cut, no repetition penalty).
 */
export const SAMPLING_COMMAND_DEFAULTS = Object.freeze({
  ...CLI_SAMPLING_DEFAULTS,
  temperature: SAMPLE_REQUEST_DEFAULTS.temperature,
} as const);

/** The defaults line of `generate` / `eval` `--help`. */
export const SAMPLING_DEFAULTS_HELP = `Defaults: n ${CLI_SAMPLING_DEFAULTS.n}, batchSize ${CLI_SAMPLING_DEFAULTS.batchSize}, seed ${CLI_SAMPLING_DEFAULTS.seed} are the CLI's;
temperature ${SAMPLE_REQUEST_DEFAULTS.temperature} is core's SampleRequest default; --print-config shows them.`;

/** The request fields of a config (only those set). */
export function samplingOf(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SAMPLING_KEYS) if (values[key] !== undefined) out[key] = values[key];
  return out;
}

/**
 * Samples `n` completions for every prompt, `batchSize` prompts per sampler call; batch b uses
 * seed `seed + b` so the output does not depend on anything but the config.
 */
export async function sampleAll(options: {
  sampler: Sampler;
  prompts: readonly string[];
  n: number;
  batchSize: number;
  request: Record<string, unknown>;
  progress: boolean;
  label: string;
}): Promise<Completion[][]> {
  const { prompts, batchSize } = options;
  const out: Completion[][] = [];
  const bar = startProgress(options.label, prompts.length, options.progress);
  const baseSeed = (options.request.seed as number | undefined) ?? CLI_SAMPLING_DEFAULTS.seed;
  try {
    for (let start = 0, batch = 0; start < prompts.length; start += batchSize, batch++) {
      const groups = await options.sampler.sample({
        ...(options.request as { maxNewTokens: number }),
        prompts: prompts.slice(start, start + batchSize),
        n: options.n,
        seed: baseSeed + batch,
      });
      out.push(...groups);
      bar.update(Math.min(prompts.length, start + batchSize));
    }
  } finally {
    bar.stop();
  }
  return out;
}

/**
 * Opens an output file for writing; an existing file is refused unless `overwrite`. Lines are
 * written as they come; `close` finishes the file.
 */
export async function openOutput(
  path: string,
  overwrite: boolean,
): Promise<{ write(line: string): Promise<void>; close(): Promise<void> }> {
  if (existsSync(path) && !overwrite) {
    throw new OverwriteRefusedError({ path, reason: 'the file exists', allowWith: '--overwrite' });
  }
  await mkdir(dirname(path), { recursive: true });
  const handle = await open(path, 'w');
  return {
    async write(line) {
      await handle.write(`${line}\n`);
    },
    async close() {
      await handle.close();
    },
  };
}

/** Refuses an existing output file unless `overwrite`, before any work is done. */
export function checkOutput(path: string, overwrite: boolean): void {
  if (existsSync(path) && !overwrite) {
    throw new OverwriteRefusedError({ path, reason: 'the file exists', allowWith: '--overwrite' });
  }
}
