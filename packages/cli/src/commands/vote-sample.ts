import type { VoteRecord } from '@rlvr/voting';
import { configSpec } from '../config/config-keys.js';
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
  readSampleCounts,
  SAMPLING_COMMAND_DEFAULTS,
  SAMPLING_REQUEST_SCHEMAS,
} from './sampling.js';
import { printVotes } from './vote.js';

const { model, dataset, n, batchSize, sampler } = SAMPLE_DATASET_SCHEMAS;
/** `rlvr vote --sample`'s own keys: generate's without `out` (the SampleRequest keys follow). */
const VOTE_SAMPLE_KEYS = { model, dataset, n, batchSize, sampler };

const spec = configSpec({
  keys: { ...VOTE_SAMPLE_KEYS, ...SAMPLING_REQUEST_SCHEMAS },
  nested: SAMPLE_DATASET_NESTED,
  defaults: { ...SAMPLING_COMMAND_DEFAULTS },
  required: ['model', 'dataset', 'maxNewTokens'],
});

/** `rlvr vote --sample`: sample n answers per prompt from a model, then vote as `rlvr vote` does. */
export const voteSampleCommand: Command = {
  name: 'vote',
  summary: 'sample n answers per prompt from a checkpoint or served model, then majority-vote them',
  usage:
    '--sample --config vote.yaml [--set key=value]... [--base-url URL] [--out votes.jsonl] [--ks 1,2,4]',
  spec,
  flags: {
    sample: { type: 'boolean', help: '     sample the answers from the config model (this mode)' },
    out: { type: 'string', help: 'FILE  write one vote per line here' },
    ks: { type: 'string', help: 'LIST  the k values of the curve (default 1, 2, 4, … n)' },
    ...BASE_URL_FLAG,
  },
  details: sampleConfigHelp(
    spec,
    Object.keys(VOTE_SAMPLE_KEYS),
    `The dataset's answers give the pass@k / maj@k table. Votes with @rlvr/voting's defaults
(final answer, math equivalence).`,
  ),
  example: `rlvr vote --sample --base-url http://127.0.0.1:8000/v1 --set model=Qwen/Qwen3-0.6B \\
  --set dataset=data/test.jsonl --set n=16 --set maxNewTokens=512 --set temperature=0.6 --ks 1,4,16`,
  async run(context) {
    const { config } = context;
    const values = config.values;
    readSampleCounts(values);
    const out = context.flags.out as string | undefined;
    if (out !== undefined) checkOutput(out, context.overwrite);
    const { records, groups } = await sampleDataset(context, 'vote');
    const votes: VoteRecord[] = records.map((record, index) => ({
      id: record.id,
      samples: groups[index]!.map((completion) => completion.text),
      ...(typeof record.answer === 'string' || typeof record.answer === 'number'
        ? { gold: String(record.answer) }
        : {}),
    }));
    await printVotes(context, votes, out);
    return 0;
  },
};
