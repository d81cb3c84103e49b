import { AbortedError } from '../errors/aborted-error.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { UnsupportedSpecificationError } from '../errors/unsupported-specification-error.js';
import { validateOptions } from '../validation/options.js';
import { validateInteger, validateNumber } from '../validation/validate.js';
import type { WeightSnapshot } from './weights.js';

/**
 * Why a completion ended. `stop`: EOS or a stop string; `length`: hit `maxNewTokens`;
 * `confidence`: ended by the request's `confidenceStop` (its sliding-window confidence dropped
 * below the threshold: an incomplete trace, cut by the sampler on the model's own uncertainty, but
 * *not* an aborted group); `abort`: cancelled.
 */
export type FinishReason = 'stop' | 'length' | 'confidence' | 'abort';

/** Every {@link FinishReason}, for validation. */
export const FINISH_REASONS = [
  'stop',
  'length',
  'confidence',
  'abort',
] as const satisfies readonly FinishReason[];

/** One of the most likely tokens at a position (see {@link Completion.topLogprobs}). */
export type TopLogprob = { tokenId: number; logprob: number };

/**
 * DeepConf's online stop (Fu et al. 2025, "Deep Think with Confidence"). Token confidence
 * `C_i = −mean` of the position's top-k logprobs (`k = topLogprobs`, model distribution); group
 * confidence = mean `C_i` over the last `windowSize` tokens. Once a completion has `windowSize`
 * tokens, the sampler ends it as soon as its group confidence is `< threshold`
 * (`finishReason: 'confidence'`). Plain data: it survives JSON (remote samplers take it as is).
 */
export type ConfidenceStop = {
  /** Tokens in the sliding window (integer ≥ 1; DeepConf uses 2048). */
  windowSize: number;
  /** Stop below this group confidence (finite, > 0: confidences are ≥ 0). */
  threshold: number;
};

/** A prompt: text (the sampler tokenizes it, applying a chat template if configured) or token ids. */
export type Prompt = string | readonly number[];

/**
 * What to sample. Every field is plain data (survives `structuredClone` and JSON). The defaults of
 * the optional sampling fields are {@link SAMPLE_REQUEST_DEFAULTS}.
 */
export type SampleRequest = {
  /** Prompts to complete; the result has one entry per prompt, in order. */
  prompts: readonly Prompt[];
  /** Completions per prompt (the GRPO group size G). */
  n: number;
  /** Hard cap on generated tokens per completion. */
  maxNewTokens: number;
  /** Softmax temperature; 0 means greedy. Default 1. */
  temperature?: number;
  /**
   * Nucleus sampling: keep the smallest set of tokens whose probability mass reaches `topP`.
   * Default 1 (no cut).
   */
  topP?: number;
  /** Keep only the `topK` most likely tokens (0 or undefined: no limit). Default 0. */
  topK?: number;
  /** Drop tokens whose probability is below `minP` times the top token's probability. Default 0. */
  minP?: number;
  /** CTRL-style repetition penalty (> 1 discourages repeats). Default 1 (none). */
  repetitionPenalty?: number;
  /** Stop strings: generation ends when the decoded text contains one; the text is cut before it. */
  stop?: readonly string[];
  /** Seed: the same seed and request give the same samples. */
  seed?: number;
  /** Also return the logprobs of the unmodified model distribution (temperature 1, no filtering). */
  returnModelLogprobs?: boolean;
  /**
   * Also return, per generated token, the `topLogprobs` most likely tokens of the *model*
   * distribution (temperature 1, no filtering; integer ≥ 1): {@link Completion.topLogprobs}.
   */
  topLogprobs?: number;
  /**
   * End a completion whose sliding-window confidence drops below a threshold (DeepConf online;
   * see {@link ConfidenceStop}). Requires `topLogprobs` (the confidence is computed from them).
   */
  confidenceStop?: ConfidenceStop;
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
  'topLogprobs',
  'confidenceStop',
] as const satisfies readonly (keyof SampleRequest)[];

/**
 * What an omitted sampling field of {@link SampleRequest} means, for every sampler: temperature 1
 * (the model distribution), no top-k limit (`topK` 0), no nucleus cut (`topP` 1), no min-p cut
 * (`minP` 0) and no repetition penalty (`repetitionPenalty` 1). Consumers that fill a sampling
 * default (rollout's samplers, generateTraces, the CLI) read it from here, so "omitted" means the
 * same at every layer. `seed` has no default here: an omitted seed is the sampler's choice (the
 * ONNX sampler draws a fresh one per call), so loops that must be reproducible pass their own.
 */
export const SAMPLE_REQUEST_DEFAULTS = Object.freeze({
  temperature: 1,
  topP: 1,
  topK: 0,
  minP: 0,
  repetitionPenalty: 1,
} as const satisfies Required<
  Pick<SampleRequest, 'temperature' | 'topP' | 'topK' | 'minP' | 'repetitionPenalty'>
>);

/** Keys of {@link ConfidenceStop}. */
export const CONFIDENCE_STOP_KEYS = [
  'windowSize',
  'threshold',
] as const satisfies readonly (keyof ConfidenceStop)[];

/**
 * Checks a request's `topLogprobs` and `confidenceStop` (the part of {@link SampleRequest} every
 * sampler validates the same way) and returns them; `topLogprobs` 0 means "not asked".
 * @throws {InvalidArgumentError} naming `request.topLogprobs`, `request.confidenceStop.windowSize`,
 * `request.confidenceStop.threshold` or `request.confidenceStop` (given without `topLogprobs`);
 * `UNKNOWN_OPTION` for an unknown key of `confidenceStop`.
 */
export function validateConfidenceRequest(
  request: Pick<SampleRequest, 'topLogprobs' | 'confidenceStop'>,
  functionName?: string,
): { topLogprobs: number; confidenceStop?: ConfidenceStop } {
  const topLogprobs =
    request.topLogprobs === undefined
      ? 0
      : validateInteger(request.topLogprobs, {
          parameter: 'request.topLogprobs',
          functionName,
          min: 1,
        });
  if (request.confidenceStop === undefined) return { topLogprobs };
  const stop = validateOptions<ConfidenceStop>(request.confidenceStop, {
    parameter: 'request.confidenceStop',
    functionName,
    known: CONFIDENCE_STOP_KEYS,
  });
  const windowSize = validateInteger(stop.windowSize, {
    parameter: 'request.confidenceStop.windowSize',
    functionName,
    min: 1,
  });
  const threshold = validateNumber(stop.threshold, {
    parameter: 'request.confidenceStop.threshold',
    functionName,
    min: 0,
    exclusiveMin: true,
  });
  if (topLogprobs === 0) {
    throw new InvalidArgumentError({
      parameter: 'request.confidenceStop',
      functionName,
      value: request.confidenceStop,
      expected:
        'request.topLogprobs (k >= 1) alongside it: the window confidence is the mean of -mean(top-k logprobs)',
    });
  }
  return { topLogprobs, confidenceStop: { windowSize, threshold } };
}

/** One sampled completion. */
export type Completion = {
  /** Decoded text of the completion (without the prompt; cut before a matched stop string). */
  text: string;
  /**
   * Generated token ids (without the prompt). Empty for a *text-only* completion: a sampler that
   * cannot see the model's tokens (a served model whose server returned no token ids) gives
   * `tokenIds: []` and `logprobs: []`, no `modelLogprobs` / `topLogprobs`, and `text` only;
   * per-token consumers (trainers, logit distillation, DeepConf) refuse it, text consumers
   * (voting, evaluation, SFT on text) use it, and token counts of it are unknown (0).
   */
  tokenIds: number[];
  /**
   * Behaviour logprobs: per generated token, the log-probability under the distribution it was
   * actually sampled from (after temperature / top-k / top-p / min-p), same length as `tokenIds`.
   */
  logprobs: number[];
  /** Per-token logprobs of the unmodified model distribution, when `returnModelLogprobs` was set. */
  modelLogprobs?: number[];
  /**
   * When `topLogprobs: k` was asked: per generated token (same length as `tokenIds`), the k most
   * likely tokens of the *model* distribution (`log softmax(logits)` at temperature 1, no
   * filtering, no repetition penalty: the convention of `modelLogprobs`), most likely first, ties
   * to the lower token id. The sampled token need not be among them.
   */
  topLogprobs?: TopLogprob[][];
  /** Prompt token ids as the model saw them (after templating, without padding). */
  promptTokenIds?: number[];
  finishReason: FinishReason;
  /**
   * Whether `logprobs` are the behaviour logprobs of the draw (see "Logprobs and the importance
   * ratio" in {@link Sampler}). Omitted means `true`: every local sampler computes them itself.
   * `false`: they are the numbers a model server reported (a served model's, e.g. vLLM's default
   * `raw_logprobs`, which are of the model distribution before temperature and filtering, or
   * numbers from another engine); consumers that take `logprobs` as behaviour / old logprobs
   * (GRPO, importance-sampling corrections) must refuse such a completion, while voting,
   * evaluation and SFT on text may use it.
   */
  behaviourLogprobs?: boolean;
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
 * **Confidence stop.** A request with `confidenceStop` (and `topLogprobs`) lets the sampler end a
 * completion whose sliding-window confidence drops below the threshold (DeepConf online, see
 * {@link ConfidenceStop}). Such a completion has `finishReason: 'confidence'`: it keeps every token
 * up to and including the one whose window fell below the threshold (with their logprobs and top
 * logprobs), its text is the text so far, and its group is *not* aborted. It is an incomplete
 * trace, like `length`: DeepConf excludes it from the vote, and `maskTruncatedCompletions` masks it
 * like a truncated one. A token that ends the completion for another reason (EOS, a stop string,
 * `maxNewTokens`) keeps that reason.
 *
 * **Retry.** A sampler does not retry a call on its own: a rejected call may be repeated with the
 * same request and gives the same samples (same `seed`), so a retry is never a different
 * experiment. A sampler over a network (a served model, a queue) may repeat a *transport* request
 * that produced no sample (HTTP 429 / 5xx, a timeout, a refused connection) inside one call, as
 * long as every completion it resolves with was produced exactly once: nothing lost, nothing
 * counted twice, and the same seeds as without the failure.
 *
 * **Served models.** A sampler over a model server resolves with completions whose `logprobs` are
 * the server's numbers, marked `behaviourLogprobs: false` unless the user vouches for them, and
 * with `tokenIds: []` (text only, see {@link Completion.tokenIds}) when the server returned no
 * token ids; a request for per-token data it cannot give (`topLogprobs`, `confidenceStop`,
 * `returnModelLogprobs` from a text-only server) is rejected, never answered with empty rows.
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
