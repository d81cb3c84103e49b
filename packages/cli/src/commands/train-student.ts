import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type MetricRecord, validateInteger } from '@rlvr/core';
import type {
  DistillLoss,
  DistillStepRecord,
  DistillStudentOptions,
  TraceRecord,
} from '@rlvr/distill';
import {
  DISTILL_STUDENT_DEFAULTS,
  DISTILL_STUDENT_OPTION_KEYS,
  DISTILL_STUDENT_OPTIONS,
  distillStudent,
  loadDistillCheckpoint,
} from '@rlvr/distill';
import type { Checkpoint } from '@rlvr/model';
import { type Schema, shapeOf } from '@rlvr/options';
import {
  ADAMW_DEFAULTS,
  createLlamaModel,
  createPolicyTrainer,
  POLICY_TRAINER_OPTION_KEYS,
  POLICY_TRAINER_OPTIONS,
  type PolicyTrainerOptions,
  SCHEDULE_DEFAULTS,
  TRAINER_DEFAULTS,
} from '@rlvr/trainer';
import { keysHelp } from '../config/config-schema.js';
import { omitKeys } from '../config/option-keys.js';
import { startProgress } from '../logging/progress.js';
import { openSinks, parseReportTo, SINK_FILES, sequentialWriter } from '../logging/sinks.js';
import type { CommandContext } from './command.js';
import { onInterrupt } from './interrupt.js';
import { resolveLoraConfig, saveRunModel, writeRunConfig } from './run-folder.js';

/**
 * `createPolicyTrainer` options a student-training config does not set: students are trained with
 * `sftStep` / `logitsStep`, so the GRPO loss settings (`grpo`) and its reference model
 * (`referenceCheckpoint`, used only when `grpo.beta` > 0) do nothing.
 */
export const POLICY_TRAINER_KEYS_NOT_IN_CONFIG = ['grpo', 'referenceCheckpoint'] as const;
/** @rlvr/trainer `PolicyTrainerOptions` keys a student-training config may set (passed through). */
export const POLICY_TRAINER_KEYS = omitKeys(
  POLICY_TRAINER_OPTION_KEYS,
  POLICY_TRAINER_KEYS_NOT_IN_CONFIG,
);
/**
 * `distillStudent` options a student-training config does not set: the CLI supplies them
 * (`trainer`, `traces`, `encodePrompt`, `loss` (its own key in `rlvr distill`; SFT in `rlvr sft`),
 * `checkpoint` (the run folder and `saveEvery`), `resumeFrom` (`--resume`), `previousHistory`,
 * `overwrite` (`--overwrite`), `progress`, `onStep` (the sinks), `signal` (Ctrl-C)), or they need
 * code or a sampler, which a config cannot give (`evaluate`, `evalEvery`, `onPolicy`).
 */
export const DISTILL_STUDENT_KEYS_NOT_IN_CONFIG = [
  'trainer',
  'traces',
  'encodePrompt',
  'loss',
  'checkpoint',
  'resumeFrom',
  'previousHistory',
  'overwrite',
  'progress',
  'onStep',
  'signal',
  'evaluate',
  'evalEvery',
  'onPolicy',
] as const;
/** @rlvr/distill `distillStudent` keys a student-training config may set (passed through). */
export const DISTILL_STUDENT_KEYS = omitKeys(
  DISTILL_STUDENT_OPTION_KEYS,
  DISTILL_STUDENT_KEYS_NOT_IN_CONFIG,
);
/**
 * The CLI's own defaults for the student loop: `distillStudent` requires `epochs` and `batchSize`
 * (it has no default), so `rlvr sft` and `rlvr distill` use these when a config gives none. This
 * is their only definition; `--help` and the README show it.
 */
export const STUDENT_LOOP_DEFAULTS = Object.freeze({ epochs: 3, batchSize: 8 } as const);

/**
 * The settings `rlvr sft` and `rlvr distill` show (`--print-config`, `rlvr-config.yaml`) and pass
 * when a config gives none: {@link STUDENT_LOOP_DEFAULTS}, then the packages' own defaults, read
 * from their constants (@rlvr/distill `DISTILL_STUDENT_DEFAULTS` of the keys a config sets, @rlvr/trainer
 * `SCHEDULE_DEFAULTS`, `ADAMW_DEFAULTS`, `TRAINER_DEFAULTS.maxGradNorm`): what the run applies.
 * Settings whose default is "off" or that apply only in some combinations (`microBatchSize`,
 * `onNonFinite` / `maxConsecutiveSkips`, `saveEvery`: every run step count) are not listed.
 */
export const STUDENT_DEFAULTS = Object.freeze({
  ...STUDENT_LOOP_DEFAULTS,
  ...setValues(DISTILL_STUDENT_DEFAULTS, DISTILL_STUDENT_KEYS),
  schedule: SCHEDULE_DEFAULTS,
  optimizer: ADAMW_DEFAULTS,
  maxGradNorm: TRAINER_DEFAULTS.maxGradNorm,
});

/**
 * `--help` lines of the student keys (sft, distill): what each takes and its default, from the
 * schemas (distillStudent's and createPolicyTrainer's).
 */
export const STUDENT_KEYS_HELP = `student (@rlvr/distill distillStudent):
${keysHelp('', DISTILL_STUDENT_OPTIONS.schema, { keys: DISTILL_STUDENT_KEYS, defaults: STUDENT_LOOP_DEFAULTS }).join('\n')}
trainer (@rlvr/trainer createPolicyTrainer):
${keysHelp('', POLICY_TRAINER_OPTIONS.schema, { keys: POLICY_TRAINER_KEYS }).join('\n')}`;

/**
 * The option schemas of {@link DISTILL_STUDENT_KEYS} (distillStudent's) and of
 * {@link POLICY_TRAINER_KEYS} (createPolicyTrainer's), for the config's JSON Schema.
 */
export const STUDENT_SCHEMAS: Readonly<Record<string, Schema>> = {
  ...Object.fromEntries(
    DISTILL_STUDENT_KEYS.map((key) => [key, shapeOf(DISTILL_STUDENT_OPTIONS.schema)![key]!]),
  ),
  ...Object.fromEntries(
    POLICY_TRAINER_KEYS.map((key) => [key, shapeOf(POLICY_TRAINER_OPTIONS.schema)![key]!]),
  ),
};

/** The run folder's distillation checkpoint (optimizer state and data position, for `--resume`). */
export const STUDENT_CHECKPOINT_DIR = 'checkpoint';

/** The values of `keys` that are set. */
function setValues(values: object, keys: readonly string[]) {
  const out: Record<string, unknown> = {};
  const from = values as Record<string, unknown>;
  for (const key of keys) if (from[key] !== undefined) out[key] = from[key];
  return out;
}

/**
 * The `distillStudent` options a config sets (every {@link DISTILL_STUDENT_KEYS} key given), with
 * the checked loop settings. @internal exported for its test
 */
export function studentOptions(
  values: Record<string, unknown>,
  loop: { epochs: number; batchSize: number },
): Partial<DistillStudentOptions> & { epochs: number; batchSize: number } {
  return {
    ...setValues(values, DISTILL_STUDENT_KEYS),
    epochs: loop.epochs,
    batchSize: loop.batchSize,
  };
}

/** The `createPolicyTrainer` options a config sets. @internal exported for its test */
export function trainerOptions(
  values: Record<string, unknown>,
  totalSteps: number,
): PolicyTrainerOptions {
  const out = setValues(values, POLICY_TRAINER_KEYS);
  const schedule = out.schedule as Record<string, unknown> | undefined;
  // cosine / linear need totalSteps: the run's step count unless the config gives one.
  if (
    schedule &&
    schedule.schedule !== undefined &&
    schedule.schedule !== 'constant' &&
    schedule.totalSteps === undefined
  ) {
    out.schedule = { ...schedule, totalSteps };
  }
  return out as PolicyTrainerOptions;
}

/** Options of {@link trainStudent}. */
export type TrainStudentOptions = {
  context: CommandContext;
  phase: 'sft' | 'distill';
  student: Checkpoint;
  traces: readonly TraceRecord[];
  encodePrompt: (prompt: string) => number[];
  loss: DistillLoss;
  outputDir: string;
  resume: boolean;
};

/** The metrics record of one distillStudent step, as every sink takes it. */
function stepRecord(record: DistillStepRecord, phase: string, elapsedMs: number): MetricRecord {
  return {
    step: record.step,
    elapsedMs,
    phase,
    metrics: {
      loss: record.loss,
      learning_rate: record.learningRate,
      grad_norm: record.gradNorm,
      tokens: record.tokens,
      epoch: record.epoch,
      'time/step_ms': record.timeMs,
    },
  };
}

/** The loop settings of a student run, checked (errors name the config key). */
export function loopSettings(values: Record<string, unknown>, traces: number) {
  const epochs = validateInteger(values.epochs, { parameter: 'epochs', min: 1 });
  const batchSize = validateInteger(values.batchSize, { parameter: 'batchSize', min: 1 });
  const totalSteps = Math.ceil(traces / batchSize) * epochs;
  const saveEvery =
    values.saveEvery === undefined
      ? totalSteps
      : validateInteger(values.saveEvery, { parameter: 'saveEvery', min: 1 });
  return { epochs, batchSize, totalSteps, saveEvery };
}

/**
 * Resuming: the steps after the checkpoint are trained (and logged) again, so their lines are cut
 * from `metrics.jsonl`, as GrpoTrainer does with its logs (atomic rewrite: temporary file, rename).
 * @internal exported for its test
 */
export async function cutMetricsAfter(dir: string, step: number): Promise<void> {
  const path = join(dir, SINK_FILES.jsonl);
  if (!existsSync(path)) return;
  const lines = (await readFile(path, 'utf8')).split('\n').filter((line) => line.trim() !== '');
  const kept = lines.filter((line) => {
    try {
      return (JSON.parse(line) as { step?: number }).step! <= step;
    } catch {
      return false; // a torn last line
    }
  });
  if (kept.length === lines.length) return;
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, kept.map((line) => `${line}\n`).join(''));
  await rename(temporary, path);
}

/**
 * Trains a student on traces with @rlvr/distill's `distillStudent` (SFT or logit distillation)
 * on a @rlvr/trainer `PolicyTrainer`: checkpoints to `<outputDir>/checkpoint` every `saveEvery`
 * steps, metrics to the `reportTo` sinks, the final model to `<outputDir>/model`. Ctrl-C stops
 * before the next step; `--resume` continues from the checkpoint.
 */
export async function trainStudent(
  options: TrainStudentOptions,
): Promise<{ steps: number; lastLoss: number; modelDir: string }> {
  const { context, outputDir, phase } = options;
  const { config, io } = context;
  const values = config.values;
  const reportTo = parseReportTo(values.reportTo, config.origins.get('reportTo') ?? config.file);
  const loop = loopSettings(values, options.traces.length);
  const checkpointDir = join(outputDir, STUDENT_CHECKPOINT_DIR);
  const saved = options.resume ? await loadDistillCheckpoint(checkpointDir) : undefined;
  const model = await createLlamaModel(saved?.checkpoint ?? options.student);
  if (saved) await cutMetricsAfter(outputDir, saved.resumeFrom.step);
  const sinks = await openSinks({
    reportTo,
    dir: outputDir,
    overwrite: context.overwrite,
    resume: options.resume,
    quiet: context.quiet,
    print: (line) => io.stderr(`${line}\n`),
  });
  const writer = sequentialWriter(sinks);
  const bar = startProgress(phase, loop.totalSteps, context.progress, saved?.resumeFrom.step ?? 0);
  const interrupt = onInterrupt();
  const started = performance.now();
  let configWritten: Promise<{ error: unknown } | undefined> | undefined;
  let trainer: Awaited<ReturnType<typeof createPolicyTrainer>> | undefined;
  try {
    const trainerConfig = trainerOptions(values, loop.totalSteps);
    if (trainerConfig.lora) {
      trainerConfig.lora = (await resolveLoraConfig(
        trainerConfig.lora,
      )) as typeof trainerConfig.lora;
    }
    trainer = await createPolicyTrainer(model, trainerConfig);
    const result = await distillStudent({
      trainer,
      traces: options.traces,
      encodePrompt: options.encodePrompt,
      loss: options.loss,
      ...studentOptions(values, loop),
      checkpoint: { dir: checkpointDir, every: loop.saveEvery },
      ...(saved ? { resumeFrom: checkpointDir } : {}),
      ...(context.overwrite && !saved ? { overwrite: true } : {}),
      progress: false,
      signal: interrupt.signal,
      onStep: (record) => {
        // The options were validated before the first step: only now is anything written.
        configWritten ??= writeRunConfig(outputDir, phase, config).then(
          () => undefined,
          (error: unknown) => ({ error }),
        );
        writer.push(stepRecord(record, phase, performance.now() - started));
        bar.update(record.step, `loss ${record.loss.toFixed(4)}`);
      },
    });
    bar.stop();
    const failed = await configWritten;
    if (failed) throw failed.error;
    await writer.done();
    const tensors = model.toCheckpoint().tensors;
    const modelDir = await saveRunModel(
      outputDir,
      { ...options.student, tensors },
      model.toLoraAdapter(),
    );
    return { steps: result.steps, lastLoss: result.history.at(-1)?.loss ?? Number.NaN, modelDir };
  } finally {
    interrupt.dispose();
    bar.stop();
    await writer.done().catch(() => undefined); // a failed run: its error is the one reported
    await sinks.close();
    trainer?.dispose();
    model.dispose();
  }
}
