import { ErrorCode } from '@rlvr/core';
import { optional, text } from '@rlvr/options';
import type { ConfigSpec } from '../config/load-config.js';
import { ConfigError } from '../errors/config-error.js';
import { BASE_URL_FLAG } from '../model/served-model.js';
import type { Command } from './command.js';
import {
  SAMPLE_DATASET_KEYS_HELP,
  SAMPLE_DATASET_NESTED,
  SAMPLE_DATASET_SCHEMAS,
  sampleDataset,
} from './sample-dataset.js';
import {
  checkOutput,
  openOutput,
  readSampleCounts,
  SAMPLING_COMMAND_DEFAULTS,
  SAMPLING_DEFAULTS_HELP,
  SAMPLING_KEYS,
} from './sampling.js';

const spec: ConfigSpec = {
  known: ['model', 'dataset', 'out', 'n', 'batchSize', 'sampler', ...SAMPLING_KEYS],
  nested: SAMPLE_DATASET_NESTED,
  schemas: {
    ...SAMPLE_DATASET_SCHEMAS,
    out: optional(text('a file path'), 'The JSONL file to write.'),
  },
  defaults: { ...SAMPLING_COMMAND_DEFAULTS },
  required: ['model', 'dataset', 'out', 'maxNewTokens'],
};

export const generateCommand: Command = {
  name: 'generate',
  summary: 'sample n completions per prompt from a checkpoint into a JSONL file (@rlvr/rollout)',
  usage: '--config generate.yaml [--set key=value]... [--overwrite]',
  spec,
  flags: BASE_URL_FLAG,
  details: `Config keys: model (a checkpoint folder, or a served model { baseURL, model, api, … }:
@rlvr/openai options; --base-url URL with model = the served name), dataset, out (the JSONL to write), n (completions per prompt, G),
batchSize (prompts per sampler call), sampler (@rlvr/rollout options) and the SampleRequest keys
${SAMPLING_KEYS.join(', ')}. Each output line:
{"id", "prompt", "answer"?, "completions": [{"text", "finishReason", "tokens"}]}. The output
feeds rlvr vote (samples) or your own analysis.
${SAMPLING_DEFAULTS_HELP}

${SAMPLE_DATASET_KEYS_HELP}`,
  example: `rlvr generate --set model=grpo-run --set dataset=data/test.jsonl --set out=samples.jsonl \\
  --set n=8 --set maxNewTokens=32 --set temperature=0.7`,
  async run(context) {
    const { config, io } = context;
    const values = config.values;
    const source = (key: string) => config.origins.get(key) ?? config.file;
    readSampleCounts(values);
    if (typeof values.out !== 'string' || values.out === '') {
      throw new ConfigError({
        key: 'out',
        source: source('out'),
        message: 'expected a file path',
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    const out = values.out;
    checkOutput(out, context.overwrite);
    const { records, groups } = await sampleDataset(context, 'generate');
    const file = await openOutput(out, context.overwrite);
    try {
      for (const [index, record] of records.entries()) {
        await file.write(
          JSON.stringify({
            id: record.id,
            prompt: record.prompt,
            ...(record.answer === undefined ? {} : { answer: record.answer }),
            completions: groups[index]!.map((completion) => ({
              text: completion.text,
              finishReason: completion.finishReason,
              tokens: completion.tokenIds.length,
            })),
          }),
        );
      }
    } finally {
      await file.close();
    }
    io.stdout(
      `generate: ${records.length} prompts × ${String(values.n)} completions written to ${out}\n`,
    );
    return 0;
  },
};
