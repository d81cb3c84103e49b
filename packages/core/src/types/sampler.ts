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
