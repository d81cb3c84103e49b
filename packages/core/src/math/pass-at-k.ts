import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { validateFiniteArray, validateInteger, validateOptions } from '../validation/validate.js';

/**
 * Unbiased pass@k estimator (Chen et al. 2021): the probability that at least one of k samples,
 * drawn without replacement from n samples of which c are correct, is correct:
 * 1 − C(n−c, k)/C(n, k), computed in the numerically stable product form
 * 1 − Π_{i=n−c+1}^{n} (1 − k/i).
 *
 * @example
 * ```ts
 * passAtK(10, 3, 1); // 0.3
 * passAtK(10, 3, 5); // 1 - C(7,5)/C(10,5) = 0.9166…
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` unless 0 ≤ c ≤ n and 1 ≤ k ≤ n are integers.
 */
export function passAtK(n: number, c: number, k: number): number {
  const FN = 'passAtK';
  validateInteger(n, { parameter: 'n', functionName: FN, min: 1 });
  validateInteger(c, { parameter: 'c', functionName: FN, min: 0, max: n });
  validateInteger(k, { parameter: 'k', functionName: FN, min: 1, max: n });
  if (n - c < k) return 1;
  let product = 1;
  for (let i = n - c + 1; i <= n; i++) product *= 1 - k / i;
  return 1 - product;
}

/** Options of {@link majAtK}. */
export type MajAtKOptions = {
  /** Sizes of the answer clusters among the n samples (samples that gave equivalent answers). */
  clusterSizes: readonly number[];
  /** Index (into clusterSizes) of the correct answer's cluster, or -1 when no sample was correct. */
  correctCluster: number;
  /** Votes per subset. */
  k: number;
  /** Samples with no usable answer: they are drawn but never vote. Default 0. */
  abstained?: number;
};

/**
 * Exact maj@k: the probability that majority voting over k samples drawn without replacement from
 * the n = Σ clusterSizes + abstained samples picks the correct answer. Ties between the leading
 * clusters are broken uniformly at random (so a two-way tie counts ½). A subset with no votes
 * (all abstained) counts as wrong. Computed by dynamic programming over the multivariate
 * hypergeometric distribution, no sampling.
 *
 * @example
 * ```ts
 * majAtK({ clusterSizes: [2, 1], correctCluster: 0, k: 3 }); // 1 (all three always drawn)
 * majAtK({ clusterSizes: [1, 1], correctCluster: 0, k: 1 }); // 0.5
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for bad sizes, index or k.
 */
export function majAtK(options: MajAtKOptions): number {
  const FN = 'majAtK';
  const raw = validateOptions<MajAtKOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: ['clusterSizes', 'correctCluster', 'k', 'abstained'],
  });
  const sizes = validateFiniteArray(raw.clusterSizes, {
    parameter: 'options.clusterSizes',
    functionName: FN,
  });
  for (let index = 0; index < sizes.length; index++) {
    validateInteger(sizes[index], {
      parameter: `options.clusterSizes[${index}]`,
      functionName: FN,
      min: 0,
    });
  }
  const correct = validateInteger(raw.correctCluster, {
    parameter: 'options.correctCluster',
    functionName: FN,
    min: -1,
    max: sizes.length - 1,
  });
  const abstained = validateInteger(raw.abstained ?? 0, {
    parameter: 'options.abstained',
    functionName: FN,
    min: 0,
  });
  let n = abstained;
  for (let index = 0; index < sizes.length; index++) n += sizes[index]!;
  if (n === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.clusterSizes',
      functionName: FN,
      value: raw.clusterSizes,
      expected: 'at least one sample',
    });
  }
  const k = validateInteger(raw.k, { parameter: 'options.k', functionName: FN, min: 1, max: n });
  if (correct < 0) return 0;
  const correctSize = sizes[correct]!;
  const others: number[] = [];
  for (let index = 0; index < sizes.length; index++)
    if (index !== correct) others.push(sizes[index]!);

  // log C(n, r) table for stable ratios.
  const logFactorial = new Float64Array(n + 1);
  for (let i = 1; i <= n; i++) logFactorial[i] = logFactorial[i - 1]! + Math.log(i);
  const logChoose = (a: number, b: number) =>
    b < 0 || b > a ? -Infinity : logFactorial[a]! - logFactorial[b]! - logFactorial[a - b]!;

  let probability = 0;
  for (let x = 1; x <= Math.min(correctSize, k); x++) {
    // ways[s][t]: weighted count of ways to draw s samples from the other clusters (and abstainers)
    // with every other cluster < x votes except exactly t clusters that tie at x.
    // Stored as plain numbers scaled by C(n,k) at the end via logs per term; sizes are small.
    let ways: number[][] = Array.from({ length: k - x + 1 }, () =>
      new Array<number>(others.length + 1).fill(0),
    );
    ways[0]![0] = 1;
    const addCluster = (size: number, allowTie: boolean) => {
      const next: number[][] = Array.from({ length: k - x + 1 }, () =>
        new Array<number>(others.length + 1).fill(0),
      );
      for (let s = 0; s <= k - x; s++) {
        for (let t = 0; t <= others.length; t++) {
          const current = ways[s]![t]!;
          if (current === 0) continue;
          const limit = Math.min(size, k - x - s, allowTie ? x : size);
          for (let j = 0; j <= limit; j++) {
            if (allowTie && j > x) break;
            const tie = allowTie && j === x ? 1 : 0;
            if (t + tie > others.length) continue;
            next[s + j]![t + tie]! += current * Math.exp(logChoose(size, j));
          }
        }
      }
      ways = next;
    };
    for (const size of others) addCluster(size, true);
    if (abstained > 0) addCluster(abstained, false);
    const row = ways[k - x]!;
    let credit = 0;
    for (let t = 0; t <= others.length; t++) credit += row[t]! / (t + 1);
    probability += credit * Math.exp(logChoose(correctSize, x) - logChoose(n, k));
  }
  return Math.min(1, Math.max(0, probability));
}

/**
 * mean@n: the average score (e.g. 0/1 correctness) over n samples; an unbiased estimate of pass@1.
 * @throws {InvalidArgumentError} | {@link NonFiniteError} for an empty or non-finite input.
 */
export function meanAtN(scores: ArrayLike<number>): number {
  validateFiniteArray(scores, { parameter: 'scores', functionName: 'meanAtN' });
  if (scores.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'scores',
      functionName: 'meanAtN',
      value: scores,
      expected: 'at least one score',
    });
  }
  let sum = 0;
  for (let index = 0; index < scores.length; index++) sum += scores[index]!;
  return sum / scores.length;
}
