import type { Completion } from '@rlvr/core';
import { DATASET_KEY, SAMPLED_MODEL_KEY, SAMPLER_KEY } from '../config/common-keys.js';
import { CONFIG_KEYS_TITLE, configHelp } from '../config/config-keys.js';
import { keysHelp } from '../config/config-schema.js';
import type { ConfigSpec } from '../config/load-config.js';
import {
  DATASET_KEYS,
  DATASET_OPTIONS,
  type DatasetRecord,
  loadDataset,
} from '../data/load-dataset.js';
import { SAMPLER_KEYS, SAMPLER_SCHEMA } from '../model/resolve-model.js';
import { resolveModelSource, SERVED_MODEL_KEYS, samplerOf } from '../model/served-model.js';
import type { CommandContext } from './command.js';
import {
  SAMPLING_COMMAND_SCHEMAS,
  SAMPLING_DEFAULTS_HELP,
  SAMPLING_KEYS,
  sampleAll,
  samplingOf,
} from './sampling.js';

/** The nested keys of `generate`, `eval` and `vote --sample` (each from its package's schema). */
export const SAMPLE_DATASET_NESTED = {
  dataset: DATASET_KEYS,
  sampler: SAMPLER_KEYS,
  model: SERVED_MODEL_KEYS,
} as const;

/** The declarations of the keys `generate`, `eval` and `vote --sample` share. */
export const SAMPLE_DATASET_SCHEMAS = {
  model: SAMPLED_MODEL_KEY,
  dataset: DATASET_KEY,
  ...SAMPLING_COMMAND_SCHEMAS,
  sampler: SAMPLER_KEY,
} as const;

/** The `--help` lines of the `dataset` and `sampler` keys, from their schemas. */
const SAMPLE_DATASET_KEYS_HELP = `dataset (a file path, or):
${keysHelp('dataset.', DATASET_OPTIONS.schema).join('\n')}
sampler (@rlvr/rollout createOnnxSampler, less the keys the CLI sets; a local model only):
${keysHelp('sampler.', SAMPLER_SCHEMA).join('\n')}`;

/**
 * The `--help` text of a `generate` / `eval` / `vote --sample` config, from its declarations: its
 * own keys (`keys`), the SampleRequest keys, `notes` (what the command writes), the defaults line
 * and the `dataset` / `sampler` keys.
 */
export function sampleConfigHelp(spec: ConfigSpec, keys: readonly string[], notes: string): string {
  return `${configHelp(spec, [
    { title: CONFIG_KEYS_TITLE, keys },
    {
      title: "SampleRequest (@rlvr/core's; passed to the sampler, which checks them)",
      keys: SAMPLING_KEYS,
      describe: false,
      cliDefaults: false, // the defaults line below says whose they are
    },
  ])}
${notes}
${SAMPLING_DEFAULTS_HELP}

${SAMPLE_DATASET_KEYS_HELP}`;
}

/**
 * What `generate`, `eval` and `vote --sample` share: the config's model (a folder, or a served
 * model by `model: {…}` or `--base-url`), its dataset's prompts (chat prompts rendered with a
 * local model's template), and `n` completions per prompt in `batchSize` calls.
 */
export async function sampleDataset(
  context: CommandContext,
  label: string,
): Promise<{ records: DatasetRecord[]; groups: Completion[][] }> {
  const { config } = context;
  const values = config.values;
  const source = (key: string) => config.origins.get(key) ?? config.file;
  const model = await resolveModelSource(
    values.model,
    'model',
    source('model'),
    context.flags['base-url'] as string | undefined,
  );
  const tokenizer = model.kind === 'local' ? model.tokenizer : undefined;
  const records = await loadDataset(values.dataset, {
    need: ['prompt'],
    ...(tokenizer ? { chat: tokenizer } : {}),
    source: source('dataset'),
  });
  const sampler = await samplerOf(
    model,
    values.sampler as Record<string, unknown> | undefined,
    'model',
    source('sampler'),
  );
  try {
    const groups = await sampleAll({
      sampler,
      prompts: records.map((record) => record.prompt),
      n: values.n as number,
      batchSize: values.batchSize as number,
      request: samplingOf(values),
      progress: context.progress,
      label,
    });
    return { records, groups };
  } finally {
    await sampler.close();
  }
}
