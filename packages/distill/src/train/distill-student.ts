import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  createRng,
  diffSettings,
  hashFloat32,
  InvalidArgumentError,
  isAbortedGroup,
  OverwriteRefusedError,
  ResumeMismatchError,
  throwIfAborted,
} from '@rlvr/core';
import type { LogitsRow, TokenSequence } from '@rlvr/trainer';
import cliProgress from 'cli-progress';
import type { TopKLogprobs } from '../losses/divergences.js';
import { distillationLossAndGradient } from '../losses/gradients.js';
import type { TraceRecord } from '../traces/trace-record.js';
import {
  inspectCheckpointFolder,
  loadDistillCheckpoint,
  saveDistillCheckpoint,
} from './distill-checkpoint.js';
import {
  DISTILL_STUDENT_DEFAULTS,
  type DistillLoss,
  type DistillPosition,
  type DistillStepRecord,
  type DistillStudentOptions,
  type DistillStudentResult,
  distillSettings,
  FN,
  logitsLossValues,
  type ValidatedDistill,
  validateDistillOptions,
} from './distill-options.js';
import { toSequence } from './teacher.js';

export type {
  DistillLoss,
  DistillPosition,
  DistillStepRecord,
  DistillStudentOptions,
  DistillStudentResult,
} from './distill-options.js';

/**
 * Trains a student on a teacher's verified traces: SFT with a completion-only loss, or logit
 * distillation (forward/reverse KL or generalized JSD over the full vocabulary from a teacher
 * model, or over the teacher's cached top-k), optionally on-policy for a fraction λ of the steps.
 * Built on `PolicyTrainer.sftStep` / `logitsStep` of @rlvr/trainer, so micro-batching, gradient
 * clipping, the LR schedule and AdamW are the trainer's.
 *
 * Deterministic: each epoch's order is a shuffle seeded by `seed` and the epoch number, so a run
 * resumed with `resumeFrom: checkpointDir` continues exactly where it stopped. Resuming checks
 * that the loss, batch size, seed, on-policy settings, traces and student weights are the ones
 * the checkpoint was made with (`RESUME_MISMATCH` otherwise).
 *
 * Abort: the signal is checked before every step and after every await that precedes the
 * optimizer update; an aborted step updates nothing and saves nothing.
 *
 * @example
 * ```ts
 * const student = await createLlamaModel(createRandomCheckpoint(smallConfig, { seed: 1 }));
 * const trainer = await createPolicyTrainer(student, { schedule: { learningRate: 3e-3 } });
 * const { kept } = filterTraces(await readTraces('traces.jsonl'), { maxPerPrompt: 4 });
 * await distillStudent({ trainer, traces: kept, epochs: 3, batchSize: 16,
 *   checkpoint: { dir: 'student-ckpt', every: 50 } });
 * // later, after a crash:
 * const saved = await loadDistillCheckpoint('student-ckpt');
 * const resumed = await createPolicyTrainer(await createLlamaModel(saved.checkpoint), { schedule: { learningRate: 3e-3 } });
 * await distillStudent({ trainer: resumed, traces: kept, epochs: 3, batchSize: 16,
 *   resumeFrom: 'student-ckpt', checkpoint: { dir: 'student-ckpt', every: 50 } });
 * ```
 * @throws {InvalidArgumentError} for bad options (`UNKNOWN_OPTION`, `INEFFECTIVE_OPTION`), traces
 * without prompt ids, a missing teacher, or a `resumeFrom` folder without a checkpoint.
 * @throws {ResumeMismatchError} `RESUME_MISMATCH` when the checkpoint was made with other settings.
 * @throws {OverwriteRefusedError} `WOULD_OVERWRITE` for a non-empty `checkpoint.dir` of another run.
 * @throws {AbortedError} `ABORTED` when `signal` aborts.
 */
export async function distillStudent(
  options: DistillStudentOptions,
): Promise<DistillStudentResult> {
  const input = validateDistillOptions(options);
  const sequences = input.traces.map((trace, index) =>
    toSequence(trace, index, input.raw.encodePrompt, FN),
  );
  const settings = distillSettings(input);
  const resumed = await resolveResume(input, settings);
  await guardCheckpointFolder(input);
  const { trainer, traces, batchSize, epochs, seed, raw } = input;
  const rng = createRng(seed);
  const stepsPerEpoch = Math.ceil(traces.length / batchSize);
  const start = resumed.position;
  const bar = progressBar(raw.progress);
  bar?.start(epochs * stepsPerEpoch, start.step, { loss: '-' });
  const history: DistillStepRecord[] = [...resumed.history];
  const checkpoint = input.checkpoint;
  const save = () => saveDistillCheckpoint(checkpoint!.dir, trainer, history, { settings });
  let step = start.step;
  const weights = { version: -1 };
  try {
    for (let epoch = start.epoch; epoch < epochs; epoch++) {
      const order = rng.derive(`epoch-${epoch}`).shuffle(traces.map((_, index) => index));
      for (
        let offset = epoch === start.epoch ? start.offset : 0;
        offset < order.length;
        offset += batchSize
      ) {
        throwIfAborted(raw.signal, `${FN}()`);
        const batch = order.slice(offset, offset + batchSize);
        const useOnPolicy =
          input.onPolicy !== undefined &&
          rng.derive(`on-policy-${step}`).next() < input.onPolicy.fraction;
        const metrics = await trainStep(input, {
          batch,
          sequences,
          step,
          useOnPolicy,
          weights,
        });
        step++;
        const nextOffset = offset + batchSize;
        const record: DistillStepRecord = {
          step,
          epoch,
          position:
            nextOffset >= order.length
              ? { epoch: epoch + 1, offset: 0, step }
              : { epoch, offset: nextOffset, step },
          loss: metrics.loss,
          learningRate: metrics.learningRate,
          gradNorm: metrics.gradNorm,
          tokens: metrics.tokens,
          onPolicy: metrics.onPolicy,
          timeMs: metrics.timeMs,
        };
        if (raw.evaluate && input.evalEvery > 0 && step % input.evalEvery === 0)
          record.eval = await raw.evaluate({ step, epoch });
        history.push(record);
        if (checkpoint && step % checkpoint.every === 0) await save();
        raw.onStep?.(record);
        bar?.update(step, {
          loss: Number.isFinite(metrics.loss) ? metrics.loss.toFixed(4) : 'skip',
        });
      }
    }
    if (checkpoint && history.length > 0 && step % checkpoint.every !== 0) await save();
  } finally {
    bar?.stop();
  }
  const finalEval = raw.evaluate ? await raw.evaluate({ step, epoch: epochs }) : undefined;
  return { steps: step, history, ...(finalEval ? { finalEval } : {}) };
}

function progressBar(progress: boolean | undefined) {
  const show = progress ?? (Boolean(process.stderr.isTTY) && !process.env.CI);
  return show
    ? new cliProgress.SingleBar(
        {
          format: 'distill |{bar}| {value}/{total} steps | loss {loss} | {eta_formatted} left',
          stream: process.stderr,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
}

/** One optimizer step; every await before the update is followed by an abort check. */
async function trainStep(
  input: ValidatedDistill,
  context: {
    batch: number[];
    sequences: readonly TokenSequence[];
    step: number;
    useOnPolicy: boolean;
    weights: { version: number };
  },
) {
  const { trainer, loss, onPolicy, raw } = input;
  const signal = raw.signal;
  let batchSequences = context.batch.map((index) => context.sequences[index]!);
  let batchTraces: TraceRecord[] | undefined = context.batch.map((index) => input.traces[index]!);
  let usedOnPolicy = false;
  if (context.useOnPolicy && onPolicy) {
    if (context.weights.version !== context.step && onPolicy.sampler.updateWeights) {
      await onPolicy.sampler.updateWeights(trainer.model.toWeightSnapshot(context.step));
      context.weights.version = context.step;
    }
    const own = await studentSamples(onPolicy, batchSequences, input.seed + context.step, signal);
    throwIfAborted(signal, `${FN}()`);
    // Completions cut by the sampler (finishReason 'abort') are never trained on; if none is
    // left, the step trains on the batch's traces instead.
    if (own.length > 0) {
      batchSequences = own;
      batchTraces = undefined;
      usedOnPolicy = true;
    }
  }
  const options = { pack: input.pack };
  if (loss.type === 'sft') {
    throwIfAborted(signal, `${FN}()`);
    return { ...trainer.sftStep(batchSequences, options), onPolicy: usedOnPolicy };
  }
  const lossOf = await logitsLoss(loss, batchSequences, batchTraces);
  throwIfAborted(signal, `${FN}()`);
  return { ...trainer.logitsStep(batchSequences, lossOf, options), onPolicy: usedOnPolicy };
}

/** Reads `resumeFrom`: a checkpoint folder (checked against the settings) or a raw position. */
async function resolveResume(
  input: ValidatedDistill,
  settings: Record<string, unknown>,
): Promise<{ position: DistillPosition; history: readonly DistillStepRecord[] }> {
  const resumeFrom = input.resumeFrom;
  if (resumeFrom === undefined) return { position: { epoch: 0, offset: 0, step: 0 }, history: [] };
  if (typeof resumeFrom !== 'string') {
    return { position: resumeFrom, history: input.raw.previousHistory ?? [] };
  }
  const kind = await inspectCheckpointFolder(resumeFrom);
  if (kind === 'missing' || kind === 'empty' || !existsSyncState(resumeFrom)) {
    throw new InvalidArgumentError({
      parameter: 'options.resumeFrom',
      functionName: FN,
      value: resumeFrom,
      expected: `a folder holding a distillation checkpoint (state.json written by checkpoint.dir), but it is ${kind === 'missing' ? 'missing' : kind === 'empty' ? 'empty' : 'not a distillation checkpoint'}`,
    });
  }
  const saved = await loadDistillCheckpoint(resumeFrom);
  const differences = saved.settings
    ? diffSettings(saved.settings, settings)
    : [{ field: 'settings', saved: '(none: an older checkpoint)', current: 'present' }];
  const savedWeights = hashFloat32(sortedData(saved.checkpoint.tensors));
  const currentWeights = hashFloat32(sortedData(input.trainer.model.toCheckpoint().tensors));
  if (savedWeights !== currentWeights) {
    differences.push({ field: 'student weights', saved: savedWeights, current: currentWeights });
  }
  if (differences.length > 0) {
    throw new ResumeMismatchError({
      what: `The distillation checkpoint ${resumeFrom}`,
      differences,
      functionName: FN,
    });
  }
  input.trainer.setState(saved.trainerState);
  return { position: saved.resumeFrom, history: saved.history };
}

function existsSyncState(dir: string): boolean {
  return existsSync(join(dir, 'state.json'));
}

function sortedData(tensors: readonly { name: string; data: Float32Array }[]): Float32Array[] {
  return [...tensors]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((tensor) => tensor.data);
}

/**
 * Refuses, before any training, a `checkpoint.dir` that holds files of another run: a folder that
 * is not a distillation checkpoint always, another run's checkpoint unless `overwrite: true`.
 */
async function guardCheckpointFolder(input: ValidatedDistill): Promise<void> {
  const dir = input.checkpoint?.dir;
  if (dir === undefined) return;
  const kind = await inspectCheckpointFolder(dir);
  if (kind === 'missing' || kind === 'empty') return;
  if (kind === 'foreign') {
    throw new OverwriteRefusedError({
      path: dir,
      reason: 'it exists and is not a distillation checkpoint (nothing in it is deleted)',
      functionName: FN,
    });
  }
  const resuming =
    typeof input.resumeFrom === 'string' && resolve(input.resumeFrom) === resolve(dir);
  if (!resuming && !input.overwrite) {
    throw new OverwriteRefusedError({
      path: dir,
      reason: 'it holds the checkpoint of another distillation run',
      allowWith: `resumeFrom: '${dir}' to continue it, or overwrite: true to replace it`,
      functionName: FN,
    });
  }
}

async function logitsLoss(
  loss: Extract<DistillLoss, { type: 'logits' }>,
  sequences: readonly TokenSequence[],
  traces: readonly TraceRecord[] | undefined,
) {
  const teacherRows: (Float32Array[] | TopKLogprobs[])[] = loss.teacher
    ? await loss.teacher(sequences)
    : traces!.map((trace) => trace.topLogprobs!);
  const { beta, temperature, sftWeight } = logitsLossValues(loss);
  return (rows: readonly LogitsRow[], context: { totalTokens: number }) => {
    let total = 0;
    const dLogits = rows.map((row) => {
      const teacher = teacherRows[row.sequence]?.[row.index];
      if (!teacher) {
        throw new InvalidArgumentError({
          parameter: 'loss.teacher',
          functionName: 'distillStudent',
          value: teacherRows[row.sequence]?.length,
          expected: `teacher logits for completion token ${row.index} of sequence ${row.sequence}`,
        });
      }
      const { loss: value, dLogits: gradient } = distillationLossAndGradient({
        teacher,
        studentLogits: row.logits,
        divergence: loss.divergence,
        beta,
        temperature,
      });
      total += value / context.totalTokens;
      const out = new Float64Array(gradient.length);
      for (let v = 0; v < gradient.length; v++) out[v] = gradient[v]! / context.totalTokens;
      if (sftWeight > 0) {
        // + α · cross-entropy: d/dz = α (softmax(z) − onehot(target))
        let max = -Infinity;
        for (const value of row.logits) max = Math.max(max, value);
        let sum = 0;
        for (const value of row.logits) sum += Math.exp(value - max);
        const logZ = max + Math.log(sum);
        total += (sftWeight * (logZ - row.logits[row.target]!)) / context.totalTokens;
        for (let v = 0; v < out.length; v++) {
          out[v]! +=
            (sftWeight * (Math.exp(row.logits[v]! - logZ) - (v === row.target ? 1 : 0))) /
            context.totalTokens;
        }
      }
      return out;
    });
    return { loss: total, dLogits };
  };
}

async function studentSamples(
  onPolicy: NonNullable<DistillStudentOptions['onPolicy']>,
  sequences: readonly TokenSequence[],
  seed: number,
  signal: AbortSignal | undefined,
): Promise<TokenSequence[]> {
  const groups = await onPolicy.sampler.sample(
    {
      prompts: sequences.map((sequence) => [...sequence.promptIds]),
      n: 1,
      maxNewTokens: onPolicy.maxNewTokens,
      temperature: onPolicy.temperature ?? DISTILL_STUDENT_DEFAULTS.onPolicy.temperature,
      seed,
    },
    signal ? { signal } : undefined,
  );
  return sequences.flatMap((sequence, index) => {
    const group = groups[index] ?? [];
    const completion = group[0];
    // An aborted group was cut by cancellation, not by the model: never trained on.
    if (!completion || isAbortedGroup(group) || completion.tokenIds.length === 0) return [];
    return [{ promptIds: sequence.promptIds, completionIds: completion.tokenIds }];
  });
}
