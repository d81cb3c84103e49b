import { AbortedError } from '../errors/aborted-error.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { UnsupportedSpecificationError } from '../errors/unsupported-specification-error.js';
import type { WeightSnapshot } from './weights.js';

/** Why a completion ended. `stop`: EOS or a stop string; `length`: hit `maxNewTokens`; `abort`: cancelled. */
export type FinishReason = 'stop' | 'length' | 'abort';

/** A prompt: text (the sampler tokenizes it, applying a chat template if configured) or token ids. */
export type Prompt = string | readonly number[];

/** What to sample. Every field is plain data (survives `structuredClone` and JSON). */
export type SampleRequest = {
  /** Prompts to complete; the result has one entry per prompt, in order. */
  prompts: readonly Prompt[];
  /** Completions per prompt (the GRPO group size G). */
  n: number;
  /** Hard cap on generated tokens per completion. */
  maxNewTokens: number;
  /** Softmax temperature; 0 means greedy. Default 1. */
  temperature?: number;
  /** Nucleus sampling: keep the smallest set of tokens whose probability mass reaches `topP`. */
  topP?: number;
  /** Keep only the `topK` most likely tokens (0 or undefined: no limit). */
  topK?: number;
  /** Drop tokens whose probability is below `minP` times the top token's probability. */
  minP?: number;
  /** CTRL-style repetition penalty (> 1 discourages repeats). */
  repetitionPenalty?: number;
  /** Stop strings: generation ends when the decoded text contains one; the text is cut before it. */
  stop?: readonly string[];
  /** Seed: the same seed and request give the same samples. */
  seed?: number;
  /** Also return the logprobs of the unmodified model distribution (temperature 1, no filtering). */
  returnModelLogprobs?: boolean;
};

/**
 * Every key of {@link SampleRequest}: samplers reject any other key (`UNKNOWN_OPTION`), e.g.
 * `validateOptions(request, { parameter: 'request', known: SAMPLE_REQUEST_KEYS })`.
 */
export const SAMPLE_REQUEST_KEYS = [
  'prompts',
  'n',
  'maxNewTokens',
  'temperature',
  'topP',
  'topK',
  'minP',
  'repetitionPenalty',
  'stop',
  'seed',
  'returnModelLogprobs',
] as const satisfies readonly (keyof SampleRequest)[];

/** One sampled completion. */
export type Completion = {
  /** Decoded text of the completion (without the prompt; cut before a matched stop string). */
  text: string;
  /** Generated token ids (without the prompt). */
  tokenIds: number[];
  /**
   * Behaviour logprobs: per generated token, the log-probability under the distribution it was
   * actually sampled from (after temperature / top-k / top-p / min-p), same length as `tokenIds`.
   */
  logprobs: number[];
  /** Per-token logprobs of the unmodified model distribution, when `returnModelLogprobs` was set. */
  modelLogprobs?: number[];
  /** Prompt token ids as the model saw them (after templating, without padding). */
  promptTokenIds?: number[];
  finishReason: FinishReason;
};

/**
 * Anything that samples completions: the ONNX rollout engine, a remote server, a mock in tests.
 * Implementations are plain objects; check them with {@link assertSampler}.
 *
 * **Abort.** When `options.signal` aborts before every completion is finished, `sample()` rejects
 * with {@link AbortedError} (code `ABORTED`, `cause` = the signal's reason); it never resolves
 * with a partial result for an aborted signal, and a signal that is already aborted rejects before
 * any work. `finishReason: 'abort'` exists only for samplers that cancel a completion for their own
 * reasons (a remote server shutting down); a group holding such a completion is *aborted*
 * ({@link isAbortedGroup}): no consumer scores, trains on, votes over or saves it. GrpoTrainer drops
 * it and counts it (`skipped/aborted_groups`); generateTraces does not write it; voting ignores it.
 *
 * **Retry.** A sampler does not retry on its own; a rejected call may be repeated with the same
 * request and gives the same samples (same `seed`), so a retry is never a different experiment.
 *
 * **Resume.** Loops that checkpoint (GrpoTrainer, distillStudent, generateTraces) resume to the
 * exact state of the last checkpoint or record written before an abort; nothing after it is kept.
 * A resume whose settings differ in anything that changes the math is refused
 * (`RESUME_MISMATCH`) unless the caller says so explicitly.
 *
 * **Logprobs and the importance ratio.** `Completion.logprobs` are the *behaviour* logprobs: the
 * log-probability of each token under the processed distribution it was drawn from, i.e.
 * `log softmax(logits / temperature)` restricted to the tokens top-k / top-p / min-p kept and
 * renormalized over them. The trainer's logprobs are `log softmax(logits / temperature)` over the
 * whole vocabulary (the same temperature, no truncation: TRL's convention). The rollout↔trainer
 * importance ratio is `exp(trainer − behaviour)`; with truncation it equals the kept set's mass
 * (≤ 1), which is exactly the correction for having sampled from the truncated distribution.
 *
 * @example
 * ```ts
 * const groups = await sampler.sample({ prompts: ['2+2='], n: 8, maxNewTokens: 16, temperature: 1 });
 * groups[0].length === 8; // G completions of the first prompt
 * ```
 */
export interface Sampler {
  /** Version of this contract the implementation follows. */
  readonly specificationVersion: 'v1';
  /** Name of the model behind the sampler (for logs and rollouts). */
  readonly modelId: string;
  /** Samples `request.n` completions for each prompt: result[promptIndex][sampleIndex]. */
  sample(request: SampleRequest, options?: { signal?: AbortSignal }): Promise<Completion[][]>;
  /** Loads new policy weights (pushed by the trainer after an optimizer step). */
  updateWeights?(snapshot: WeightSnapshot): Promise<void>;
  /** Frees native resources (sessions, workers). */
  close?(): Promise<void>;
}

/** Specification versions of {@link Sampler} this release understands. */
export const SUPPORTED_SAMPLER_SPECIFICATIONS = ['v1'] as const;

/**
 * Checks that `value` implements {@link Sampler} (with a supported `specificationVersion`).
 * @throws {InvalidArgumentError} when it is not a sampler-shaped object.
 * @throws {UnsupportedSpecificationError} `UNSUPPORTED_SPECIFICATION` on an unknown version.
 */
export function assertSampler(value: unknown, parameter = 'sampler'): asserts value is Sampler {
  if (
    value === null ||
    typeof value !== 'object' ||
    typeof (value as Sampler).sample !== 'function'
  ) {
    throw new InvalidArgumentError({
      parameter,
      value,
      expected: 'a Sampler (an object with a sample() method)',
    });
  }
  const version = (value as { specificationVersion?: unknown }).specificationVersion;
  if (!(SUPPORTED_SAMPLER_SPECIFICATIONS as readonly unknown[]).includes(version)) {
    throw new UnsupportedSpecificationError({
      parameter: `${parameter}.specificationVersion`,
      supported: SUPPORTED_SAMPLER_SPECIFICATIONS,
      actual: version,
    });
  }
}

/**
 * Throws {@link AbortedError} when `signal` is aborted: the one way every rlvr loop checks for
 * cancellation (see "Abort" in {@link Sampler}).
 */
export function throwIfAborted(signal: AbortSignal | undefined, operation: string): void {
  if (signal?.aborted) throw new AbortedError({ operation, cause: signal.reason });
}

/**
 * True when any completion of the group ended with `finishReason: 'abort'`. Such a group is not a
 * sample of the policy (it was cut by cancellation, not by the model): consumers never score,
 * train on, vote over or save it.
 */
export function isAbortedGroup(group: readonly Pick<Completion, 'finishReason'>[]): boolean {
  return group.some((completion) => completion.finishReason === 'abort');
}
