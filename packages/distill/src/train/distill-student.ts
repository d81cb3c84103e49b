import {
  AbortedError,
  assertSampler,
  createRng,
  InvalidArgumentError,
  type Sampler,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import type { LogitsRow, PolicyTrainer, TokenSequence } from '@rlvr/trainer';
import cliProgress from 'cli-progress';
import type { DistillDivergence, TopKLogprobs } from '../losses/divergences.js';
import { distillationLossAndGradient } from '../losses/gradients.js';
import type { TraceRecord } from '../traces/trace-record.js';
import { saveDistillCheckpoint } from './distill-checkpoint.js';
import { type TeacherLogits, toSequence } from './teacher.js';

/** How the student learns from the teacher. */
export type DistillLoss =
  /** SFT: cross-entropy on the teacher's completion tokens (completion-only loss). */
  | { type: 'sft' }
  /**
   * Logit distillation: a divergence between the teacher's and the student's next-token
   * distributions at every completion position (token mean), optionally mixed with SFT.
   */
  | {
      type: 'logits';
      divergence: DistillDivergence;
      /** JSD β (see `generalizedJsd`). Default 0.5. */
      beta?: number;
      /** Softmax temperature for both sides. Default 1. */
      temperature?: number;
      /** Teacher logits on demand; without it, the traces' cached `topLogprobs` are used. */
      teacher?: TeacherLogits;
      /** Weight of an added cross-entropy term on the completion tokens. Default 0. */
      sftWeight?: number;
    };

/** Options of {@link distillStudent}. */
export type DistillStudentOptions = {
  /** A `PolicyTrainer` wrapping the student model (it owns the optimizer and schedule). */
  trainer: PolicyTrainer;
  /** The verified traces to learn from (e.g. `filterTraces(...).kept`). */
  traces: readonly TraceRecord[];
  /** Encodes a prompt for traces without recorded `promptTokenIds` (shared tokenizer). */
  encodePrompt?: (prompt: string) => number[];
  /** Default `{ type: 'sft' }`. */
  loss?: DistillLoss;
  epochs: number;
  /** Sequences per optimizer step. */
  batchSize: number;
  /** Pack short sequences into rows (segment-masked attention). Default false. */
  pack?: boolean;
  /** Shuffling seed. Default 0. */
  seed?: number;
  /**
   * On-policy distillation (GKD's λ): this fraction of steps trains on the student's own samples
   * for the batch's prompts, scored by the teacher (needs `loss.type: 'logits'` with `teacher`).
   */
  onPolicy?: { fraction: number; sampler: Sampler; maxNewTokens: number; temperature?: number };
  /** Called every `evalEvery` steps and at the end; its numbers are merged into the history. */
  evaluate?: (context: {
    step: number;
    epoch: number;
  }) => Promise<Record<string, number>> | Record<string, number>;
  evalEvery?: number;
  /** Called after every step. */
  onStep?: (record: DistillStepRecord) => void;
  /** Resume from a saved position (`DistillStepRecord.position` of the last finished step). */
  resumeFrom?: { epoch: number; offset: number; step: number };
  /** History before `resumeFrom` (kept in the result and in checkpoints). */
  previousHistory?: readonly DistillStepRecord[];
  /** Save a checkpoint (see `saveDistillCheckpoint`) every `every` steps and at the end. */
  checkpoint?: { dir: string; every: number };
  /** Progress bar on stderr. Default: when stderr is a TTY and not in CI. */
  progress?: boolean;
  signal?: AbortSignal;
};

/** One line of the training history. */
export type DistillStepRecord = {
  step: number;
  epoch: number;
  /** Where the next step starts: resume with `resumeFrom: { epoch, offset, step }`. */
  position: { epoch: number; offset: number; step: number };
  loss: number;
  learningRate: number;
  gradNorm: number;
  tokens: number;
  onPolicy: boolean;
  timeMs: number;
  eval?: Record<string, number>;
};

/** Result of {@link distillStudent}. */
export type DistillStudentResult = {
  steps: number;
  history: DistillStepRecord[];
  finalEval?: Record<string, number>;
};

/**
 * Trains a student on a teacher's verified traces: SFT with a completion-only loss, or logit
 * distillation (forward/reverse KL or generalized JSD over the full vocabulary from a teacher
 * model, or over the teacher's cached top-k), optionally on-policy for a fraction λ of the steps.
 * Built on `PolicyTrainer.sftStep` / `logitsStep` of @rlvr/trainer, so micro-batching, gradient
 * clipping, the LR schedule and AdamW are the trainer's.
 *
 * Deterministic: each epoch's order is a shuffle seeded by `seed` and the epoch number, so a run
 * resumed with `resumeFrom` continues exactly where it stopped.
 *
 * @example
 * ```ts
 * const student = await createLlamaModel(createRandomCheckpoint(smallConfig, { seed: 1 }));
 * const trainer = await createPolicyTrainer(student, { schedule: { learningRate: 3e-3 } });
 * const { kept } = filterTraces(await readTraces('traces.jsonl'), { maxPerPrompt: 4 });
 * await distillStudent({ trainer, traces: kept, epochs: 3, batchSize: 16 });
 * ```
 * @throws {InvalidArgumentError} for bad options, traces without prompt ids, or a missing teacher.
 */
export async function distillStudent(
  options: DistillStudentOptions,
): Promise<DistillStudentResult> {
  const FN = 'distillStudent';
  const raw = validateOptions<DistillStudentOptions>(options, {
    parameter: 'options',
    functionName: FN,
  });
  const trainer = raw.trainer;
  if (
    !trainer ||
    typeof trainer.sftStep !== 'function' ||
    typeof trainer.logitsStep !== 'function'
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.trainer',
      functionName: FN,
      value: trainer,
      expected: 'a PolicyTrainer from @rlvr/trainer',
    });
  }
  if (!Array.isArray(raw.traces) || raw.traces.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.traces',
      functionName: FN,
      value: raw.traces,
      expected: 'a non-empty array of trace records',
    });
  }
  const traces = raw.traces;
  const epochs = validateInteger(raw.epochs, {
    parameter: 'options.epochs',
    functionName: FN,
    min: 1,
  });
  const batchSize = validateInteger(raw.batchSize, {
    parameter: 'options.batchSize',
    functionName: FN,
    min: 1,
  });
  const evalEvery =
    raw.evalEvery === undefined
      ? 0
      : validateInteger(raw.evalEvery, {
          parameter: 'options.evalEvery',
          functionName: FN,
          min: 1,
        });
  const loss = readLoss(raw.loss, FN);
  const sequences = traces.map((trace, index) => toSequence(trace, index, raw.encodePrompt, FN));
  if (loss.type === 'logits' && !loss.teacher) {
    traces.forEach((trace, index) => {
      if (!Array.isArray(trace.topLogprobs) || trace.topLogprobs.length !== trace.tokenIds.length) {
        throw new InvalidArgumentError({
          parameter: `options.traces[${index}].topLogprobs`,
          functionName: FN,
          value: trace.topLogprobs,
          expected:
            'cached teacher top-k logprobs per completion token (annotateTopK), or pass loss.teacher',
        });
      }
    });
  }
  let onPolicy: DistillStudentOptions['onPolicy'];
  if (raw.onPolicy !== undefined) {
    const policy = validateOptions<NonNullable<DistillStudentOptions['onPolicy']>>(raw.onPolicy, {
      parameter: 'options.onPolicy',
      functionName: FN,
    });
    validateNumber(policy.fraction, {
      parameter: 'options.onPolicy.fraction',
      functionName: FN,
      min: 0,
      max: 1,
    });
    assertSampler(policy.sampler, 'options.onPolicy.sampler');
    validateInteger(policy.maxNewTokens, {
      parameter: 'options.onPolicy.maxNewTokens',
      functionName: FN,
      min: 1,
    });
    if (loss.type !== 'logits' || !loss.teacher) {
      throw new InvalidArgumentError({
        parameter: 'options.loss.teacher',
        functionName: FN,
        value: undefined,
        expected:
          "a teacher (loss.type 'logits' with loss.teacher) to score the student's own samples",
      });
    }
    onPolicy = policy as NonNullable<DistillStudentOptions['onPolicy']>;
  }
  const seed = raw.seed ?? 0;
  const rng = createRng(seed);
  const stepsPerEpoch = Math.ceil(traces.length / batchSize);
  const start = raw.resumeFrom ?? { epoch: 0, offset: 0, step: 0 };
  const showProgress = raw.progress ?? (Boolean(process.stderr.isTTY) && !process.env.CI);
  const bar = showProgress
    ? new cliProgress.SingleBar(
        {
          format: 'distill |{bar}| {value}/{total} steps | loss {loss} | {eta_formatted} left',
          stream: process.stderr,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(epochs * stepsPerEpoch, start.step, { loss: '-' });

  const history: DistillStepRecord[] = [...(raw.previousHistory ?? [])];
  const checkpoint = raw.checkpoint
    ? {
        dir: String(raw.checkpoint.dir),
        every: validateInteger(raw.checkpoint.every, {
          parameter: 'options.checkpoint.every',
          functionName: FN,
          min: 1,
        }),
      }
    : undefined;
  let step = start.step;
  let weightsVersion = -1;
  try {
    for (let epoch = start.epoch; epoch < epochs; epoch++) {
      const order = rng.derive(`epoch-${epoch}`).shuffle(traces.map((_, index) => index));
      for (
        let offset = epoch === start.epoch ? start.offset : 0;
        offset < order.length;
        offset += batchSize
      ) {
        if (raw.signal?.aborted)
          throw new AbortedError({ operation: `${FN}()`, cause: raw.signal.reason });
        const batch = order.slice(offset, offset + batchSize);
        const useOnPolicy =
          onPolicy !== undefined && rng.derive(`on-policy-${step}`).next() < onPolicy.fraction;
        let batchSequences = batch.map((index) => sequences[index]!);
        if (useOnPolicy && onPolicy) {
          if (weightsVersion !== step && onPolicy.sampler.updateWeights) {
            await onPolicy.sampler.updateWeights(trainer.model.toWeightSnapshot(step));
            weightsVersion = step;
          }
          batchSequences = await studentSamples(onPolicy, batchSequences, seed + step, raw.signal);
        }
        const metrics =
          loss.type === 'sft'
            ? trainer.sftStep(batchSequences, { pack: raw.pack ?? false })
            : trainer.logitsStep(
                batchSequences,
                await logitsLoss(
                  loss,
                  batchSequences,
                  useOnPolicy ? undefined : batch.map((index) => traces[index]!),
                ),
                { pack: raw.pack ?? false },
              );
        step++;
        const nextOffset = offset + batchSize;
        const position =
          nextOffset >= order.length
            ? { epoch: epoch + 1, offset: 0, step }
            : { epoch, offset: nextOffset, step };
        const record: DistillStepRecord = {
          step,
          epoch,
          position,
          loss: metrics.loss,
          learningRate: metrics.learningRate,
          gradNorm: metrics.gradNorm,
          tokens: metrics.tokens,
          onPolicy: useOnPolicy,
          timeMs: metrics.timeMs,
        };
        if (raw.evaluate && evalEvery > 0 && step % evalEvery === 0)
          record.eval = await raw.evaluate({ step, epoch });
        history.push(record);
        if (checkpoint && step % checkpoint.every === 0)
          await saveDistillCheckpoint(checkpoint.dir, trainer, history);
        raw.onStep?.(record);
        bar?.update(step, {
          loss: Number.isFinite(metrics.loss) ? metrics.loss.toFixed(4) : 'skip',
        });
      }
    }
    if (checkpoint && history.length > 0 && step % checkpoint.every !== 0) {
      await saveDistillCheckpoint(checkpoint.dir, trainer, history);
    }
  } finally {
    bar?.stop();
  }
  const finalEval = raw.evaluate ? await raw.evaluate({ step, epoch: epochs }) : undefined;
  return { steps: step, history, ...(finalEval ? { finalEval } : {}) };
}

async function logitsLoss(
  loss: Extract<DistillLoss, { type: 'logits' }>,
  sequences: readonly TokenSequence[],
  traces: readonly TraceRecord[] | undefined,
) {
  const teacherRows: (Float32Array[] | TopKLogprobs[])[] = loss.teacher
    ? await loss.teacher(sequences)
    : traces!.map((trace) => trace.topLogprobs!);
  const beta = loss.beta ?? 0.5;
  const temperature = loss.temperature ?? 1;
  const sftWeight = loss.sftWeight ?? 0;
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
      temperature: onPolicy.temperature ?? 1,
      seed,
    },
    signal ? { signal } : undefined,
  );
  return sequences
    .map((sequence, index) => ({
      promptIds: sequence.promptIds,
      completionIds: groups[index]?.[0]?.tokenIds ?? [],
    }))
    .filter((sequence) => sequence.completionIds.length > 0);
}

function readLoss(value: unknown, functionName: string): DistillLoss {
  if (value === undefined) return { type: 'sft' };
  const loss = validateOptions<DistillLoss>(value, { parameter: 'options.loss', functionName });
  const type = validateOneOf(loss.type, ['sft', 'logits'], {
    parameter: 'options.loss.type',
    functionName,
  });
  if (type === 'sft') return { type };
  const logits = loss as Extract<DistillLoss, { type: 'logits' }>;
  validateOneOf(logits.divergence, ['forward-kl', 'reverse-kl', 'jsd'], {
    parameter: 'options.loss.divergence',
    functionName,
  });
  validateNumber(logits.beta ?? 0.5, {
    parameter: 'options.loss.beta',
    functionName,
    min: 0,
    max: 1,
  });
  validateNumber(logits.temperature ?? 1, {
    parameter: 'options.loss.temperature',
    functionName,
    min: 0,
    exclusiveMin: true,
  });
  validateNumber(logits.sftWeight ?? 0, {
    parameter: 'options.loss.sftWeight',
    functionName,
    min: 0,
  });
  if (logits.teacher !== undefined && typeof logits.teacher !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.loss.teacher',
      functionName,
      value: logits.teacher,
      expected: 'a TeacherLogits function',
    });
  }
  return logits;
}
