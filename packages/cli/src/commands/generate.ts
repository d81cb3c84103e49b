import { ErrorCode } from '@rlvr/core';
import { optional, text } from '@rlvr/options';
import { configSpec } from '../config/config-keys.js';
import { ConfigError } from '../errors/config-error.js';
import { BASE_URL_FLAG } from '../model/served-model.js';
import type { Command } from './command.js';
import {
  SAMPLE_DATASET_NESTED,
  SAMPLE_DATASET_SCHEMAS,
  sampleConfigHelp,
  sampleDataset,
} from './sample-dataset.js';
import {
  checkOutput,
  openOutput,
  readSampleCounts,
  SAMPLING_COMMAND_DEFAULTS,
  SAMPLING_REQUEST_SCHEMAS,
} from './sampling.js';

const { model, dataset, n, batchSize, sampler } = SAMPLE_DATASET_SCHEMAS;
/** `rlvr generate`'s own keys, each declared once (the SampleRequest keys follow them). */
const GENERATE_KEYS = {
  model,
  dataset,
  out: optional(text('a file path'), 'The JSONL file to write.'),
  n,
  batchSize,
  sampler,
};

const spec = configSpec({
  keys: { ...GENERATE_KEYS, ...SAMPLING_REQUEST_SCHEMAS },
  nested: SAMPLE_DATASET_NESTED,
  defaults: { ...SAMPLING_COMMAND_DEFAULTS },
  required: ['model', 'dataset', 'out', 'maxNewTokens'],
});

export const generateCommand: Command = {
  name: 'generate',
  summary: 'sample n completions per prompt from a checkpoint into a JSONL file (@rlvr/rollout)',
  usage: '--config generate.yaml [--set key=value]... [--overwrite]',
  spec,
  flags: BASE_URL_FLAG,
  details: sampleConfigHelp(
    spec,
    Object.keys(GENERATE_KEYS),
    `Each output line: {"id", "prompt", "answer"?, "completions": [{"text", "finishReason", "tokens"}]}.
The output feeds rlvr vote (samples) or your own analysis.`,
  ),
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
