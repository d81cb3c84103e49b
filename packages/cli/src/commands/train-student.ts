import { join } from 'node:path';
import { validateInteger } from '@rlvr/core';
import type { DistillLoss, TraceRecord } from '@rlvr/distill';
import { distillStudent, loadDistillCheckpoint } from '@rlvr/distill';
import type { Checkpoint } from '@rlvr/model';
import { createLlamaModel, createPolicyTrainer, type PolicyTrainerOptions } from '@rlvr/trainer';
import { attributeError } from '../config/load-config.js';
import { startProgress } from '../logging/progress.js';
import { openSinks, parseReportTo, sequentialWriter } from '../logging/sinks.js';
import type { CommandContext } from './command.js';
import { saveRunModel, writeRunConfig } from './run-folder.js';

/** @rlvr/trainer `PolicyTrainerOptions` keys a student-training config may set. */
export const POLICY_TRAINER_KEYS = [
  'schedule',
  'optimizer',
  'maxGradNorm',
  'microBatchSize',
  'onNonFinite',
  'maxConsecutiveSkips',
] as const;
/** @rlvr/distill `distillStudent` keys a student-training config may set. */
export const DISTILL_STUDENT_KEYS = ['epochs', 'batchSize', 'pack', 'seed'] as const;
/** The run folder's distillation checkpoint (optimizer state and data position, for `--resume`). */
export const STUDENT_CHECKPOINT_DIR = 'checkpoint';

function trainerOptions(values: Record<string, unknown>, totalSteps: number): PolicyTrainerOptions {
  const out: Record<string, unknown> = {};
  for (const key of POLICY_TRAINER_KEYS) if (values[key] !== undefined) out[key] = values[key];
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

/**
 * Trains a student on traces with @rlvr/distill's `distillStudent` (SFT or logit distillation)
 * on a @rlvr/trainer `PolicyTrainer`: checkpoints to `<outputDir>/checkpoint` every `saveEvery`
 * steps, metrics to the `reportTo` sinks, the final model to `<outputDir>/model`.
 */
export async function trainStudent(options: {
  context: CommandContext;
  phase: 'sft' | 'distill';
  student: Checkpoint;
  traces: readonly TraceRecord[];
  encodePrompt: (prompt: string) => number[];
  loss: DistillLoss;
  outputDir: string;
  resume: boolean;
}): Promise<{ steps: number; lastLoss: number; modelDir: string }> {
  const { context, outputDir } = options;
  const { config, io } = context;
  const values = config.values;
  const reportTo = parseReportTo(values.reportTo, config.origins.get('reportTo') ?? config.file);
  const checkpointDir = join(outputDir, STUDENT_CHECKPOINT_DIR);
  const saved = options.resume ? await loadDistillCheckpoint(checkpointDir) : undefined;
  const model = await createLlamaModel(saved?.checkpoint ?? options.student);
  const epochs = validateInteger(values.epochs, { parameter: 'epochs', min: 1 });
  const batchSize = validateInteger(values.batchSize, { parameter: 'batchSize', min: 1 });
  if (values.saveEvery !== undefined)
    validateInteger(values.saveEvery, { parameter: 'saveEvery', min: 1 });
  const totalSteps = Math.max(
    1,
    Math.ceil(options.traces.length / Math.max(1, batchSize)) * Math.max(1, epochs),
  );
  const sinks = await openSinks({
    reportTo,
    dir: outputDir,
    overwrite: context.overwrite,
    resume: options.resume,
    quiet: context.quiet,
    print: (line) => io.stderr(`${line}\n`),
  });
  const bar = startProgress(
    options.phase,
    totalSteps,
    context.progress,
    saved?.resumeFrom.step ?? 0,
  );
  const started = performance.now();
  const writer = sequentialWriter(sinks);
  let configWritten: Promise<{ error: unknown } | undefined> | undefined;
  let trainer: Awaited<ReturnType<typeof createPolicyTrainer>> | undefined;
  try {
    const run = async () => {
      trainer = await createPolicyTrainer(model, trainerOptions(values, totalSteps));
      return distillStudent({
        trainer,
        traces: options.traces,
        encodePrompt: options.encodePrompt,
        loss: options.loss,
        epochs,
        batchSize,
        ...(values.pack === undefined ? {} : { pack: values.pack as boolean }),
        ...(values.seed === undefined ? {} : { seed: values.seed as number }),
        checkpoint: {
          dir: checkpointDir,
          every: (values.saveEvery as number | undefined) ?? totalSteps,
        },
        ...(saved ? { resumeFrom: checkpointDir } : {}),
        ...(context.overwrite && !saved ? { overwrite: true } : {}),
        progress: false,
        onStep: (record) => {
          // The options were validated before the first step: only now is anything written.
          configWritten ??= writeRunConfig(outputDir, options.phase, config).then(
            () => undefined,
            (error: unknown) => ({ error }),
          );
          writer.push({
            step: record.step,
            elapsedMs: performance.now() - started,
            phase: options.phase,
            metrics: {
              loss: record.loss,
              learning_rate: record.learningRate,
              grad_norm: record.gradNorm,
              tokens: record.tokens,
              epoch: record.epoch,
              'time/step_ms': record.timeMs,
            },
          });
          bar.update(record.step, `loss ${record.loss.toFixed(4)}`);
        },
      });
    };
    const result = await run().catch((error: unknown) => {
      throw attributeError(error, config);
    });
    bar.stop();
    const failed = await configWritten;
    if (failed) throw failed.error;
    await writer.done();
    const modelDir = await saveRunModel(outputDir, {
      ...options.student,
      tensors: model.toCheckpoint().tensors,
    });
    return { steps: result.steps, lastLoss: result.history.at(-1)?.loss ?? Number.NaN, modelDir };
  } finally {
    bar.stop();
    await writer.done().catch(() => undefined); // a failed run: its error is the one reported
    await sinks.close();
    trainer?.dispose();
    model.dispose();
  }
}
