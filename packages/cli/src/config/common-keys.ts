import { DATASET_SCHEMA } from '../data/load-dataset.js';
import { REPORT_TO } from '../logging/sinks.js';
import { SAMPLER_SCHEMA } from '../model/resolve-model.js';
import { SERVED_MODEL_SCHEMA } from '../model/served-model.js';
import { REWARDS_SCHEMA } from '../rewards/resolve-rewards.js';
import { configKey } from './config-keys.js';

/**
 * The declarations of the top-level keys several configs share (each command spreads the ones it
 * takes into its key list; a key that means something else in one command is declared there).
 */

/** `model` of `generate`, `eval` and `vote --sample`: a local checkpoint or a served model. */
export const SAMPLED_MODEL_KEY = configKey(
  'a checkpoint folder, or a served model',
  'A checkpoint folder, or a served model { baseURL, model, api, … } (@rlvr/openai options; --base-url URL with model = the served name).',
  SERVED_MODEL_SCHEMA,
);

/** `dataset`: a file, or the `dataset` object (its keys are listed under `dataset`). */
export const DATASET_KEY = configKey(
  'a file path, or a dataset object',
  'The prompts (and answers): a JSONL, JSON, CSV or Parquet file, or { path, format, columns, limit }.',
  DATASET_SCHEMA,
);

/** `sampler`: @rlvr/rollout's ONNX sampler options (a local model only). */
export const SAMPLER_KEY = configKey(
  'an options object',
  "@rlvr/rollout createOnnxSampler options of a local model's sampler (workers, threads, engine, …).",
  SAMPLER_SCHEMA,
);

/** `rewards`: the verifiers. */
export const REWARDS_KEY = configKey(
  'reward names, or entries',
  'The verifiers: names (math, r1-format, ifeval, code, countdown, …) with weights, or { module: ./r.js }.',
  REWARDS_SCHEMA,
);

/** `reportTo` of the training commands. */
export const REPORT_TO_KEY = configKey(
  `a list of ${REPORT_TO.join(', ')}`,
  'The metrics sinks (--report-to sets it).',
);

/** `backend` of the training commands. */
export const BACKEND_KEY = configKey(
  "'auto', 'wasm', 'cpu' or 'tensorflow'",
  'The TensorFlow.js backend that trains (auto: wasm, else cpu).',
);

/** `outputDir` of `sft` and `distill`: the run folder. */
export const RUN_FOLDER_KEY = configKey(
  'a folder path',
  'The run folder: metrics.*, checkpoint/, model/ (adapter/ with lora) and rlvr-config.yaml.',
);

/** `resume` of `sft` and `distill`. */
export const RESUME_KEY = configKey(
  'a boolean',
  "Continue from the run folder's checkpoint (--resume sets it).",
);

/** `saveEvery` of `sft` and `distill`. */
export const SAVE_EVERY_KEY = configKey('an integer >= 1', {
  description: 'Steps between checkpoints.',
  defaultText: "the run's step count",
});
