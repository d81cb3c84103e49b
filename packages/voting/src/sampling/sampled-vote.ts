import {
  AbortedError,
  type Completion,
  isAbortedGroup,
  type Prompt,
  RlvrError,
  rejectIneffective,
  type SampleRequest,
  type Sampler,
  throwIfAborted,
} from '@rlvr/core';
import {
  defineOptions,
  expecting,
  integer,
  number,
  type OptionsInput,
  object,
  oneOf,
  optional,
  parseOptions,
  required,
  sampleRequestFields,
  withDefault,
  zod,
} from '@rlvr/options';
import { defaultEquals, defaultExtract } from '../vote/defaults.js';
import { rankClusters, safeExtract, sampleWeights, tally } from '../vote/majority-vote.js';
import type { EqualsFn, ExtractFn, VoteResult, Weighting } from '../vote/types.js';
import { ANSWER_FIELDS, PROMPT_FIELD, SAMPLER_FIELD, SIGNAL_FIELD } from '../vote/vote-fields.js';
import { betaStopProbability, dirichletStopProbability } from './stopping.js';

/**
 * Sampling settings passed through to the sampler (per sample): core's `SampleRequest` without
 * `prompts` and `n`; `topLogprobs` and `confidenceStop` are set by `deepConfOnline`, not here.
 */
export const SAMPLING_SCHEMA = object({
  ...sampleRequestFields(['prompts', 'n', 'topLogprobs', 'confidenceStop']),
  maxNewTokens: required(integer({ min: 1 }), 'Hard cap on generated tokens per sample.'),
  seed: optional(integer(), {
    description: 'Base seed (sampler call i gets seed + i).',
    defaultText: "the sampler's choice",
  }),
});

/** See {@link SAMPLING_SCHEMA}. */
export type SamplingOptions = OptionsInput<typeof SAMPLING_SCHEMA>;

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

/** The options of {@link vote}, declared once. */
export const VOTE_OPTIONS = defineOptions(
  {
    sampler: SAMPLER_FIELD,
    prompt: PROMPT_FIELD,
    n: required(integer({ min: 1 }), 'Number of samples.'),
    sampling: required(SAMPLING_SCHEMA, 'Sampling settings (see `SamplingOptions`).'),
    ...ANSWER_FIELDS,
    weighting: withDefault(
      oneOf(['uniform', 'sequence-logprob', 'mean-logprob']),
      'uniform',
      "How much each sample's vote counts; the logprob weightings use the completions' behaviour logprobs.",
    ),
    signal: SIGNAL_FIELD,
  },
  { parameter: 'options', functionName: 'vote' },
);

/** Options of {@link vote} (see {@link VOTE_OPTIONS} for each one). */
export type VoteOptions = OptionsInput<typeof VOTE_OPTIONS.schema>;

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
  const raw = VOTE_OPTIONS.parse(options);
  const { n, sampling, weighting, extract = defaultExtract, equals = defaultEquals } = raw;
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

const STOP_STRATEGY = expecting(
  zod.discriminatedUnion('type', [
    object({
      type: zod.literal('esc'),
      windowSize: required(integer({ min: 1 }), 'Stop when this many samples in a row agree.'),
    }),
    object({
      type: zod.literal('adaptive-consistency'),
      criterion: withDefault(
        oneOf(['beta', 'dirichlet']),
        'beta',
        'The posterior on the leader: `beta` (leader vs the rest) or `dirichlet` (all answers).',
      ),
      threshold: withDefault(
        number({ min: 0, max: 1, exclusiveMin: true, exclusiveMax: true }),
        0.95,
        'Stop when the leader is ahead with at least this probability.',
      ),
      minSamples: withDefault(integer({ min: 1 }), 1, 'Never stop before this many samples.'),
    }),
  ]),
  'an options object',
);

/** The options of {@link adaptiveVote}, declared once. */
export const ADAPTIVE_VOTE_OPTIONS = defineOptions(
  {
    sampler: SAMPLER_FIELD,
    prompt: PROMPT_FIELD,
    strategy: required(
      STOP_STRATEGY,
      '`{ type: esc, windowSize }` (Early-Stopping Self-Consistency) or `{ type: adaptive-consistency, criterion?, threshold?, minSamples? }` (Adaptive-Consistency).',
    ),
    maxSamples: required(integer({ min: 1 }), 'Hard cap on samples.'),
    maxTokens: optional(integer({ min: 1 }), {
      description: 'Hard cap on generated tokens over all samples (never exceeded).',
      defaultText: 'no cap',
    }),
    batchSize: optional(integer({ min: 1 }), {
      description:
        'Samples per sampler call for Adaptive-Consistency (the stop rule is checked after every sample; samples drawn past the stop point still count as used). ESC draws whole windows.',
      defaultText: '`1`',
    }),
    sampling: required(SAMPLING_SCHEMA, 'Sampling settings (see `SamplingOptions`).'),
    ...ANSWER_FIELDS,
    signal: SIGNAL_FIELD,
  },
  { parameter: 'options', functionName: 'adaptiveVote' },
);

/** Options of {@link adaptiveVote} (see {@link ADAPTIVE_VOTE_OPTIONS} for each one). */
export type AdaptiveVoteOptions = Omit<
  OptionsInput<typeof ADAPTIVE_VOTE_OPTIONS.schema>,
  'strategy'
> & {
  strategy: StopStrategy;
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
  const raw = ADAPTIVE_VOTE_OPTIONS.parse(options);
  const { maxSamples, sampling, strategy, extract = defaultExtract, equals = defaultEquals } = raw;
  const maxTokens = raw.maxTokens ?? Number.POSITIVE_INFINITY;
  if (strategy.type === 'esc' && raw.batchSize !== undefined) {
    rejectIneffective({
      parameter: 'options.batchSize',
      value: raw.batchSize,
      because: "strategy.type is 'esc', which draws whole windows of strategy.windowSize samples",
      functionName: FN,
    });
  }
  const batchSize = strategy.type === 'esc' ? strategy.windowSize : (raw.batchSize ?? 1);

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

/** Validates `options.sampling` (known keys, `maxNewTokens`, `seed`). @internal */
export function readSampling(value: unknown, functionName: string) {
  return parseOptions(SAMPLING_SCHEMA, value, { parameter: 'options.sampling', functionName });
}
