import {
  createRng,
  InvalidArgumentError,
  validateFiniteArray,
  validateInteger,
  validateOptions,
} from '@rlvr/core';
import { custom, defineOptions, integer, type OptionsInput, withDefault } from '@rlvr/options';

/**
 * Adaptive-Consistency's Beta criterion (Aggarwal et al. 2023): with v1 votes for the leader and
 * v2 for the runner-up, the probability that the leader's true share exceeds the runner-up's,
 * P(X > ½) for X ~ Beta(v1 + 1, v2 + 1). Exact for integer counts:
 * Σ_{j=0}^{v1} C(n, j) / 2^n with n = v1 + v2 + 1.
 *
 * @example
 * ```ts
 * betaStopProbability(4, 0); // 1 − 2^−5 = 0.96875
 * betaStopProbability(3, 3); // 0.5
 * ```
 * @throws {InvalidArgumentError} unless both counts are integers ≥ 0.
 */
export function betaStopProbability(leaderVotes: number, runnerUpVotes: number): number {
  const FN = 'betaStopProbability';
  validateInteger(leaderVotes, { parameter: 'leaderVotes', functionName: FN, min: 0 });
  validateInteger(runnerUpVotes, { parameter: 'runnerUpVotes', functionName: FN, min: 0 });
  const n = leaderVotes + runnerUpVotes + 1;
  // Σ_{j=0}^{leaderVotes} C(n, j) / 2^n, accumulated in log space term by term.
  let logTerm = -n * Math.LN2; // j = 0
  let sum = Math.exp(logTerm);
  for (let j = 1; j <= leaderVotes; j++) {
    logTerm += Math.log(n - j + 1) - Math.log(j);
    sum += Math.exp(logTerm);
  }
  return Math.min(1, sum);
}

/** The options of {@link dirichletStopProbability}, declared once. */
export const DIRICHLET_STOP_OPTIONS = defineOptions(
  {
    samples: withDefault(integer({ min: 1 }), 4000, 'Monte Carlo draws.'),
    seed: withDefault(
      custom<number>(() => true, "a seed (as @rlvr/core's createRng takes it)"),
      0,
      'Seed of the draws (the estimate is deterministic for a given seed).',
    ),
  },
  { parameter: 'options', functionName: 'dirichletStopProbability' },
);

/**
 * Adaptive-Consistency's Dirichlet criterion: the probability that the current leader has the
 * largest true share, under a Dirichlet(v + 1) posterior over the observed answers, estimated by
 * Monte Carlo with a seeded RNG (deterministic for a given seed).
 *
 * @throws {InvalidArgumentError} for negative/non-integer counts or bad sample counts.
 */
export function dirichletStopProbability(
  counts: readonly number[],
  options: OptionsInput<typeof DIRICHLET_STOP_OPTIONS.schema> = {},
): number {
  const FN = 'dirichletStopProbability';
  validateFiniteArray(counts, { parameter: 'counts', functionName: FN });
  counts.forEach((count, index) => {
    validateInteger(count, { parameter: `counts[${index}]`, functionName: FN, min: 0 });
  });
  if (counts.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'counts',
      functionName: FN,
      value: counts,
      expected: 'at least one count',
    });
  }
  validateOptions(options, {
    parameter: 'options',
    functionName: FN,
    known: DIRICHLET_STOP_OPTIONS.keys,
  });
  // A single answer leads whatever the draws: their settings are checked only when used.
  if (counts.length === 1) return 1;
  const { samples: draws, seed } = DIRICHLET_STOP_OPTIONS.parse(options);
  const rng = createRng(seed);
  let leader = 0;
  counts.forEach((count, index) => {
    if (count > counts[leader]!) leader = index;
  });
  const gamma = (shape: number): number => {
    // Marsaglia–Tsang for shape ≥ 1 (all shapes here are count + 1 ≥ 1).
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      const x = rng.nextNormal();
      const v = (1 + c * x) ** 3;
      if (v <= 0) continue;
      const u = rng.next();
      if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
    }
  };
  let wins = 0;
  for (let draw = 0; draw < draws; draw++) {
    const values = counts.map((count) => gamma(count + 1));
    const leaderValue = values[leader]!;
    if (values.every((value, index) => index === leader || value < leaderValue)) wins++;
  }
  return wins / draws;
}
