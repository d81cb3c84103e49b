import {
  AbortedError,
  assertSampler,
  type Completion,
  isAbortedGroup,
  type Prompt,
  RlvrError,
  rejectIneffective,
  SAMPLE_REQUEST_KEYS,
  type SampleRequest,
  type Sampler,
  throwIfAborted,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { defaultEquals, defaultExtract } from '../vote/defaults.js';
import {
  checkFunction,
  rankClusters,
  safeExtract,
  sampleWeights,
  tally,
} from '../vote/majority-vote.js';
import type { EqualsFn, ExtractFn, VoteResult, Weighting } from '../vote/types.js';
import { betaStopProbability, dirichletStopProbability } from './stopping.js';

/**
 * Sampling settings passed through to the sampler (per sample). `topLogprobs` and
 * `confidenceStop` are set by `deepConfOnline`, not here.
 */
export type SamplingOptions = Omit<
  SampleRequest,
  'prompts' | 'n' | 'topLogprobs' | 'confidenceStop'
>;

/** When an adaptive vote stops. */
export type StopStrategy =
  /** Early-Stopping Self-Consistency (Li et al. 2024): stop when a whole window agrees. */
  | { type: 'esc'; windowSize: number }
  /** Adaptive-Consistency (Aggarwal et al. 2023): stop when the posterior on the leader is confident. */
  | {
      type: 'adaptive-consistency';
      criterion?: 'beta' | 'dirichlet';
      threshold?: number;
      minSamples?: number;
    };

/** Why sampling stopped. */
export type StopReason =
  | 'unanimous-window'
  | 'confident'
  | 'sample-budget'
  | 'token-budget'
  | 'fixed';

/** Result of a vote with sampling. */
export type SampledVoteResult = VoteResult & {
  /** All completions drawn, in order. */
  completions: Completion[];
  samplesUsed: number;
  /** Completion tokens generated in total. */
  tokensUsed: number;
  stoppedBecause: StopReason;
};

/** Options of {@link vote}. */
export type VoteOptions = {
  sampler: Sampler;
  prompt: Prompt;
  /** Number of samples. */
  n: number;
  sampling: SamplingOptions;
  extract?: ExtractFn;
  equals?: EqualsFn;
  /** Default `uniform`; the logprob weightings use the completions' behaviour logprobs. */
  weighting?: Exclude<Weighting, 'provided'>;
  signal?: AbortSignal;
};

/**
 * Samples `n` completions for one prompt from any core `Sampler` and votes over them.
 *
 * @example
 * ```ts
 * const result = await vote({ sampler, prompt: 'What is 17*3?', n: 16,
 *   sampling: { maxNewTokens: 256, temperature: 0.8, topP: 0.95, seed: 1 } });
 * result.answer; result.share; result.tokensUsed;
 * ```
 */
export async function vote(options: VoteOptions): Promise<SampledVoteResult> {
  const FN = 'vote';
  const raw = validateOptions<VoteOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: ['sampler', 'prompt', 'n', 'sampling', 'extract', 'equals', 'weighting', 'signal'],
  });
  assertSampler(raw.sampler, 'options.sampler');
  const n = validateInteger(raw.n, { parameter: 'options.n', functionName: FN, min: 1 });
  const sampling = readSampling(raw.sampling, FN);
  const extract = checkFunction(raw.extract, 'options.extract', FN) ?? defaultExtract;
  const equals = checkFunction(raw.equals, 'options.equals', FN) ?? defaultEquals;
  const weighting = validateOneOf(
    raw.weighting ?? 'uniform',
    ['uniform', 'sequence-logprob', 'mean-logprob'],
    {
      parameter: 'options.weighting',
      functionName: FN,
    },
  );
  const completions = await drawCompletions(
    raw.sampler,
    raw.prompt as Prompt,
    n,
    sampling,
    raw.signal,
    FN,
  );
  return {
    ...voteOver(completions, extract, equals, weighting),
    completions,
    samplesUsed: completions.length,
    tokensUsed: completions.reduce((sum, completion) => sum + completion.tokenIds.length, 0),
    stoppedBecause: 'fixed',
  };
}

/** Options of {@link adaptiveVote}. */
export type AdaptiveVoteOptions = {
  sampler: Sampler;
  prompt: Prompt;
  strategy: StopStrategy;
  /** Hard cap on samples. */
  maxSamples: number;
  /** Hard cap on generated tokens over all samples (never exceeded). Default: no cap. */
  maxTokens?: number;
  /**
   * Samples per sampler call for Adaptive-Consistency (the stop rule is checked after every sample;
   * samples drawn past the stop point still count as used). Default 1. ESC draws whole windows.
   */
  batchSize?: number;
  sampling: SamplingOptions;
  extract?: ExtractFn;
  equals?: EqualsFn;
  signal?: AbortSignal;
};

/**
 * Self-consistency that stops early: Early-Stopping Self-Consistency (stop when a window of
 * samples is unanimous) or Adaptive-Consistency (stop when a Beta or Dirichlet posterior says the
 * leader is ahead with probability ≥ threshold), within a sample and a token budget.
 *
 * Samples without a usable answer never make a window unanimous and do not count as votes. Each
 * sampler call gets seed `sampling.seed + callIndex` when a seed is given.
 *
 * @example
 * ```ts
 * const result = await adaptiveVote({ sampler, prompt, maxSamples: 32, maxTokens: 8192,
 *   strategy: { type: 'adaptive-consistency', threshold: 0.95 },
 *   sampling: { maxNewTokens: 256, temperature: 0.8, seed: 0 } });
 * result.samplesUsed; result.stoppedBecause; // e.g. 5, 'confident'
 * ```
 * @throws {InvalidArgumentError} for bad options; rethrows the sampler's errors.
 */
export async function adaptiveVote(options: AdaptiveVoteOptions): Promise<SampledVoteResult> {
  const FN = 'adaptiveVote';
  const raw = validateOptions<AdaptiveVoteOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: [
      'sampler',
      'prompt',
      'strategy',
      'maxSamples',
      'maxTokens',
      'batchSize',
      'sampling',
      'extract',
      'equals',
      'signal',
    ],
  });
  assertSampler(raw.sampler, 'options.sampler');
  const maxSamples = validateInteger(raw.maxSamples, {
    parameter: 'options.maxSamples',
    functionName: FN,
    min: 1,
  });
  const maxTokens =
    raw.maxTokens === undefined
      ? Number.POSITIVE_INFINITY
      : validateInteger(raw.maxTokens, {
          parameter: 'options.maxTokens',
          functionName: FN,
          min: 1,
        });
  const sampling = readSampling(raw.sampling, FN);
  const extract = checkFunction(raw.extract, 'options.extract', FN) ?? defaultExtract;
  const equals = checkFunction(raw.equals, 'options.equals', FN) ?? defaultEquals;
  const strategy = readStrategy(raw.strategy, FN);
  if (strategy.type === 'esc' && raw.batchSize !== undefined) {
    rejectIneffective({
      parameter: 'options.batchSize',
      value: raw.batchSize,
      because: "strategy.type is 'esc', which draws whole windows of strategy.windowSize samples",
      functionName: FN,
    });
  }
  const batchSize =
    strategy.type === 'esc'
      ? strategy.windowSize
      : validateInteger(raw.batchSize ?? 1, {
          parameter: 'options.batchSize',
          functionName: FN,
          min: 1,
        });

  const completions: Completion[] = [];
  const answers: (string | null)[] = [];
  let tokensUsed = 0;
  let calls = 0;
  let stoppedBecause: StopReason | undefined;

  while (!stoppedBecause) {
    const remainingSamples = maxSamples - completions.length;
    if (remainingSamples <= 0) {
      stoppedBecause = 'sample-budget';
      break;
    }
    const count = Math.min(batchSize, remainingSamples);
    // Never exceed the token budget: every sample of this call may use at most this many tokens.
    const remainingTokens = maxTokens - tokensUsed;
    const perSample = Math.min(sampling.maxNewTokens, Math.floor(remainingTokens / count));
    if (perSample < 1) {
      stoppedBecause = 'token-budget';
      break;
    }
    const seed = sampling.seed === undefined ? undefined : sampling.seed + calls;
    calls++;
    const drawn = await drawCompletions(
      raw.sampler,
      raw.prompt as Prompt,
      count,
      { ...sampling, maxNewTokens: perSample, ...(seed === undefined ? {} : { seed }) },
      raw.signal,
      FN,
    );
    for (const completion of drawn) {
      completions.push(completion);
      tokensUsed += completion.tokenIds.length;
      answers.push(safeExtract(extract, completion.text));
      if (
        strategy.type === 'adaptive-consistency' &&
        shouldStopAdaptive(answers, equals, strategy)
      ) {
        stoppedBecause = 'confident';
      }
    }
    if (strategy.type === 'esc' && windowIsUnanimous(answers.slice(-drawn.length), equals)) {
      stoppedBecause = 'unanimous-window';
    }
    if (!stoppedBecause && tokensUsed >= maxTokens) stoppedBecause = 'token-budget';
  }

  const result = tally(
    answers,
    answers.map(() => 1),
    equals,
  );
  return { ...result, completions, samplesUsed: completions.length, tokensUsed, stoppedBecause };
}

function voteOver(
  completions: readonly Completion[],
  extract: ExtractFn,
  equals: EqualsFn,
  weighting: Weighting,
): VoteResult {
  const samples = completions.map((completion) => ({
    text: completion.text,
    logprobs: completion.logprobs,
  }));
  const weights = sampleWeights(samples, weighting, undefined, 'vote');
  return tally(
    completions.map((completion) => safeExtract(extract, completion.text)),
    weights,
    equals,
  );
}

function windowIsUnanimous(window: readonly (string | null)[], equals: EqualsFn): boolean {
  if (window.length === 0 || window.some((answer) => answer === null)) return false;
  const first = window[0]!;
  return window.every((answer) => answer === first || equals(first, answer!));
}

function shouldStopAdaptive(
  answers: readonly (string | null)[],
  equals: EqualsFn,
  strategy: Extract<StopStrategy, { type: 'adaptive-consistency' }>,
): boolean {
  const { clusters, votes } = tally(
    [...answers],
    answers.map(() => 1),
    equals,
  );
  if (votes < (strategy.minSamples ?? 1) || clusters.length === 0) return false;
  const ranked = rankClusters(clusters);
  const threshold = strategy.threshold ?? 0.95;
  const probability =
    (strategy.criterion ?? 'beta') === 'beta'
      ? betaStopProbability(ranked[0]!.count, ranked[1]?.count ?? 0)
      : dirichletStopProbability(
          ranked.map((cluster) => cluster.count),
          { seed: votes },
        );
  return probability >= threshold;
}

/** Draws `n` completions of one prompt, honouring the abort contract. @internal */
export async function drawCompletions(
  sampler: Sampler,
  prompt: Prompt,
  n: number,
  sampling: Omit<SampleRequest, 'prompts' | 'n'>,
  signal: AbortSignal | undefined,
  functionName: string,
): Promise<Completion[]> {
  throwIfAborted(signal, `${functionName}()`);
  const groups = await sampler.sample(
    { ...sampling, prompts: [prompt], n },
    signal ? { signal } : undefined,
  );
  // A sampler that resolved despite the abort: its completions are not counted.
  throwIfAborted(signal, `${functionName}()`);
  const group = groups?.[0];
  if (!Array.isArray(group) || group.length !== n) {
    throw new RlvrError(
      'INVALID_ARGUMENT',
      `The sampler passed to ${functionName}() returned ${Array.isArray(group) ? group.length : 'no'} completions for 1 prompt with n = ${n}`,
    );
  }
  rejectAbortedGroup(group, functionName);
  return group;
}

/**
 * Throws `AbortedError` for a group with a `finishReason: 'abort'` completion: it was cut by
 * cancellation, not by the model, so none of its completions may vote. @internal
 */
export function rejectAbortedGroup(group: readonly Completion[], functionName: string): void {
  if (isAbortedGroup(group)) {
    throw new AbortedError({
      operation: `${functionName}()`,
      cause: "the sampler returned a completion with finishReason 'abort'",
    });
  }
}

/** Keys of {@link SamplingOptions}. */
// core's request keys, less the ones this function sets itself (prompts, n) or does not offer
const SAMPLING_KEYS: readonly string[] = SAMPLE_REQUEST_KEYS.filter(
  (key) => !['prompts', 'n', 'topLogprobs', 'confidenceStop'].includes(key),
);

/** Validates `options.sampling` (known keys, `maxNewTokens`, `seed`). @internal */
export function readSampling(value: unknown, functionName: string): SamplingOptions {
  const sampling = validateOptions<SamplingOptions>(value, {
    parameter: 'options.sampling',
    functionName,
    known: SAMPLING_KEYS,
  });
  validateInteger(sampling.maxNewTokens, {
    parameter: 'options.sampling.maxNewTokens',
    functionName,
    min: 1,
  });
  if (sampling.seed !== undefined)
    validateInteger(sampling.seed, { parameter: 'options.sampling.seed', functionName });
  return sampling as SamplingOptions;
}

function readStrategy(value: unknown, functionName: string): StopStrategy {
  const strategy = validateOptions<StopStrategy>(value, {
    parameter: 'options.strategy',
    functionName,
  });
  const type = validateOneOf(strategy.type, ['esc', 'adaptive-consistency'], {
    parameter: 'options.strategy.type',
    functionName,
  });
  validateOptions(strategy, {
    parameter: 'options.strategy',
    functionName,
    known:
      type === 'esc' ? ['type', 'windowSize'] : ['type', 'criterion', 'threshold', 'minSamples'],
  });
  if (type === 'esc') {
    const windowSize = validateInteger((strategy as { windowSize?: number }).windowSize, {
      parameter: 'options.strategy.windowSize',
      functionName,
      min: 1,
    });
    return { type, windowSize };
  }
  const adaptive = strategy as Extract<StopStrategy, { type: 'adaptive-consistency' }>;
  const criterion = validateOneOf(adaptive.criterion ?? 'beta', ['beta', 'dirichlet'], {
    parameter: 'options.strategy.criterion',
    functionName,
  });
  const threshold = validateNumber(adaptive.threshold ?? 0.95, {
    parameter: 'options.strategy.threshold',
    functionName,
    min: 0,
    max: 1,
    exclusiveMin: true,
    exclusiveMax: true,
  });
  const minSamples = validateInteger(adaptive.minSamples ?? 1, {
    parameter: 'options.strategy.minSamples',
    functionName,
    min: 1,
  });
  return { type, criterion, threshold, minSamples };
}
