import { ErrorCode } from '@rlvr/core';
import type { TraceRecord } from '@rlvr/distill';
import type { ConfigSpec } from '../config/load-config.js';
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
  DISTILL_STUDENT_KEYS,
  POLICY_TRAINER_KEYS,
  STUDENT_DEFAULTS,
  STUDENT_KEYS_HELP,
  STUDENT_LOOP_DEFAULTS,
  STUDENT_SCHEMAS,
  trainStudent,
} from './train-student.js';

const spec: ConfigSpec = {
  known: [
    'model',
    'dataset',
    'outputDir',
    'reportTo',
    'backend',
    'resume',
    'saveEvery',
    ...DISTILL_STUDENT_KEYS,
    ...POLICY_TRAINER_KEYS,
  ],
  nested: { dataset: DATASET_KEYS },
  defaults: {
    ...STUDENT_DEFAULTS,
    reportTo: ['jsonl'],
    backend: 'auto',
  },
  required: ['model', 'dataset', 'outputDir'],
  schemas: { dataset: DATASET_SCHEMA, ...STUDENT_SCHEMAS },
};

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
  details: `Config keys: model, dataset (needs prompt and completion columns; map them with
dataset.columns), outputDir, reportTo, backend (auto|wasm|cpu), resume, saveEvery;
distillStudent's epochs and batchSize (required there; the CLI's defaults are ${STUDENT_LOOP_DEFAULTS.epochs} and
${STUDENT_LOOP_DEFAULTS.batchSize}), pack, seed; PolicyTrainer's schedule (learningRate, schedule,
warmupSteps, totalSteps: the run's steps when unset), optimizer, maxGradNorm, microBatchSize,
microBatchTokens, gradientCheckpointing, memoryLimitBytes, lora (PEFT's LoraConfig: r, alpha,
dropout, targetModules, rslora, adapter: a PEFT adapter folder to continue from; the run then also
writes adapter/), onNonFinite, maxConsecutiveSkips (their defaults are the packages'; --print-config shows them). The loss is token-mean cross-entropy on the completion tokens
(and EOS). Writes outputDir/metrics.*, checkpoint/, model/ and rlvr-config.yaml.

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
