import {
  assertSampler,
  fingerprint,
  InvalidArgumentError,
  rejectIneffective,
  SAMPLE_REQUEST_DEFAULTS,
  type Sampler,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import type { PolicyTrainer } from '@rlvr/trainer';
import type { DistillDivergence } from '../losses/divergences.js';
import { DISTILL_LOSS_DEFAULTS } from '../losses/loss-defaults.js';
import type { TraceRecord } from '../traces/trace-record.js';
import type { TeacherLogits } from './teacher.js';

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
      /** JSD β (see `generalizedJsd`; TRL GKD's `beta`), only with `divergence: 'jsd'`. Default 0.5. */
      beta?: number;
      /** Softmax temperature for both sides. Default 1. */
      temperature?: number;
      /** Teacher logits on demand; without it, the traces' cached `topLogprobs` are used. */
      teacher?: TeacherLogits;
      /** Weight of an added cross-entropy term on the completion tokens. Default 0. */
      sftWeight?: number;
    };

/** Where a resumed run starts: the `DistillStepRecord.position` of the last finished step. */
export type DistillPosition = { epoch: number; offset: number; step: number };

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
   * On-policy distillation (GKD's λ = `fraction`): this fraction of steps trains on the student's
   * own samples for the batch's prompts, scored by the teacher (needs `loss.type: 'logits'` with
   * `teacher`). Completions the sampler returns with `finishReason: 'abort'` are never trained on.
   */
  onPolicy?: { fraction: number; sampler: Sampler; maxNewTokens: number; temperature?: number };
  /** Called every `evalEvery` steps and at the end; its numbers are merged into the history. */
  evaluate?: (context: {
    step: number;
    epoch: number;
  }) => Promise<Record<string, number>> | Record<string, number>;
  /** Evaluate every this many steps (needs `evaluate`). Default: only at the end. */
  evalEvery?: number;
  /** Called after every step. */
  onStep?: (record: DistillStepRecord) => void;
  /**
   * Resume: a folder written by `checkpoint` (the optimizer state, the data position and the
   * history are read from it, and the trainer's student must hold its weights: build it from
   * `loadDistillCheckpoint(dir).checkpoint`), or a raw position (`DistillStepRecord.position`).
   * A folder without a distillation checkpoint is an error.
   */
  resumeFrom?: string | DistillPosition;
  /** History before a raw-position `resumeFrom` (kept in the result and in checkpoints). */
  previousHistory?: readonly DistillStepRecord[];
  /**
   * Save a checkpoint (see `saveDistillCheckpoint`) to `dir` every `every` steps and at the end.
   * A non-empty `dir` is refused (`WOULD_OVERWRITE`) unless it is the `resumeFrom` folder or
   * `overwrite: true` (which replaces a previous distillation checkpoint, never other files).
   */
  checkpoint?: { dir: string; every: number };
  /** Allow `checkpoint.dir` to replace a distillation checkpoint of another run. Default false. */
  overwrite?: boolean;
  /** Progress bar on stderr. Default: when stderr is a TTY and not in CI. */
  progress?: boolean;
  signal?: AbortSignal;
};

/** One line of the training history. */
export type DistillStepRecord = {
  step: number;
  epoch: number;
  /** Where the next step starts: resume with `resumeFrom: { epoch, offset, step }`. */
  position: DistillPosition;
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

export const FN = 'distillStudent';

/**
 * Every key of {@link DistillStudentOptions}: the keys `distillStudent` accepts (any other is an
 * `UNKNOWN_OPTION` error). Exported so that layers passing options through (the CLI) check
 * against the same list instead of a copy.
 */
export const DISTILL_STUDENT_OPTION_KEYS = [
  'trainer',
  'traces',
  'encodePrompt',
  'loss',
  'epochs',
  'batchSize',
  'pack',
  'seed',
  'onPolicy',
  'evaluate',
  'evalEvery',
  'onStep',
  'resumeFrom',
  'previousHistory',
  'checkpoint',
  'overwrite',
  'progress',
  'signal',
] as const satisfies readonly (keyof DistillStudentOptions)[];
/**
 * The defaults of `distillStudent`'s optional settings that a config may give (`epochs` and
 * `batchSize` have none; the loss's are {@link DISTILL_LOSS_DEFAULTS}). `onPolicy.temperature` is
 * core's `SampleRequest` default (`SAMPLE_REQUEST_DEFAULTS.temperature`). Layers that show or pass
 * these settings (the CLI's `--print-config`) use them instead of copies.
 */
export const DISTILL_STUDENT_DEFAULTS = Object.freeze({
  seed: 0,
  pack: false,
  onPolicy: Object.freeze({ temperature: SAMPLE_REQUEST_DEFAULTS.temperature }),
} as const);
const LOGITS_ONLY = ['divergence', 'beta', 'temperature', 'teacher', 'sftWeight'] as const;

/** Validated options of {@link distillStudent}. @internal */
export type ValidatedDistill = {
  raw: Partial<DistillStudentOptions>;
  trainer: PolicyTrainer;
  traces: readonly TraceRecord[];
  epochs: number;
  batchSize: number;
  evalEvery: number;
  seed: number;
  pack: boolean;
  overwrite: boolean;
  loss: DistillLoss;
  onPolicy: NonNullable<DistillStudentOptions['onPolicy']> | undefined;
  checkpoint: { dir: string; every: number } | undefined;
  resumeFrom: string | DistillPosition | undefined;
};

/** Validates every option of {@link distillStudent} (before anything is read or written). @internal */
export function validateDistillOptions(options: DistillStudentOptions): ValidatedDistill {
  const raw = validateOptions<DistillStudentOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: DISTILL_STUDENT_OPTION_KEYS,
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
  raw.traces.forEach((trace, index) => {
    if (Array.isArray(trace?.tokenIds) && trace.tokenIds.length === 0 && trace.completion) {
      throw new InvalidArgumentError({
        parameter: `options.traces[${index}].tokenIds`,
        functionName: FN,
        value: trace.tokenIds,
        expected:
          "the completion's token ids: a text-only trace (a served teacher that returned no token ids) trains after tokenizeTraces with the student's tokenizer (SFT on text); logit distillation needs the teacher's own token ids and distribution",
      });
    }
  });
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
  if (raw.evalEvery !== undefined && raw.evaluate === undefined) {
    rejectIneffective({
      parameter: 'options.evalEvery',
      value: raw.evalEvery,
      because: 'options.evaluate is not set',
      functionName: FN,
    });
  }
  const evalEvery =
    raw.evalEvery === undefined
      ? 0
      : validateInteger(raw.evalEvery, {
          parameter: 'options.evalEvery',
          functionName: FN,
          min: 1,
        });
  const loss = readLoss(raw.loss);
  const onPolicy = readOnPolicy(raw.onPolicy, loss);
  if (loss.type === 'logits' && !loss.teacher) {
    raw.traces.forEach((trace, index) => {
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
  return {
    raw,
    trainer,
    traces: raw.traces,
    epochs,
    batchSize,
    evalEvery,
    seed:
      raw.seed === undefined
        ? DISTILL_STUDENT_DEFAULTS.seed
        : validateInteger(raw.seed, { parameter: 'options.seed', functionName: FN }),
    pack:
      raw.pack === undefined
        ? DISTILL_STUDENT_DEFAULTS.pack
        : readBoolean(raw.pack, 'options.pack'),
    overwrite: readBoolean(raw.overwrite, 'options.overwrite'),
    loss,
    onPolicy,
    checkpoint: readCheckpoint(raw.checkpoint, raw.overwrite),
    resumeFrom: readResumeFrom(raw.resumeFrom, raw.previousHistory),
  };
}

/**
 * A logit loss's `beta`, `temperature` and `sftWeight` with {@link DISTILL_LOSS_DEFAULTS} filled
 * in: what the loss applies and what the checkpoint fingerprint records. @internal
 */
export function logitsLossValues(
  loss: Pick<Extract<DistillLoss, { type: 'logits' }>, 'beta' | 'temperature' | 'sftWeight'>,
): { beta: number; temperature: number; sftWeight: number } {
  return {
    beta: loss.beta ?? DISTILL_LOSS_DEFAULTS.beta,
    temperature: loss.temperature ?? DISTILL_LOSS_DEFAULTS.temperature,
    sftWeight: loss.sftWeight ?? DISTILL_LOSS_DEFAULTS.sftWeight,
  };
}

/** What a distillation checkpoint must match to be resumed (everything that changes the math). @internal */
export function distillSettings(options: ValidatedDistill): Record<string, unknown> {
  const { loss, onPolicy } = options;
  return {
    loss:
      loss.type === 'sft'
        ? { type: 'sft' }
        : {
            type: 'logits',
            divergence: loss.divergence,
            ...logitsLossValues(loss),
            beta: loss.divergence === 'jsd' ? logitsLossValues(loss).beta : null,
            teacher: loss.teacher ? 'function' : 'cached-top-k',
          },
    batchSize: options.batchSize,
    seed: options.seed,
    pack: options.pack,
    onPolicy: onPolicy
      ? {
          fraction: onPolicy.fraction,
          maxNewTokens: onPolicy.maxNewTokens,
          temperature: onPolicy.temperature ?? DISTILL_STUDENT_DEFAULTS.onPolicy.temperature,
        }
      : null,
    traces: fingerprint(
      options.traces.map((trace) => [
        trace.promptId,
        trace.sampleIndex,
        trace.promptTokenIds ?? trace.prompt,
        trace.tokenIds,
      ]),
    ),
  };
}

function readBoolean(value: unknown, parameter: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError({ parameter, functionName: FN, value, expected: 'a boolean' });
  }
  return value;
}

function readCheckpoint(value: unknown, overwrite: unknown): ValidatedDistill['checkpoint'] {
  if (value === undefined) {
    if (overwrite !== undefined) {
      rejectIneffective({
        parameter: 'options.overwrite',
        value: overwrite,
        because: 'options.checkpoint is not set (nothing is written)',
        functionName: FN,
      });
    }
    return undefined;
  }
  const checkpoint = validateOptions<{ dir: string; every: number }>(value, {
    parameter: 'options.checkpoint',
    functionName: FN,
    known: ['dir', 'every'],
  });
  if (typeof checkpoint.dir !== 'string' || checkpoint.dir === '') {
    throw new InvalidArgumentError({
      parameter: 'options.checkpoint.dir',
      functionName: FN,
      value: checkpoint.dir,
      expected: 'a folder path',
    });
  }
  const every = validateInteger(checkpoint.every, {
    parameter: 'options.checkpoint.every',
    functionName: FN,
    min: 1,
  });
  return { dir: checkpoint.dir, every };
}

function readResumeFrom(value: unknown, previousHistory: unknown): ValidatedDistill['resumeFrom'] {
  if (previousHistory !== undefined) {
    if (value === undefined || typeof value === 'string') {
      rejectIneffective({
        parameter: 'options.previousHistory',
        value: previousHistory,
        because:
          value === undefined
            ? 'options.resumeFrom is not set'
            : 'the history is read from the resumeFrom checkpoint folder',
        functionName: FN,
      });
    }
    if (!Array.isArray(previousHistory)) {
      throw new InvalidArgumentError({
        parameter: 'options.previousHistory',
        functionName: FN,
        value: previousHistory,
        expected: 'an array of DistillStepRecord',
      });
    }
  }
  if (value === undefined) return undefined;
  if (typeof value === 'string') {
    if (value === '') {
      throw new InvalidArgumentError({
        parameter: 'options.resumeFrom',
        functionName: FN,
        value,
        expected: 'a checkpoint folder or a position { epoch, offset, step }',
      });
    }
    return value;
  }
  const position = validateOptions<DistillPosition>(value, {
    parameter: 'options.resumeFrom',
    functionName: FN,
    known: ['epoch', 'offset', 'step'],
  });
  const field = (key: keyof DistillPosition) =>
    validateInteger(position[key], {
      parameter: `options.resumeFrom.${key}`,
      functionName: FN,
      min: 0,
    });
  return { epoch: field('epoch'), offset: field('offset'), step: field('step') };
}

function readOnPolicy(value: unknown, loss: DistillLoss): ValidatedDistill['onPolicy'] {
  if (value === undefined) return undefined;
  const policy = validateOptions<NonNullable<DistillStudentOptions['onPolicy']>>(value, {
    parameter: 'options.onPolicy',
    functionName: FN,
    known: ['fraction', 'sampler', 'maxNewTokens', 'temperature'],
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
  if (policy.temperature !== undefined) {
    validateNumber(policy.temperature, {
      parameter: 'options.onPolicy.temperature',
      functionName: FN,
      min: 0,
      exclusiveMin: true,
    });
  }
  if (loss.type !== 'logits' || !loss.teacher) {
    throw new InvalidArgumentError({
      parameter: 'options.loss.teacher',
      functionName: FN,
      value: undefined,
      expected:
        "a teacher (loss.type 'logits' with loss.teacher) to score the student's own samples",
    });
  }
  return policy as NonNullable<DistillStudentOptions['onPolicy']>;
}

function readLoss(value: unknown): DistillLoss {
  if (value === undefined) return { type: 'sft' };
  const loss = validateOptions<Record<string, unknown>>(value, {
    parameter: 'options.loss',
    functionName: FN,
    known: ['type', ...LOGITS_ONLY],
  });
  const type = validateOneOf(loss.type, ['sft', 'logits'], {
    parameter: 'options.loss.type',
    functionName: FN,
  });
  if (type === 'sft') {
    for (const key of LOGITS_ONLY) {
      if (loss[key] !== undefined) {
        rejectIneffective({
          parameter: `options.loss.${key}`,
          value: loss[key],
          because: "options.loss.type is 'sft' (it applies to type 'logits' only)",
          functionName: FN,
        });
      }
    }
    return { type };
  }
  const divergence = validateOneOf(loss.divergence, ['forward-kl', 'reverse-kl', 'jsd'], {
    parameter: 'options.loss.divergence',
    functionName: FN,
  });
  if (loss.beta !== undefined && divergence !== 'jsd') {
    rejectIneffective({
      parameter: 'options.loss.beta',
      value: loss.beta,
      because: `options.loss.divergence is '${divergence}' (β interpolates only 'jsd')`,
      functionName: FN,
    });
  }
  validateNumber(loss.beta ?? DISTILL_LOSS_DEFAULTS.beta, {
    parameter: 'options.loss.beta',
    functionName: FN,
    min: 0,
    max: 1,
  });
  validateNumber(loss.temperature ?? DISTILL_LOSS_DEFAULTS.temperature, {
    parameter: 'options.loss.temperature',
    functionName: FN,
    min: 0,
    exclusiveMin: true,
  });
  validateNumber(loss.sftWeight ?? DISTILL_LOSS_DEFAULTS.sftWeight, {
    parameter: 'options.loss.sftWeight',
    functionName: FN,
    min: 0,
  });
  if (loss.teacher !== undefined && typeof loss.teacher !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.loss.teacher',
      functionName: FN,
      value: loss.teacher,
      expected: 'a TeacherLogits function',
    });
  }
  return loss as Extract<DistillLoss, { type: 'logits' }>;
}
