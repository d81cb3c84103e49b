import { InvalidArgumentError, rejectIneffective, validateFiniteArray } from '@rlvr/core';
import {
  custom,
  defineOptions,
  type OptionsInput,
  oneOf,
  optional,
  withDefault,
} from '@rlvr/options';
import { defaultEquals, defaultExtract } from './defaults.js';
import { voteDistribution } from './distribution.js';
import type {
  EqualsFn,
  ExtractFn,
  VoteCluster,
  VoteResult,
  VoteSample,
  Weighting,
} from './types.js';
import { ANSWER_FIELDS } from './vote-fields.js';

/** A cluster before the vote's shares are known. @internal */
export type RawCluster = Omit<VoteCluster, 'share'>;

const FN = 'majorityVote';
const WEIGHTINGS = [
  'uniform',
  'provided',
  'sequence-logprob',
  'mean-logprob',
] as const satisfies readonly Weighting[];

/**
 * The options of {@link majorityVote}, declared once: {@link MajorityVoteOptions},
 * {@link MAJORITY_VOTE_DEFAULTS}, the validation and the README table come from it.
 */
export const MAJORITY_VOTE_OPTIONS = defineOptions(
  {
    ...ANSWER_FIELDS,
    weighting: withDefault(
      oneOf(WEIGHTINGS),
      'uniform',
      "How much each sample's vote counts: `uniform` (1 each), `provided` (the samples' `weight` fields or `weights`), `sequence-logprob` (relative sequence probability), `mean-logprob` (exp of the mean token logprob).",
    ),
    weights: optional(
      custom<readonly number[]>(() => true, 'one weight per sample'),
      "Per-sample weights for `weighting: 'provided'` (overrides the samples' `weight` fields).",
    ),
  },
  { parameter: 'options', functionName: FN },
);

/** Options of {@link majorityVote} (see {@link MAJORITY_VOTE_OPTIONS} for each one). */
export type MajorityVoteOptions = OptionsInput<typeof MAJORITY_VOTE_OPTIONS.schema>;
/** The defaults of {@link majorityVote}'s options. */
export const MAJORITY_VOTE_DEFAULTS = MAJORITY_VOTE_OPTIONS.defaults;

/** @internal */
export function textOf(sample: VoteSample): string {
  return typeof sample === 'string' ? sample : sample.text;
}

/** Validates the samples and returns their texts. @internal */
export function readSamples(samples: unknown, functionName: string): VoteSample[] {
  if (!Array.isArray(samples)) {
    throw new InvalidArgumentError({
      parameter: 'samples',
      functionName,
      value: samples,
      expected: 'an array of strings or { text } objects',
    });
  }
  samples.forEach((sample, index) => {
    const ok =
      typeof sample === 'string' ||
      (sample !== null &&
        typeof sample === 'object' &&
        typeof (sample as { text?: unknown }).text === 'string');
    if (!ok) {
      throw new InvalidArgumentError({
        parameter: `samples[${index}]`,
        functionName,
        value: sample,
        expected: 'a string or an object with a string `text`',
      });
    }
  });
  return samples as VoteSample[];
}

/** Computes one non-negative weight per sample. @internal */
export function sampleWeights(
  samples: readonly VoteSample[],
  weighting: Weighting,
  explicit: readonly number[] | undefined,
  functionName: string,
): number[] {
  if (weighting === 'uniform') return samples.map(() => 1);
  if (weighting === 'provided') {
    const weights = samples.map((sample, index) => {
      const value = explicit
        ? explicit[index]
        : typeof sample === 'string'
          ? undefined
          : sample.weight;
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
        throw new InvalidArgumentError({
          parameter: explicit ? `options.weights[${index}]` : `samples[${index}].weight`,
          functionName,
          value,
          expected: "a finite weight >= 0 (weighting 'provided')",
        });
      }
      return value;
    });
    return weights;
  }
  const scores = samples.map((sample, index) => {
    const logprobs = typeof sample === 'string' ? undefined : sample.logprobs;
    if (!Array.isArray(logprobs) || logprobs.length === 0) {
      throw new InvalidArgumentError({
        parameter: `samples[${index}].logprobs`,
        functionName,
        value: logprobs,
        expected: `a non-empty array of token logprobs (weighting '${weighting}')`,
      });
    }
    validateFiniteArray(logprobs, { parameter: `samples[${index}].logprobs`, functionName });
    const sum = logprobs.reduce((a: number, b: number) => a + b, 0);
    return weighting === 'mean-logprob' ? sum / logprobs.length : sum;
  });
  if (weighting === 'mean-logprob') return scores.map((score) => Math.exp(score));
  const max = Math.max(...scores);
  return scores.map((score) => Math.exp(score - max));
}

/**
 * Groups extracted answers into clusters of equivalent answers. Exact string matches join
 * directly; otherwise an answer joins the first cluster whose representative `equals` it.
 * @internal
 */
export function clusterAnswers(
  answers: readonly (string | null)[],
  weights: readonly number[],
  equals: EqualsFn,
): RawCluster[] {
  const clusters: RawCluster[] = [];
  const byExactAnswer = new Map<string, RawCluster>();
  answers.forEach((answer, index) => {
    if (answer === null) return;
    let cluster = byExactAnswer.get(answer);
    if (!cluster) {
      cluster = clusters.find((candidate) => safeEquals(equals, candidate.answer, answer));
      if (!cluster) {
        cluster = { answer, members: [], count: 0, weight: 0 };
        clusters.push(cluster);
      }
      byExactAnswer.set(answer, cluster);
    }
    cluster.members.push(index);
    cluster.count++;
    cluster.weight += weights[index]!;
  });
  return clusters;
}

/** Runs an equivalence check; a throw means "not equal". @internal */
export function safeEquals(equals: EqualsFn, a: string, b: string): boolean {
  try {
    return equals(a, b) === true;
  } catch {
    return false;
  }
}

/**
 * The deterministic tie rule: more weight wins; equal weight → more samples; equal count → the
 * cluster whose first member came first. @internal
 */
export function rankClusters<T extends RawCluster>(clusters: readonly T[]): T[] {
  return [...clusters].sort(
    (a, b) => b.weight - a.weight || b.count - a.count || a.members[0]! - b.members[0]!,
  );
}

/**
 * Majority (or weighted) vote over samples: extract each sample's final answer, cluster answers by
 * equivalence (0.5, 1/2 and \\frac{1}{2} are one answer), and pick the heaviest cluster.
 *
 * Samples with no usable answer (empty, none found, or hedging like "\\boxed{1} or \\boxed{2}") are
 * discarded and counted. Tie rule: more weight, then more samples, then earliest first appearance.
 *
 * @example
 * ```ts
 * const result = majorityVote(['… so \\boxed{1/2}', 'The answer is 0.5', '\\boxed{3}', 'no idea']);
 * result.answer;    // '1/2' (two equivalent votes)
 * result.share;     // 2/3
 * result.margin;    // 1/3 (2/3 − 1/3: abstain below a threshold)
 * result.entropy;   // 0.6365… nats (−⅔ ln ⅔ − ⅓ ln ⅓)
 * result.discarded; // 1
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for bad samples, weights or options.
 */
export function majorityVote(
  samples: readonly VoteSample[],
  options?: MajorityVoteOptions,
): VoteResult {
  const input = readSamples(samples, FN);
  const raw = MAJORITY_VOTE_OPTIONS.parse(options);
  const { weighting } = raw;
  if (raw.weights !== undefined && weighting !== 'provided') {
    rejectIneffective({
      parameter: 'options.weights',
      value: raw.weights,
      because: `options.weighting is '${weighting}' (weights are used by weighting 'provided' only)`,
      functionName: FN,
    });
  }
  const extract = raw.extract ?? defaultExtract;
  const equals = raw.equals ?? defaultEquals;
  if (
    raw.weights !== undefined &&
    (!Array.isArray(raw.weights) || raw.weights.length !== input.length)
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.weights',
      functionName: FN,
      value: raw.weights,
      expected: `one weight per sample (${input.length})`,
    });
  }
  const weights = sampleWeights(input, weighting, raw.weights, FN);
  const extracted = input.map((sample) => safeExtract(extract, textOf(sample)));
  return tally(extracted, weights, equals);
}

/** Runs an extractor on model output: a throw, a non-string or a blank answer all mean `null`. @internal */
export function safeExtract(extract: ExtractFn, text: string): string | null {
  try {
    const answer = extract(text);
    return typeof answer === 'string' && answer.trim().length > 0 ? answer : null;
  } catch {
    return null;
  }
}

/** Builds a {@link VoteResult} from extracted answers and weights. @internal */
export function tally(
  extracted: (string | null)[],
  weights: readonly number[],
  equals: EqualsFn,
): VoteResult {
  const ranked = rankClusters(clusterAnswers(extracted, weights, equals));
  const discardedIndices = extracted.flatMap((answer, index) => (answer === null ? [index] : []));
  const totalWeight = ranked.reduce((sum, cluster) => sum + cluster.weight, 0);
  const { shares, margin, entropy } = voteDistribution(ranked.map((cluster) => cluster.weight));
  const clusters: VoteCluster[] = ranked.map((cluster, index) => ({
    ...cluster,
    share: shares[index]!,
  }));
  const winner = clusters[0];
  return {
    answer: winner ? winner.answer : null,
    share: winner ? winner.share : 0,
    clusters,
    margin,
    entropy,
    votes: extracted.length - discardedIndices.length,
    totalWeight,
    discarded: discardedIndices.length,
    discardedIndices,
    extracted,
  };
}

/** Checks an optional callback option. @internal */
export function checkFunction<T>(
  value: T | undefined,
  parameter: string,
  functionName: string = FN,
): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new InvalidArgumentError({ parameter, functionName, value, expected: 'a function' });
  }
  return value;
}
