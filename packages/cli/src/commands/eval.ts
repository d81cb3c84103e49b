import { join } from 'node:path';
import { ErrorCode, passAtK, type WeightedReward } from '@rlvr/core';
import { custom, defaultsOf, number, object, optional, text, withDefault } from '@rlvr/options';
import { defaultExtract, defaultKs, majAtKFromAnswers } from '@rlvr/voting';
import { REWARDS_KEY } from '../config/common-keys.js';
import { configSpec } from '../config/config-keys.js';
import type { DatasetRecord } from '../data/load-dataset.js';
import { ConfigError } from '../errors/config-error.js';
import { BASE_URL_FLAG } from '../model/served-model.js';
import { resolveRewards } from '../rewards/resolve-rewards.js';
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

/** Files `rlvr eval` writes into `outputDir`. */
export const EVAL_FILES = { results: 'eval-results.json', samples: 'eval-samples.jsonl' } as const;

/** Keys of `eval` beside the sampling ones, declared once (JSON Schema, default, check). */
const EVAL_SCHEMAS = {
  ks: optional(
    custom<number[]>(() => true, 'integers in [1, n]'),
    {
      description: 'The k values of the pass@k / maj@k table.',
      defaultText: '1, 2, 4, … n',
    },
  ),
  threshold: withDefault(
    number(),
    1,
    'A sample is correct when its weighted reward is at least this.',
  ),
  outputDir: optional(text('a folder path'), {
    description: 'Writes eval-results.json and eval-samples.jsonl there.',
    defaultText: 'no files',
  }),
};

const { model, dataset, n, batchSize, sampler } = SAMPLE_DATASET_SCHEMAS;
/** `rlvr eval`'s own keys, each declared once (the SampleRequest keys follow them). */
const EVAL_KEYS = {
  model,
  dataset,
  rewards: REWARDS_KEY,
  n,
  ks: EVAL_SCHEMAS.ks,
  threshold: EVAL_SCHEMAS.threshold,
  batchSize,
  outputDir: EVAL_SCHEMAS.outputDir,
  sampler,
};

const spec = configSpec({
  keys: { ...EVAL_KEYS, ...SAMPLING_REQUEST_SCHEMAS },
  nested: SAMPLE_DATASET_NESTED,
  defaults: { ...SAMPLING_COMMAND_DEFAULTS, ...defaultsOf(object(EVAL_SCHEMAS)) },
  required: ['model', 'dataset', 'rewards', 'maxNewTokens'],
});

/** One evaluated sample. */
type Scored = {
  text: string;
  reward: number;
  correct: boolean;
  answer: string | null;
  finishReason: string;
};

async function score(
  rewards: readonly WeightedReward[],
  record: DatasetRecord,
  completion: { text: string; finishReason: string; tokenIds: number[] },
  threshold: number,
): Promise<Scored> {
  let total = 0;
  for (const reward of rewards) {
    const value = await reward.fn({
      prompt: record.prompt,
      completion: completion.text,
      promptId: record.id,
      finishReason: completion.finishReason as 'stop',
      completionTokens: completion.tokenIds.length,
      metadata: record.extra,
      ...(record.answer === undefined ? {} : { answer: record.answer }),
    });
    total += (reward.weight ?? 1) * (value ?? 0);
  }
  return {
    text: completion.text,
    reward: total,
    correct: total >= threshold,
    answer: defaultExtract(completion.text),
    finishReason: completion.finishReason,
  };
}

/** pass@k (unbiased, from the correct count) and maj@k (exact, gold answers only) per k. */
export function curves(
  samples: readonly { record: DatasetRecord; scored: readonly Scored[] }[],
  ks: readonly number[],
): { k: number; passAtK: number; majAtK: number | null }[] {
  return ks.map((k) => {
    const pass = samples.map(({ scored }) =>
      passAtK(scored.length, scored.filter((s) => s.correct).length, k),
    );
    const withGold = samples.filter(
      ({ record }) => typeof record.answer === 'string' || typeof record.answer === 'number',
    );
    const maj = withGold.map(({ record, scored }) =>
      majAtKFromAnswers(
        scored.map((s) => s.answer),
        String(record.answer),
        k,
      ),
    );
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    return { k, passAtK: mean(pass), majAtK: maj.length === 0 ? null : mean(maj) };
  });
}

export const evalCommand: Command = {
  name: 'eval',
  summary: 'pass@k and maj@k of a checkpoint or served model on a dataset, scored by rewards',
  usage: '--config eval.yaml [--set key=value]... [--overwrite]',
  spec,
  flags: BASE_URL_FLAG,
  details: sampleConfigHelp(
    spec,
    Object.keys(EVAL_KEYS),
    'maj@k votes over the extracted final answers (@rlvr/voting) against the answer column.',
  ),
  example: `rlvr eval --config eval.yaml --set model=grpo-run --set n=8
# eval.yaml
model: grpo-run
dataset: data/test.jsonl
rewards: [math]
maxNewTokens: 32
outputDir: grpo-run`,
  async run(context) {
    const { config, io } = context;
    const values = config.values;
    const source = (key: string) => config.origins.get(key) ?? config.file;
    const { n, threshold } = readSampleCounts(values, { threshold: EVAL_SCHEMAS.threshold });
    const ks = (values.ks as number[] | undefined) ?? defaultKs(n);
    const outputDir = values.outputDir as string | undefined;
    if (outputDir !== undefined) {
      checkOutput(join(outputDir, EVAL_FILES.results), context.overwrite);
      checkOutput(join(outputDir, EVAL_FILES.samples), context.overwrite);
    }
    const rewards = await resolveRewards(values.rewards, source('rewards'));
    for (const k of ks) {
      if (!Number.isInteger(k) || k < 1 || k > n) {
        throw new ConfigError({
          key: 'ks',
          source: source('ks'),
          message: `every k must be an integer in [1, n = ${n}], got ${String(k)}`,
          code: ErrorCode.INVALID_ARGUMENT,
        });
      }
    }
    const { records, groups } = await sampleDataset(context, 'eval');
    const samples = [];
    for (const [index, record] of records.entries()) {
      const scored = [];
      for (const completion of groups[index]!)
        scored.push(await score(rewards, record, completion, threshold));
      samples.push({ record, scored });
    }
    const table = curves(samples, ks);
    const meanReward =
      samples.flatMap((s) => s.scored.map((x) => x.reward)).reduce((a, b) => a + b, 0) /
      (records.length * n);
    io.stdout(
      `eval: ${records.length} prompts × ${n} samples, mean reward ${meanReward.toFixed(4)}\n`,
    );
    io.stdout(formatCurve(table));
    if (outputDir !== undefined) {
      const summary = { prompts: records.length, n, threshold, meanReward, curve: table };
      await writeEvalFiles(outputDir, summary, samples, context.overwrite);
    }
    return 0;
  },
};

/** The pass@k / maj@k table as printed. */
function formatCurve(
  table: readonly { k: number; passAtK: number; majAtK: number | null }[],
): string {
  const rows = table.map(
    (row) =>
      `${String(row.k).padStart(4)}  ${row.passAtK.toFixed(4).padStart(8)}  ${(row.majAtK === null ? '-' : row.majAtK.toFixed(4)).padStart(8)}\n`,
  );
  return `${'k'.padStart(4)}  ${'pass@k'.padStart(8)}  ${'maj@k'.padStart(8)}\n${rows.join('')}`;
}

/** Writes `eval-results.json` (the summary) and `eval-samples.jsonl` (every scored sample). */
async function writeEvalFiles(
  outputDir: string,
  summary: object,
  samples: readonly { record: DatasetRecord; scored: readonly Scored[] }[],
  overwrite: boolean,
): Promise<void> {
  const results = await openOutput(join(outputDir, EVAL_FILES.results), overwrite);
  await results.write(JSON.stringify(summary, null, 2));
  await results.close();
  const file = await openOutput(join(outputDir, EVAL_FILES.samples), overwrite);
  try {
    for (const { record, scored } of samples) {
      const line = {
        id: record.id,
        prompt: record.prompt,
        answer: record.answer ?? null,
        samples: scored,
      };
      await file.write(JSON.stringify(line));
    }
  } finally {
    await file.close();
  }
}
