import type { Completion } from '@rlvr/core';
import { type DatasetRecord, loadDataset } from '../data/load-dataset.js';
import { resolveModelSource, samplerOf } from '../model/served-model.js';
import type { CommandContext } from './command.js';
import { sampleAll, samplingOf } from './sampling.js';

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
