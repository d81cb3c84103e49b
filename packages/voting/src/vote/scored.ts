import { InvalidArgumentError } from '@rlvr/core';
import { defineOptions, func, type OptionsInput, required } from '@rlvr/options';
import { defaultEquals, defaultExtract } from './defaults.js';
import { readSamples, safeExtract, tally, textOf } from './majority-vote.js';
import type { VoteResult, VoteSample } from './types.js';
import { ANSWER_FIELDS } from './vote-fields.js';

/**
 * Scores one sample (a reward model, a verifier score, a heuristic). Higher is better; for weighted
 * voting the score is the vote's weight and must be ≥ 0.
 */
export type Scorer = (text: string, index: number) => number | Promise<number>;

const SCORER = {
  scorer: required(
    func<Scorer>('a function (text, index) => number | Promise<number>'),
    "Scores each sample (higher is better); in `scoredVote` the score is the sample's vote weight (≥ 0).",
  ),
};

/** The options of {@link scoredVote}, declared once (type, validation, README table). */
export const SCORED_VOTE_OPTIONS = defineOptions(
  { ...SCORER, ...ANSWER_FIELDS },
  { parameter: 'options', functionName: 'scoredVote' },
);

/** Options of {@link scoredVote} (see {@link SCORED_VOTE_OPTIONS} for each one). */
export type ScoredVoteOptions = OptionsInput<typeof SCORED_VOTE_OPTIONS.schema>;

/** The options of {@link bestOfN}, declared once. */
export const BEST_OF_N_OPTIONS = defineOptions(SCORER, {
  parameter: 'options',
  functionName: 'bestOfN',
});

/** Options of {@link bestOfN}. */
export type BestOfNOptions = OptionsInput<typeof BEST_OF_N_OPTIONS.schema>;

async function scoreAll(
  samples: readonly VoteSample[],
  scorer: Scorer,
  functionName: string,
): Promise<number[]> {
  const scores = await Promise.all(samples.map((sample, index) => scorer(textOf(sample), index)));
  scores.forEach((score, index) => {
    if (typeof score !== 'number' || Number.isNaN(score)) {
      throw new InvalidArgumentError({
        parameter: `options.scorer(samples[${index}])`,
        functionName,
        value: score,
        expected: 'a number',
      });
    }
  });
  return scores;
}

/**
 * Weighted voting where each sample's weight is a scorer's output (e.g. a reward model or a
 * verifier's partial-credit score): the cluster with the largest total score wins.
 *
 * @example
 * ```ts
 * const result = await scoredVote(samples, { scorer: async (text) => rewardModel(text) });
 * ```
 * @throws {InvalidArgumentError} when the scorer returns a negative, NaN or non-number score.
 */
export async function scoredVote(
  samples: readonly VoteSample[],
  options: ScoredVoteOptions,
): Promise<VoteResult> {
  const FN = 'scoredVote';
  const input = readSamples(samples, FN);
  const {
    scorer,
    extract = defaultExtract,
    equals = defaultEquals,
  } = SCORED_VOTE_OPTIONS.parse(options);
  const scores = await scoreAll(input, scorer, FN);
  scores.forEach((score, index) => {
    if (!(score >= 0) || !Number.isFinite(score)) {
      throw new InvalidArgumentError({
        parameter: `options.scorer(samples[${index}])`,
        functionName: FN,
        value: score,
        expected: 'a finite score >= 0 (it is the vote weight)',
      });
    }
  });
  const extracted = input.map((sample) => safeExtract(extract, textOf(sample)));
  return tally(extracted, scores, equals);
}

/** Result of {@link bestOfN}. */
export type BestOfNResult = {
  /** Index of the best sample (earliest among equal scores); -1 for no samples. */
  index: number;
  /** Its text. */
  text: string | null;
  score: number;
  /** Every sample's score, in input order. */
  scores: number[];
};

/**
 * Best-of-N: score every sample and return the highest-scoring one (ties: the earliest).
 *
 * @example
 * ```ts
 * const best = await bestOfN(['draft a', 'draft b'], { scorer: (text) => verifierScore(text) });
 * best.text;
 * ```
 * @throws {InvalidArgumentError} for bad samples, a missing scorer or a NaN score.
 */
export async function bestOfN(
  samples: readonly VoteSample[],
  options: BestOfNOptions,
): Promise<BestOfNResult> {
  const FN = 'bestOfN';
  const input = readSamples(samples, FN);
  const { scorer } = BEST_OF_N_OPTIONS.parse(options);
  const scores = await scoreAll(input, scorer, FN);
  let index = -1;
  scores.forEach((score, i) => {
    if (index < 0 || score > scores[index]!) index = i;
  });
  const best = index >= 0 ? input[index]! : null;
  return {
    index,
    text: best === null ? null : typeof best === 'string' ? best : best.text,
    score: index >= 0 ? scores[index]! : Number.NEGATIVE_INFINITY,
    scores,
  };
}
