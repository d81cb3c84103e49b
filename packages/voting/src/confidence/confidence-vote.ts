import {
  AbortedError,
  type FinishReason,
  InvalidArgumentError,
  type TopLogprob,
  validateNumber,
} from '@rlvr/core';
import { defineOptions, number, type OptionsInput, oneOf, withDefault } from '@rlvr/options';
import { defaultEquals, defaultExtract } from '../vote/defaults.js';
import { safeExtract, tally } from '../vote/majority-vote.js';
import type { EqualsFn, ExtractFn, VoteResult } from '../vote/types.js';
import { ANSWER_FIELDS } from '../vote/vote-fields.js';
import {
  CONFIDENCE_FIELDS,
  checkTopLogprobs,
  type ResolvedConfidence,
  summarize,
  tokenConfidences,
} from './confidence.js';

/** One trace to vote over: a core `Completion` fits (its `text`, `topLogprobs`, `finishReason`). */
export type ConfidenceTrace = {
  text: string;
  /** Per-token top-k logprobs (a completion sampled with `topLogprobs: k`). */
  topLogprobs?: readonly (readonly TopLogprob[])[];
  /** The trace's confidence, when already computed (then `topLogprobs` is not read). */
  confidence?: number;
  /** `'confidence'` (stopped by a confidence stop) never votes; `'abort'` rejects the vote. */
  finishReason?: FinishReason;
};

const FN = 'confidenceVote';
const WEIGHTINGS = ['confidence', 'uniform'] as const satisfies readonly ConfidenceWeighting[];

/** How much a kept trace's vote counts. */
export type ConfidenceWeighting =
  /** Its confidence (DeepConf's weighted majority). */
  | 'confidence'
  /** 1 (plain majority over the kept traces). */
  | 'uniform';

/**
 * The options of {@link confidenceVote}, declared once: the confidence fields, then the vote's.
 */
export const CONFIDENCE_VOTE_OPTIONS = defineOptions(
  {
    ...CONFIDENCE_FIELDS,
    keepTop: withDefault(
      number({ min: 0, exclusiveMin: true, max: 100 }),
      90,
      'η: keep the `keepTop` percent most confident traces (ties to the earlier trace); DeepConf-low keeps 10, DeepConf-high 90.',
    ),
    weighting: withDefault(
      oneOf(WEIGHTINGS),
      'confidence',
      "How much a kept trace's vote counts: `confidence` (DeepConf's weighted majority) or `uniform`.",
    ),
    ...ANSWER_FIELDS,
  },
  { parameter: 'options', functionName: FN },
);

/** Options of {@link confidenceVote} (see {@link CONFIDENCE_VOTE_OPTIONS} for each one). */
export type ConfidenceVoteOptions = OptionsInput<typeof CONFIDENCE_VOTE_OPTIONS.schema>;

/** The outcome of a {@link confidenceVote}: the vote over the kept traces, indices into the input. */
export type ConfidenceVoteResult = VoteResult & {
  /** Each trace's confidence (`null` for one that does not vote: stopped early or empty). */
  confidences: (number | null)[];
  /** The lowest confidence kept (the η cut); `NaN` when no trace is kept. */
  threshold: number;
  /** Traces that voted or were discarded for having no answer, in input order. */
  keptIndices: number[];
  /** Traces below the η cut. */
  filteredIndices: number[];
  /** Traces that never vote: ended by a confidence stop (`finishReason: 'confidence'`) or empty. */
  excludedIndices: number[];
};

/**
 * DeepConf offline (Fu et al. 2025): each trace's confidence (default: lowest sliding-window
 * group confidence), keep the `keepTop`% most confident (η = 10 or 90), then a confidence-weighted
 * majority vote over verifier-equivalent answers — the same clusters, shares, margin and entropy as
 * `majorityVote`. Member and discarded indices refer to the input traces.
 *
 * @example
 * ```ts
 * const traces = (await sampler.sample({ prompts: [p], n: 64, maxNewTokens: 4096, topLogprobs: 20 }))[0];
 * const result = confidenceVote(traces, { keepTop: 10, measure: 'bottom-10', windowSize: 2048 });
 * result.answer; result.share; result.margin; result.threshold;
 * ```
 * @throws {InvalidArgumentError} for bad traces or options; `AbortedError` when a trace has
 * `finishReason: 'abort'` (an aborted group is never voted over).
 */
export function confidenceVote(
  traces: readonly ConfidenceTrace[],
  options?: ConfidenceVoteOptions,
): ConfidenceVoteResult {
  const {
    keepTop,
    weighting,
    extract = defaultExtract,
    equals = defaultEquals,
    ...measure
  } = CONFIDENCE_VOTE_OPTIONS.parse(options);
  const confidences = readTraces(traces, measure);
  const ranked = confidences
    .flatMap((confidence, index) => (confidence === null ? [] : [{ confidence, index }]))
    .sort((a, b) => b.confidence - a.confidence || a.index - b.index);
  const keep = Math.max(1, Math.ceil((keepTop / 100) * ranked.length));
  const kept = new Set(ranked.slice(0, keep).map((entry) => entry.index));
  return voteOverKept(traces, confidences, kept, { weighting, extract, equals });
}

/**
 * The confidence-weighted vote over the traces in `kept` (input indices), as a
 * {@link ConfidenceVoteResult}. @internal
 */
export function voteOverKept(
  traces: readonly Pick<ConfidenceTrace, 'text'>[],
  confidences: readonly (number | null)[],
  kept: ReadonlySet<number>,
  how: { weighting: ConfidenceWeighting; extract: ExtractFn; equals: EqualsFn },
  answers?: readonly (string | null)[],
): ConfidenceVoteResult {
  const keptIndices = [...kept].sort((a, b) => a - b);
  const keptAnswers = keptIndices.map((index) =>
    answers ? answers[index]! : safeExtract(how.extract, traces[index]!.text),
  );
  const weights = keptIndices.map((index) =>
    how.weighting === 'confidence' ? confidences[index]! : 1,
  );
  const vote = tally(keptAnswers, weights, how.equals);
  const extracted: (string | null)[] = traces.map(() => null);
  keptIndices.forEach((index, position) => {
    extracted[index] = keptAnswers[position]!;
  });
  let threshold = Number.NaN;
  for (const index of keptIndices)
    threshold = Number.isNaN(threshold)
      ? confidences[index]!
      : Math.min(threshold, confidences[index]!);
  return {
    ...vote,
    clusters: vote.clusters.map((cluster) => ({
      ...cluster,
      members: cluster.members.map((position) => keptIndices[position]!),
    })),
    discardedIndices: vote.discardedIndices.map((position) => keptIndices[position]!),
    extracted,
    confidences: [...confidences],
    threshold,
    keptIndices,
    filteredIndices: confidences.flatMap((confidence, index) =>
      confidence !== null && !kept.has(index) ? [index] : [],
    ),
    excludedIndices: confidences.flatMap((confidence, index) =>
      confidence === null ? [index] : [],
    ),
  };
}

/** Validates the traces and returns each one's confidence (`null`: does not vote). */
function readTraces(traces: unknown, measure: ResolvedConfidence): (number | null)[] {
  if (!Array.isArray(traces)) {
    throw new InvalidArgumentError({
      parameter: 'traces',
      functionName: FN,
      value: traces,
      expected: 'an array of { text, topLogprobs | confidence } traces',
    });
  }
  if (traces.some((trace: ConfidenceTrace | null) => trace?.finishReason === 'abort')) {
    throw new AbortedError({
      operation: `${FN}()`,
      cause: "a trace has finishReason 'abort' (an aborted group is never voted over)",
    });
  }
  return traces.map((trace: ConfidenceTrace, index) => {
    const where = `traces[${index}]`;
    if (trace === null || typeof trace !== 'object' || typeof trace.text !== 'string') {
      throw new InvalidArgumentError({
        parameter: where,
        functionName: FN,
        value: trace,
        expected: 'an object with a string `text`',
      });
    }
    if (trace.finishReason === 'confidence') return null;
    if (trace.confidence !== undefined) {
      return validateNumber(trace.confidence, {
        parameter: `${where}.confidence`,
        functionName: FN,
        min: 0,
      });
    }
    checkTopLogprobs(trace.topLogprobs, `${where}.topLogprobs`, FN);
    const tops = trace.topLogprobs!;
    return tops.length === 0 ? null : summarize(tokenConfidences(tops), measure);
  });
}
