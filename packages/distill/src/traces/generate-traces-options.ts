import {
  assertSampler,
  InvalidArgumentError,
  type NamedTensor,
  type RewardFunction,
  rejectIneffective,
  SAMPLE_REQUEST_DEFAULTS,
  SAMPLE_REQUEST_KEYS,
  type SampleRequest,
  type Sampler,
  validateInteger,
  validateNumber,
  validateOptions,
} from '@rlvr/core';
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

/** What identifies the teacher in the traces file's fingerprint. */
export type TraceTeacher = {
  /**
   * The teacher's weights (a `Checkpoint` of @rlvr/model or a `WeightSnapshot`): hashed (core's
   * `hashFloat32`, plus names, shapes and the tokenizer files) into the file's fingerprint, so the
   * file is never resumed with a different teacher.
   */
  weights?: { tensors: readonly NamedTensor[]; tokenizer?: unknown };
  /** A precomputed weights hash or version string, instead of `weights`. */
  weightsHash?: string;
  /** The prompt / chat template the teacher's sampler applies (its text or a name), if any. */
  promptTemplate?: string;
};

/** Options of {@link generateTraces}. */
export type GenerateTracesOptions = {
  /** The teacher. */
  sampler: Sampler;
  prompts: readonly PromptRecord[];
  /** Traces per prompt. */
  k: number;
  /**
   * Sampling settings (maxNewTokens, temperature (default 1), topP, …); `seed` is the base seed
   * (default 0). See {@link GENERATE_TRACES_DEFAULTS}.
   */
  sampling: TraceSamplingOptions;
  /** Scores a trace; `reward ≥ acceptThreshold` marks it accepted. */
  reward: RewardFunction;
  /** Default 1. */
  acceptThreshold?: number;
  /**
   * JSONL file to stream traces to. Its first line is a header with the fingerprint of the
   * teacher and the settings; complete prompts already in a file with the same fingerprint are
   * kept and skipped (resume).
   */
  outPath: string;
  /** Identifies the teacher in the fingerprint (weights hash, prompt template). */
  teacher?: TraceTeacher;
  /**
   * Continue an existing file with the same fingerprint (default true). `false` refuses a non-empty
   * file (`WOULD_OVERWRITE`) unless `overwrite: true`.
   */
  resume?: boolean;
  /**
   * Start a new file over an existing one whose fingerprint differs (or, with `resume: false`, over
   * any existing file). Default false: refuse (`RESUME_MISMATCH` / `WOULD_OVERWRITE`).
   */
  overwrite?: boolean;
  /** Prompts per sampler call. Default 8. */
  batchSize?: number;
  /** Keep the teacher's behaviour logprobs in the records. Default false. */
  keepLogprobs?: boolean;
  /** Show a progress bar on stderr. Default: when stderr is a TTY and not in CI. */
  progress?: boolean;
  signal?: AbortSignal;
};

const FN = 'generateTraces';
/**
 * Every key of {@link GenerateTracesOptions}: the keys `generateTraces` accepts (any other is an
 * `UNKNOWN_OPTION` error). Exported so that layers passing options through (the CLI) check
 * against the same list instead of a copy.
 */
export const GENERATE_TRACES_OPTION_KEYS = [
  'sampler',
  'prompts',
  'k',
  'sampling',
  'reward',
  'acceptThreshold',
  'outPath',
  'teacher',
  'resume',
  'overwrite',
  'batchSize',
  'keepLogprobs',
  'progress',
  'signal',
] as const satisfies readonly (keyof GenerateTracesOptions)[];
/**
 * The defaults of `generateTraces`' optional settings (`k` and `sampling.maxNewTokens` have none).
 * `sampling.seed` is the base seed; `sampling.temperature` is core's `SAMPLE_REQUEST_DEFAULTS.temperature` (1),
 * sent to the sampler and recorded in the traces file's fingerprint, so leaving it out and giving
 * 1 are the same run. Layers that show or pass these settings (the CLI's `--print-config`) use
 * them instead of copies.
 */
export const GENERATE_TRACES_DEFAULTS = Object.freeze({
  acceptThreshold: 1,
  batchSize: 8,
  resume: true,
  overwrite: false,
  keepLogprobs: false,
  sampling: Object.freeze({ temperature: SAMPLE_REQUEST_DEFAULTS.temperature, seed: 0 }),
} as const);
// core's request keys, less the ones this function sets itself (prompts, n) or does not offer
const SAMPLING_KNOWN: readonly string[] = SAMPLE_REQUEST_KEYS.filter(
  (key) => !['prompts', 'n', 'topLogprobs', 'confidenceStop'].includes(key),
);

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
  raw: Partial<GenerateTracesOptions>;
};

export function validateGenerateOptions(options: GenerateTracesOptions): ValidatedTraceOptions {
  const raw = validateOptions<GenerateTracesOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: GENERATE_TRACES_OPTION_KEYS,
  });
  assertSampler(raw.sampler, 'options.sampler');
  const k = validateInteger(raw.k, { parameter: 'options.k', functionName: FN, min: 1 });
  const batchSize = validateInteger(raw.batchSize ?? GENERATE_TRACES_DEFAULTS.batchSize, {
    parameter: 'options.batchSize',
    functionName: FN,
    min: 1,
  });
  const acceptThreshold = validateNumber(
    raw.acceptThreshold ?? GENERATE_TRACES_DEFAULTS.acceptThreshold,
    {
      parameter: 'options.acceptThreshold',
      functionName: FN,
    },
  );
  const sampling = validateSampling(raw.sampling);
  if (typeof raw.reward !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.reward',
      functionName: FN,
      value: raw.reward,
      expected: 'a reward function',
    });
  }
  if (typeof raw.outPath !== 'string' || raw.outPath.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.outPath',
      functionName: FN,
      value: raw.outPath,
      expected: 'a file path',
    });
  }
  const resume = readBoolean(raw.resume, 'options.resume', GENERATE_TRACES_DEFAULTS.resume);
  const overwrite = readBoolean(
    raw.overwrite,
    'options.overwrite',
    GENERATE_TRACES_DEFAULTS.overwrite,
  );
  const keepLogprobs = readBoolean(
    raw.keepLogprobs,
    'options.keepLogprobs',
    GENERATE_TRACES_DEFAULTS.keepLogprobs,
  );
  const prompts = readPrompts(raw.prompts);
  const teacher = readTeacher(raw.teacher);
  return {
    sampler: raw.sampler,
    prompts,
    k,
    batchSize,
    acceptThreshold,
    sampling,
    reward: raw.reward,
    outPath: raw.outPath,
    resume,
    overwrite,
    keepLogprobs,
    settings: {
      k,
      sampling,
      teacher,
      acceptThreshold,
      keepLogprobs,
    },
    raw,
  };
}

function validateSampling(value: unknown): ValidatedTraceOptions['sampling'] {
  const sampling = validateOptions<SampleRequest>(value, {
    parameter: 'options.sampling',
    functionName: FN,
    known: SAMPLING_KNOWN,
  });
  if (sampling.returnModelLogprobs !== undefined) {
    rejectIneffective({
      parameter: 'options.sampling.returnModelLogprobs',
      value: sampling.returnModelLogprobs,
      because: 'trace records keep only the behaviour logprobs (keepLogprobs)',
      functionName: FN,
    });
  }
  const maxNewTokens = validateInteger(sampling.maxNewTokens, {
    parameter: 'options.sampling.maxNewTokens',
    functionName: FN,
    min: 1,
  });
  const seed =
    sampling.seed === undefined
      ? GENERATE_TRACES_DEFAULTS.sampling.seed
      : validateInteger(sampling.seed, { parameter: 'options.sampling.seed', functionName: FN });
  const temperature = sampling.temperature ?? GENERATE_TRACES_DEFAULTS.sampling.temperature;
  return { ...(sampling as TraceSamplingOptions), maxNewTokens, temperature, seed };
}

function readTeacher(value: unknown): TraceSettings['teacher'] {
  const teacher = validateOptions<TraceTeacher>(value, {
    parameter: 'options.teacher',
    functionName: FN,
    known: ['weights', 'weightsHash', 'promptTemplate'],
  });
  if (teacher.weights !== undefined && teacher.weightsHash !== undefined) {
    rejectIneffective({
      parameter: 'options.teacher.weightsHash',
      value: teacher.weightsHash,
      because: 'options.teacher.weights is hashed instead (give one of the two)',
      functionName: FN,
    });
  }
  let weightsHash: string | null = null;
  if (teacher.weights !== undefined) {
    const tensors = (teacher.weights as { tensors?: unknown } | null)?.tensors;
    if (!Array.isArray(tensors) || !tensors.every((t) => t?.data instanceof Float32Array)) {
      throw new InvalidArgumentError({
        parameter: 'options.teacher.weights',
        functionName: FN,
        value: teacher.weights,
        expected:
          'a Checkpoint or WeightSnapshot ({ tensors: { name, shape, data: Float32Array }[] })',
      });
    }
    weightsHash = teacherWeightsHash(teacher.weights);
  } else if (teacher.weightsHash !== undefined) {
    weightsHash = readString(teacher.weightsHash, 'options.teacher.weightsHash');
  }
  const promptTemplate =
    teacher.promptTemplate === undefined
      ? null
      : readString(teacher.promptTemplate, 'options.teacher.promptTemplate');
  return { weightsHash, promptTemplate };
}

function readString(value: unknown, parameter: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new InvalidArgumentError({
      parameter,
      functionName: FN,
      value,
      expected: 'a non-empty string',
    });
  }
  return value;
}

function readBoolean(value: unknown, parameter: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError({ parameter, functionName: FN, value, expected: 'a boolean' });
  }
  return value;
}

function readPrompts(value: unknown): PromptRecord[] {
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
  return value as PromptRecord[];
}
