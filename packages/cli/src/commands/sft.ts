import { ErrorCode } from '@rlvr/core';
import type { TraceRecord } from '@rlvr/distill';
import {
  BACKEND_KEY,
  REPORT_TO_KEY,
  RESUME_KEY,
  RUN_FOLDER_KEY,
  SAVE_EVERY_KEY,
} from '../config/common-keys.js';
import { CONFIG_KEYS_TITLE, configHelp, configKey, configSpec } from '../config/config-keys.js';
import {
  DATASET_KEYS,
  DATASET_SCHEMA,
  type DatasetRecord,
  loadDataset,
} from '../data/load-dataset.js';
import { ConfigError } from '../errors/config-error.js';
import { loadModel, selectTrainingBackend } from '../model/resolve-model.js';
import type { Command } from './command.js';
import { checkRunFolder, outputDirOf } from './run-folder.js';
import {
  STUDENT_DEFAULTS,
  STUDENT_KEYS_HELP,
  STUDENT_SCHEMAS,
  trainStudent,
} from './train-student.js';

/** `rlvr sft`'s own keys (besides the student and trainer keys), each declared once. */
const SFT_KEYS = {
  model: configKey(
    'a checkpoint folder or a run folder',
    'The model to fine-tune (with its tokenizer.json).',
  ),
  dataset: configKey(
    'a file path, or a dataset object',
    'Prompt / completion pairs: a file, or { path, format, columns, limit } (map the columns with dataset.columns).',
    DATASET_SCHEMA,
  ),
  outputDir: RUN_FOLDER_KEY,
  reportTo: REPORT_TO_KEY,
  backend: BACKEND_KEY,
  resume: RESUME_KEY,
  saveEvery: SAVE_EVERY_KEY,
};

const spec = configSpec({
  keys: { ...SFT_KEYS, ...STUDENT_SCHEMAS },
  nested: { dataset: DATASET_KEYS },
  defaults: {
    ...STUDENT_DEFAULTS,
    reportTo: ['jsonl'],
    backend: 'auto',
  },
  required: ['model', 'dataset', 'outputDir'],
});

/** Dataset rows as SFT traces: the completion tokens (then EOS) are the targets. */
export function sftTraces(
  records: readonly DatasetRecord[],
  tokenizer: {
    encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
    eosTokenId: number | undefined;
  },
): TraceRecord[] {
  return records.map((record) => ({
    promptId: record.id,
    prompt: record.prompt,
    sampleIndex: 0,
    completion: record.completion!,
    tokenIds: [
      ...tokenizer.encode(record.completion!, { addSpecialTokens: false }),
      ...(tokenizer.eosTokenId === undefined ? [] : [tokenizer.eosTokenId]),
    ],
    finishReason: 'stop',
    reward: null,
    accepted: true,
    ...(record.answer === undefined ? {} : { answer: record.answer }),
  }));
}

export const sftCommand: Command = {
  name: 'sft',
  summary:
    'supervised fine-tuning on prompt/completion pairs (@rlvr/distill distillStudent, SFT loss)',
  usage:
    '--config sft.yaml [--set key=value]... [--report-to jsonl,csv,tensorboard] [--resume | --overwrite]',
  trains: true,
  spec,
  details: `${configHelp(spec, [{ title: CONFIG_KEYS_TITLE, keys: Object.keys(SFT_KEYS) }])}
and the student and trainer keys below (lora: PEFT's LoraConfig; the run then also writes
adapter/). The loss is token-mean cross-entropy on the completion tokens (and EOS).

${STUDENT_KEYS_HELP}`,
  example: `rlvr sft --config sft.yaml --set epochs=3 --set schedule.learningRate=3e-3
# sft.yaml
model: model
dataset: { path: data/train.csv, columns: { prompt: question, completion: response } }
outputDir: sft-run
batchSize: 16
schedule: { learningRate: 3e-3, schedule: cosine, warmupSteps: 5 }`,
  async run(context) {
    const { config, io } = context;
    const values = config.values;
    const source = (key: string) => config.origins.get(key) ?? config.file;
    const outputDir = outputDirOf(config);
    const resume = values.resume === true;
    checkRunFolder(outputDir, { overwrite: context.overwrite, resume });
    const { checkpoint, tokenizer } = await loadModel(values.model, 'model', source('model'));
    if (tokenizer === undefined) {
      throw new ConfigError({
        key: 'model',
        source: source('model'),
        message: 'the model folder has no tokenizer.json',
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    const records = await loadDataset(values.dataset, {
      need: ['prompt', 'completion'],
      chat: tokenizer,
      source: source('dataset'),
    });
    await selectTrainingBackend(values.backend);
    const result = await trainStudent({
      context,
      phase: 'sft',
      student: checkpoint,
      traces: sftTraces(records, tokenizer),
      encodePrompt: (prompt) => tokenizer.encode(prompt),
      loss: { type: 'sft' },
      outputDir,
      resume,
    });
    io.stdout(
      `sft: ${result.steps} steps, final loss ${result.lastLoss.toFixed(4)}; model saved to ${result.modelDir}\n`,
    );
    return 0;
  },
};
