import {
  assertSampler,
  InvalidArgumentError,
  type NamedTensor,
  type RewardFunction,
  rejectIneffective,
  SAMPLE_REQUEST_DEFAULTS,
  type SampleRequest,
  type Sampler,
} from '@rlvr/core';
import {
  asserted,
  boolean,
  custom,
  defineOptions,
  func,
  integer,
  number,
  type OptionsInput,
  object,
  optional,
  required,
  sampleRequestFields,
  text,
  withDefault,
} from '@rlvr/options';
import { type TraceSettings, teacherWeightsHash } from './trace-file.js';
import type { PromptRecord } from './trace-record.js';

/**
 * Sampling settings of {@link generateTraces}: a `SampleRequest` without `prompts` and `n`, and
 * without the DeepConf fields (`topLogprobs`, `confidenceStop`): a trace cut by a confidence stop is
 * not a complete teacher answer, so generateTraces does not offer them (they are `UNKNOWN_OPTION`).
 */
export type TraceSamplingOptions = Omit<
  SampleRequest,
  'prompts' | 'n' | 'returnModelLogprobs' | 'topLogprobs' | 'confidenceStop'
>;

const FN = 'generateTraces';

const nonEmptyString = () => text('a non-empty string');
const teacherWeights = custom<{ tensors: readonly NamedTensor[]; tokenizer?: unknown }>((value) => {
  const tensors = (value as { tensors?: unknown } | null)?.tensors;
  return Array.isArray(tensors) && tensors.every((t) => t?.data instanceof Float32Array);
}, 'a Checkpoint or WeightSnapshot ({ tensors: { name, shape, data: Float32Array }[] })');

/**
 * The options of {@link generateTraces}, declared once: {@link GenerateTracesOptions},
 * {@link GENERATE_TRACES_OPTION_KEYS}, {@link GENERATE_TRACES_DEFAULTS}, the validation and the
 * README table all come from it.
 */
export const GENERATE_TRACES_OPTIONS = defineOptions(
  {
    sampler: required(
      asserted<Sampler>(
        (value, parameter) => assertSampler(value, parameter),
        'a Sampler (an object with a sample() method)',
      ),
      'The teacher.',
    ),
    prompts: required(
      asserted<readonly PromptRecord[]>(assertPrompts, 'a non-empty array of { id, prompt }'),
      'The prompts, each `{ id, prompt, answer?, metadata? }` with a unique id.',
    ),
    k: required(integer({ min: 1 }), 'Traces per prompt.'),
    sampling: required(
      object({
        // core's request keys, less the ones this function sets itself (prompts, n) or does not
        // offer: a trace cut by a DeepConf confidence stop is not a complete teacher answer
        ...sampleRequestFields(['prompts', 'n', 'topLogprobs', 'confidenceStop']),
        maxNewTokens: required(integer({ min: 1 }), 'Hard cap on generated tokens per trace.'),
        temperature: withDefault(
          custom<number>(() => true, "as core's `SampleRequest.temperature`"),
          SAMPLE_REQUEST_DEFAULTS.temperature,
          "Softmax temperature (core's `SAMPLE_REQUEST_DEFAULTS.temperature`), sent to the sampler and recorded in the fingerprint, so leaving it out and giving it are the same run.",
        ),
        seed: withDefault(
          integer(),
          0,
          'The base seed (prompt i, sample j draw from seeds derived from it).',
        ),
      }),
      "Sampling settings: core's `SampleRequest` without `prompts`, `n` and the DeepConf fields.",
    ),
    reward: required(
      func<RewardFunction>('a reward function'),
      'Scores a trace; `reward ≥ acceptThreshold` marks it accepted.',
    ),
    acceptThreshold: withDefault(number(), 1, 'The reward at which a trace is accepted.'),
    outPath: required(
      text('a file path'),
      'JSONL file to stream traces to (a header with the fingerprint of the teacher and the settings first; complete prompts of a file with the same fingerprint are kept and skipped).',
    ),
    teacher: optional(
      object({
        weights: optional(
          teacherWeights,
          "The teacher's weights (a `Checkpoint` or `WeightSnapshot`), hashed into the fingerprint.",
        ),
        weightsHash: optional(
          nonEmptyString(),
          'A precomputed weights hash or version string, instead of `weights`.',
        ),
        promptTemplate: optional(
          nonEmptyString(),
          "The prompt / chat template the teacher's sampler applies (its text or a name).",
        ),
      }),
      'Identifies the teacher in the fingerprint (weights hash, prompt template).',
    ),
    resume: withDefault(
      boolean(),
      true,
      'Continue an existing file with the same fingerprint; `false` refuses a non-empty file (`WOULD_OVERWRITE`) unless `overwrite`.',
    ),
    overwrite: withDefault(
      boolean(),
      false,
      'Start a new file over an existing one whose fingerprint differs (or, with `resume: false`, over any existing file).',
    ),
    batchSize: withDefault(integer({ min: 1 }), 8, 'Prompts per sampler call.'),
    keepLogprobs: withDefault(
      boolean(),
      false,
      "Keep the teacher's behaviour logprobs in the records.",
    ),
    progress: optional(boolean(), {
      description: 'Show a progress bar on stderr.',
      defaultText: 'when stderr is a TTY and not in CI',
    }),
    signal: optional(
      custom<AbortSignal>(() => true, 'an AbortSignal'),
      'Cancels the run (see the abort contract in @rlvr/core).',
    ),
  },
  { parameter: 'options', functionName: FN },
);

/** Options of {@link generateTraces} (see {@link GENERATE_TRACES_OPTIONS} for each one). */
export type GenerateTracesOptions = OptionsInput<typeof GENERATE_TRACES_OPTIONS.schema>;
/** What identifies the teacher in the traces file's fingerprint. */
export type TraceTeacher = NonNullable<GenerateTracesOptions['teacher']>;

/**
 * Every key of {@link GenerateTracesOptions}: the keys `generateTraces` accepts (any other is an
 * `UNKNOWN_OPTION` error). Layers passing options through (the CLI) check against this list.
 */
export const GENERATE_TRACES_OPTION_KEYS = GENERATE_TRACES_OPTIONS.keys;
/**
 * The defaults of `generateTraces`' optional settings (`k` and `sampling.maxNewTokens` have none).
 * Layers that show or pass these settings (the CLI's `--print-config`) use them instead of copies.
 */
export const GENERATE_TRACES_DEFAULTS = GENERATE_TRACES_OPTIONS.defaults;

/** The validated options of {@link generateTraces}. @internal */
export type ValidatedTraceOptions = {
  sampler: Sampler;
  prompts: PromptRecord[];
  k: number;
  batchSize: number;
  acceptThreshold: number;
  /** With `temperature` and `seed` filled in ({@link GENERATE_TRACES_DEFAULTS}). */
  sampling: TraceSamplingOptions & { maxNewTokens: number; temperature: number; seed: number };
  reward: RewardFunction;
  outPath: string;
  resume: boolean;
  overwrite: boolean;
  keepLogprobs: boolean;
  settings: TraceSettings;
  raw: GenerateTracesOptions;
};

export function validateGenerateOptions(options: GenerateTracesOptions): ValidatedTraceOptions {
  const parsed = GENERATE_TRACES_OPTIONS.parse(options);
  const { sampling, teacher = {} } = parsed;
  if (sampling.returnModelLogprobs !== undefined) {
    rejectIneffective({
      parameter: 'options.sampling.returnModelLogprobs',
      value: sampling.returnModelLogprobs,
      because: 'trace records keep only the behaviour logprobs (keepLogprobs)',
      functionName: FN,
    });
  }
  if (teacher.weights !== undefined && teacher.weightsHash !== undefined) {
    rejectIneffective({
      parameter: 'options.teacher.weightsHash',
      value: teacher.weightsHash,
      because: 'options.teacher.weights is hashed instead (give one of the two)',
      functionName: FN,
    });
  }
  const { k, acceptThreshold, keepLogprobs } = parsed;
  const traceSampling = sampling as ValidatedTraceOptions['sampling'];
  return {
    sampler: parsed.sampler,
    prompts: parsed.prompts as PromptRecord[],
    k,
    batchSize: parsed.batchSize,
    acceptThreshold,
    sampling: traceSampling,
    reward: parsed.reward,
    outPath: parsed.outPath,
    resume: parsed.resume,
    overwrite: parsed.overwrite,
    keepLogprobs,
    settings: {
      k,
      sampling: traceSampling,
      teacher: {
        weightsHash:
          teacher.weights !== undefined
            ? teacherWeightsHash(teacher.weights)
            : (teacher.weightsHash ?? null),
        promptTemplate: teacher.promptTemplate ?? null,
      },
      acceptThreshold,
      keepLogprobs,
    },
    raw: options,
  };
}

function assertPrompts(value: unknown): void {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.prompts',
      functionName: FN,
      value,
      expected: 'a non-empty array of { id, prompt }',
    });
  }
  const ids = new Set<string>();
  value.forEach((record, index) => {
    if (!record || typeof record.id !== 'string' || typeof record.prompt !== 'string') {
      throw new InvalidArgumentError({
        parameter: `options.prompts[${index}]`,
        functionName: FN,
        value: record,
        expected: '{ id: string, prompt: string, answer?, metadata? }',
      });
    }
    if (ids.has(record.id)) {
      throw new InvalidArgumentError({
        parameter: `options.prompts[${index}].id`,
        functionName: FN,
        value: record.id,
        expected: 'a unique prompt id',
      });
    }
    ids.add(record.id);
  });
}
