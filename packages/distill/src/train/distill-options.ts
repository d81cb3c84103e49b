import {
  assertSampler,
  fingerprint,
  InvalidArgumentError,
  rejectIneffective,
  SAMPLE_REQUEST_DEFAULTS,
  type Sampler,
  validateOneOf,
} from '@rlvr/core';
import {
  asserted,
  boolean,
  custom,
  defineOptions,
  expecting,
  func,
  integer,
  number,
  type OptionsInput,
  type OptionsOutput,
  object,
  oneOf,
  optional,
  required,
  text,
  withDefault,
  zod,
} from '@rlvr/options';
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

export const FN = 'distillStudent';
const LOGITS_ONLY = ['divergence', 'beta', 'temperature', 'teacher', 'sftWeight'] as const;
const jsdOnly = `\`${DISTILL_LOSS_DEFAULTS.beta}\` (with \`divergence: 'jsd'\`)`;

/** The `loss` option of {@link distillStudent} (its cross-field rules are in `validateDistillOptions`). */
export const DISTILL_LOSS_SCHEMA = object({
  type: required(
    oneOf(['sft', 'logits']),
    '`sft` (cross-entropy on the teacher tokens) or `logits`.',
  ),
  divergence: optional(oneOf(['forward-kl', 'reverse-kl', 'jsd']), {
    description: "The logit loss's divergence (required with `type: 'logits'`).",
    defaultText: 'required with logits',
  }),
  beta: optional(number({ min: 0, max: 1 }), {
    description: "JSD β (TRL GKD's `beta`), only with `divergence: 'jsd'`.",
    defaultText: jsdOnly,
  }),
  temperature: optional(number({ min: 0, exclusiveMin: true }), {
    description: 'Softmax temperature for both sides.',
    defaultText: `\`${DISTILL_LOSS_DEFAULTS.temperature}\``,
  }),
  teacher: optional(func<TeacherLogits>('a TeacherLogits function'), {
    description: "Teacher logits on demand; without it, the traces' cached `topLogprobs` are used.",
    defaultText: 'cached top-k',
  }),
  sftWeight: optional(number({ min: 0 }), {
    description: 'Weight of an added cross-entropy term on the completion tokens.',
    defaultText: `\`${DISTILL_LOSS_DEFAULTS.sftWeight}\``,
  }),
});

const RESUME_FROM = 'a checkpoint folder or a position { epoch, offset, step }';
const position = () => integer({ min: 0 });

/**
 * The options of {@link distillStudent}, declared once: {@link DistillStudentOptions},
 * {@link DISTILL_STUDENT_OPTION_KEYS}, {@link DISTILL_STUDENT_DEFAULTS}, the validation and the
 * README table come from it. Cross-field rules are in {@link validateDistillOptions}.
 */
export const DISTILL_STUDENT_OPTIONS = defineOptions(
  {
    trainer: required(
      custom<PolicyTrainer>(
        (value) =>
          typeof (value as PolicyTrainer | null)?.sftStep === 'function' &&
          typeof (value as PolicyTrainer).logitsStep === 'function',
        'a PolicyTrainer from @rlvr/trainer',
      ),
      'A `PolicyTrainer` wrapping the student model (it owns the optimizer and schedule).',
    ),
    traces: required(
      asserted<readonly TraceRecord[]>(assertTraces, 'a non-empty array of trace records'),
      'The verified traces to learn from (e.g. `filterTraces(...).kept`).',
    ),
    encodePrompt: optional(
      func<(prompt: string) => number[]>('a function'),
      'Encodes a prompt for traces without recorded `promptTokenIds` (shared tokenizer).',
    ),
    loss: withDefault(
      DISTILL_LOSS_SCHEMA,
      { type: 'sft' },
      'How the student learns from the teacher.',
    ),
    epochs: required(integer({ min: 1 }), 'Passes over the traces.'),
    batchSize: required(integer({ min: 1 }), 'Sequences per optimizer step.'),
    pack: withDefault(
      boolean(),
      false,
      'Pack short sequences into rows (segment-masked attention).',
    ),
    seed: withDefault(integer(), 0, 'Shuffling seed.'),
    onPolicy: optional(
      object({
        fraction: required(
          number({ min: 0, max: 1 }),
          "GKD's λ: the fraction of steps on the student's own samples.",
        ),
        sampler: required(
          asserted<Sampler>(
            (value, parameter) => assertSampler(value, parameter),
            'a Sampler (an object with a sample() method)',
          ),
          "The student's sampler.",
        ),
        maxNewTokens: required(integer({ min: 1 }), 'Tokens per on-policy sample.'),
        temperature: withDefault(
          number({ min: 0, exclusiveMin: true }),
          SAMPLE_REQUEST_DEFAULTS.temperature,
          "Sampling temperature (core's `SAMPLE_REQUEST_DEFAULTS.temperature`).",
        ),
      }),
      "On-policy distillation: train this fraction of steps on the student's own samples for the batch's prompts, scored by the teacher (needs `loss.type: 'logits'` with `teacher`); aborted completions are never trained on.",
    ),
    evaluate: optional(
      func<DistillEvaluate>('a function'),
      'Called every `evalEvery` steps and at the end; its numbers are merged into the history.',
    ),
    evalEvery: optional(integer({ min: 1 }), {
      description: 'Evaluate every this many steps (needs `evaluate`).',
      defaultText: 'only at the end',
    }),
    onStep: optional(
      func<(record: DistillStepRecord) => void>('a function'),
      'Called after every step.',
    ),
    resumeFrom: optional(
      expecting(
        zod.union([
          text(RESUME_FROM),
          object({ epoch: position(), offset: position(), step: position() }),
        ]),
        RESUME_FROM,
      ),
      "Resume: a folder written by `checkpoint` (optimizer state, data position and history are read from it; the trainer's student must hold its weights), or a raw position (`DistillStepRecord.position`).",
    ),
    previousHistory: optional(
      custom<readonly DistillStepRecord[]>(Array.isArray, 'an array of DistillStepRecord'),
      'History before a raw-position `resumeFrom` (kept in the result and in checkpoints).',
    ),
    checkpoint: optional(
      object({
        dir: required(text('a folder path'), 'The checkpoint folder.'),
        every: required(integer({ min: 1 }), 'Save every this many steps (and at the end).'),
      }),
      'Save a checkpoint to `dir` every `every` steps and at the end; a non-empty `dir` is refused (`WOULD_OVERWRITE`) unless it is the `resumeFrom` folder or `overwrite`.',
    ),
    overwrite: withDefault(
      boolean(),
      false,
      'Allow `checkpoint.dir` to replace a distillation checkpoint of another run.',
    ),
    progress: optional(boolean(), {
      description: 'Progress bar on stderr.',
      defaultText: 'when stderr is a TTY and not in CI',
    }),
    signal: optional(
      custom<AbortSignal>(() => true, 'an AbortSignal'),
      'Cancels the run.',
    ),
  },
  { parameter: 'options', functionName: FN },
);

/** The `evaluate` callback of {@link distillStudent}. */
export type DistillEvaluate = (context: {
  step: number;
  epoch: number;
}) => Promise<Record<string, number>> | Record<string, number>;

/** Options of {@link distillStudent} (see {@link DISTILL_STUDENT_OPTIONS} for each one). */
export type DistillStudentOptions = Omit<
  OptionsInput<typeof DISTILL_STUDENT_OPTIONS.schema>,
  'loss'
> & {
  /** Default `{ type: 'sft' }`. */
  loss?: DistillLoss;
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

/**
 * Every key of {@link DistillStudentOptions}: the keys `distillStudent` accepts (any other is an
 * `UNKNOWN_OPTION` error). Layers passing options through (the CLI) check against this list.
 */
export const DISTILL_STUDENT_OPTION_KEYS = DISTILL_STUDENT_OPTIONS.keys;
/**
 * The defaults of `distillStudent`'s optional settings (`epochs` and `batchSize` have none; the
 * logit loss's are {@link DISTILL_LOSS_DEFAULTS}). Layers that show or pass these settings (the
 * CLI's `--print-config`) use them instead of copies.
 */
export const DISTILL_STUDENT_DEFAULTS = DISTILL_STUDENT_OPTIONS.defaults;

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
  const parsed = DISTILL_STUDENT_OPTIONS.parse(options);
  const raw = options as Partial<DistillStudentOptions>;
  if (parsed.evalEvery !== undefined && parsed.evaluate === undefined) {
    rejectIneffective({
      parameter: 'options.evalEvery',
      value: parsed.evalEvery,
      because: 'options.evaluate is not set',
      functionName: FN,
    });
  }
  const loss = checkLoss(parsed.loss);
  if (parsed.onPolicy !== undefined && (loss.type !== 'logits' || !loss.teacher)) {
    throw new InvalidArgumentError({
      parameter: 'options.loss.teacher',
      functionName: FN,
      value: undefined,
      expected:
        "a teacher (loss.type 'logits' with loss.teacher) to score the student's own samples",
    });
  }
  if (loss.type === 'logits' && !loss.teacher) {
    parsed.traces.forEach((trace, index) => {
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
  if (raw.overwrite !== undefined && parsed.checkpoint === undefined) {
    rejectIneffective({
      parameter: 'options.overwrite',
      value: raw.overwrite,
      because: 'options.checkpoint is not set (nothing is written)',
      functionName: FN,
    });
  }
  const { resumeFrom, previousHistory } = parsed;
  if (
    previousHistory !== undefined &&
    (resumeFrom === undefined || typeof resumeFrom === 'string')
  ) {
    rejectIneffective({
      parameter: 'options.previousHistory',
      value: previousHistory,
      because:
        resumeFrom === undefined
          ? 'options.resumeFrom is not set'
          : 'the history is read from the resumeFrom checkpoint folder',
      functionName: FN,
    });
  }
  return {
    raw,
    trainer: parsed.trainer,
    traces: parsed.traces,
    epochs: parsed.epochs,
    batchSize: parsed.batchSize,
    evalEvery: parsed.evalEvery ?? 0,
    seed: parsed.seed,
    pack: parsed.pack,
    overwrite: parsed.overwrite,
    loss,
    onPolicy: parsed.onPolicy,
    checkpoint: parsed.checkpoint,
    resumeFrom,
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

/** The loss's cross-field rules: what applies to one type or divergence only. */
function checkLoss(loss: OptionsOutput<typeof DISTILL_LOSS_SCHEMA>): DistillLoss {
  if (loss.type === 'sft') {
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
    return { type: 'sft' };
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
  return { ...loss, type: 'logits', divergence } as Extract<DistillLoss, { type: 'logits' }>;
}

function assertTraces(value: unknown): void {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.traces',
      functionName: FN,
      value,
      expected: 'a non-empty array of trace records',
    });
  }
  value.forEach((trace: TraceRecord, index) => {
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
}
