import {
  InvalidArgumentError,
  majAtK,
  passAtK,
  validateInteger,
  validateOptions,
} from '@rlvr/core';
import { custom, defineOptions, type OptionsInput, optional } from '@rlvr/options';
import { defaultEquals, defaultExtract } from '../vote/defaults.js';
import { clusterAnswers, safeEquals, safeExtract } from '../vote/majority-vote.js';
import { ANSWER_FIELDS } from '../vote/vote-fields.js';

/** pass@k and maj@k of one prompt at one k. */
export type CurvePoint = { k: number; passAtK: number; majAtK: number };

/**
 * The options of {@link accuracyCurve} (and {@link meanAccuracyCurve}), declared once. The ks'
 * range depends on the sample count: checked next to the parse.
 */
export const ESTIMATOR_OPTIONS = defineOptions(
  {
    ...ANSWER_FIELDS,
    ks: optional(
      custom<readonly number[]>(() => true, 'integers in [1, n]'),
      {
        description: 'The k values (each an integer from 1 to the sample count n).',
        defaultText: '1, 2, 4, … up to n (and n itself)',
      },
    ),
  },
  { parameter: 'options', functionName: 'accuracyCurve' },
);

/** Options shared by the estimators (see {@link ESTIMATOR_OPTIONS}). */
export type EstimatorOptions = OptionsInput<typeof ESTIMATOR_OPTIONS.schema>;

/** The options of {@link majAtKFromAnswers}, declared once. */
export const MAJ_AT_K_OPTIONS = defineOptions(
  { equals: ANSWER_FIELDS.equals },
  { parameter: 'options', functionName: 'majAtKFromAnswers' },
);

/** The powers of two up to n, plus n. */
export function defaultKs(n: number): number[] {
  const ks: number[] = [];
  for (let k = 1; k <= n; k *= 2) ks.push(k);
  if (ks.at(-1) !== n) ks.push(n);
  return ks;
}

/**
 * Exact maj@k for one prompt from n ≥ k sampled answers: the probability that majority voting over
 * k of them, drawn without replacement, picks an answer equivalent to `gold` (ties broken uniformly
 * at random; `null` answers abstain). No resampling: computed exactly by @rlvr/core's `majAtK`.
 *
 * @example
 * ```ts
 * majAtKFromAnswers(['1/2', '0.5', '3', null], '\\frac{1}{2}', 3); // 0.75
 * ```
 */
export function majAtKFromAnswers(
  answers: readonly (string | null)[],
  gold: string,
  k: number,
  options: OptionsInput<typeof MAJ_AT_K_OPTIONS.schema> = {},
): number {
  const FN = 'majAtKFromAnswers';
  const { equals = defaultEquals } = MAJ_AT_K_OPTIONS.parse(options);
  if (!Array.isArray(answers) || answers.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'answers',
      functionName: FN,
      value: answers,
      expected: 'a non-empty array of answers (string | null)',
    });
  }
  validateInteger(k, { parameter: 'k', functionName: FN, min: 1, max: answers.length });
  const clusters = clusterAnswers(
    answers,
    answers.map(() => 1),
    equals,
  );
  const correctCluster = clusters.findIndex(
    (cluster) => cluster.answer === gold || safeEquals(equals, gold, cluster.answer),
  );
  return majAtK({
    clusterSizes: clusters.map((cluster) => cluster.count),
    correctCluster,
    k,
    abstained: answers.filter((answer) => answer === null).length,
  });
}

/**
 * The test-time-compute curve of one prompt: unbiased pass@k and exact maj@k for k = 1, 2, 4, …, n
 * from n sampled completions and the gold answer.
 *
 * @example
 * ```ts
 * accuracyCurve(['\\boxed{4}', '\\boxed{5}', '\\boxed{4}', 'hmm'], '4');
 * // [{ k: 1, passAtK: 0.5, majAtK: 0.5 }, { k: 2, … }, { k: 4, passAtK: 1, majAtK: 1 }]
 * ```
 */
export function accuracyCurve(
  samples: readonly string[],
  gold: string,
  options: EstimatorOptions = {},
): CurvePoint[] {
  const FN = 'accuracyCurve';
  const raw = ESTIMATOR_OPTIONS.parse(options);
  if (!Array.isArray(samples) || samples.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'samples',
      functionName: FN,
      value: samples,
      expected: 'a non-empty array of completions',
    });
  }
  if (typeof gold !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'gold',
      functionName: FN,
      value: gold,
      expected: 'the gold answer as a string',
    });
  }
  const { extract = defaultExtract, equals = defaultEquals } = raw;
  const n = samples.length;
  const ks = raw.ks ?? defaultKs(n);
  ks.forEach((k, index) => {
    validateInteger(k, { parameter: `options.ks[${index}]`, functionName: FN, min: 1, max: n });
  });
  const answers = samples.map((sample) => safeExtract(extract, sample));
  const correct = answers.filter(
    (answer) => answer !== null && (answer === gold || safeEquals(equals, gold, answer)),
  ).length;
  return ks.map((k) => ({
    k,
    passAtK: passAtK(n, correct, k),
    majAtK: majAtKFromAnswers(answers, gold, k, { equals }),
  }));
}

/**
 * Mean curves over many prompts (each with its own samples and gold), for the same ks: the
 * test-time-compute curve of a model. All prompts must have at least max(ks) samples.
 */
export function meanAccuracyCurve(
  records: readonly { samples: readonly string[]; gold: string }[],
  options: EstimatorOptions = {},
): CurvePoint[] {
  const FN = 'meanAccuracyCurve';
  // the keys here; their values in accuracyCurve, which names itself in the errors (as before)
  validateOptions(options, {
    parameter: 'options',
    functionName: FN,
    known: ESTIMATOR_OPTIONS.keys,
  });
  if (!Array.isArray(records) || records.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'records',
      functionName: FN,
      value: records,
      expected: 'a non-empty array of { samples, gold }',
    });
  }
  const minN = Math.min(...records.map((record) => record.samples?.length ?? 0));
  const ks = options.ks ?? defaultKs(minN);
  const curves = records.map((record) =>
    accuracyCurve(record.samples, record.gold, { ...options, ks }),
  );
  return ks.map((k, index) => ({
    k,
    passAtK: curves.reduce((sum, curve) => sum + curve[index]!.passAtK, 0) / curves.length,
    majAtK: curves.reduce((sum, curve) => sum + curve[index]!.majAtK, 0) / curves.length,
  }));
}
